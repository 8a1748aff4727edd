"""Launches kernels through the fake CUDA driver (cupti-sim, loaded with
ctypes.PyDLL, so that each call keeps the GIL as a Python extension's
would) from known lines: a nested call chain on the main thread, a second
thread, and one launch through ctypes.CDLL, which releases the GIL, as
PyTorch's operators do: its frames are read by layout. Each line the test checks ends with a `# site:NAME`
comment; the test finds the lines by those names."""

import ctypes
import json
import os
import threading

PATH = os.environ["GPU_TRACE_CUPTI_PATH"]
# As an application linked against libcuda has the driver: global.
HELD = ctypes.PyDLL(PATH, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
RELEASED = ctypes.CDLL(PATH, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
for lib in (HELD, RELEASED):
    lib.cupti_sim_start.argtypes = [ctypes.c_char_p]
    lib.cupti_sim_ops.argtypes = [ctypes.c_char_p]

# Each kernel's GPU time, us: the report must give each line exactly this.
KERNELS = {"attn": 30, "mlp": 50, "loss": 10, "side": 20, "nogil": 40, "late": 5}


def ops(*o):
    return json.dumps(list(o)).encode()


def check(rc):
    assert rc == 0, "cupti_sim_ops: %d" % rc


def launch(kernel):
    return {"launch": {"kernel": kernel, "grid": [4, 1, 1], "block": [64, 1, 1], "stream": 1}}


def attention():
    check(HELD.cupti_sim_ops(ops(launch("attn"))))  # site:attention


def mlp():
    check(HELD.cupti_sim_ops(ops(launch("mlp"), launch("mlp"))))  # site:mlp


def layer():
    attention()  # site:layer_attention
    mlp()  # site:layer_mlp


def model(layers):
    for _ in range(layers):
        layer()  # site:model_layer
    check(HELD.cupti_sim_ops(ops(launch("loss"), {"stream_sync": {"stream": 1}})))  # site:loss


def worker():
    check(HELD.cupti_sim_ops(ops(launch("side"))))  # site:worker


def main():
    kernels = [{"name": k, "symbol": "_Z%d%sv" % (len(k), k), "registers": 32,
                "duration_us": us} for k, us in KERNELS.items()]
    if os.environ.get("CALLSITES_ONLY_RELEASED"):
        # No call holds the GIL, as in a PyTorch program: the first launch
        # asks the main thread (this one) to check the layout when it next
        # runs Python code, and carries no stack; the next one has it.
        rc = RELEASED.cupti_sim_start(json.dumps({"kernels": kernels, "threads": []}).encode())
        assert rc == 0, "cupti_sim_start: %d" % rc
        released()
        check(RELEASED.cupti_sim_ops(ops(launch("late"))))  # site:late
        return
    rc = HELD.cupti_sim_start(json.dumps({"kernels": kernels, "threads": []}).encode())
    assert rc == 0, "cupti_sim_start: %d" % rc
    model(3)  # site:main_model
    t = threading.Thread(target=worker, name="worker")
    t.start()
    t.join()
    released()  # site:main_released


def released():
    # After the launches above (made with the GIL, which let the layout
    # self-check run), one with the GIL released: read by layout.
    check(RELEASED.cupti_sim_ops(ops(launch("nogil"), {"stream_sync": {"stream": 1}})))  # site:nogil


main()  # site:module
