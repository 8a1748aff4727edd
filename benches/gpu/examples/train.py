"""A small PyTorch training script, as a new user would trace first: a
transformer encoder on random tokens, AdamW, bf16 autocast. Prints the loss
every 10 steps and `EXPECT case=train steps=N`. Ctrl-C ends it cleanly."""
import argparse
import sys

import torch
import torch.nn as nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=50)
ap.add_argument("--tag", default="", help="a label to find this process by (unused)")
a = ap.parse_args()
torch.manual_seed(0)
dev = "cuda"
vocab, d, seq, batch = 8192, 512, 256, 16
model = nn.Sequential(
    nn.Embedding(vocab, d),
    nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 8, 4 * d, batch_first=True), 4),
    nn.Linear(d, vocab),
).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randint(0, vocab, (batch, seq), device=dev)
y = torch.randint(0, vocab, (batch, seq), device=dev)
done = 0
try:
    for step in range(a.steps):
        torch.cuda.nvtx.range_push(f"step {step}")
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x).view(-1, vocab), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.nvtx.range_pop()
        done += 1
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.3f}", flush=True)
except KeyboardInterrupt:
    torch.cuda.synchronize()
    print(f"interrupted after {done} steps", flush=True)
    sys.exit(130)
torch.cuda.synchronize()
print(f"EXPECT case=train steps={done}")
