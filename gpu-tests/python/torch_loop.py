"""The launch-heavy MLP training loop: many small kernels per step.

    python3 torch_loop.py [--steps 300] [--warmup 20] [--width 64] [--depth 8]

Also used by the overhead harness (traced against untraced wall time).
Prints the wall time per step on stdout:

    RESULT steps=300 wall_s=1.234567 ms_per_step=4.1152

and an EXPECT line for gpu-check (at least one kernel per step).

--torch-profiler runs torch.profiler (CUDA activity) over the middle third of
the steps: a second CUPTI client in the process, started after ours. It then
prints how many kernels torch.profiler saw:

    KINETO kernels=N
"""
import argparse
import sys
import time

import torch


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--torch-profiler", action="store_true")
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("CUDA is not available", file=sys.stderr)
        return 3
    torch.manual_seed(0)
    dev = torch.device("cuda")
    layers = []
    for _ in range(a.depth):
        layers += [torch.nn.Linear(a.width, a.width), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(a.width, 1)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(a.batch, a.width, device=dev)
    y = torch.randn(a.batch, 1, device=dev)

    def step() -> None:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    prof = None
    lo, hi = (a.steps // 3, 2 * a.steps // 3) if a.torch_profiler else (-1, -1)
    t0 = time.perf_counter()
    for i in range(a.steps):
        if i == lo:
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
            prof.__enter__()
        step()
        if i == hi - 1 and prof is not None:
            torch.cuda.synchronize()
            prof.__exit__(None, None, None)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    if prof is not None:
        kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        print(f"KINETO kernels={kernels}", flush=True)
    print(
        f"RESULT steps={a.steps} wall_s={wall:.6f} ms_per_step={1e3 * wall / max(a.steps, 1):.4f}",
        flush=True,
    )
    total = a.steps + a.warmup
    print(
        f"EXPECT case=torch_loop arg.steps={a.steps} arg.warmup={a.warmup} min_kernels={total}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
