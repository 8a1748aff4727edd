#!/usr/bin/env python3
"""Side by side: per-kernel counters in our trace and ncu's CSV, kernel by
kernel in launch order, or with --by-name each kernel name's mean over its
launches (for a trace read without Perfetto's trace processor, where
`gpu-trace stats --json` gives the counters per kernel name: run.sh writes
its counters_by_kernel means in the same CSV form).

    compare.py [--by-name] OURS.csv NCU.csv [KERNEL_REGEX]

OURS.csv: columns kernel, ts, metric, value (one row per kernel and metric).
Prints a markdown table: kernel, metric, ours, ncu, ours/ncu; and a last
line "worst: ..." with the largest relative difference per metric kind.
"""
import csv, re, sys
from collections import OrderedDict


def num(s):
    s = (s or "").replace(",", "").strip()
    try:
        return float(s)
    except ValueError:
        return None


def ours(path):
    kernels = OrderedDict()
    with open(path) as f:
        for row in csv.DictReader(f):
            key = (int(row["ts"]), row["kernel"])
            kernels.setdefault(key, {})[row["metric"]] = num(row["value"])
    return [(k[1], v) for k, v in kernels.items()]


def ncu(path):
    kernels = OrderedDict()
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]
    for row in csv.DictReader(lines):
        key = (int(row["ID"]), row["Kernel Name"])
        kernels.setdefault(key, {})[row["Metric Name"]] = num(row["Metric Value"])
    return [(k[1], v) for k, v in kernels.items()]


def short(name):
    return re.split(r"[(<]", name.strip())[0].split("::")[-1].strip() or name


def by_name(kernels):
    """Each kernel name's launches as one: the mean of each metric."""
    groups = OrderedDict()
    for name, values in kernels:
        for m, v in values.items():
            if v is not None:
                groups.setdefault(short(name), {}).setdefault(m, []).append(v)
    return [(n, {m: sum(vs) / len(vs) for m, vs in ms.items()}) for n, ms in groups.items()]


def main():
    args = [x for x in sys.argv[1:] if x != "--by-name"]
    a, b = ours(args[0]), ncu(args[1])
    pat = re.compile(args[2]) if len(args) > 2 else None
    if pat:
        a = [k for k in a if pat.search(k[0])]
        b = [k for k in b if pat.search(k[0])]
    if "--by-name" in sys.argv:
        # Paired by name: the two lists need not be in the same order.
        a, b = by_name(a), dict(by_name(b))
        a = [k for k in a if k[0] in b]
        b = [(n, b[n]) for n, _ in a]
    print(f"kernels: ours {len(a)}, ncu {len(b)}")
    print("| # | kernel | metric | gpu-trace | ncu | ratio |")
    print("|---|---|---|---|---|---|")
    worst = {}
    for i, ((na, va), (nb, vb)) in enumerate(zip(a, b)):
        for m in sorted(set(va) & set(vb)):
            x, y = va[m], vb[m]
            if x is None or y is None:
                continue
            r = x / y if y else (1.0 if x == 0 else float("inf"))
            print(f"| {i} | {short(na)} | {m} | {x:.6g} | {y:.6g} | {r:.4f} |")
            d = abs(r - 1.0)
            if d > worst.get(m, (0, ""))[0]:
                worst[m] = (d, f"{short(na)}#{i}")
    for m, (d, where) in sorted(worst.items()):
        print(f"worst: {m} {d * 100:.2f}% ({where})")


if __name__ == "__main__":
    main()
