"""Recording windows and ranges of the traced program itself."""

import contextlib
import threading

from . import _native
from ._native import OK, PENDING

__all__ = ["start", "stop", "is_active", "is_traced", "window", "range", "schedule", "Schedule"]


def start():
    """Opens a recording window of this process, unless one is open.

    Before CUDA (or HIP) has started, the request is kept and recording
    opens as soon as gpu-trace starts with it. Outside a traced process it
    does nothing (one warning)."""
    _native.call("start")


def stop():
    """Closes the recording window of this process, if one is open; the GPU
    work already submitted is still written. Before CUDA has started, the
    run starts paused instead."""
    _native.call("stop")


def is_active():
    """Whether this process is recording now (False before gpu-trace has
    started, and outside a traced process)."""
    return _native.call("is_active") == 1


def is_traced():
    """Whether a gpu-trace injection library is in this process (loaded, or
    named by the environment of a process that ``gpu-trace record`` runs)."""
    return bool(_native.libraries())


class window(contextlib.ContextDecorator):
    """``with gpu_trace.window("step 100"):`` records what runs inside.

    Opens a recording window named ``name`` (the trace's log says
    ``recording window N opened (step 100)``) unless one is open: then it
    nests in it and closes nothing at its end. Also a decorator."""

    def __init__(self, name):
        self.name = str(name)
        self._local = threading.local()

    def _stack(self):
        # Per thread: one object may be entered by several (a decorator).
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack

    def __enter__(self):
        rc = _native.call("window_begin", self.name)
        self._stack().append(rc in (OK, PENDING))
        return self

    def __exit__(self, *exc):
        if self._stack().pop():
            _native.call("window_end")
        return False


class range(contextlib.ContextDecorator):
    """``with gpu_trace.range("forward"):`` marks a range on this thread.

    An NVTX range under CUDA (a roctx range under HIP), pushed and popped
    through gpu-trace's own handlers: no NVTX package is needed. Recorded
    while recording is on; an NVTX capture range
    (``--capture-range nvtx:NAME``) sees it too. Also a decorator."""

    def __init__(self, name):
        self.name = str(name)
        self._local = threading.local()

    def _stack(self):
        # Per thread: a range is pushed and popped on its own thread.
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack

    def __enter__(self):
        self._stack().append(_native.call("range_push", self.name) == OK)
        return self

    def __exit__(self, *exc):
        if self._stack().pop():
            _native.call("range_pop")
        return False


class Schedule:
    """Records the steps a torch.profiler-style schedule picks.

    Made at the start of step 0; call :meth:`step` once at the end of each
    step. Of every cycle of ``wait + warmup + active`` steps, the first
    ``wait`` are not recorded, the next ``warmup`` are not recorded either,
    and the last ``active`` are, as one recording window named after them
    (``steps 2-3``; one window per cycle, as torch.profiler makes one trace
    per cycle); ``repeat`` cycles (0: for ever), after ``skip_first`` steps
    that are not recorded.

    Warmup steps are not recorded: torch.profiler runs its profiler through
    them to keep its start-up cost out of the active steps and then throws
    their data away; gpu-trace switches recording on inside :meth:`step`,
    between steps, so the first active step bears no such cost, and the trace
    holds exactly the active steps. The argument is there so that a
    torch.profiler schedule carries over unchanged.

    The schedule takes over the process's recording: made before CUDA has
    started, the run starts paused; made later, the window open (the whole
    run's, by default) closes unless step 0 is recorded. Also a context
    manager: its end closes the schedule's window."""

    def __init__(self, *, wait=0, warmup=0, active=1, repeat=0, skip_first=0):
        for k, v in (("wait", wait), ("warmup", warmup), ("repeat", repeat),
                     ("skip_first", skip_first)):
            if not isinstance(v, int) or v < 0:
                raise ValueError("schedule: %s must be an int >= 0, not %r" % (k, v))
        if not isinstance(active, int) or active < 1:
            raise ValueError("schedule: active must be an int >= 1, not %r" % (active,))
        self.wait, self.warmup, self.active = wait, warmup, active
        self.repeat, self.skip_first = repeat, skip_first
        self.step_num = 0
        self._open = False
        self._closed = False
        _native.call("stop")
        self._apply()

    def records(self, step):
        """Whether step ``step`` (from 0) is recorded."""
        k = step - self.skip_first
        if k < 0:
            return False
        cycle = self.wait + self.warmup + self.active
        if self.repeat and k // cycle >= self.repeat:
            return False
        return k % cycle >= self.wait + self.warmup

    def _first_active(self, step):
        """Whether ``step`` is the first recorded step of its cycle."""
        k = step - self.skip_first
        cycle = self.wait + self.warmup + self.active
        return self.records(step) and k % cycle == self.wait + self.warmup

    def _apply(self):
        want = not self._closed and self.records(self.step_num)
        if self._open and (not want or self._first_active(self.step_num)):
            # A cycle's window ends with its last active step.
            _native.call("window_end")
            self._open = False
        if want and not self._open:
            first, last = self.step_num, self.step_num
            while last + 1 - first < self.active and self.records(last + 1):
                last += 1
            name = "step %d" % first if last == first else "steps %d-%d" % (first, last)
            self._open = _native.call("window_begin", name) in (OK, PENDING)

    def step(self):
        """Ends the current step: recording switches for the next one."""
        self.step_num += 1
        self._apply()

    def close(self):
        """Closes the schedule's window, if open; later steps record nothing."""
        if self._open:
            _native.call("window_end")
            self._open = False
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def schedule(*, wait=0, warmup=0, active=1, repeat=0, skip_first=0):
    """A :class:`Schedule` of this process's recording, from step 0 now."""
    return Schedule(wait=wait, warmup=warmup, active=active, repeat=repeat,
                    skip_first=skip_first)
