"""A stand-in for PyTorch, just enough for torch_mlp.py to run without a GPU
(benches/gpu/dry/check.sh), on a virtual clock so that its results are
exact: importing it replaces the process's `time.clock_gettime_ns`,
`time.perf_counter` and `time.sleep` with a clock that only the optimizer's
step moves, by 1 ms, or by 2 ms inside a recording window of the duty cycle
the harness asked for (INJECTION_DELAY, INJECTION_WINDOW, INJECTION_EVERY):
a known cost for the harness's arithmetic to find. At exit a "traced" run
writes, as its trace (INJECTION_OUTPUT), what `gpu-trace stats --json` would
say of it, windows and their spans included.
"""

import atexit
import json
import os
import time

_T0 = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
_now = [_T0]  # the virtual clock, ns


def _advance(ns):
    _now[0] += int(ns)


time.clock_gettime_ns = lambda clock: _now[0]
time.perf_counter = lambda: _now[0] / 1e9
time.sleep = lambda s: _advance(s * 1e9)


def _seconds(v):
    return float(v[:-2]) / 1e3 if v.endswith("ms") else float(v[:-1])


def _spans():
    if "INJECTION_EVERY" not in os.environ:
        return []
    delay = _seconds(os.environ.get("INJECTION_DELAY", "0s"))
    window, every = _seconds(os.environ["INJECTION_WINDOW"]), _seconds(os.environ["INJECTION_EVERY"])
    return [(int(_T0 + (delay + k * every) * 1e9), int(_T0 + (delay + k * every + window) * 1e9)) for k in range(100)]


_SPANS = _spans()


def _inside():
    return any(a <= _now[0] < b for a, b in _SPANS)


@atexit.register
def _trace():
    out = os.environ.get("INJECTION_OUTPUT")
    if not out:
        return
    now = _now[0]
    spans = [(a, min(b, now)) for a, b in _SPANS if a < now]
    stats = {"kernels": [{"count": 1}], "api": [], "dropped": {},
             "files": [{"windows": {"count": len(spans), "recorded_ns": sum(b - a for a, b in spans), "spans": spans}}]}
    with open(out, "w") as f:
        json.dump(stats, f)


class _Nothing:
    def __init__(self, *a, **k):
        pass

    def __call__(self, *a, **k):
        return _Nothing()

    def __getattr__(self, name):
        return _Nothing()

    def __iter__(self):
        return iter([])

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


class _AdamW(_Nothing):
    def step(self):
        _advance(2e6 if _inside() else 1e6)


manual_seed = randn = randint = synchronize = autocast = _Nothing()
bfloat16 = None


class nn:
    Linear = LayerNorm = GELU = Sequential = CrossEntropyLoss = _Nothing


class optim:
    AdamW = _AdamW


class cuda:
    synchronize = _Nothing()

    class nvtx:
        range_push = range_pop = range = _Nothing()

    class profiler:
        start = stop = _Nothing()
