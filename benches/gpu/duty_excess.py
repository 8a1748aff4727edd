#!/usr/bin/env python3
"""What a duty cycle's windows add to a training loop, measured inside the
process and over the whole period, not only the window.

Across processes this host's step times vary by 5-10%, far more than the
duty-cycle target's margin (1.7%), and ~80 pairs of processes would be
needed to place a cross-process ratio within it. Inside one process the
level is steady over seconds, so each window's cost can be read off the
loop's own progress: for a window [open, close),

    excess = (time from open - GAP to close + POST)
             - (steps started in that time) x (time per step in the quiet
               stretches just before and after)

This is not an in-process A/B of traced and untraced stretches, where a
window's records, processed after it closes, slow the untraced steps that
serve as its reference: here everything from the window's opening to POST
seconds after its close (the drain, the detach) counts as the window's, and
the reference is the quiet level around it: the mean of the REF seconds
before the opening (~13 s after the previous window's POST) and the AFTER
seconds after POST, so that a level drifting through the window cancels. `--profile` shows where the cost lands, to check POST.

The same arithmetic over a tool-free run at the same offsets into its loop
is the null control: it says how much such an excess varies with no tool.
The duty cycle's cost against a tool-free process is then the paused cost
(cross-process, the quiet stretches' level) times 1 + excess / period.

Inputs: a step log (`torch_mlp.py --step-log` / `gpt2_train.py
--step-log`: each step's start, then the loop's end, CLOCK_BOOTTIME ns, the
traces' clock) and the windows (`gpu-trace stats --json`'s
files[].windows.spans).

    duty_excess.py STEPS STATS_JSON [--every 20s] [--profile]
    duty_excess.py --pool results.json ...   (the harness's, --step-logs)
"""

import argparse
import bisect
import gzip
import json
import math
import os
import statistics
import sys

GAP_S = 0.25  # before the opening: the switch itself starts a little early
REF_S = 8.0  # the quiet stretch before a window that sets its reference
POST_S = 6.0  # after the closing: the drain, the detach (see --profile)
AFTER_S = 5.0  # the quiet stretch after POST, the reference's second half
# Two-sided 95% t quantiles by degrees of freedom.
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23, 12: 2.18, 15: 2.13, 20: 2.09, 30: 2.04}


def t95(df):
    """The 95% t quantile for `df` degrees of freedom: from the table, or
    the next smaller df in it (a slightly wider interval); 2.0 past 30."""
    return 2.0 if df > 30 else T95[max(k for k in T95 if k <= df)]


def seconds(v):
    """`1s`, `500ms`, `2m` in seconds."""
    for unit, f in (("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if v.endswith(unit):
            return float(v[: -len(unit)]) * f
    return float(v)


def load_steps(path):
    """Step starts and the loop's end, ns (the log as written, or gzipped:
    PATH.gz)."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        with gzip.open(path + ".gz", "rt") as f:
            return [int(x) for x in f.read().split()]
    with open(path) as f:
        return [int(x) for x in f.read().split()]


def windows_of_stats(stats):
    """Window spans, ns, from `gpu-trace stats --json` output."""
    spans = []
    for f in stats.get("files", []):
        w = f.get("windows") or {}
        spans += [tuple(s) for s in w.get("spans", [])]
    return sorted(spans)


def _at(steps, t):
    """Index of the first step starting at or after t (len - 1 past the end)."""
    return min(bisect.bisect_left(steps, t), len(steps) - 1)


def per_step(steps, a, b):
    """Seconds per step over whole steps inside [a, b), or None."""
    i, j = _at(steps, a), _at(steps, b)
    if j - i < 20:
        return None
    return (steps[j] - steps[i]) / (j - i) / 1e9


def level_before(steps, o, gap=GAP_S, ref=REF_S):
    """Seconds per step over the REF seconds that end GAP before `o`, or
    None where the loop had not begun."""
    a = o - int(gap * 1e9)
    return per_step(steps, a - int(ref * 1e9), a) if a - int(ref * 1e9) >= steps[0] else None


def excess(steps, spans, gap=GAP_S, ref=REF_S, post=POST_S, after=AFTER_S):
    """Each window inside the loop (with its references and POST inside it
    too): dict(open, s_per_step, steps, excess_s). The level is the mean of
    the REF seconds before and the AFTER seconds after, so that a level
    drifting steadily through the window cancels."""
    out = []
    lo, hi = steps[0], steps[-1]
    for o, c in spans:
        a, b = o - int(gap * 1e9), c + int(post * 1e9)
        r0, r1 = a - int(ref * 1e9), b + int(after * 1e9)
        if r0 < lo or r1 > hi:
            continue
        before, behind = per_step(steps, r0, a), per_step(steps, b, r1)
        if before is None or behind is None:
            continue
        sps = (before + behind) / 2
        i, j = _at(steps, a), _at(steps, b)
        took = (steps[j] - steps[i]) / 1e9
        out.append({"open": o, "s_per_step": sps, "steps": j - i, "excess_s": took - (j - i) * sps})
    return out


def profile(steps, spans, bin_s=0.5, before=2.0, after=POST_S + 2.0, gap=GAP_S, ref=REF_S):
    """Time per step in bins around each window's opening, over the
    window's reference; averaged over windows. [(offset s, ratio)]."""
    rows = {}
    for o, c in spans:
        sps = level_before(steps, o, gap, ref)
        if sps is None or c + int(after * 1e9) > steps[-1]:
            continue
        k = -before
        while k < (c - o) / 1e9 + after - 1e-9:
            x = per_step(steps, o + int(k * 1e9), o + int((k + bin_s) * 1e9))
            if x is not None:
                rows.setdefault(round(k, 3), []).append(x / sps)
            k += bin_s
    return [(k, statistics.mean(v), len(v)) for k, v in sorted(rows.items())]


def levels(duty, base, spans, gap=GAP_S, ref=REF_S):
    """A duty run's quiet levels against its paired tool-free run's at the
    same offsets into the loop (the REF seconds before each window): the
    level before the first window (the tool paused, CUPTI detached) over
    the tool-free run's, and each run's level before the later windows
    over its own before the first (what the windows leave behind). None
    without a first window's reference and a later one in both runs."""
    shift = base[0] - duty[0]
    pairs = [(level_before(duty, o, gap, ref), level_before(base, o + shift, gap, ref)) for o, _ in spans]
    if not pairs or None in pairs[0]:
        return None
    (d0, b0), later = pairs[0], [(d, b) for d, b in pairs[1:] if d is not None and b is not None]
    if not later:
        return None
    return {
        "paused": d0 / b0,
        "duty_later": statistics.mean(d for d, _ in later) / d0,
        "base_later": statistics.mean(b for _, b in later) / b0,
    }


def geomean(xs):
    return math.exp(statistics.mean(math.log(x) for x in xs))


def mean_ci(xs):
    """Mean and 95% t half-width (None below 2)."""
    if len(xs) < 2:
        return (xs[0] if xs else None), None
    return statistics.mean(xs), t95(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))


def shifted(spans, by):
    return [(o + by, c + by) for o, c in spans]


def pool(paths, every_s):
    """The harness's per-run excesses (duty runs, and tool-free runs at the
    paired duty run's offsets: the null control), pooled over its result
    files, by workload and mode."""
    ex, level, lv = {}, {}, {}
    for p in paths:
        with open(p) as f:
            raw = json.load(f)["raw"]
        for key, rows in raw.items():
            wl, mode = key.split("/", 1)
            for r in rows:
                if r.get("excess_s"):
                    ex.setdefault(wl, {}).setdefault(mode, []).extend(r["excess_s"])
                if r.get("level_ratio"):
                    level.setdefault((wl, mode), []).append(r["level_ratio"])
        # Levels before the windows, from the step logs kept beside.
        for key, rows in raw.items():
            wl, mode = key.split("/", 1)
            base = {r["rep"]: r for r in raw.get(f"{wl}/baseline", []) if r.get("step_log")}
            for r in rows:
                b = base.get(r["rep"])
                if mode == "baseline" or not (r.get("window_spans") and r.get("step_log") and b):
                    continue
                here = os.path.dirname(p)
                x = levels(load_steps(os.path.join(here, r["step_log"])),
                           load_steps(os.path.join(here, b["step_log"])), r["window_spans"])
                if x:
                    lv.setdefault((wl, mode), []).append(x)
    lines = []
    for wl, modes in sorted(ex.items()):
        lines.append(f"{wl}: excess over the quiet level, per window, whole period counted ({every_s:g} s):")
        for mode, xs in sorted(modes.items()):
            m, h = mean_ci(xs)
            hs = f" +- {h * 1e3:.0f}" if h is not None else ""
            name = "tool-free (null)" if mode == "baseline" else mode
            lines.append(f"  {name}: {m * 1e3:+.0f}{hs} ms over {len(xs)} windows = {m / every_s:+.2%} of the period")
        n = modes.get("baseline")
        for mode, d in sorted(modes.items()):
            if mode == "baseline" or not n:
                continue
            md, hd = mean_ci(d)
            mn, hn = mean_ci(n)
            h = math.hypot(hd or 0, hn or 0) / every_s
            lines.append(f"  {mode} - null: {(md - mn) / every_s:+.2%} (+- {h:.2%}) of the period")
            if level.get((wl, mode)):
                g = math.exp(statistics.mean(math.log(x) for x in level[(wl, mode)]))
                lines.append(f"  {mode}: quiet level / paired tool-free run's (cross-process): {g:.3f} over {len(level[(wl, mode)])} pairs")
            if lv.get((wl, mode)):
                xs = lv[(wl, mode)]
                each = ", ".join(f"{x['paused']:.3f}" for x in xs)
                lines.append(f"  {mode}: before its first window (paused) / tool-free at the same offsets: "
                             f"{geomean([x['paused'] for x in xs]):.3f} over {len(xs)} pairs ({each})")
                lines.append(f"  level before the later windows / before the first: {mode} "
                             f"{geomean([x['duty_later'] for x in xs]):.3f}, tool-free {geomean([x['base_later'] for x in xs]):.3f}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("steps", nargs="?")
    ap.add_argument("stats", nargs="?", help="gpu-trace stats --json output of the run's trace")
    ap.add_argument("--every", default="20s", help="the duty cycle's period (to express the excess as its share)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--pool", nargs="+", metavar="RESULTS_JSON")
    a = ap.parse_args()
    every_s = seconds(a.every)
    if a.pool:
        print(pool(a.pool, every_s))
        return
    if not (a.steps and a.stats):
        ap.error("STEPS and STATS_JSON, or --pool")
    steps = load_steps(a.steps)
    with open(a.stats) as f:
        spans = windows_of_stats(json.load(f))
    for w in excess(steps, spans):
        print(f"window at {(w['open'] - steps[0]) / 1e9:7.2f} s into the loop: {w['excess_s'] * 1e3:+8.1f} ms over {w['steps']} steps ({w['s_per_step'] * 1e3:.3f} ms/step before it)")
    if a.profile:
        for k, r, n in profile(steps, spans):
            print(f"  {k:+6.2f} s: {r:.3f} ({n} windows)")


if __name__ == "__main__":
    sys.exit(main())
