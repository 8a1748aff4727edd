"""Runs a command and prints its peak RSS and wall time to stderr, like
`/usr/bin/time -f 'MAXRSS_KB=%M WALL_S=%e'` (which not every machine has).

    python3 maxrss.py CMD ARGS...

Exits with the command's exit status (128+signal if it died of one).
"""
import os
import subprocess
import sys
import time

t0 = time.perf_counter()
p = subprocess.Popen(sys.argv[1:])
_, status, ru = os.wait4(p.pid, 0)
wall = time.perf_counter() - t0
sys.stderr.write(f"MAXRSS_KB={ru.ru_maxrss} WALL_S={wall:.2f}\n")
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
