#!/usr/bin/env bash
# One criterion benchmark of this checkout and of an older commit, side by
# side: the two builds run alternately (old, new, new, old, ...) in one go,
# so that the machine's drift falls on both alike. Prints, per benchmark,
# each build's median time and the ratio new/old: its median over the
# rounds, and the lowest and highest round.
#
#   benches/compare_builds.sh OLD BENCH FILTER [ROUNDS]
#   benches/compare_builds.sh 8b13b1a emit 'record/' 6
#
# OLD is built in a worktree under target/compare (or $COMPARE_DIR), with
# its own target folder; both builds are release builds of the same bench
# target. Each round runs criterion with --measurement-time
# ${MEASURE_S:-3} s per benchmark.
set -euo pipefail

if [ $# -lt 3 ]; then
    echo "usage: $0 OLD_COMMIT BENCH FILTER [ROUNDS]" >&2
    exit 2
fi
old=$1 bench=$2 filter=$3 rounds=${4:-6}
case $rounds in '' | *[!0-9]*) echo "$0: ROUNDS is '$rounds', expected a number" >&2; exit 2 ;; esac
root=$(git rev-parse --show-toplevel)
work=${COMPARE_DIR:-$root/target/compare}
mkdir -p "$work"
old_rev=$(git -C "$root" rev-parse --short "$old^{commit}" 2>/dev/null) || {
    echo "$0: '$old' is not a commit of this repository" >&2
    exit 2
}
new_rev=$(git -C "$root" rev-parse --short HEAD)
git -C "$root" diff --quiet HEAD || new_rev="$new_rev+changes"
src_old=$work/src-$old_rev
if [ ! -d "$src_old" ]; then
    git -C "$root" worktree add --detach "$src_old" "$old_rev" >/dev/null
fi

# The bench executable of the checkout in $1, built into target folder $2.
executable() {
    (cd "$1" && CARGO_TARGET_DIR=$2 cargo bench -p gpu-trace-benches --bench "$bench" \
        --no-run --message-format=json 2>/dev/null) |
        python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == sys.argv[1] and m.get("executable"):
        print(m["executable"])
' "$bench" | tail -1
}

echo "building $bench at $old_rev and at $new_rev (this checkout) ..." >&2
exe_old=$(executable "$src_old" "$work/target-old")
exe_new=$(executable "$root" "${CARGO_TARGET_DIR:-$root/target}")
[ -x "$exe_old" ] && [ -x "$exe_new" ] || {
    echo "$0: could not build the $bench bench of both builds" >&2
    exit 1
}

out=$work/rounds.txt
: >"$out"
run() { # label executable: criterion's median of each benchmark, in ns
    local home=$work/criterion-$1
    rm -rf "$home"
    CRITERION_HOME=$home "$2" --bench "$filter" --noplot --warm-up-time 1 \
        --measurement-time "${MEASURE_S:-3}" >/dev/null 2>&1
    python3 -c '
import json, pathlib, sys
home, label, rnd = sys.argv[1:]
for e in sorted(pathlib.Path(home).glob("**/new/estimates.json")):
    name = json.loads((e.parent / "benchmark.json").read_text())["full_id"]
    ns = json.loads(e.read_text())["median"]["point_estimate"]
    print(label, rnd, name.replace(" ", "_"), ns)
' "$home" "$1" "$r" >>"$out"
}
for r in $(seq 1 "$rounds"); do
    echo "round $r of $rounds" >&2
    if [ $((r % 2)) -eq 1 ]; then
        run old "$exe_old"
        run new "$exe_new"
    else
        run new "$exe_new"
        run old "$exe_old"
    fi
done

python3 - "$out" "$old_rev" "$new_rev" <<'EOF'
import statistics, sys
from collections import defaultdict
path, old_rev, new_rev = sys.argv[1:]
t = defaultdict(dict)  # (bench, round) -> {label: ns}
for line in open(path):
    label, rnd, name, ns = line.split()
    t[(name, int(rnd))][label] = float(ns)
names = sorted({n for n, _ in t})
print(f"| benchmark | {old_rev} ns | {new_rev} ns | new/old: median (lowest-highest round) | rounds |")
print("|---|---:|---:|---|---:|")
for n in names:
    pairs = [v for (m, _), v in sorted(t.items()) if m == n and len(v) == 2]
    if not pairs:
        continue
    ratios = sorted(p["new"] / p["old"] for p in pairs)
    o = statistics.median(p["old"] for p in pairs)
    w = statistics.median(p["new"] for p in pairs)
    print(f"| {n} | {o:.2f} | {w:.2f} | {statistics.median(ratios):.3f} "
          f"({ratios[0]:.3f}-{ratios[-1]:.3f}) | {len(pairs)} |")
EOF
