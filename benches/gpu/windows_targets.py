#!/usr/bin/env python3
"""The recording windows' cost targets over the pairs of several harness runs.

Each harness repetition runs every mode next to its own tool-free run, so
repetitions from different harness runs pool: this reads their
results.json, pairs each mode's run with the tool-free run of the same
repetition and run, and prints per workload the tool-free spread, each
mode's paired ratio (geometric mean and 95% t interval) and the duty
cycle's target, 1% plus its traced share (window / period) of the full
cost.

    windows_targets.py [--duty 1s/20s] [--full OLD.json ...] RESULTS.json ...

--full takes only the full-tracing pairs (gt_full and its tool-free runs)
of an older run, e.g. one whose paused and duty modes predate a change that
full tracing does not see.
"""

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import interval, seconds  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duty", default="1s/20s", help="window/period the gt_duty runs used")
    ap.add_argument("--full", action="append", default=[], metavar="OLD.json", help="take only gt_full's pairs from this run")
    ap.add_argument("results", nargs="+")
    a = ap.parse_args()
    rows = {}  # (workload, mode) -> [(run, rep, value, row)]
    full_only = {}  # the same, from --full runs
    for i, path in enumerate(a.results + a.full):
        with open(path) as f:
            raw = json.load(f)["raw"]
        into = rows if i < len(a.results) else full_only
        for key, rs in raw.items():
            wl, mode = key.split("/", 1)
            if into is full_only and mode not in ("baseline", "gt_full"):
                continue
            for r in rs:
                if "value" in r:
                    into.setdefault((wl, mode), []).append((i, r["rep"], r["value"], r))
    w_s, every_s = (seconds(x) for x in a.duty.split("/"))
    share = w_s / every_s
    for wl in sorted({w for w, _ in rows}):
        base = {(i, rep): v for i, rep, v, _ in rows.get((wl, "baseline"), [])}
        if not base:
            continue
        bv = list(base.values())
        print(f"{wl}: {len(bv)} tool-free runs, {min(bv):.4g}-{max(bv):.4g}"
              + (f", CV {statistics.stdev(bv) / statistics.mean(bv):.1%}" if len(bv) > 1 else ""))
        ci = {}
        for mode in ("baseline_b", "gt_paused_ctl", "gt_paused_attached", "gt_duty", "gt_full"):
            rs = [v / base[(i, rep)] for i, rep, v, _ in rows.get((wl, mode), []) if (i, rep) in base]
            if mode == "gt_full":
                old = {(i, rep): v for i, rep, v, _ in full_only.get((wl, "baseline"), [])}
                rs += [v / old[(i, rep)] for i, rep, v, _ in full_only.get((wl, mode), []) if (i, rep) in old]
            ci[mode] = interval(rs)
            if ci[mode]:
                g, lo, hi = ci[mode]
                print(f"  {mode}: {g:.3f} ({lo:.3f}-{hi:.3f}) over {len(rs)} pairs")
        if ci.get("gt_full"):
            bound = 1.01 + share * (ci["gt_full"][0] - 1)
            verdict = ""
            if ci.get("gt_duty"):
                _, lo, hi = ci["gt_duty"]
                verdict = "; met" if hi <= bound else ("; missed" if lo > bound else "; not decided")
            print(f"  gt_duty target: at most {bound:.3f} (1% + {share:.0%} of full's {ci['gt_full'][0] - 1:+.1%}){verdict}")
        if ci.get("gt_paused_ctl") and len(bv) > 1:
            _, lo, hi = ci["gt_paused_ctl"]
            cv = statistics.stdev(bv) / statistics.mean(bv)
            if lo > 1:
                said = f"a cost of at least {lo - 1:+.1%} shown"
            elif hi < 1:
                said = "faster than tool-free (noise)"
            else:
                said = f"holds 1.0 (no cost shown), upper bound {hi - 1:+.1%}"
            print(f"  gt_paused_ctl: {said}; the tool-free runs vary by {cv:.1%} (CV)")


if __name__ == "__main__":
    main()
