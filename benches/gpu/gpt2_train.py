"""A transformer training loop: HuggingFace GPT-2 (4 layers, 768 wide, built
from its config, no download) on random tokens, bf16 autocast, AdamW. The
shape of a real fine-tuning step: large matmuls and attention, with the
hundreds of small launches of layer norms, GELU, dropout and the optimizer
between them. NVTX marks each step (`step N`).

Prints: RESULT workload=gpt2 steps=N ms_per_step=X ms_p50=M (per-step CPU
times, warm-up left out).
"""

import argparse
import statistics
import time

import torch
from torch_mlp import write_step_log
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--step-log", default="", metavar="FILE", help="write each timed step's start and the loop's end (CLOCK_BOOTTIME ns) to FILE")
    a = ap.parse_args()

    torch.manual_seed(0)
    dev = "cuda"
    cfg = GPT2Config(n_layer=4, n_head=12, n_embd=768, n_positions=a.seq, vocab_size=50257)
    model = GPT2LMHeadModel(cfg).to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, cfg.vocab_size, (a.batch, a.seq), device=dev)

    def step(i):
        torch.cuda.nvtx.range_push(f"step {i}")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.nvtx.range_pop()
        return loss

    for i in range(a.warmup):
        step(i)
    torch.cuda.synchronize()
    times = []
    starts = []  # --step-log: CLOCK_BOOTTIME ns at each step's start
    t0 = time.perf_counter()
    for i in range(a.warmup, a.steps):
        if a.step_log:
            starts.append(time.clock_gettime_ns(time.CLOCK_BOOTTIME))
        s0 = time.perf_counter()
        loss = step(i)
        # A real loop reads its loss now and then: the GPU catches up.
        if i % 50 == 0:
            loss.item()
        times.append(time.perf_counter() - s0)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    if a.step_log:
        write_step_log(a.step_log, starts, time.clock_gettime_ns(time.CLOCK_BOOTTIME))
    timed = a.steps - a.warmup
    p50 = statistics.median(times) * 1e3
    print(
        f"RESULT workload=gpt2 steps={a.steps} ms_per_step={(t1 - t0) * 1e3 / timed:.4f} ms_p50={p50:.4f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
