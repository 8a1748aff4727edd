#!/usr/bin/env python3
"""The verdict of callsites_cost.sh: what Python call sites cost the
PyTorch and GPT-2 loops, and whether their matmul kernels name the model's
forward line.

    callsites_check.py [--workloads torch,gpt2] RESULTS.json [WORKLOAD=REPORT.json ...]

RESULTS.json is the harness's (modes baseline, gt_full, gt_python, each
repetition side by side): per workload, the step time of gt_python and
gt_full against the tool-free runs of the same repetition (geometric mean
of the ratios, 95% t interval), and gt_python against gt_full; the target
is gt_python at most 3% over gt_full.

Each REPORT.json is `gpu-trace stats --report python --format json` of one
traced run of WORKLOAD (torch or gpt2): of the matmul kernels (names with
gemm, cutlass, xmma, nvjet, gemv or cublas), those whose launch carried a
Python stack must have as innermost frame the model's forward line
(torch.nn.Linear.forward; for GPT-2 also transformers' Conv1D.forward).
PyTorch releases the GIL around its operators, so these stacks are read
by layout; the backward pass's kernels, launched by autograd's own
threads (thread states without Python frames), carry none.

Prints one `CALLSITES` line per report, one `COST` line per workload, and
`VERDICT PASS` or `VERDICT FAIL (reasons)`; exits 1 on FAIL.
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import interval  # noqa: E402

MATMUL = re.compile(r"gemm|cutlass|xmma|nvjet|gemv|cublas", re.I)
FORWARD = {
    "torch": [("Linear.forward", "torch/nn/modules/linear.py")],
    "gpt2": [("Linear.forward", "torch/nn/modules/linear.py"),
             ("Conv1D.forward", "transformers/pytorch_utils.py")],
}
TARGET = 1.03


def check_report(wl, path, fails):
    with open(path) as f:
        r = json.load(f)
    expected = FORWARD.get(wl, FORWARD["gpt2"])
    lines = []  # (ns, count, site, expected?)
    for row in r["by_line"]:
        ns = sum(k["total_ns"] for k in row["kernels"] if MATMUL.search(k["name"]))
        n = sum(k["count"] for k in row["kernels"] if MATMUL.search(k["name"]))
        if n:
            s = row["site"]
            ok = any(s["function"] == fn and s["file"].endswith(file) for fn, file in expected)
            lines.append((ns, n, f'{s["file"]}:{s["line"]} {s["function"]}', ok))
    total = sum(ns for ns, *_ in lines)
    good = sum(ns for ns, _, _, ok in lines if ok)
    print(f"CALLSITES {wl}: {r['attributed']} of {r['kernels']} kernels launched with a Python stack "
          f"({100.0 * r['attributed_ns'] / max(r['kernel_ns'], 1):.1f}% of kernel time); "
          f"matmul time with a stack: {total / 1e6:.3f} ms, {100.0 * good / max(total, 1):.1f}% of it on the model's forward line")
    for ns, n, site, ok in sorted(lines, reverse=True)[:5]:
        print(f"    {ns / 1e6:10.3f} ms {n:7d} matmul kernels  {site}{'' if ok else '   <- not a forward line'}")
    if r["attributed"] == 0:
        fails.append(f"{wl}: no launch carried a Python stack (PyTorch launches with the GIL released: "
                     f"see the LAYOUT line, the layout self-check must have matched)")
    elif total == 0:
        fails.append(f"{wl}: no matmul kernel's launch carried a Python stack")
    elif good < 0.9 * total:
        fails.append(f"{wl}: only {100.0 * good / total:.1f}% of the matmul time is on the forward line")


def check_cost(path, fails, expected):
    try:
        with open(path) as f:
            raw = json.load(f)["raw"]
    except (OSError, ValueError, KeyError) as e:
        fails.append(f"no harness results ({e})")
        return
    rows = {}
    for key, rs in raw.items():
        wl, mode = key.split("/", 1)
        for x in rs:
            if "value" in x:
                rows.setdefault((wl, mode), {})[x["rep"]] = x["value"]
    for wl in expected:
        if not any(w == wl for w, _ in rows):
            fails.append(f"{wl}: the harness measured no run of it")
    for wl in sorted({w for w, _ in rows}):
        base = rows.get((wl, "baseline"), {})
        full = rows.get((wl, "gt_full"), {})
        py = rows.get((wl, "gt_python"), {})

        def ratio(a, b):
            rs = [a[k] / b[k] for k in a if k in b]
            ci = interval(rs)
            if ci is None:
                return None, "n/a (fewer than 2 pairs)"
            g, lo, hi = ci
            return g, f"{100 * (g - 1):+.2f}% [{100 * (lo - 1):+.2f}%, {100 * (hi - 1):+.2f}%]"

        _, full_txt = ratio(full, base)
        _, py_txt = ratio(py, base)
        g, rel_txt = ratio(py, full)
        print(f"COST {wl}: gt_full vs tool-free {full_txt}; gt_python vs tool-free {py_txt}; "
              f"gt_python vs gt_full {rel_txt} (target <= +3%)")
        if g is None:
            fails.append(f"{wl}: no paired runs of gt_python and gt_full")
        elif g > TARGET:
            fails.append(f"{wl}: call sites cost {100 * (g - 1):.2f}% over full tracing (target 3%)")


def main():
    args = sys.argv[1:]
    expected = ["torch", "gpt2"]
    if args[:1] == ["--workloads"] and len(args) > 1:
        expected, args = args[1].split(","), args[2:]
    if not args:
        sys.exit(__doc__)
    fails = []
    check_cost(args[0], fails, expected)
    for arg in args[1:]:
        wl, path = arg.split("=", 1)
        try:
            check_report(wl, path, fails)
        except (OSError, ValueError, KeyError) as e:
            fails.append(f"{wl}: no python report ({e})")
    for wl in expected:
        if not any(a.startswith(wl + "=") for a in args[1:]):
            fails.append(f"{wl}: its traced run gave no python report")
    if fails:
        print("VERDICT FAIL (" + "; ".join(fails) + ")")
        sys.exit(1)
    print("VERDICT PASS")


if __name__ == "__main__":
    main()
