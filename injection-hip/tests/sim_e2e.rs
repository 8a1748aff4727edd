//! End to end: the simulated rocprofiler-sdk (`rocprofiler-sim`) loads `libgpu_trace_hip.so`
//! and runs a scripted HIP program; the trace file it leaves is decoded with the core's reader
//! and compared with the script. Each run is a fresh child process, like a real application.

use gpu_trace_reader::{ArgVal, GpuEvent, Stage, Trace};
use rocprofiler_sim::scenario::{AgentKind, CopyKind, Op};
use rocprofiler_sim::{Outcome, RunSpec, Scenario};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

rocprofiler_sim::child_entry!();

const METRICS: &str =
    "SQ_WAVES, SQ_INSTS_VALU;TA_BUSY_max,NOT_A_COUNTER,TA_BUSY_min,GRBM_GUI_ACTIVE,ALSO_MISSING";

/// The hardware counters of a trace: not the busy % gpu-trace derives from
/// the activity itself (core's tests check those).
fn hardware_counters(t: &Trace) -> impl Iterator<Item = &gpu_trace_reader::CounterValue> {
    t.counters.iter().filter(|c| !c.name.ends_with(" busy"))
}

fn tool() -> PathBuf {
    rocprofiler_sim::host::artifact("gpu_trace_hip").expect("libgpu_trace_hip.so built")
}

fn scenario() -> Scenario {
    Scenario::from_json(include_str!("scenarios/two_archs.json")).expect("valid scenario")
}

/// Removes a run's directory unless `GPU_TRACE_KEEP` is set (to look at the traces).
fn cleanup(dir: &Path) {
    if std::env::var_os("GPU_TRACE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(dir);
    } else {
        eprintln!("kept {}", dir.display());
    }
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-hip-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `spec` in a child process, failing the test if it does not finish in time (a hang at
/// exit is a bug this suite looks for).
fn run(spec: RunSpec) -> Outcome {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(rocprofiler_sim::host::run_isolated(&spec));
    });
    let out = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the traced program did not finish within 120 s")
        .expect("simulator run");
    assert!(
        out.report.configure_called,
        "the simulator did not run: {}",
        out.stderr
    );
    out
}

/// The spec of a standard run: trace file in `dir`, metrics set, everything recorded.
fn spec_in(dir: &Path, scenario: Scenario) -> RunSpec {
    RunSpec::new(tool(), scenario)
        .env(
            "INJECTION_OUTPUT",
            dir.join("trace.pftrace").display().to_string(),
        )
        .env("INJECTION_METRICS", METRICS)
        .env("INJECTION_TRACE", "all")
        // Telemetry has its own suite (telemetry_e2e.rs); these runs have no sysfs tree.
        .env("INJECTION_TELEMETRY_PERIOD", "off")
        .env("RUST_BACKTRACE", "0")
}

/// Lines this library printed.
fn our_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("gpu-trace"))
        .collect()
}

use gpu_trace_testkit::{EXIT_FLUSH_FAILURES, tp_check, tp_tables, tp_wait_arrows, validate};

// ------------------------------------------------------------------ what the script implies

/// One scripted launch.
#[derive(Debug, Clone)]
struct Launch {
    symbol: String,
    device: u32,
    grid: [u32; 3],
    block: [u32; 3],
    lds: u64,
    counters: BTreeMap<String, Vec<f64>>,
}

/// GPU work a scripted thread submits: `(stage name, device)`, sorted.
type Work = Vec<(String, u32)>;

struct Script {
    launches: Vec<Launch>,
    /// Per scripted thread.
    work: Vec<Work>,
}

fn copy_name(kind: CopyKind) -> &'static str {
    match kind {
        CopyKind::H2D => "Memcpy HtoD",
        CopyKind::D2H => "Memcpy DtoH",
        CopyKind::D2D => "Memcpy DtoD",
    }
}

fn script(s: &Scenario) -> Script {
    fn walk(s: &Scenario, ops: &[Op], launches: &mut Vec<Launch>, work: &mut Work) {
        for op in ops {
            match op {
                Op::Launch {
                    kernel,
                    grid,
                    block,
                    shared_mem,
                    device,
                    counters,
                    ..
                } => {
                    let k = s.kernels.iter().find(|k| &k.name == kernel).unwrap();
                    launches.push(Launch {
                        symbol: k.symbol.clone(),
                        device: *device as u32,
                        grid: *grid,
                        block: *block,
                        lds: u64::from(k.lds + shared_mem),
                        counters: counters.clone(),
                    });
                    work.push((kernel.clone(), *device as u32));
                }
                Op::Memcpy { kind, device, .. } => {
                    work.push((copy_name(*kind).to_owned(), *device as u32))
                }
                Op::Repeat { times, ops } => {
                    for _ in 0..*times {
                        walk(s, ops, launches, work);
                    }
                }
                _ => {}
            }
        }
    }
    let mut launches = Vec::new();
    let mut work = Vec::new();
    for t in &s.threads {
        let mut w = Vec::new();
        walk(s, &t.ops, &mut launches, &mut w);
        w.sort();
        work.push(w);
    }
    Script { launches, work }
}

/// The value a dispatch must show for `name` on a GPU that offers it: the instances' values
/// combined by the name's rule (absent values read 0, as the simulator reports them): largest
/// for `*_max` and the GRBM clock counters, smallest for `*_min`, else the sum.
fn expected_value(name: &str, values: Option<&Vec<f64>>, instances: usize) -> f64 {
    let v = values.cloned().unwrap_or_else(|| vec![0.0; instances]);
    if name.ends_with("_max") || name.starts_with("GRBM_") {
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    } else if name.ends_with("_min") {
        v.iter().copied().fold(f64::INFINITY, f64::min)
    } else {
        v.iter().sum()
    }
}

// ------------------------------------------------------------------------------- the tests

#[test]
fn every_scripted_event_is_in_the_trace_once_and_correct() {
    let dir = tmpdir("full");
    let sc = scenario();
    let expected = sc.expected();
    let out = run(spec_in(&dir, sc.clone()));
    let r = &out.report;

    // The SDK saw a well-behaved tool.
    assert!(r.configure_accepted && r.client_id_intact, "{r:#?}");
    assert_eq!(r.client_name.as_deref(), Some("gpu-trace"));
    assert_eq!(r.initialize_status, Some(0));
    assert_eq!(r.finalize_calls, 1);
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
    assert_eq!(r.undelivered_records, 0);

    // One line for each unknown counter, naming it alone; nothing else printed.
    let lines = our_lines(&out.stderr);
    assert_eq!(lines.len(), 2, "{}", out.stderr);
    for (line, name) in lines.iter().zip(["\"NOT_A_COUNTER\"", "\"ALSO_MISSING\""]) {
        assert!(
            line.contains(name)
                && line.contains("gfx90a, gfx942")
                && line.matches('"').count() == 2,
            "{line}"
        );
    }

    let path = dir.join("trace.pftrace");
    let t = Trace::open(&path).expect("trace file");
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.drop_counts(), Some(vec![]), "nothing dropped");
    assert_eq!(
        t.data_sources,
        vec!["track_event", "gpu.renderstages.amd", "gpu.counters.amd"]
    );
    let s = script(&sc);
    let by_id = t.gpu_events_by_id();
    assert_eq!(by_id.len(), t.gpu_events.len(), "event ids are unique");

    check_devices(&t);
    let kernels: Vec<&GpuEvent> = t.kernels().collect();
    check_kernels(&t, &kernels, &s, &sc, &expected);
    check_copies(&t, &expected);
    check_api(&t, r, &s, &expected);
    check_markers(&t);
    check_counters(&t, &kernels, &s, &sc);
    check_in_tp(&path, &t, r, &s, &sc, &expected);

    validate(&path);
    cleanup(&dir);
}

/// A drawn track-event slice the script implies: (name, depth, parent range, instant, on a thread
/// track).
type Drawn = (String, u32, String, bool, bool);

/// The slices the script draws, by count: each thread's HIP calls (hipSetDevice is followed,
/// not drawn) and roctx pushes nest in the ranges pushed before them; start/stop ranges sit
/// on a process track.
fn drawn(s: &Scenario) -> BTreeMap<Drawn, u64> {
    fn walk(ops: &[Op], stack: &mut Vec<String>, out: &mut BTreeMap<Drawn, u64>) {
        for op in ops {
            let (depth, parent) = (
                stack.len() as u32,
                stack.last().cloned().unwrap_or_default(),
            );
            let mut add = |name: &str, instant: bool, thread: bool| {
                let key = if thread {
                    (name.to_owned(), depth, parent.clone(), instant, true)
                } else {
                    (name.to_owned(), 0, String::new(), instant, false)
                };
                *out.entry(key).or_default() += 1;
            };
            match op {
                Op::Malloc { .. } => add("hipMalloc", false, true),
                Op::Free { .. } => add("hipFree", false, true),
                Op::Memcpy { stream: None, .. } => add("hipMemcpy", false, true),
                Op::Memcpy { .. } => add("hipMemcpyAsync", false, true),
                Op::Launch { .. } => add("hipLaunchKernel", false, true),
                Op::StreamSync { .. } => add("hipStreamSynchronize", false, true),
                Op::DeviceSync { .. } => add("hipDeviceSynchronize", false, true),
                Op::EventRecord { .. } => add("hipEventRecord", false, true),
                Op::EventSync { .. } => add("hipEventSynchronize", false, true),
                Op::Mark { message } => add(message, true, true),
                Op::RangePush { message } => {
                    add(message, false, true);
                    stack.push(message.clone());
                }
                Op::RangePop => {
                    stack.pop();
                }
                Op::RangeStart { message, .. } => add(message, false, false),
                Op::RangeStop { .. }
                | Op::SleepUs { .. }
                | Op::Announce { .. }
                | Op::WaitFile { .. }
                | Op::WaitTraced { .. }
                | Op::GpuTrace { .. } => {}
                Op::Repeat { times, ops } => {
                    for _ in 0..*times {
                        walk(ops, stack, out);
                    }
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    for t in &s.threads {
        walk(&t.ops, &mut Vec::new(), &mut out);
    }
    out
}

/// What the trace processor (the UI's engine) shows of the scripted program: the numbers the
/// script implies, through its tables. Skipped (said on stderr) without a trace processor.
fn check_in_tp(
    path: &Path,
    t: &Trace,
    r: &rocprofiler_sim::Report,
    s: &Script,
    sc: &Scenario,
    expected: &rocprofiler_sim::Expected,
) {
    let Some(seen) = tp_check(path, t, &[]) else {
        return;
    };
    assert_eq!(seen.unfinished, 0, "slices that never end");

    let tables = tp_tables(
        path,
        "create perfetto view rs as
           select s.id, s.ts, s.dur, s.name, s.arg_set_id as a, k.name as queue,
                  extract_arg(k.dimension_arg_set_id, 'gpu') as gpu
             from gpu_slice s join track k on s.track_id = k.id
            where k.type = 'gpu_render_stage';
         select ifnull(extract_arg(a, 'kernel_name'), name), count(*), sum(dur > 0),
                sum(extract_arg(a, 'device') = gpu), sum(queue like 'GPU ' || gpu || ' · stream %'),
                ifnull(sum(extract_arg(a, 'bytes')), 0)
           from rs group by 1;
         select extract_arg(a, 'kernel_name'), gpu,
                extract_arg(a, 'launch.grid_size.x'), extract_arg(a, 'launch.grid_size.y'),
                extract_arg(a, 'launch.grid_size.z'), extract_arg(a, 'launch.workgroup_size.x'),
                extract_arg(a, 'launch.workgroup_size.y'), extract_arg(a, 'launch.workgroup_size.z'),
                extract_arg(a, 'vgpr_count'), extract_arg(a, 'sgpr_count'),
                extract_arg(a, 'agpr_count'), extract_arg(a, 'lds_size'),
                extract_arg(a, 'lds_size_static'), extract_arg(a, 'scratch_size'),
                extract_arg(a, 'arch'), queue
           from rs where extract_arg(a, 'kernel_name') is not null;
         select s.name, count(*), sum(n = 1) from (
           select s.name, (select count(*) from flow f join rs g on f.slice_in = g.id
                            where f.slice_out = s.id and g.ts >= s.ts) as n
             from slice s
            where extract_arg(s.arg_set_id,
                              'gpu_correlation.render_stage_submission_event_ids[0]') is not null
              and (select count(*) from flow f where f.slice_out = s.id) = 1) s
          group by 1;
         select count(*), sum(n = 1) from (
           select (select count(*) from flow f join slice o on f.slice_out = o.id
                    where f.slice_in = g.id and o.name like 'hip%' and o.ts <= g.ts) as n
             from rs g);
         select i.name, o.name, o.gpu, o.ts + o.dur <= i.ts + i.dur
           from flow f join rs o on f.slice_out = o.id join slice i on f.slice_in = i.id;
         select count(*) from flow f
          where f.slice_out not in (select id from rs) and f.slice_in not in (select id from rs);
         select k.name, k.gpu_id, ifnull(k.unit, ''), k.description, count(c.id)
           from gpu_counter_track k left join counter c on c.track_id = k.id group by k.id;
         select extract_arg(g.a, 'kernel_name'), g.gpu, g.ts, k.name, printf('%.17g', c.value)
           from counter c join gpu_counter_track k on c.track_id = k.id
           join rs g on g.gpu = k.gpu_id and g.ts = c.ts
          where c.value != 0 and extract_arg(g.a, 'kernel_name') is not null;
         select s.name, s.depth, ifnull(p.name, ''), s.dur = 0,
                s.track_id in (select id from thread_track), count(*), sum(s.dur >= 0)
           from slice s left join slice p on s.parent_id = p.id
          where s.id not in (select id from gpu_slice) group by 1, 2, 3, 4, 5;
         select distinct th.tid, ifnull(th.name, ''), pr.pid
           from slice s join thread_track tt on s.track_id = tt.id
           join thread th using (utid) join process pr using (upid)
          where s.name like 'hip%';
         select distinct pr.pid from gpu_slice g join process pr using (upid);",
    )
    .unwrap();
    let [
        per_name,
        kernel_rows,
        submitters,
        gpu_arrows,
        waits,
        other_flows,
        counter_tracks,
        counter_values,
        slices,
        threads,
        gpu_pids,
    ]: [Vec<Vec<String>>; 11] = tables.try_into().unwrap();
    let num = |v: &str| -> u64 { v.parse().unwrap_or_else(|_| panic!("not a number: {v:?}")) };

    // GPU slices: every dispatch (by symbol) and copy (by direction) once, each with a duration,
    // on a queue of its own GPU; the bytes of the copies.
    let mut want: BTreeMap<String, u64> = expected.dispatches_by_symbol.clone();
    for (dir, n) in &expected.memory_copies {
        let name = match dir.as_str() {
            "HOST_TO_DEVICE" => "Memcpy HtoD",
            "DEVICE_TO_HOST" => "Memcpy DtoH",
            _ => "Memcpy DtoD",
        };
        want.insert(name.to_owned(), *n);
    }
    let mut got = BTreeMap::new();
    let mut bytes = 0;
    for row in &per_name {
        let n = num(&row[1]);
        assert_eq!(
            [num(&row[2]), num(&row[3]), num(&row[4])],
            [n; 3],
            "{}: (with a duration, device arg = track's GPU, queue of that GPU)",
            row[0]
        );
        got.insert(row[0].clone(), n);
        if row[0].starts_with("Memcpy") {
            bytes += num(&row[5]);
        }
    }
    assert_eq!(got, want, "GPU slices by kernel symbol or copy name");
    assert_eq!(bytes, expected.memory_copy_bytes, "bytes copied");

    // Kernel launch arguments as scripted for the symbol and device; the ISA of the GPU.
    let gpus = sc.gpus();
    let mut queues: BTreeMap<(String, String), String> = BTreeMap::new();
    for row in &kernel_rows {
        let device = num(&row[1]) as u32;
        let v: Vec<u64> = row[2..14].iter().map(|x| num(x)).collect();
        let spec = sc.kernels.iter().find(|k| k.symbol == row[0]).unwrap();
        assert!(
            s.launches.iter().any(|l| {
                l.symbol == row[0]
                    && l.device == device
                    && v[..6]
                        == [l.grid, l.block]
                            .concat()
                            .iter()
                            .map(|&x| u64::from(x))
                            .collect::<Vec<_>>()
                    && v[9] == l.lds
            }),
            "unscripted launch {row:?}"
        );
        assert_eq!(
            v[6..9].to_vec(),
            [spec.vgpr, spec.sgpr, spec.accum_vgpr].map(u64::from),
            "{row:?}"
        );
        assert_eq!(
            v[10..12].to_vec(),
            [spec.lds, spec.scratch].map(u64::from),
            "{row:?}"
        );
        assert_eq!(
            row[14], gpus[device as usize].name,
            "ISA of the GPU: {row:?}"
        );
        queues.insert((spec.name.clone(), row[1].clone()), row[15].clone());
    }
    assert_eq!(kernel_rows.len() as u64, expected.kernel_dispatches);
    assert_ne!(
        queues[&("gemm".to_owned(), "0".to_owned())],
        queues[&("vadd".to_owned(), "0".to_owned())],
        "kernels of different HIP streams on one queue"
    );

    // Arrows: each HIP call that submitted work has exactly one, to GPU work that starts after
    // it; each GPU slice has exactly one, from a HIP call before it. Waits come from finished
    // GPU work into the synchronising call: the last work of the stream, event or device.
    let mut want_submitters: BTreeMap<String, u64> = BTreeMap::new();
    for x in t.slices.iter().filter(|x| !x.submissions.is_empty()) {
        *want_submitters.entry(x.name.to_string()).or_default() += 1;
    }
    let launches = expected.hip_calls["hipLaunchKernel"];
    assert_eq!(want_submitters.get("hipLaunchKernel"), Some(&launches));
    let got_submitters: BTreeMap<String, u64> = submitters
        .iter()
        .map(|row| {
            assert_eq!(row[1], row[2], "{}: an arrow to later GPU work", row[0]);
            (row[0].clone(), num(&row[1]))
        })
        .collect();
    assert_eq!(
        got_submitters, want_submitters,
        "HIP calls with a submission and exactly one arrow"
    );
    let n_gpu = expected.kernel_dispatches + expected.memory_copies.values().sum::<u64>();
    assert_eq!(
        gpu_arrows,
        [[n_gpu.to_string(), n_gpu.to_string()]],
        "GPU slices with exactly one arrow from an earlier HIP call"
    );
    //
    // The trace processor draws only one of the waits for one GPU event that began before it
    // (see `tp_wait_arrows`; tp_agrees_with_reader checked which): a stream and a device sync
    // issued while their last copy was still queued show one arrow. Counted with what it draws,
    // the arrows it leaves out make up the script's.
    let hidden = tp_wait_arrows(t).hidden;
    assert_eq!(hidden.len(), seen.hidden_waits);
    let mut rows = waits.clone();
    for (g, x) in &hidden {
        rows.push(vec![
            x.name.to_string(),
            g.name.to_string(),
            g.gpu_id.unwrap().to_string(),
            u8::from(g.ts + g.dur <= x.ts + x.dur).to_string(),
        ]);
    }
    let mut stream_targets = Vec::new();
    let mut event_targets = Vec::new();
    let mut device_waits: BTreeMap<String, u64> = BTreeMap::new();
    for row in &rows {
        assert_eq!(row[3], "1", "{} waits on unfinished {}", row[0], row[1]);
        let target = format!("{}@{}", row[1], row[2]);
        match row[0].as_str() {
            "hipStreamSynchronize" => stream_targets.push(target),
            "hipEventSynchronize" => event_targets.push(target),
            "hipDeviceSynchronize" => *device_waits.entry(row[2].clone()).or_default() += 1,
            other => panic!("a wait arrow into {other}"),
        }
    }
    stream_targets.sort();
    assert_eq!(stream_targets, ["Memcpy DtoH@1", "gemm@0", "reduce@0"]);
    assert_eq!(event_targets, ["vadd@0"]);
    let n_device_waits: usize = t
        .slices
        .iter()
        .filter(|x| x.name == "hipDeviceSynchronize")
        .map(|x| x.waits.len())
        .sum();
    assert_eq!(
        device_waits.values().sum::<u64>() as usize,
        n_device_waits,
        "{device_waits:?}"
    );
    assert_eq!(other_flows, [["0"]], "arrows between two non-GPU slices");

    // Counters: a track per counter and GPU for the counters asked for that the GPU offers,
    // with the GPU's description; each dispatch's value, combined per rule, at its start; a
    // return to zero at its end.
    let wanted = [
        "SQ_WAVES",
        "SQ_INSTS_VALU",
        "TA_BUSY_max",
        "TA_BUSY_min",
        "GRBM_GUI_ACTIVE",
    ];
    let mut want_tracks = Vec::new();
    for (gpu, agent) in gpus.iter().enumerate() {
        let n = s.launches.iter().filter(|l| l.device == gpu as u32).count();
        for c in agent
            .counters
            .iter()
            .filter(|c| wanted.contains(&c.name.as_str()))
        {
            want_tracks.push(vec![
                c.name.clone(),
                gpu.to_string(),
                String::new(),
                c.description.clone(),
                (2 * n).to_string(),
            ]);
        }
    }
    want_tracks.sort();
    // Each GPU's descriptor lists only the counters that GPU reported, so no GPU shows an
    // empty track for a counter only another GPU offers (SQ_INSTS_VALU is not the MI300X's).
    // The busy % gpu-trace derives from the activity is checked in core.
    let (empty, mut counter_tracks): (Vec<_>, Vec<_>) = counter_tracks
        .into_iter()
        .filter(|row| !row[0].ends_with(" busy"))
        .partition(|row| row[4] == "0");
    counter_tracks.sort();
    assert_eq!(
        counter_tracks, want_tracks,
        "counter tracks with values: (name, gpu, unit, description, values)"
    );
    assert!(empty.is_empty(), "empty counter tracks: {empty:?}");
    let mut want_values: Vec<(String, u64, String, f64)> = Vec::new();
    for k in t.kernels() {
        let info = k.kernel.as_ref().unwrap();
        let device = k.gpu_id.unwrap() as u32;
        let launch = s
            .launches
            .iter()
            .find(|l| l.symbol == info.name && l.device == device)
            .unwrap();
        for c in gpus[device as usize]
            .counters
            .iter()
            .filter(|c| wanted.contains(&c.name.as_str()))
        {
            let v = expected_value(&c.name, launch.counters.get(&c.name), c.instances);
            want_values.push((info.name.clone(), u64::from(device), c.name.clone(), v));
        }
    }
    let mut got_values: Vec<(String, u64, String, f64)> = counter_values
        .iter()
        .map(|row| {
            (
                row[0].clone(),
                num(&row[1]),
                row[3].clone(),
                row[4].parse().unwrap(),
            )
        })
        .collect();
    let key = |a: &(String, u64, String, f64), b: &(String, u64, String, f64)| {
        (&a.0, a.1, &a.2)
            .cmp(&(&b.0, b.1, &b.2))
            .then(a.3.total_cmp(&b.3))
    };
    want_values.sort_by(key);
    got_values.sort_by(key);
    assert_eq!(
        got_values, want_values,
        "(kernel, gpu, counter, value at the kernel's start)"
    );

    // roctx ranges hold the HIP calls made inside them; the mark sits in its range; the
    // start/stop range is on a process track; nothing is left open.
    let got_slices: BTreeMap<Drawn, u64> = slices
        .iter()
        .map(|row| {
            assert_eq!(row[5], row[6], "{row:?}: slices that never end");
            (
                (
                    row[0].clone(),
                    num(&row[1]) as u32,
                    row[2].clone(),
                    row[3] == "1",
                    row[4] == "1",
                ),
                num(&row[5]),
            )
        })
        .collect();
    let want_slices = drawn(sc);
    let mut calls = expected.hip_calls.clone();
    calls.remove("hipSetDevice");
    let mut drawn_calls: BTreeMap<String, u64> = BTreeMap::new();
    for ((name, ..), n) in want_slices.iter().filter(|(k, _)| k.0.starts_with("hip")) {
        *drawn_calls.entry(name.clone()).or_default() += n;
    }
    assert_eq!(drawn_calls, calls, "the walk of the script");
    assert_eq!(
        got_slices, want_slices,
        "(name, depth, parent, instant, on a thread track) → count"
    );

    // Threads and the process: the HIP calls are on the application's threads, all in the
    // process whose GPU work it is; the threads carry the names the program gave them (also
    // when they have exited before their events were written).
    let mut tids: Vec<u64> = threads.iter().map(|row| num(&row[0])).collect();
    tids.sort_unstable();
    let mut app = r.app_thread_ids.clone();
    app.sort_unstable();
    assert_eq!(tids, app, "threads of the HIP calls");
    for row in &threads {
        let named = row[1]
            .strip_prefix("app-")
            .is_some_and(|i| i.parse::<usize>().is_ok_and(|i| i < sc.threads.len()));
        assert!(named, "thread {} is named {:?}", row[0], row[1]);
    }
    assert_eq!(gpu_pids.len(), 1, "GPU work of one process: {gpu_pids:?}");
    assert!(
        threads.iter().all(|row| row[2] == gpu_pids[0][0]),
        "HIP calls in another process than the GPU work: {threads:?} {gpu_pids:?}"
    );
}

fn check_devices(t: &Trace) {
    assert_eq!(t.devices.len(), 2, "{:?}", t.devices);
    let d0 = &t.devices[0];
    assert_eq!((d0.gpu_id, d0.name.as_str()), (0, "AMD Instinct MI210"));
    assert_eq!(
        (d0.model.as_str(), d0.architecture.as_str()),
        ("gfx90a", "CDNA2")
    );
    assert_eq!(d0.vendor, "AMD");
    assert_eq!(d0.pci_bdf, "0000:01:00.0");
    assert!(d0.extra.contains(&("sm_count".into(), "104".into())));
    let d1 = &t.devices[1];
    assert_eq!((d1.gpu_id, d1.name.as_str()), (1, "AMD Instinct MI300X"));
    assert_eq!(
        (d1.model.as_str(), d1.architecture.as_str()),
        ("gfx942", "CDNA3")
    );
    assert!(d1.extra.contains(&("sm_count".into(), "304".into())));
}

fn check_kernels(
    t: &Trace,
    kernels: &[&GpuEvent],
    s: &Script,
    sc: &Scenario,
    expected: &rocprofiler_sim::Expected,
) {
    // Every dispatch exactly once, under its symbol.
    let mut by_symbol: BTreeMap<String, u64> = BTreeMap::new();
    for k in kernels {
        *by_symbol
            .entry(k.kernel.as_ref().unwrap().name.clone())
            .or_default() += 1;
    }
    assert_eq!(by_symbol, expected.dispatches_by_symbol);
    let gpus = sc.gpus();
    for k in kernels {
        let info = k.kernel.as_ref().unwrap();
        let device = k.gpu_id.unwrap() as u32;
        // Grid in workgroups, workgroup size and LDS as scripted for this symbol and device.
        let matches: Vec<&Launch> = s
            .launches
            .iter()
            .filter(|l| l.symbol == info.name && l.device == device)
            .collect();
        assert!(!matches.is_empty(), "unscripted kernel {k:?}");
        assert!(
            matches
                .iter()
                .any(|l| k.grid == Some(l.grid) && k.block == Some(l.block)),
            "{} on GPU {device}: grid {:?} block {:?}",
            k.name,
            k.grid,
            k.block
        );
        let spec = sc.kernels.iter().find(|x| x.symbol == info.name).unwrap();
        let arg = |n: &str| {
            info.args
                .iter()
                .find(|(name, _)| name == n)
                .and_then(|(_, v)| v.as_u64())
        };
        assert_eq!(arg("vgpr_count"), Some(u64::from(spec.vgpr)), "{}", k.name);
        assert_eq!(arg("sgpr_count"), Some(u64::from(spec.sgpr)));
        assert_eq!(arg("agpr_count"), Some(u64::from(spec.accum_vgpr)));
        assert_eq!(arg("lds_size"), Some(matches[0].lds));
        assert_eq!(arg("lds_size_static"), Some(u64::from(spec.lds)));
        assert_eq!(arg("scratch_size"), Some(u64::from(spec.scratch)));
        assert_eq!(
            arg("launch__block_size"),
            Some(matches[0].block.iter().map(|&v| u64::from(v)).product())
        );
        assert_eq!(info.arch, gpus[device as usize].name, "ISA of the GPU");
        assert_eq!(info.demangled.split('(').next(), Some(k.name.as_str()));
        assert!(
            k.queue.starts_with(&format!("GPU {device} · stream ")),
            "{}",
            k.queue
        );
        assert!(k.arg("stream").and_then(ArgVal::as_u64).unwrap() >= 1);
        assert!(k.dur > 0);
    }
    // Kernels of different HIP streams ran on different queues.
    let gemm_queue = kernels
        .iter()
        .find(|k| k.name == "gemm")
        .unwrap()
        .queue
        .clone();
    assert!(
        kernels
            .iter()
            .filter(|k| k.name == "vadd" && k.gpu_id == Some(0))
            .all(|k| k.queue != gemm_queue)
    );
    let _ = t;
}

fn check_copies(t: &Trace, expected: &rocprofiler_sim::Expected) {
    let mut count: BTreeMap<String, u64> = BTreeMap::new();
    let mut bytes = 0;
    for c in t.memory_ops() {
        assert_eq!(c.stage, Stage::Memcpy);
        let dir = match c.name.as_str() {
            "Memcpy HtoD" => "HOST_TO_DEVICE",
            "Memcpy DtoH" => "DEVICE_TO_HOST",
            "Memcpy DtoD" => "DEVICE_TO_DEVICE",
            other => panic!("unexpected copy {other}"),
        };
        *count.entry(dir.to_owned()).or_default() += 1;
        bytes += c.bytes().unwrap();
        let (src, dst) = (
            c.arg("src_kind").and_then(ArgVal::as_str).unwrap(),
            c.arg("dst_kind").and_then(ArgVal::as_str).unwrap(),
        );
        match dir {
            "HOST_TO_DEVICE" => assert_eq!((src, dst), ("unknown", "device")),
            "DEVICE_TO_HOST" => assert_eq!((src, dst), ("device", "unknown")),
            _ => assert_eq!((src, dst), ("device", "device")),
        }
    }
    assert_eq!(count, expected.memory_copies);
    assert_eq!(bytes, expected.memory_copy_bytes);
    // The 64 KiB host-to-device copy went to GPU 1.
    let c = t
        .memory_ops()
        .find(|c| c.bytes() == Some(65536))
        .expect("64 KiB copy");
    assert_eq!(c.gpu_id, Some(1));
}

fn check_api(
    t: &Trace,
    r: &rocprofiler_sim::Report,
    s: &Script,
    expected: &rocprofiler_sim::Expected,
) {
    let by_id = t.gpu_events_by_id();
    let hip: Vec<_> = t
        .slices
        .iter()
        .filter(|x| x.name.starts_with("hip"))
        .collect();

    // Every HIP call the script makes, once; hipSetDevice is followed, not drawn.
    let mut calls = expected.hip_calls.clone();
    assert!(calls.remove("hipSetDevice").is_some());
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for x in &hip {
        *seen.entry(x.name.to_string()).or_default() += 1;
        assert_eq!(x.gpu_api, Some(5), "gpu_api is HIP");
    }
    assert_eq!(seen, calls);

    // On the application's threads, each thread on its own track.
    let mut tids: Vec<i64> = hip
        .iter()
        .map(|x| t.thread_of(x.track).expect("a thread track").tid)
        .collect();
    tids.sort_unstable();
    tids.dedup();
    let mut app: Vec<i64> = r.app_thread_ids.iter().map(|&t| t as i64).collect();
    app.sort_unstable();
    assert_eq!(tids, app);

    // Every GPU event has exactly one submission arrow, from a call before it.
    let mut submitted: HashMap<u64, usize> = HashMap::new();
    for x in hip.iter().filter(|x| !x.submissions.is_empty()) {
        assert!(
            x.name.starts_with("hipLaunch") || x.name.starts_with("hipMemcpy"),
            "{}",
            x.name
        );
        for id in &x.submissions {
            let g = by_id
                .get(id)
                .unwrap_or_else(|| panic!("dangling submission of {}", x.name));
            assert!(g.ts >= x.ts, "GPU work before its call");
            *submitted.entry(*id).or_default() += 1;
        }
    }
    assert_eq!(submitted.len(), t.gpu_events.len());
    assert!(submitted.values().all(|&n| n == 1));

    // Each thread submitted exactly the work its script did.
    let mut per_thread: HashMap<u64, Work> = HashMap::new();
    for x in hip.iter() {
        for id in &x.submissions {
            let g = by_id[id];
            per_thread
                .entry(x.track)
                .or_default()
                .push((g.name.to_string(), g.gpu_id.unwrap() as u32));
        }
    }
    let mut traced: Vec<Work> = per_thread
        .into_values()
        .map(|mut w| {
            w.sort();
            w
        })
        .collect();
    traced.sort();
    let mut scripted = s.work.clone();
    scripted.sort();
    assert_eq!(traced, scripted);

    // Synchronisations point at finished work of the right stream, device or event.
    for x in hip.iter().filter(|x| x.name.contains("Synchronize")) {
        assert!(!x.waits.is_empty(), "{} without a wait arrow", x.name);
        for id in &x.waits {
            let g = by_id
                .get(id)
                .unwrap_or_else(|| panic!("dangling wait of {}", x.name));
            assert!(
                g.ts + g.dur <= x.ts + x.dur,
                "{} returned before {}",
                x.name,
                g.name
            );
        }
    }
    let waits_of = |name: &str| -> Vec<Vec<&GpuEvent>> {
        hip.iter()
            .filter(|x| x.name == name)
            .map(|x| x.waits.iter().map(|id| by_id[id]).collect())
            .collect()
    };
    // Stream syncs: the last work on the stream (gemm on T0's stream 1, the last copy on T1's
    // stream 2, reduce on T2's stream 3).
    let mut stream_targets: Vec<String> = waits_of("hipStreamSynchronize")
        .into_iter()
        .map(|w| {
            assert_eq!(w.len(), 1);
            format!("{}@{}", w[0].name, w[0].gpu_id.unwrap())
        })
        .collect();
    stream_targets.sort();
    assert_eq!(stream_targets, ["Memcpy DtoH@1", "gemm@0", "reduce@0"]);
    // The event recorded on T0's null stream: its last vadd.
    let ev = waits_of("hipEventSynchronize");
    assert_eq!(ev.len(), 1);
    assert_eq!(
        (ev[0].len(), ev[0][0].name.as_str(), ev[0][0].gpu_id),
        (1, "vadd", Some(0))
    );
    // Device syncs wait on their device only.
    let dev = waits_of("hipDeviceSynchronize");
    assert_eq!(dev.len(), 2);
    for w in dev {
        let devices: Vec<_> = w.iter().map(|g| g.gpu_id).collect();
        assert!(
            devices.iter().all(|d| *d == devices[0]),
            "device sync waits on several devices: {devices:?}"
        );
    }
}

fn check_markers(t: &Trace) {
    let slice = |name: &str| {
        t.slices
            .iter()
            .find(|x| x.name == name)
            .unwrap_or_else(|| panic!("no {name} range"))
    };
    let (setup, compute, mixed) = (slice("setup"), slice("compute"), slice("mixed"));
    assert_eq!((setup.depth, compute.depth, mixed.depth), (0, 0, 0));
    assert_eq!(setup.track, compute.track);
    assert!(setup.ts + setup.dur <= compute.ts);
    // API calls nest inside the pushed range of their thread.
    let inside = |r: &gpu_trace_reader::Slice, name: &str| {
        t.slices
            .iter()
            .filter(|x| x.track == r.track && x.name == name)
            .filter(|x| x.ts >= r.ts && x.ts + x.dur <= r.ts + r.dur && x.depth == 1)
            .count()
    };
    assert_eq!(inside(compute, "hipLaunchKernel"), 6);
    assert_eq!(inside(setup, "hipMemcpy"), 1);
    assert_eq!(inside(mixed, "hipLaunchKernel"), 2);
    // A start/stop range on its own track, and the mark.
    let worker = slice("worker");
    assert!(t.thread_of(worker.track).is_none());
    assert!(worker.dur > 0);
    let mark = t
        .instants
        .iter()
        .find(|i| i.name == "compute issued")
        .expect("mark");
    assert_eq!(t.thread_of(mark.track), t.thread_of(compute.track));
    assert!(mark.ts > compute.ts && mark.ts < compute.ts + compute.dur);
}

fn check_counters(t: &Trace, kernels: &[&GpuEvent], s: &Script, sc: &Scenario) {
    let gpus = sc.gpus();
    let wanted = [
        "SQ_WAVES",
        "SQ_INSTS_VALU",
        "TA_BUSY_max",
        "TA_BUSY_min",
        "GRBM_GUI_ACTIVE",
    ];
    let mut checked = 0;
    for k in kernels {
        let device = k.gpu_id.unwrap() as u32;
        let symbol = &k.kernel.as_ref().unwrap().name;
        let launch = s
            .launches
            .iter()
            .find(|l| &l.symbol == symbol && l.device == device)
            .unwrap();
        let agent = gpus[device as usize];
        assert_eq!(agent.kind, AgentKind::Gpu);
        let mut want: BTreeMap<String, f64> = BTreeMap::new();
        for c in agent
            .counters
            .iter()
            .filter(|c| wanted.contains(&c.name.as_str()))
        {
            want.insert(
                c.name.clone(),
                expected_value(&c.name, launch.counters.get(&c.name), c.instances),
            );
        }
        // Values are written at the kernel's start (a previous kernel's return to zero may
        // share the timestamp) and return to zero at its end.
        let mut got: BTreeMap<String, f64> = BTreeMap::new();
        for c in t
            .counters
            .iter()
            .filter(|c| c.gpu_id == device as i64 && c.ts == k.ts && c.value != 0.0)
        {
            assert!(
                got.insert(c.name.to_string(), c.value).is_none(),
                "{c:?} twice"
            );
            assert!(c.ts >= k.ts && c.ts < k.ts + k.dur);
            assert_eq!(c.groups, vec![6], "COMPUTE group");
        }
        assert_eq!(got, want, "{} on GPU {device}", k.name);
        let ends = t
            .counters
            .iter()
            .filter(|c| c.gpu_id == device as i64 && c.ts == k.ts + k.dur && c.value == 0.0)
            .count();
        assert!(
            ends >= want.len(),
            "values return to zero at the kernel's end"
        );
        checked += 1;
    }
    assert_eq!(checked, s.launches.len());
    // Never counted: not asked for, or offered by no GPU.
    for n in [
        "TCC_HIT",
        "TCP_TOTAL_CACHE_ACCESSES",
        "NOT_A_COUNTER",
        "ALSO_MISSING",
    ] {
        assert!(t.counters.iter().all(|c| c.name != n), "{n} was collected");
    }
    let desc = t
        .counters
        .iter()
        .find(|c| c.name == "SQ_WAVES")
        .map(|c| c.description.clone());
    assert_eq!(desc.as_deref(), Some("Waves dispatched"));
}

#[test]
fn rocm_6_runtime_is_refused_with_one_line_and_the_app_runs() {
    let dir = tmpdir("rocm6");
    let mut spec = spec_in(&dir, scenario());
    spec.sdk_version = 600; // SDK 0.6.0, ROCm 6.4
    let out = run(spec);
    let r = &out.report;
    assert!(r.configure_called && !r.configure_accepted, "{r:#?}");
    assert!(r.client_id_intact, "a 0.x client id was written to");
    assert_eq!((r.initialize_status, r.finalize_calls), (None, 0));
    let lines = our_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].contains("rocprofiler-sdk 0.6.0 is not supported")
            && lines[0].contains("ROCm 7.x"),
        "{}",
        lines[0]
    );
    // The program ran, untraced: every thread finished, no service was set up, no file.
    assert_eq!(r.app_thread_ids.len(), scenario().threads.len());
    assert!(r.calls.keys().all(|c| !c.starts_with("rocprofiler_create")));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    cleanup(&dir);
}

#[test]
fn system_mode_without_traced_neither_hangs_nor_records() {
    let dir = tmpdir("system");
    let spec = spec_in(&dir, scenario())
        .env("INJECTION_MODE", "system")
        .env(
            "PERFETTO_PRODUCER_SOCK_NAME",
            "/nonexistent/gpu-trace-test.sock",
        );
    let out = run(spec);
    let r = &out.report;
    assert_eq!((r.initialize_status, r.finalize_calls), (Some(0), 1));
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
    // No session asked for anything: only code objects were followed (kernel names must be
    // known before a session starts); no record was produced, no counter configured.
    assert!(
        r.delivered
            .callbacks
            .keys()
            .all(|k| k.starts_with("CODE_OBJECT/")),
        "{:?}",
        r.delivered.callbacks
    );
    assert!(r.delivered.buffer_records.is_empty());
    assert_eq!(r.delivered.dispatch_callbacks, 0);
    assert!(!r.calls.contains_key("rocprofiler_create_counter_config"));
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "no file written"
    );
    assert_eq!(our_lines(&out.stderr).len(), 0, "{}", out.stderr);
    cleanup(&dir);
}

#[test]
fn only_the_requested_sources_run() {
    // GPU work only: the HIP API, roctx and counting contexts stay stopped, so the SDK never
    // calls those services.
    let dir = tmpdir("gpu-only");
    let spec = RunSpec::new(tool(), scenario())
        .env(
            "INJECTION_OUTPUT",
            dir.join("trace.pftrace").display().to_string(),
        )
        .env("INJECTION_TRACE", "gpu");
    let out = run(spec);
    let r = &out.report;
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
    assert!(
        r.delivered
            .callbacks
            .keys()
            .all(|k| k.starts_with("CODE_OBJECT/")),
        "{:?}",
        r.delivered.callbacks
    );
    assert_eq!(r.delivered.dispatch_callbacks, 0);
    let t = Trace::open(dir.join("trace.pftrace")).unwrap();
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(
        t.kernels().count() as u64,
        scenario().expected().kernel_dispatches
    );
    assert!(t.slices.is_empty() && t.instants.is_empty() && hardware_counters(&t).count() == 0);
    assert_eq!(t.data_sources, vec!["gpu.renderstages.amd"]);
    cleanup(&dir);
}

#[test]
fn cuda_only_settings_are_refused_in_one_line_each_and_the_whole_run_recorded() {
    // CUDA-only for now: HIP says so and records everything, rather than
    // waiting for a start that never comes, or pretending to replay kernels.
    let dir = tmpdir("capture-range");
    let spec = RunSpec::new(tool(), scenario())
        .env(
            "INJECTION_OUTPUT",
            dir.join("trace.pftrace").display().to_string(),
        )
        .env("INJECTION_TRACE", "gpu")
        .env("INJECTION_CAPTURE_RANGE", "cudaProfilerApi")
        .env("INJECTION_CAPTURE_COUNT", "2")
        .env("INJECTION_API_LAYER", "runtime")
        .env("INJECTION_COUNTERS_REPLAY", "kernel")
        .env("INJECTION_COUNTERS_BATCH", "16")
        .env("INJECTION_DETACH", "off");
    let out = run(spec);
    let lines = our_lines(&out.stderr);
    assert_eq!(lines.len(), 6, "{}", out.stderr);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("capture ranges are CUDA-only for now; recording the whole run")),
        "{}",
        out.stderr
    );
    for (var, value) in [
        ("INJECTION_CAPTURE_RANGE", "cudaProfilerApi"),
        ("INJECTION_CAPTURE_COUNT", "\"2\""),
        ("INJECTION_API_LAYER", "\"runtime\""),
        ("INJECTION_COUNTERS_REPLAY", "\"kernel\""),
        ("INJECTION_COUNTERS_BATCH", "\"16\""),
        ("INJECTION_DETACH", "\"off\""),
    ] {
        let mine: Vec<_> = lines.iter().filter(|l| l.contains(var)).collect();
        assert_eq!(mine.len(), 1, "{var}: {}", out.stderr);
        assert!(
            mine[0].starts_with(&format!("gpu-trace: {var}")),
            "{}",
            mine[0]
        );
        if var != "INJECTION_CAPTURE_RANGE" {
            assert!(
                mine[0].contains(&format!("{var}={value} is ignored: it is a CUDA setting (")),
                "{}",
                mine[0]
            );
        }
    }
    let t = Trace::open(dir.join("trace.pftrace")).unwrap();
    assert_eq!(
        t.kernels().count() as u64,
        scenario().expected().kernel_dispatches
    );
    cleanup(&dir);
}

#[test]
fn default_counters_are_collected_when_none_are_named() {
    let dir = tmpdir("default-counters");
    let spec = RunSpec::new(tool(), scenario())
        .env(
            "INJECTION_OUTPUT",
            dir.join("trace.pftrace").display().to_string(),
        )
        .env("INJECTION_TRACE", "gpu,counters");
    let out = run(spec);
    assert!(
        out.report.violations.is_empty(),
        "{:#?}",
        out.report.violations
    );
    // Defaults the GPUs lack are skipped without a message.
    assert_eq!(our_lines(&out.stderr).len(), 0, "{}", out.stderr);
    let t = Trace::open(dir.join("trace.pftrace")).unwrap();
    let mut names: Vec<&str> = hardware_counters(&t).map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names, ["GRBM_GUI_ACTIVE", "SQ_INSTS_VALU", "SQ_WAVES"]);
    cleanup(&dir);
}

#[test]
fn a_panic_in_a_callback_switches_tracing_off_and_the_app_runs_on() {
    for site in ["hip", "buffer"] {
        let dir = tmpdir(&format!("panic-{site}"));
        let spec =
            spec_in(&dir, scenario()).env("GPU_TRACE_HIP_FAILPOINT", format!("panic:{site}"));
        let out = run(spec);
        let r = &out.report;
        // Nothing unwound into the runtime; every application thread finished; the tool was
        // finalised and its buffer drained.
        assert!(r.violations.is_empty(), "{site}: {:#?}", r.violations);
        assert_eq!(r.app_thread_ids.len(), scenario().threads.len());
        assert_eq!(r.finalize_calls, 1);
        assert_eq!(r.undelivered_records, 0);
        let lines = our_lines(&out.stderr)
            .into_iter()
            .filter(|l| !l.contains("is not offered by any GPU"))
            .collect::<Vec<_>>();
        assert_eq!(lines.len(), 1, "{site}: {}", out.stderr);
        assert!(
            lines[0].contains("internal error in")
                && lines[0].contains(&format!("failpoint panic:{site}"))
                && lines[0].contains("the application continues"),
            "{}",
            lines[0]
        );
        assert!(!out.stderr.contains("panicked at"), "{}", out.stderr);
        // Tracing stopped, and the trace still has its end: the exit
        // handler wrote the summary and the loss line.
        let t = Trace::open(dir.join("trace.pftrace")).unwrap();
        assert!(
            t.log("gpu-trace summary:").is_some(),
            "{site}: the summary\n{}",
            out.stderr
        );
        assert!(t.drop_counts().is_some(), "{site}: the loss line");
        cleanup(&dir);
    }
}

#[test]
fn a_missing_optional_sdk_function_costs_only_its_feature() {
    let dir = tmpdir("missing-counting");
    let spec = spec_in(&dir, scenario()).env(
        "GPU_TRACE_HIP_FAILPOINT",
        "missing:rocprofiler_configure_callback_dispatch_counting_service",
    );
    let out = run(spec);
    assert!(
        out.report.violations.is_empty(),
        "{:#?}",
        out.report.violations
    );
    let lines = our_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].contains("per-kernel counters are unavailable")
            && lines[0].contains("rocprofiler_configure_callback_dispatch_counting_service"),
        "{}",
        lines[0]
    );
    let t = Trace::open(dir.join("trace.pftrace")).unwrap();
    assert_eq!(
        t.kernels().count() as u64,
        scenario().expected().kernel_dispatches
    );
    assert!(t.slices.iter().any(|s| s.name == "hipLaunchKernel"));
    assert_eq!(hardware_counters(&t).count(), 0);
    cleanup(&dir);
}

#[test]
fn a_missing_essential_sdk_function_leaves_the_app_untraced() {
    let dir = tmpdir("missing-buffer");
    let spec = spec_in(&dir, scenario()).env(
        "GPU_TRACE_HIP_FAILPOINT",
        "missing:rocprofiler_create_buffer",
    );
    let out = run(spec);
    let r = &out.report;
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
    assert_eq!(r.app_thread_ids.len(), scenario().threads.len());
    let lines = our_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].contains("initialize failed") && lines[0].contains("rocprofiler_create_buffer"),
        "{}",
        lines[0]
    );
    assert!(
        r.delivered.callbacks.is_empty(),
        "{:?}",
        r.delivered.callbacks
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "no file written"
    );
    cleanup(&dir);
}

#[test]
fn bad_environment_values_get_one_line_each_and_defaults() {
    let dir = tmpdir("env");
    let bad = [
        ("INJECTION_MODE", "sideways"),
        ("INJECTION_BUFFER_SIZE", "lots"),
        ("INJECTION_FLUSH_PERIOD_MS", "5"),
        ("INJECTION_DATA_SOURCE_NAME_SUFFIX", "no good"),
    ];
    let mut spec = spec_in(&dir, scenario());
    for (k, v) in bad {
        spec = spec.env(k, v);
    }
    let out = run(spec);
    assert!(
        out.report.violations.is_empty(),
        "{:#?}",
        out.report.violations
    );
    let lines = our_lines(&out.stderr);
    for (var, value) in bad {
        let needle = format!("{var}={value:?}");
        assert_eq!(
            lines.iter().filter(|l| l.contains(&needle)).count(),
            1,
            "{needle} in:\n{}",
            out.stderr
        );
    }
    // Defaults: file mode, suffix amd; the trace is complete.
    let t = Trace::open(dir.join("trace.pftrace")).unwrap();
    assert!(t.data_sources.contains(&"gpu.renderstages.amd".to_owned()));
    assert_eq!(
        t.kernels().count() as u64,
        scenario().expected().kernel_dispatches
    );
    cleanup(&dir);
}

#[test]
fn the_trace_is_complete_when_the_sdk_finalises_from_an_earlier_exit_handler() {
    // The SDK's exit handler was registered before this library (and the Perfetto SDK inside
    // it) was loaded, so it would run after their static destructors. The library's own exit
    // handler asks the SDK to finalise it first.
    let dir = tmpdir("atexit");
    let sc = scenario();
    let expected = sc.expected();
    let mut spec = spec_in(&dir, sc).env("INJECTION_VERBOSE", "1");
    spec.finalize_at_exit = true;
    let out = run(spec);
    assert!(!out.stderr.contains("protocol violation"), "{}", out.stderr);
    assert!(!out.stderr.contains("internal error"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("process exit: asking rocprofiler-sdk to finalise the tool now"),
        "{}",
        out.stderr
    );
    let path = dir.join("trace.pftrace");
    let t = Trace::open(&path).expect("trace file");
    assert!(t.problems.is_empty(), "{:?}\n{}", t.problems, out.stderr);
    assert_eq!(t.kernels().count() as u64, expected.kernel_dispatches);
    assert_eq!(
        t.memory_ops().count() as u64,
        expected.memory_copies.values().sum::<u64>()
    );
    assert!(
        t.log("gpu-trace summary:").is_some(),
        "the session was stopped"
    );
    assert_eq!(t.drop_counts(), Some(vec![]));
    assert!(hardware_counters(&t).count() > 0, "{}", out.stderr);
    validate(&path);
    cleanup(&dir);
}

/// Render stages, the two counters below and the HIP and roctx categories.
const AMD_SYSTEM_CONFIG: &str = r#"
buffers { size_kb: 16384 fill_policy: RING_BUFFER }
duration_ms: 60000
data_sources { config { name: "gpu.renderstages.amd" } }
data_sources {
  config {
    name: "gpu.counters.amd"
    gpu_counter_config { counter_names: "SQ_WAVES" counter_names: "GRBM_GUI_ACTIVE" instrumented_sampling: true }
  }
}
data_sources {
  config {
    name: "track_event"
    track_event_config { enabled_categories: "hip" enabled_categories: "roctx" disabled_categories: "*" }
  }
}
"#;

#[test]
fn system_mode_records_the_scripted_program_into_a_real_traced() {
    use perfetto_testd::{PRODUCER_SOCK_VAR, Traced};
    let traced = Traced::start("hip");
    let rec = traced.record("hip", AMD_SYSTEM_CONFIG);
    traced.wait_until("started session", Duration::from_secs(10), |s| {
        s.sessions_started == 1
    });
    // The session runs before the program starts, and the program cannot
    // know when the tool has connected and the service started its data
    // sources (a few milliseconds, or far longer on a loaded machine; the
    // render stages, which start the dispatch tracing, come before
    // track_event, which starts the roctx tracing), so each thread first
    // waits for both.
    let mut sc = scenario();
    for t in &mut sc.threads {
        t.ops.insert(
            0,
            Op::WaitTraced {
                counting: false,
                markers: true,
                timeout_ms: 30_000,
            },
        );
    }
    let expected = sc.expected();
    let dir = tmpdir("system-traced");
    let spec = RunSpec::new(tool(), sc.clone())
        .env("INJECTION_MODE", "system")
        .env(
            PRODUCER_SOCK_VAR,
            traced.producer_sock().display().to_string(),
        )
        .env("RUST_BACKTRACE", "0");
    let out = run(spec);
    let r = &out.report;
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
    assert_eq!((r.initialize_status, r.finalize_calls), (Some(0), 1));
    assert_eq!(our_lines(&out.stderr).len(), 0, "{}", out.stderr);
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "no file of ours"
    );
    let path = rec.stop();

    let t = Trace::open(&path).expect("trace file");
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(
        t.data_sources,
        ["gpu.renderstages.amd", "gpu.counters.amd", "track_event"]
    );
    assert_eq!(
        t.kernels().count() as u64,
        expected.kernel_dispatches,
        "every dispatch (the session's data sources were running when the program started?)"
    );
    assert_eq!(
        t.memory_ops().count() as u64,
        expected.memory_copies.values().sum::<u64>()
    );
    let mut calls = expected.hip_calls.clone();
    calls.remove("hipSetDevice");
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for x in t.slices.iter().filter(|x| x.name.starts_with("hip")) {
        *seen.entry(x.name.to_string()).or_default() += 1;
    }
    assert_eq!(seen, calls);
    assert_eq!(
        drawn(&sc)
            .iter()
            .filter(|(k, _)| !k.0.starts_with("hip") && !k.3)
            .map(|(_, n)| n)
            .sum::<u64>() as usize,
        t.slices
            .iter()
            .filter(|x| !x.name.starts_with("hip"))
            .count(),
        "roctx ranges"
    );
    // Only the counters the session named.
    let mut names: Vec<&str> = hardware_counters(&t).map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names, ["GRBM_GUI_ACTIVE", "SQ_WAVES"]);
    assert!(t.log("gpu-trace summary:").is_some(), "the exit summary");
    if let Some(seen) = tp_check(&path, &t, &[EXIT_FLUSH_FAILURES]) {
        assert_eq!(seen.unfinished, 0);
        let n_gpu = expected.kernel_dispatches + expected.memory_copies.values().sum::<u64>();
        assert_eq!(seen.gpu_slices as u64, n_gpu);
    }
    validate(&path);
    cleanup(&dir);
}

// ------------------------------------------------------------------ which dispatches get counters

/// One GPU whose `SQ_WAVES` has one instance: each launch below carries its
/// tag as that value, so the trace's values say which dispatches were
/// counted. Thread 0 launches inside roctx ranges; thread 1 launches `gemm`
/// while thread 0 is inside `train step` (after 50 ms), outside any range of
/// its own. `system`: both threads first wait until the running session's
/// counters have started (a fixed sleep was not always long enough on a
/// loaded 2-core machine: CI once saw no dispatch counted).
fn filter_scenario(system: bool) -> Scenario {
    let launch = |kernel: &str, tag: u32| {
        serde_json::json!({ "launch": { "kernel": kernel, "grid": [4, 1, 1], "block": [64, 1, 1],
                                        "counters": { "SQ_WAVES": [tag] } } })
    };
    let push = |m: &str| serde_json::json!({ "range_push": { "message": m } });
    let pop = serde_json::json!({ "range_pop": null });
    let sleep = |us: u64| serde_json::json!({ "sleep_us": { "us": us } });
    let lead = if system {
        serde_json::json!({ "wait_traced": { "counting": true, "timeout_ms": 30_000 } })
    } else {
        sleep(0)
    };
    let t0 = vec![
        lead.clone(),
        launch("vadd", 1),
        push("train step"),
        sleep(200_000),
        launch("gemm", 2),
        launch("vadd", 3),
        push("backward"),
        launch("gemm", 4),
        pop.clone(),
        push("inner"),
        launch("gemm", 5),
        launch("reduce", 6),
        launch("gemm", 7),
        pop.clone(),
        launch("gemm", 8),
        pop.clone(),
        launch("gemm", 9),
        serde_json::json!({ "device_sync": {} }),
    ];
    let t1 = vec![
        lead,
        sleep(50_000),
        launch("gemm", 101),
        launch("reduce", 102),
        launch("gemm", 103),
        serde_json::json!({ "device_sync": {} }),
    ];
    let s = serde_json::json!({
        "agents": [
            { "kind": "cpu", "name": "AMD EPYC 9654 96-Core Processor" },
            { "kind": "gpu", "name": "gfx90a", "product_name": "AMD Instinct MI210",
              "gfx_target_version": 90010, "cu_count": 104,
              "counters": [ { "name": "SQ_WAVES", "block": "SQ", "description": "Waves dispatched", "instances": 1 } ] }
        ],
        "kernels": [
            { "name": "vadd", "symbol": "_Z4vaddPKfS0_Pfi", "sgpr": 16, "vgpr": 8, "duration_us": 20 },
            { "name": "gemm", "symbol": "_ZN2ns4gemmIfEEvPKT_Pf", "sgpr": 16, "vgpr": 8, "duration_us": 20 },
            { "name": "reduce", "symbol": "_Z6reducePKfPfi", "sgpr": 16, "vgpr": 8, "duration_us": 20 }
        ],
        "threads": [ { "ops": t0 }, { "ops": t1 } ]
    });
    Scenario::from_json(&s.to_string()).expect("valid scenario")
}

/// The tags of the dispatches whose counters are in the trace, sorted.
fn counted(t: &Trace) -> Vec<u32> {
    let mut v: Vec<u32> = t
        .counters
        .iter()
        .filter(|c| c.name == "SQ_WAVES" && c.value != 0.0)
        .map(|c| c.value as u32)
        .collect();
    v.sort_unstable();
    v
}

/// Environment filter: `gemm` by its function name, inside `train*` but not
/// `*backward*` (at any depth, on the launching thread only), skip 1 then
/// take 2 of those: dispatches 5 and 7 (2 is skipped, 8 is past the
/// window). Every dispatch is still traced.
#[test]
fn the_environment_filter_picks_dispatches_by_name_ranges_and_window() {
    let dir = tmpdir("kernel-filter");
    let spec = RunSpec::new(tool(), filter_scenario(false))
        .env(
            "INJECTION_OUTPUT",
            dir.join("trace.pftrace").display().to_string(),
        )
        .env("INJECTION_TRACE", "gpu,counters")
        .env("INJECTION_METRICS", "SQ_WAVES")
        .env("INJECTION_KERNEL_FILTER", "function:ns::gemm")
        .env("INJECTION_KERNEL_NVTX_INCLUDE", "train*")
        .env("INJECTION_KERNEL_NVTX_EXCLUDE", "*backward*")
        .env("INJECTION_KERNEL_SKIP", "1")
        .env("INJECTION_KERNEL_COUNT", "2")
        .env("RUST_BACKTRACE", "0");
    let out = run(spec);
    assert!(
        out.report.violations.is_empty(),
        "{:#?}",
        out.report.violations
    );
    assert_eq!(our_lines(&out.stderr).len(), 0, "{}", out.stderr);
    let path = dir.join("trace.pftrace");
    let t = Trace::open(&path).unwrap();
    assert_eq!(t.kernels().count(), 12, "every dispatch is traced");
    assert_eq!(counted(&t), [5, 7]);
    assert!(
        t.slices.is_empty(),
        "roctx ran for the filter only: no markers"
    );
    validate(&path);
    cleanup(&dir);
}

/// Counters only, roctx categories off: the session's
/// `instrumented_sampling_config` replaces the environment's filter.
const AMD_FILTER_CONFIG: &str = r#"
buffers { size_kb: 16384 fill_policy: RING_BUFFER }
duration_ms: 60000
data_sources { config { name: "gpu.renderstages.amd" } }
data_sources {
  config {
    name: "gpu.counters.amd"
    gpu_counter_config {
      counter_names: "SQ_WAVES"
      instrumented_sampling_config {
        activity_name_filters { name_glob: "*ns::gemm<*" name_base: DEMANGLED_KERNEL_NAME }
        activity_name_filters { name_glob: "_Z6reduce*" }
        activity_tx_include_globs: "train*"
        activity_tx_exclude_globs: "*backward*"
        activity_ranges { skip: 1 count: 1 }
        activity_ranges { skip: 1 }
      }
    }
  }
}
"#;

/// A real `traced` session selects dispatches with its trace config: name
/// filters (demangled `gemm`, mangled `reduce`), then the ranges, then two
/// windows over what passed (2, 5, 6, 7, 8: skip 2, take 5, skip 6, take
/// the rest). The environment's filter, which would pick others, does not
/// apply.
#[test]
fn a_system_sessions_sampling_config_picks_the_dispatches() {
    use perfetto_testd::{PRODUCER_SOCK_VAR, Traced};
    let traced = Traced::start("hip-filter");
    let rec = traced.record("hip-filter", AMD_FILTER_CONFIG);
    traced.wait_until("started session", Duration::from_secs(10), |s| {
        s.sessions_started == 1
    });
    let dir = tmpdir("system-filter");
    let spec = RunSpec::new(tool(), filter_scenario(true))
        .env("INJECTION_MODE", "system")
        .env("INJECTION_KERNEL_FILTER", "vadd")
        .env(
            PRODUCER_SOCK_VAR,
            traced.producer_sock().display().to_string(),
        )
        .env("RUST_BACKTRACE", "0");
    let out = run(spec);
    assert!(
        out.report.violations.is_empty(),
        "{:#?}",
        out.report.violations
    );
    assert_eq!(our_lines(&out.stderr).len(), 0, "{}", out.stderr);
    let path = rec.stop();
    let t = Trace::open(&path).expect("trace file");
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.kernels().count(), 12, "every dispatch is traced");
    assert_eq!(counted(&t), [5, 7, 8]);
    validate(&path);
    cleanup(&dir);
}
