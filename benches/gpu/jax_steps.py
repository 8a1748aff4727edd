"""A small JAX training loop: jitted steps (XLA may run them as CUDA graphs),
host-to-device transfers every step, including a scalar and an empty array.

    python3 jax_steps.py [--steps N]

Prints `RESULT workload=jax_steps steps=N` when done.
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    a = ap.parse_args()
    key = jax.random.PRNGKey(0)
    k1, k2 = jax.random.split(key)
    params = {
        "w1": jax.random.normal(k1, (256, 512)) * 0.05,
        "w2": jax.random.normal(k2, (512, 10)) * 0.05,
    }

    def loss(p, x, y):
        h = jnp.tanh(x @ p["w1"])
        logits = h @ p["w2"]
        return jnp.mean((logits - y) ** 2)

    @jax.jit
    def step(p, x, y, lr):
        g = jax.grad(loss)(p, x, y)
        return jax.tree_util.tree_map(lambda w, d: w - lr * d, p, g)

    rng = np.random.default_rng(0)
    for _ in range(a.steps):
        x = jax.device_put(rng.standard_normal((64, 256), dtype=np.float32))
        y = jax.device_put(rng.standard_normal((64, 10), dtype=np.float32))
        lr = jax.device_put(np.float32(0.01))
        _ = jax.device_put(np.zeros((0, 4), dtype=np.float32))
        params = step(params, x, y, lr)
    jax.block_until_ready(params)
    print(f"RESULT workload=jax_steps steps={a.steps}", flush=True)


if __name__ == "__main__":
    main()
