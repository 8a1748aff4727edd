# shellcheck shell=bash disable=SC2034,SC2154 # sets $by; $w and $bin come from the script
# Sourced by run.sh and replay.sh (after setting $bin and $w): reading
# per-kernel counters back out of a trace, through Perfetto's trace
# processor when there is one (BIN/trace_processor_shell, or GPU_TRACE_TP;
# no package registry ships it), else through `gpu-trace stats --json`.
#
#   q TRACE             CSV kernel,ts,metric,value: one row per profiled
#                       launch and metric (trace processor), or per kernel
#                       name and metric with the mean over its launches
#                       (gpu-trace stats); compare.py $by pairs either with
#                       ncu's launches
#   samples TRACE [M]   profiled kernels per metric (with M: the number for
#                       the metric whose name holds M)
#   tpstats TRACE       the trace processor's non-zero sorter, loss and
#                       error stats, or "skipped (no trace processor)"
#   kernels TRACE       kernels by name and count
tp="${GPU_TRACE_TP:-$bin/trace_processor_shell}"; [ -x "$tp" ] || tp=""
by=""; [ -n "$tp" ] || by=--by-name
[ -n "$tp" ] || echo "note: no trace processor: counters are read with gpu-trace stats, as each kernel name's mean"

q() {
    if [ -n "$tp" ]; then
        cat >"$w/q.sql" <<'SQL'
select s.name as kernel, s.ts as ts, t.name as metric, c.value as value
from gpu_slice s join counter c on c.ts = s.ts join track t on c.track_id = t.id
order by s.ts, t.name;
SQL
        "$tp" -q "$w/q.sql" "$1" 2>/dev/null | grep -v '^\[' | sed 's/^"//; s/"$//; s/","/,/g' | sed 's/"//g'
        return
    fi
    "$bin/gpu-trace" stats --json --report counters "$1" 2>/dev/null | python3 -c '
import csv, json, sys
out = csv.writer(sys.stdout)
out.writerow(["kernel", "ts", "metric", "value"])
try:
    rows = json.load(sys.stdin).get("counters_by_kernel") or []
except ValueError:
    rows = []
names = []
for r in rows:
    k = r.get("kernel") or ""
    if k not in names:
        names.append(k)
    out.writerow([k, names.index(k), r["name"], r["mean"]])'
}

samples() {
    if [ -n "$tp" ]; then
        if [ -n "${2:-}" ]; then q "$1" | grep -c "$2"; else q "$1" | tail -n +2 | cut -d, -f3 | sort | uniq -c | tr '\n' ' '; echo; fi
        return
    fi
    "$bin/gpu-trace" stats --json --report counters "$1" 2>/dev/null | python3 -c '
import json, sys
try:
    rows = json.load(sys.stdin).get("counters") or []
except ValueError:
    rows = []
m = sys.argv[1]
if m:
    print(sum(r["kernels"] for r in rows if m in r["name"]))
else:
    print(" ".join("%d %s" % (r["kernels"], r["name"]) for r in rows) or "none")' "${2:-}"
}

tpstats() {
    [ -n "$tp" ] || { echo "skipped (no trace processor)"; return; }
    echo "select name, idx, value from stats where value > 0 and (name like 'sorter%' or name like '%lost%' or name like '%drop%' or severity in ('error','data_loss'));" >"$w/st.sql"
    "$tp" -q "$w/st.sql" "$1" 2>/dev/null | grep -v '^\[' | tail -n +2 | tr '\n' ' '; echo
}

kernels() {
    if [ -n "$tp" ]; then
        echo "select name, count(*) from gpu_slice group by 1 order by 2 desc;" >"$w/k.sql"
        "$tp" -q "$w/k.sql" "$1" 2>/dev/null | grep -v '^\[' | tail -n +2 | tr '\n' ' '; echo
        return
    fi
    "$bin/gpu-trace" stats --json --report kernels "$1" 2>/dev/null | python3 -c '
import json, sys
try:
    rows = json.load(sys.stdin).get("kernels") or []
except ValueError:
    rows = []
print(" ".join("%s=%d" % (r["name"], r["count"]) for r in rows) or "none")'
}
