"""Runs a rocprofiler-sim program from Python: the simulator (loaded with
ctypes.PyDLL, so that the call keeps the GIL) runs the scenario's first
thread on this thread, under these frames; its other threads are its own.

    python hip_callsites.py SPEC.json REPORT.json
"""

import ctypes
import os
import sys

LIB = ctypes.PyDLL(os.environ["ROCPROFILER_SIM_LIBRARY"], mode=os.RTLD_NOW | os.RTLD_GLOBAL)
OUT = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)
LIB.rocprofiler_sim_run.argtypes = [ctypes.c_char_p, OUT, ctypes.c_void_p]
REPORT = []


def receive(text, _data):
    REPORT.append(text.decode())


def main():
    with open(sys.argv[1], "rb") as f:
        spec = f.read()
    rc = LIB.rocprofiler_sim_run(spec, OUT(receive), None)  # site:run
    assert rc == 0, REPORT
    with open(sys.argv[2], "w") as f:
        f.write(REPORT[0])


main()  # site:module
