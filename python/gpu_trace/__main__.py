"""``python -m gpu_trace ...`` runs the ``gpu-trace`` executable of this package."""

import os
import sys

from ._exe import find_gpu_trace_bin


def main():
    exe = find_gpu_trace_bin()
    os.execv(exe, [exe, *sys.argv[1:]])


if __name__ == "__main__":
    main()
