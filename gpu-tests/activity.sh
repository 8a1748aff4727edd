#!/usr/bin/env bash
# What gpu-trace adds to the GPU work, on the GPU machine: runs the cases
# that exercise it (alloc: device memory in use; managed: unified memory;
# multi_stream_sync: GPU waits; memops: copy engines) through run.sh, then
# shows what Perfetto's trace processor makes of each trace: the busy %
# counter tracks per GPU, each thread's "GPU wait" track, the process's
# "GPU Memory" steps and the unified-memory slices.
#
#   GPU_TRACE_BIN=gpu-tests/bin bash gpu-tests/activity.sh [--quick]
#
# Needs what run.sh needs; the trace-processor part needs
# $GPU_TRACE_BIN/trace_processor_shell (or GPU_TRACE_TP). Exit status: run.sh's.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${GPU_TESTS_WORK:-$(mktemp -d -t gpu-activity.XXXXXX)}"
export GPU_TESTS_WORK="$work"
bash "$here/run.sh" "$@" alloc managed multi_stream_sync memops
rc=$?
bin="${GPU_TRACE_BIN:-target/release}"
tp="${GPU_TRACE_TP:-$bin/trace_processor_shell}"
if [ ! -x "$tp" ]; then
    echo "no trace_processor_shell ($tp): not showing the trace processor's view"
    exit "$rc"
fi
q="$work/activity.sql"
cat >"$q" <<'SQL'
select 'busy' as what, k.name, k.gpu_id, count(c.id) as points,
       printf('%.2f', max(c.value)) as max_pct,
       printf('%.2f', sum(c.value) / count(c.id)) as mean_of_points
  from gpu_counter_track k join counter c on c.track_id = k.id
 where k.name like '% busy' group by k.id order by k.name, k.gpu_id;
select 'wait' as what, th.tid, th.name, count(c.id) as points,
       printf('%.2f', max(c.value)) as max_pct
  from thread_counter_track k join counter c on c.track_id = k.id
  join thread th using (utid) where k.name = 'GPU wait' group by k.id;
select 'memory' as what, t.name, extract_arg(t.dimension_arg_set_id, 'gpu') as gpu,
       group_concat(cast(c.value as int), ' ') as steps
  from track t join counter c on c.track_id = t.id
 where t.type = 'process_gpu_memory' group by t.id;
select 'uvm' as what, name, count(*) as n, sum(extract_arg(arg_set_id, 'bytes')) as bytes,
       group_concat(distinct extract_arg(arg_set_id, 'cause')) as causes
  from gpu_slice where name like 'UM %' group by name;
SQL
for c in alloc managed multi_stream_sync memops; do
    t="$work/$c.pftrace"
    [ -s "$t" ] || continue
    echo "== trace processor: $c"
    "$tp" -q "$q" "$t" 2>/dev/null | sed 's/^/   /'
done
exit "$rc"
