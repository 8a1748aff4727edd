"""A small MLP training loop on CUDA with NVTX ranges around each step.

    python3 torch_nvtx.py [--steps 50]

Each step is an NVTX range "step" (range_push/range_pop) holding the
ranges "forward" and "backward" (torch.cuda.nvtx.range); the input batch is
copied from pinned memory each step. PyTorch's exact kernel count is not
known, so the EXPECT line asks for at least one kernel per step and at
least one launch inside every step and forward range (backward kernels are
launched by autograd's device thread, so launches are counted on any
thread). Every kernel must still have exactly one launch slice with an
arrow, which the checker's common checks assert.
"""
import argparse
import sys

import torch


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch", type=int, default=64)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("CUDA is not available", file=sys.stderr)
        return 3
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    ).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x_host = torch.randn(a.batch, 256).pin_memory()
    y = torch.randint(0, 10, (a.batch,), device=dev)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(a.steps):
        torch.cuda.nvtx.range_push("step")
        x = x_host.to(dev, non_blocking=True)
        with torch.cuda.nvtx.range("forward"):
            loss = loss_fn(model(x), y)
        with torch.cuda.nvtx.range("backward"):
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    s = a.steps
    print(
        f"EXPECT case=torch_nvtx arg.steps={s} min_kernels={s} "
        f"range.step={s}@0 range.forward={s}@1 range.backward={s}@1 "
        f"thread.step=main thread.forward=main thread.backward=main "
        f"min_launches_in.step=1 min_launches_in.forward=1",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
