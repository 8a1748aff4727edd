"""The wheel on a real GPU, with PyTorch (not in CI: it needs an NVIDIA GPU
and torch built for CUDA 13):

    pip install python/dist/gpu_trace-*.whl       # into the env that has torch
    python python/tests/gpu_torch_schedule.py check DIR

records this file's program under `gpu-trace record` and checks that its
trace holds exactly the steps its schedule and window ask for. Step i adds
1 to a tensor i + 1 times (one kernel each), inside a range `step i`; the
schedule (wait 1, warmup 1, active 2, made before CUDA starts) records steps
2 and 3 (3 + 4 kernels), the window `extra` 5 more, and nothing else is:
not the tensor's allocation and fill before, nor the add and the copy
after.
"""

import collections
import os
import subprocess
import sys

import gpu_trace

STEPS = 6


def program():
    import torch

    sched = gpu_trace.schedule(wait=1, warmup=1, active=2, repeat=1)
    x = torch.zeros(1 << 20, device="cuda")  # cuInit: gpu-trace starts, paused
    torch.cuda.synchronize()
    for i in range(STEPS):
        with gpu_trace.range("step %d" % i):
            for _ in range(i + 1):
                x.add_(1)
            torch.cuda.synchronize()
        assert gpu_trace.is_active() == sched.records(i), i
        sched.step()
    with gpu_trace.window("extra"):
        for _ in range(5):
            x.add_(1)
        torch.cuda.synchronize()
    x.add_(1)
    print("value", x[0].item())


def check(out_dir):
    trace = os.path.join(out_dir, "torch.pftrace")
    r = subprocess.run(["gpu-trace", "record", "-o", trace, "--", sys.executable,
                        os.path.abspath(__file__), "program"])
    assert r.returncode == 0, r.returncode
    t = gpu_trace.load(trace)
    print(t)
    names = collections.Counter(t.kernels["name"] if not isinstance(t.kernels, list)
                                else [k["name"] for k in t.kernels])
    ranges = sorted(t.ranges["name"]) if not isinstance(t.ranges, list) else sorted(
        r["name"] for r in t.ranges)
    print("kernels", dict(names))
    print("ranges", ranges)
    assert sum(names.values()) == 3 + 4 + 5, names
    assert len(names) == 1 and "add" in next(iter(names)).lower(), names
    assert ranges == ["step 2", "step 3"], ranges
    assert len(t.memory) == 0, t.memory
    print("gpu_torch_schedule: ok")


if __name__ == "__main__":
    if sys.argv[1:2] == ["program"]:
        program()
    elif sys.argv[1:2] == ["check"]:
        check(sys.argv[2])
    else:
        sys.exit(__doc__)
