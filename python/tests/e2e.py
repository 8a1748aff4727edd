"""The installed wheel end to end (run by e2e.sh, with the virtualenv's
Python, no Rust on PATH):

    python e2e.py lists DIR     the checks below; traces and the expected
                                tables go into DIR
    python e2e.py pandas DIR    the same traces read as DataFrames

- `gpu-trace --version`, `gpu_trace.__version__` and the workspace's
  Cargo.toml agree;
- `gpu-trace check` runs and finds the injection libraries in the wheel's
  install, with no path given: in the venv, and in installs with
  `pip install --target` and `--prefix`;
- `gpu-trace record -- python e2e_program.py schedule` under the fake CUDA
  driver and CUPTI (cupti-sim; GPU_TRACE_TEST_FAKE_CUPTI names it) records
  exactly the steps the program's schedule and window ask for, and
  gpu_trace.load() reads exactly those kernels and ranges;
- `... start-early`: gpu_trace.start() before CUDA starts records from the
  start;
- c_api_program.c, compiled against the installed package's gpu_trace.h
  (strict C99, and as C++), records through the header's gpu_trace_load()
  exactly the kernels of its window;
- the package's unit tests (test_*.py) pass.
"""

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

import gpu_trace

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGRAM = os.path.join(HERE, "e2e_program.py")
STEPS, PER_STEP, EXTRA = 8, 3, 5

# What each run must hold: kernel (demangled) name -> count, and the ranges
# in order.
EXPECTED = {
    "schedule": {
        "kernels": {"step2()": PER_STEP, "step3()": PER_STEP, "step6()": PER_STEP,
                    "step7()": PER_STEP, "extra()": EXTRA},
        "ranges": ["forward 2", "forward 3", "forward 6", "forward 7"],
        "copies": 4,
    },
    "start-early": {
        "kernels": {"step%d()" % i: PER_STEP for i in range(STEPS)},
        "ranges": ["forward %d" % i for i in range(STEPS)],
        "copies": STEPS,
    },
}


def fail(msg):
    sys.exit("e2e: FAILED: " + msg)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def check_versions():
    out = run(["gpu-trace", "--version"]).stdout.strip()
    cargo = open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8").read()
    workspace = re.search(r'^\[workspace\.package\][^\[]*?^version\s*=\s*"([^"]+)"',
                          cargo, re.M | re.S).group(1)
    by_module = run([sys.executable, "-m", "gpu_trace", "--version"]).stdout.strip()
    if out != "gpu-trace " + workspace or by_module != out or gpu_trace.__version__ != workspace:
        fail("versions disagree: `%s`, `python -m gpu_trace`: `%s`, gpu_trace.__version__ %s, "
             "Cargo.toml %s" % (out, by_module, gpu_trace.__version__, workspace))
    print("e2e: version %s (gpu-trace --version, python -m gpu_trace --version, "
          "gpu_trace.__version__, Cargo.toml)" % workspace)


def check_no_rust():
    for tool in ("cargo", "rustc", "rustup"):
        if shutil.which(tool):
            fail("%s is on PATH (%s): the wheel must work without Rust" % (tool, shutil.which(tool)))


def check_check(exe="gpu-trace", libs=None):
    libs = libs or os.path.join(os.path.dirname(gpu_trace.__file__), "_lib")
    r = run([exe, "check"])
    # Without a GPU nothing can be traced: exit 1, after the report.
    if r.returncode not in (0, 1):
        fail("gpu-trace check exited %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    for lib in ("libgpu_trace_cuda.so", "libgpu_trace_hip.so"):
        want = "injection       " + os.path.realpath(os.path.join(libs, lib))
        if want not in r.stdout:
            fail("%s check did not find %s in the install:\n%s" % (exe, lib, r.stdout))
    print("e2e: %s check finds the libraries in %s" % (exe, libs))


def check_other_installs(out_dir):
    """`pip install --target DIR` (DIR/bin, DIR/gpu_trace) and `--prefix`."""
    whl = os.environ["GPU_TRACE_TEST_WHEEL"]
    for how in ("--target", "--prefix"):
        d = os.path.join(out_dir, "install" + how.replace("-", "_"))
        r = run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--ignore-installed",
                 "--disable-pip-version-check", how, d, whl])
        if r.returncode != 0:
            fail("pip install %s: %s" % (how, r.stderr))
        if how == "--target":
            libs = os.path.join(d, "gpu_trace", "_lib")
        else:
            py = "python%d.%d" % sys.version_info[:2]
            libs = os.path.join(d, "lib", py, "site-packages", "gpu_trace", "_lib")
        check_check(os.path.join(d, "bin", "gpu-trace"), libs)


def record(mode, out_dir):
    trace = os.path.join(out_dir, mode + ".pftrace")
    report = os.path.join(out_dir, mode + "-report.json")
    env = dict(os.environ)
    env["GPU_TRACE_CUPTI_PATH"] = os.environ["GPU_TRACE_TEST_FAKE_CUPTI"]
    env["CUPTI_SIM_REPORT"] = report
    r = run(["gpu-trace", "record", "-o", trace, "--", "python", PROGRAM, mode], env=env)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        fail("gpu-trace record -- python e2e_program.py %s exited %d" % (mode, r.returncode))
    foreign = [l for l in r.stderr.splitlines() if l.strip() and not l.startswith("gpu-trace:")]
    if foreign:
        fail("lines on stderr that are not gpu-trace's: %s" % foreign)
    with open(report, encoding="utf-8") as f:
        rep = json.load(f)
    if rep["initialize_injection"] != 1 or rep["violations"] or rep["records_undelivered"]:
        fail("the fake CUPTI reports: injection %s, violations %s, undelivered %s" % (
            rep["initialize_injection"], rep["violations"], rep["records_undelivered"]))
    return trace


def tables(t):
    """(kernel counts, ranges in time order, bytes of each copy, API calls)
    of a loaded trace."""
    if isinstance(t.kernels, list):
        kernels = collections.Counter(k["name"] for k in t.kernels)
        ranges = [r["name"] for r in sorted(t.ranges, key=lambda r: r["start_ns"])]
        copies = [m["bytes"] for m in t.memory if m["kind"] == "memcpy"]
    else:
        kernels = collections.Counter(t.kernels["name"])
        ranges = list(t.ranges.sort_values("start_ns")["name"])
        copies = list(t.memory[t.memory["kind"] == "memcpy"]["bytes"])
    return dict(kernels), ranges, copies, len(t.api)


def check_trace(mode, path, pandas):
    t = gpu_trace.load(path, pandas=pandas)
    kind = "DataFrame" if pandas else "list"
    if pandas and type(t.kernels).__name__ != "DataFrame":
        fail("load(pandas=True) gave %s" % type(t.kernels))
    if not pandas and not isinstance(t.kernels, list):
        fail("load(pandas=False) gave %s" % type(t.kernels))
    kernels, ranges, copies, api = tables(t)
    want = EXPECTED[mode]
    if kernels != want["kernels"]:
        fail("%s: kernels %s, expected exactly %s" % (mode, kernels, want["kernels"]))
    if ranges != want["ranges"]:
        fail("%s: ranges %s, expected %s" % (mode, ranges, want["ranges"]))
    if copies != [4096] * want["copies"]:
        fail("%s: copies of %s bytes, expected %d of 4096" % (mode, copies, want["copies"]))
    if api < sum(kernels.values()):
        fail("%s: %d API calls for %d kernels" % (mode, api, sum(kernels.values())))
    print("e2e: %s: %r as %ss: %d kernels, ranges %s, as asked" % (
        mode, t, kind, sum(kernels.values()), ranges))
    return t


def check_c_api(out_dir):
    """c_api_program.c against the installed header, as C and as C++."""
    for lang, cmd in (("c", ["cc", "-std=c99", "-pedantic"]),
                      ("c++", ["c++", "-x", "c++", "-std=c++17"])):
        exe = os.path.join(out_dir, "c_api_program-" + lang)
        r = run(cmd + ["-Wall", "-Wextra", "-Werror", "-I", gpu_trace.get_include(),
                       os.path.join(HERE, "c_api_program.c"), "-o", exe, "-ldl"])
        if r.returncode != 0:
            fail("compiling c_api_program.c as %s against gpu_trace.h:\n%s" % (lang, r.stderr))
        trace = os.path.join(out_dir, "c_api-%s.pftrace" % lang)
        env = dict(os.environ)
        env["GPU_TRACE_CUPTI_PATH"] = os.environ["GPU_TRACE_TEST_FAKE_CUPTI"]
        r = run(["gpu-trace", "record", "-o", trace, "--", exe], env=env)
        if r.returncode != 0:
            fail("c_api_program (%s) exited %d\n%s" % (lang, r.returncode, r.stderr))
        t = gpu_trace.load(trace, pandas=False)
        kernels, ranges, _, _ = tables(t)
        if kernels != {"inside()": 3} or ranges != ["c range"]:
            fail("c_api_program (%s): kernels %s, ranges %s; expected 3 inside(), c range"
                 % (lang, kernels, ranges))
    print("e2e: gpu_trace.h: a C and a C++ program record exactly their window's kernels")


def unit_tests():
    suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py")
    if not unittest.TextTestRunner(verbosity=1).run(suite).wasSuccessful():
        fail("unit tests")


def main():
    what, out_dir = sys.argv[1], sys.argv[2]
    if what == "lists":
        check_no_rust()
        check_versions()
        check_check()
        check_other_installs(out_dir)
        for mode in EXPECTED:
            path = record(mode, out_dir)
            check_trace(mode, path, pandas=False)
        check_c_api(out_dir)
        unit_tests()
    elif what == "pandas":
        for mode in EXPECTED:
            check_trace(mode, os.path.join(out_dir, mode + ".pftrace"), pandas=True)
    else:
        sys.exit("usage: e2e.py lists|pandas DIR")
    print("e2e: %s: ok" % what)


if __name__ == "__main__":
    main()
