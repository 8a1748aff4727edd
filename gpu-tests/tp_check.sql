-- gpu-tests/run.sh: what Perfetto's trace processor shows of a case's trace.
-- GPU work: render-stage slices on GPU tracks, without the GPU log lines
-- (which the trace processor also puts in gpu_slice).
select count(*) as gpu_work
from gpu_slice s join gpu_track t on s.track_id = t.id
where s.name not in ('INFO', 'WARNING', 'ERROR');
select name || '=' || value as problem
from stats where value > 0 and severity in ('error', 'data_loss');
