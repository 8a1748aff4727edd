"""A launch-heavy PyTorch training loop: a small MLP whose step time is
dominated by kernel launches, the shape where a tracer's per-launch cost
shows most. NVTX ranges mark each step and its phases (no-ops unless an NVTX
injection is loaded).

By default AdamW uses PyTorch's default (multi-tensor) implementation: about
75 kernels a step, 22,500 in 300 steps, the loop the overhead targets are set
on. `--dense` takes the per-parameter optimizer instead (about 285 kernels a
step), as many custom loops do: the same work with almost four times the
launches.

`--ab W` measures tracing inside one process: the timed steps alternate
between windows of W steps outside and inside a capture range
(`torch.cuda.profiler.start()` / `stop()`, which gpu-trace follows with
`INJECTION_CAPTURE_RANGE=cudaProfilerApi`). Without such a tool both kinds of
window run alike, which makes the same run a null control.

Prints: RESULT workload=torch_mlp steps=N ms_per_step=X ms_p50=M
[ab_on_ms=A ab_off_ms=B ab_ratio=A/B] (per-step CPU times; the first two
steps of each window are left out of the A/B medians)
"""

import argparse
import json
import os
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--profiler", choices=["none", "cuda", "cpu_cuda"], default="none")
    ap.add_argument("--profiler-out", default="")
    ap.add_argument("--dense", action="store_true", help="per-parameter optimizer kernels (foreach=False)")
    ap.add_argument("--ab", type=int, default=0, metavar="W", help="alternate W untraced and W traced steps (capture ranges)")
    ap.add_argument("--step-log", default="", metavar="FILE", help="write each timed step's start and the loop's end (CLOCK_BOOTTIME ns) to FILE")
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
    times = []  # (inside a capture range, index in its window, seconds)
    inside = False
    starts = []  # --step-log: CLOCK_BOOTTIME ns at each step's start
    t0 = time.perf_counter()
    for i in range(a.warmup, a.steps):
        j = i - a.warmup
        if a.step_log:
            starts.append(time.clock_gettime_ns(time.CLOCK_BOOTTIME))
        if a.ab and j % a.ab == 0:
            # Even windows untraced, odd ones traced.
            want = (j // a.ab) % 2 == 1
            if want != inside:
                (torch.cuda.profiler.start if want else torch.cuda.profiler.stop)()
                inside = want
        s0 = time.perf_counter()
        step(i)
        times.append((inside, j % a.ab if a.ab else j, time.perf_counter() - s0))
    if inside:
        torch.cuda.profiler.stop()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    if a.step_log:
        write_step_log(a.step_log, starts, time.clock_gettime_ns(time.CLOCK_BOOTTIME))

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
    p50 = statistics.median(t for _, _, t in times) * 1e3
    if a.ab:
        on = [t for ins, k, t in times if ins and k >= 2]
        off = [t for ins, k, t in times if not ins and k >= 2]
        if on and off:
            m_on, m_off = statistics.median(on) * 1e3, statistics.median(off) * 1e3
            extra += f" ab_on_ms={m_on:.4f} ab_off_ms={m_off:.4f} ab_ratio={m_on / m_off:.4f}"
    print(
        f"RESULT workload=torch_mlp steps={a.steps} ms_per_step={(t1 - t0) * 1e3 / timed:.4f} ms_p50={p50:.4f}{extra}",
        flush=True,
    )


def write_step_log(path, starts, end):
    """One number a line: each timed step's start, then the loop's end after
    its last synchronize (CLOCK_BOOTTIME ns, the clock of gpu-trace's
    traces), so that a step lasts until the next one starts."""
    with open(path, "w") as f:
        f.write("\n".join(str(t) for t in starts + [end]) + "\n")


if __name__ == "__main__":
    main()
