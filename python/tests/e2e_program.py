"""A CUDA program for the end-to-end test, run by e2e.py under
``gpu-trace record``: it drives the fake CUDA driver and CUPTI of cupti-sim
(the library GPU_TRACE_CUPTI_PATH names, which gpu-trace's injection also
loads as its CUPTI) step by step through ctypes, as a training script drives
CUDA through torch, and controls its own recording with gpu_trace.

    python e2e_program.py schedule|start-early

Each step copies its input (4 KiB) and launches KERNELS_PER_STEP kernels of
its own (`step<i>`), so that the trace says exactly which steps were
recorded. Modes:

- schedule: a schedule made before CUDA starts (the run starts paused)
  records steps 2-3 and 6-7 of 8 (wait 1, warmup 1, active 2, repeat 2);
  then a window records the kernels of `extra`; a kernel after it is not
  recorded;
- start-early: gpu_trace.start() before CUDA starts opens recording from
  the start: every step is recorded, until gpu_trace.stop().
"""

import ctypes
import json
import os
import sys

import gpu_trace

STEPS = 8
KERNELS_PER_STEP = 3
EXTRA = 5


def launches(kernel, n):
    return {"repeat": {"times": n, "ops": [
        {"launch": {"kernel": kernel, "grid": [4, 1, 1], "block": [64, 1, 1], "stream": 1}},
    ]}}


SYNC = {"stream_sync": {"stream": 1}}
# One copy of each step's input.
COPY = {"memcpy": {"bytes": 4096, "kind": "H2D"}}


class FakeCuda:
    """cupti-sim's program driven op by op (cupti_sim_start, cupti_sim_ops)."""

    def __init__(self):
        # As an application linked against libcuda has the driver: global.
        self.lib = ctypes.CDLL(os.environ["GPU_TRACE_CUPTI_PATH"],
                               mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        self.lib.cupti_sim_start.argtypes = [ctypes.c_char_p]
        self.lib.cupti_sim_ops.argtypes = [ctypes.c_char_p]

    def init(self, kernel_names):
        """What cuInit does: loads the injection (CUDA_INJECTION64_PATH)."""
        kernels = [{"name": k, "symbol": "_Z%d%sv" % (len(k), k), "registers": 32,
                    "duration_us": 20} for k in kernel_names]
        rc = self.lib.cupti_sim_start(json.dumps({"kernels": kernels, "threads": []}).encode())
        assert rc == 0, "cupti_sim_start: %d" % rc

    def run(self, *ops):
        rc = self.lib.cupti_sim_ops(json.dumps(list(ops)).encode())
        assert rc == 0, "cupti_sim_ops: %d" % rc


def main(mode):
    names = ["step%d" % i for i in range(STEPS)] + ["extra", "after"]
    if mode == "schedule":
        # Before CUDA starts: the injection is not loaded by the driver yet.
        sched = gpu_trace.schedule(wait=1, warmup=1, active=2, repeat=2)
        assert not gpu_trace.is_active()
    elif mode == "start-early":
        gpu_trace.start()
        sched = None
    else:
        raise SystemExit("usage: e2e_program.py schedule|start-early")
    assert gpu_trace.is_traced(), "run it under gpu-trace record"
    cuda = FakeCuda()
    cuda.init(names)
    assert gpu_trace.injection_version() == gpu_trace.__version__, (
        gpu_trace.injection_version(), gpu_trace.__version__)
    for i in range(STEPS):
        with gpu_trace.range("forward %d" % i):
            cuda.run(COPY, launches("step%d" % i, KERNELS_PER_STEP), SYNC)
        if sched is not None:
            assert gpu_trace.is_active() == sched.records(i), i
            sched.step()
    if mode == "schedule":
        assert not gpu_trace.is_active()
        with gpu_trace.window("extra"):
            assert gpu_trace.is_active()
            cuda.run(launches("extra", EXTRA), SYNC)
    else:
        gpu_trace.stop()
    assert not gpu_trace.is_active()
    cuda.run(launches("after", 2), SYNC)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "")
