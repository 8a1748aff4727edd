"""A launch-heavy PyTorch training loop: a small MLP whose step time is
dominated by kernel launches, the shape where a tracer's per-launch cost
shows most. NVTX ranges mark each step and its phases (no-ops unless an NVTX
injection is loaded).

By default AdamW uses PyTorch's default (multi-tensor) implementation: about
75 kernels a step, 22,500 in 300 steps, the loop the overhead targets are set
on. `--dense` takes the per-parameter optimizer instead (about 285 kernels a
step), as many custom loops do: the same work with almost four times the
launches.

Prints: RESULT workload=torch_mlp steps=N ms_per_step=X kernels_per_step=K
"""

import argparse
import json
import os
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--profiler", choices=["none", "cuda", "cpu_cuda"], default="none")
    ap.add_argument("--profiler-out", default="")
    ap.add_argument("--dense", action="store_true", help="per-parameter optimizer kernels (foreach=False)")
    a = ap.parse_args()

    torch.manual_seed(0)
    dev = "cuda"
    layers = []
    for _ in range(6):
        layers += [torch.nn.Linear(256, 256), torch.nn.LayerNorm(256), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(256, 10)).to(dev)
    # --dense: one small kernel per parameter and step, as in many custom
    # loops; otherwise PyTorch's default multi-tensor kernels.
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False if a.dense else None)
    x = torch.randn(64, 256, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(i):
        torch.cuda.nvtx.range_push(f"step {i}")
        with torch.cuda.nvtx.range("forward"):
            loss = loss_fn(model(x), y)
        with torch.cuda.nvtx.range("backward"):
            opt.zero_grad(set_to_none=True)
            loss.backward()
        with torch.cuda.nvtx.range("optimizer"):
            opt.step()
        torch.cuda.nvtx.range_pop()

    for i in range(a.warmup):
        step(i)
    torch.cuda.synchronize()

    prof = None
    if a.profiler != "none":
        acts = [torch.profiler.ProfilerActivity.CUDA]
        if a.profiler == "cpu_cuda":
            acts.append(torch.profiler.ProfilerActivity.CPU)
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()

    timed = a.steps - a.warmup
    t0 = time.perf_counter()
    for i in range(a.warmup, a.steps):
        step(i)
    torch.cuda.synchronize()
    t1 = time.perf_counter()

    extra = ""
    if prof is not None:
        prof.__exit__(None, None, None)
        if a.profiler_out:
            prof.export_chrome_trace(a.profiler_out)
            with open(a.profiler_out) as f:
                events = json.load(f).get("traceEvents", [])
            kernels = sum(1 for e in events if e.get("cat") == "kernel")
            size = os.path.getsize(a.profiler_out)
            extra = f" profiler_kernels={kernels} profiler_bytes={size}"
    print(
        f"RESULT workload=torch_mlp steps={a.steps} ms_per_step={(t1 - t0) * 1e3 / timed:.4f}{extra}",
        flush=True,
    )


if __name__ == "__main__":
    main()
