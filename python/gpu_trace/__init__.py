"""gpu-trace from Python: control the recording of the traced program itself,
and read traces.

Run a program under ``gpu-trace record -- python train.py`` (the ``gpu-trace``
executable comes with this package); inside it::

    import gpu_trace

    sched = gpu_trace.schedule(wait=1, warmup=1, active=3)
    for batch in loader:
        with gpu_trace.range("forward"):
            loss = model(batch)
        ...
        sched.step()

    with gpu_trace.window("evaluation"):
        evaluate(model)

and afterwards ``gpu_trace.load("train-1234.pftrace").kernels``.

Outside a traced process every control call does nothing (one warning of
category :class:`GpuTraceWarning`); none raises because gpu-trace is absent.
The C API behind them is ``include/gpu_trace.h`` (:func:`get_include`).
"""

import os as _os

from ._control import Schedule, is_active, is_traced, range, schedule, start, stop, window
from ._load import Trace, load
from ._native import GpuTraceWarning
from ._native import version as _injection_version
from ._version import __version__

__all__ = [
    "GpuTraceWarning",
    "Schedule",
    "Trace",
    "__version__",
    "get_include",
    "injection_version",
    "is_active",
    "is_traced",
    "load",
    "range",
    "schedule",
    "start",
    "stop",
    "window",
]


def get_include():
    """The folder of ``gpu_trace.h``, the C API (for ``-I``)."""
    return _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "include")


def injection_version():
    """The version of the gpu-trace library traced this process with, or
    None outside a traced process."""
    return _injection_version()
