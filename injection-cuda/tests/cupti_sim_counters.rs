//! Per-kernel counters end to end without a GPU: the built `libgpu_trace_cuda.so` profiles
//! kernels with cupti-sim's range profiler and profiler host (a scripted chip, metric catalog,
//! passes and faults), and the trace it writes is decoded with our reader and Perfetto's trace
//! processor. The values are the sim's documented functions of each launch
//! (`cupti_sim::counters::default_catalog`), worked out here by hand from the script, so every
//! number is asserted exactly.

use cupti_sim::counters::{Fault, ProfilerCall};
use cupti_sim::scenario::{KernelSpec, Layer, Op, ThreadSpec};
use cupti_sim::{Outcome, Report, RunSpec, Scenario};
use gpu_trace_reader::pb::{Fields, Value};
use gpu_trace_reader::{CounterValue, GpuEvent, Slice, Trace, wire};
use gpu_trace_testkit::{tp_check, tp_tables, validate};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

cupti_sim::child_entry!();

/// Kernel replay asked for (the default, `auto`, takes user replay for one-pass sets).
const KERNEL_REPLAY: (&str, &str) = ("INJECTION_COUNTERS_REPLAY", "kernel");

const VADD: &str = "_Z4vaddPfS_S_i";
const GEMM: &str = "_Z4gemmPKfS0_Pfi";
/// GpuLog's `LOG_SEVERITY_WARNING`.
const WARNING: u64 = 4;

fn tool() -> PathBuf {
    cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built")
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "gpu-trace-cuda-counters-{}-{tag}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Removes a run's directory unless `GPU_TRACE_KEEP` is set (to look at the traces).
fn cleanup(dir: &Path) {
    if std::env::var_os("GPU_TRACE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(dir);
    } else {
        eprintln!("kept {}", dir.display());
    }
}

/// `vadd` runs 20 µs on 64×2 blocks of 128 threads (128 blocks, 16 384 threads, 512 warps);
/// `gemm` 50 µs on 8 blocks of 256 threads (2 048 threads, 64 warps).
fn scenario(ops: Vec<Op>) -> Scenario {
    let k = |name: &str, symbol: &str, us| KernelSpec {
        name: name.into(),
        symbol: symbol.into(),
        registers: 32,
        static_smem: 0,
        duration_us: us,
    };
    let s = Scenario {
        kernels: vec![k("vadd", VADD, 20), k("gemm", GEMM, 50)],
        threads: vec![ThreadSpec { ops }],
        profiler: Default::default(),
    };
    s.validate().expect("valid scenario");
    s
}

fn launch(kernel: &str) -> Op {
    let (grid, block) = match kernel {
        "vadd" => ([64, 2, 1], [128, 1, 1]),
        _ => ([8, 1, 1], [256, 1, 1]),
    };
    Op::Launch {
        kernel: kernel.into(),
        grid,
        block,
        stream: 1,
        layer: Layer::Runtime,
    }
}

fn sync() -> Op {
    Op::StreamSync { stream: 1 }
}

/// What the sim's default catalog gives a launch of `symbol` (see [`scenario`] for the
/// launches' shapes).
fn want(symbol: &str, metric: &str) -> f64 {
    let vadd = symbol == VADD;
    let (ns, threads, warps) = if vadd {
        (20_000.0, 16_384.0, 512.0)
    } else {
        (50_000.0, 2_048.0, 64.0)
    };
    match metric {
        "gpu__time_duration.sum" => ns,
        "gpc__cycles_elapsed.max" => 2.0 * ns,
        "smsp__inst_executed.sum" => 10.0 * warps,
        "dram__bytes_read.sum" => 8.0 * threads,
        "dram__bytes_write.sum" => 4.0 * threads,
        "sm__throughput.avg.pct_of_peak_sustained_elapsed" => 62.5,
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed" => 41.25,
        "sm__warps_active.avg.pct_of_peak_sustained_active" => 75.0,
        "l1tex__t_sector_hit_rate.pct" => 50.0,
        "lts__t_sector_hit_rate.pct" => 87.5,
        m => panic!("no expected value for {m}"),
    }
}

fn expected(symbol: &str, metrics: &[&str]) -> BTreeMap<String, f64> {
    metrics
        .iter()
        .map(|m| (m.to_string(), want(symbol, m)))
        .collect()
}

/// Runs the program with counters on (`INJECTION_TRACE=gpu,api,counters` unless `env` says
/// otherwise), failing the test if the run misbehaves, the trace has problems, or its drop
/// counts are not `drops`.
fn run(
    dir: &Path,
    s: &Scenario,
    env: &[(&str, &str)],
    drops: &[(&str, u64)],
) -> (Outcome, Trace, PathBuf) {
    let path = dir.join("trace.pftrace");
    let mut spec = RunSpec::new(tool(), s.clone())
        .env("INJECTION_OUTPUT", path.display().to_string())
        .env("INJECTION_TRACE", "gpu,api,counters")
        .env("RUST_BACKTRACE", "0");
    for (k, v) in env {
        spec = spec.env(*k, *v);
    }
    let out = cupti_sim::host::run_checked(spec, Duration::from_secs(120));
    let r = &out.report;
    assert_eq!(r.records_dropped, 0, "records without a buffer: {r:#?}");
    let t = Trace::open(&path).unwrap_or_else(|e| panic!("trace file: {e:?}\n{}", out.stderr));
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    let drops: Vec<(String, u64)> = drops.iter().map(|(k, n)| (k.to_string(), *n)).collect();
    assert_eq!(t.drop_counts(), Some(drops), "drop counts\n{}", out.stderr);
    (out, t, path)
}

/// The per-kernel counter values (COMPUTE group): not the engines' busy % (SYSTEM, MEMORY)
/// that every trace with GPU work carries, derived from the activity (core's tests check
/// those).
fn kernel_counters(t: &Trace) -> impl Iterator<Item = &CounterValue> {
    t.counters
        .iter()
        .filter(|c| c.groups.contains(&wire::counters::GROUP_COMPUTE))
}

/// The kernels in launch order: the one GPU event each launch slice points at. Every launch
/// has exactly one, and every kernel comes from exactly one launch.
fn launched(t: &Trace) -> Vec<&GpuEvent> {
    let mut launches: Vec<_> = t
        .slices
        .iter()
        .filter(|s| s.name == "cuLaunchKernel")
        .collect();
    launches.sort_by_key(|s| s.ts);
    let ks: Vec<&GpuEvent> = launches
        .iter()
        .map(|s| {
            assert_eq!(s.submissions.len(), 1, "one kernel per launch: {s:?}");
            let k = t.gpu_event(s.submissions[0]).expect("the arrow's kernel");
            // The kernel runs inside its launch or after it (a placed kernel ends at its
            // launch's return).
            assert!(k.ts >= s.ts, "{} starts before its launch", k.name);
            k
        })
        .collect();
    assert_eq!(ks.len(), t.kernels().count(), "every kernel traced once");
    ks
}

/// The counter values inside kernel `k`: each sampled at its start and back to zero at its
/// end, as the UI's GPU-compute view reads them.
fn counters_of(t: &Trace, k: &GpuEvent) -> BTreeMap<String, f64> {
    let mut at_start = BTreeMap::new();
    for c in kernel_counters(t).filter(|c| c.ts >= k.ts && c.ts < k.ts + k.dur) {
        assert_eq!(c.ts, k.ts, "{} is sampled at its kernel's start", c.name);
        assert_eq!(c.gpu_id, k.gpu_id.unwrap(), "{}", c.name);
        at_start.insert(c.name.to_string(), c.value);
    }
    for name in at_start.keys() {
        assert!(
            kernel_counters(t)
                .any(|c| c.name.as_ref() == name && c.ts == k.ts + k.dur && c.value == 0.0),
            "{name} returns to zero at the end of {}",
            k.name
        );
    }
    at_start
}

/// Every counter sample belongs to one of `profiled` (at its start, or the zero at its end).
fn no_stray_samples(t: &Trace, profiled: &[&GpuEvent]) {
    for c in kernel_counters(t) {
        assert!(
            profiled
                .iter()
                .any(|k| c.ts == k.ts || (c.ts == k.ts + k.dur && c.value == 0.0)),
            "a sample outside the profiled kernels: {c:?}"
        );
    }
}

/// The trace processor shows what the reader decoded (counter values and times included),
/// and puts every non-zero value inside a GPU slice (the join of the UI's GPU-compute view).
fn check_tp(path: &Path, t: &Trace) {
    if let Some(a) = tp_check(path, t, &[]) {
        assert_eq!(a.unfinished, 0);
        assert_eq!(a.counter_values, t.counters.len());
        let rows = tp_tables(
            path,
            "select count(*), ifnull(sum(exists (select 1 from gpu_slice s
                                                 where s.ts <= c.ts and c.ts < s.ts + s.dur)), 0)
               from counter c join gpu_counter_track k on c.track_id = k.id
              where c.value != 0 and k.name not like '% busy';",
        )
        .unwrap();
        let (n, inside) = (&rows[0][0][0], &rows[0][0][1]);
        assert_eq!(n, inside, "non-zero counter values inside a GPU slice");
    }
    validate(path);
}

/// The `gpu-trace:` lines of stderr containing `needle`.
fn lines<'a>(stderr: &'a str, needle: &str) -> Vec<&'a str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("gpu-trace: ") && l.contains(needle))
        .collect()
}

/// `line` (a stderr line) is also a WARNING of the trace's GpuLog, word for word.
fn logged_as_warning(t: &Trace, line: &str) {
    let text = line.trim_start_matches("gpu-trace: ");
    let l = t
        .logs
        .iter()
        .find(|l| l.message == text)
        .unwrap_or_else(|| panic!("{text:?} is not in the trace's log: {:#?}", t.logs));
    assert_eq!(l.severity, WARNING, "{l:?}");
}

// ------------------------------------------------------------------------------- the tests

#[test]
fn a_bad_metric_name_is_said_once_with_the_nearest_names_and_the_rest_are_collected() {
    let dir = tmpdir("validation");
    let s = scenario(vec![launch("vadd"), launch("gemm"), launch("vadd"), sync()]);
    let metrics = [
        "gpu__time_duration.sum",
        "dram__bytes_readd.sum",
        "smsp__inst_executed.sum",
        "sm__cycles_elapsed",
    ];
    let (out, t, path) = run(&dir, &s, &[("INJECTION_METRICS", &metrics.join(","))], &[]);
    let typo = lines(&out.stderr, "dram__bytes_readd");
    assert_eq!(
        typo,
        [
            "gpu-trace: metric \"dram__bytes_readd.sum\" is not available on GH100 (no such metric); \
             nearest: dram__bytes_read, dram__bytes_write; the other metrics are collected"
        ],
        "{}",
        out.stderr
    );
    let bare = lines(&out.stderr, "\"sm__cycles_elapsed\"");
    assert_eq!(
        bare,
        [
            "gpu-trace: metric \"sm__cycles_elapsed\" is not available on GH100 (no such metric); \
             sm__cycles_elapsed exists: add a rollup such as .sum, .avg, .max or \
             .pct_of_peak_sustained_elapsed; the other metrics are collected"
        ],
        "{}",
        out.stderr
    );
    assert_eq!(
        lines(&out.stderr, "is not available").len(),
        2,
        "{}",
        out.stderr
    );
    logged_as_warning(&t, typo[0]);
    logged_as_warning(&t, bare[0]);

    let good = ["gpu__time_duration.sum", "smsp__inst_executed.sum"];
    let ks = launched(&t);
    assert_eq!(ks.len(), 3);
    for k in &ks {
        let name = &k.kernel.as_ref().unwrap().name;
        assert_eq!(counters_of(&t, k), expected(name, &good), "{name}");
    }
    no_stray_samples(&t, &ks);
    check_tp(&path, &t);
    if let Some(tracks) = tp_tables(
        &path,
        "select name from gpu_counter_track where name not like '% busy' order by name;",
    ) {
        assert_eq!(
            tracks[0],
            [["gpu__time_duration.sum"], ["smsp__inst_executed.sum"]]
        );
    }
    // Each name was checked on its own: the bad ones once each, then all the good ones
    // together for the configuration.
    assert_eq!(
        out.report.profiler_calls["cuptiProfilerHostConfigAddMetrics"],
        5
    );
    cleanup(&dir);
}

#[test]
fn the_default_metrics_are_described_once_interned_with_units_and_the_compute_group() {
    let dir = tmpdir("descriptor");
    let s = scenario(vec![launch("vadd"), launch("gemm"), launch("vadd"), sync()]);
    let (out, t, path) = run(&dir, &s, &[], &[]);
    // (name, Perfetto MeasureUnit codes, description) as the catalog and the rollup imply.
    let ns = [19u64];
    let percent = [37u64];
    let bytes = [7u64];
    let inst = [40u64];
    let specs: [(&str, &[u64], &str); 10] = [
        (
            "gpu__time_duration.sum",
            &ns,
            "total duration in nanoseconds",
        ),
        ("gpc__cycles_elapsed.max", &[], "# of cycles elapsed on GPC"),
        (
            "sm__throughput.avg.pct_of_peak_sustained_elapsed",
            &percent,
            "SM throughput assuming ideal load balancing across SMSPs (throughput)",
        ),
        (
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
            &percent,
            "compute memory pipeline throughput (throughput)",
        ),
        ("dram__bytes_read.sum", &bytes, "# of bytes read from DRAM"),
        (
            "dram__bytes_write.sum",
            &bytes,
            "# of bytes written to DRAM",
        ),
        (
            "sm__warps_active.avg.pct_of_peak_sustained_active",
            &percent,
            "cumulative # of warps in flight",
        ),
        (
            "l1tex__t_sector_hit_rate.pct",
            &percent,
            "# of sector hits per sector (ratio)",
        ),
        (
            "lts__t_sector_hit_rate.pct",
            &percent,
            "proportion of L2 sector lookups that hit (ratio)",
        ),
        (
            "smsp__inst_executed.sum",
            &inst,
            "# of warp instructions executed",
        ),
    ];
    let mut seen = BTreeMap::new();
    for c in kernel_counters(&t) {
        let spec = specs
            .iter()
            .find(|s| s.0 == c.name.as_ref())
            .unwrap_or_else(|| panic!("unexpected counter {}", c.name));
        assert_eq!(c.units.numerator, spec.1, "{}", c.name);
        assert!(c.units.denominator.is_empty(), "{}", c.name);
        assert_eq!(c.description.as_ref(), spec.2, "{}", c.name);
        assert_eq!(c.groups, [wire::counters::GROUP_COMPUTE], "{}", c.name);
        *seen.entry(c.name.to_string()).or_insert(0) += 1;
    }
    // Three kernels: a value at each start and a zero at each end.
    assert_eq!(seen.len(), 10, "{seen:?}");
    assert!(seen.values().all(|&n| n == 6), "{seen:?}");
    let names: Vec<&str> = specs.iter().map(|s| s.0).collect();
    let ks = launched(&t);
    for k in &ks {
        let sym = &k.kernel.as_ref().unwrap().name;
        assert_eq!(counters_of(&t, k), expected(sym, &names), "{sym}");
    }

    // On the wire: one interned per-kernel descriptor (GPU 0's), and every counter event of
    // its sequence refers to it by iid instead of carrying one. (The busy % derived from the
    // activity has its own descriptor, on the render stages' sequence.)
    let bytes = std::fs::read(&path).unwrap();
    let mut described = 0;
    let mut kernel_seqs = Vec::new();
    let mut counter_events: Vec<(u64, bool)> = Vec::new();
    for f in Fields::new(&bytes) {
        let (field, v) = f.expect("a trace");
        let (wire::TRACE_PACKET, Value::Len(p)) = (field, v) else {
            continue;
        };
        let seq = Fields::new(p)
            .filter_map(Result::ok)
            .find_map(|f| match f {
                (wire::packet::SEQUENCE_ID, Value::Varint(n)) => Some(n),
                _ => None,
            })
            .unwrap_or(0);
        for f in Fields::new(p) {
            match f.expect("a packet") {
                (wire::packet::INTERNED_DATA, Value::Len(i)) => {
                    for (n, d) in Fields::new(i).filter_map(Result::ok) {
                        let (wire::interned::GPU_COUNTER_DESCRIPTORS, Value::Len(d)) = (n, d)
                        else {
                            continue;
                        };
                        let per_kernel = Fields::new(d).filter_map(Result::ok).any(|f| {
                            let (wire::counters::IDESC_DESCRIPTOR, Value::Len(cd)) = f else {
                                return false;
                            };
                            Fields::new(cd).filter_map(Result::ok).any(|f| {
                                matches!(
                                    f,
                                    (wire::counters::DESC_SUPPORTS_INSTRUMENTED, Value::Varint(1))
                                )
                            })
                        });
                        if per_kernel {
                            described += 1;
                            kernel_seqs.push(seq);
                        }
                    }
                }
                (wire::packet::GPU_COUNTER_EVENT, Value::Len(e)) => {
                    let fields: Vec<u32> =
                        Fields::new(e).filter_map(Result::ok).map(|f| f.0).collect();
                    assert!(!fields.contains(&1), "an inline counter_descriptor");
                    counter_events.push((seq, fields.contains(&wire::counters::DESCRIPTOR_IID)));
                }
                _ => {}
            }
        }
    }
    assert_eq!(described, 1, "GPU 0's counters are described once");
    let (events, by_iid) = counter_events
        .iter()
        .filter(|(seq, _)| kernel_seqs.contains(seq))
        .fold((0, 0), |(n, i), &(_, iid)| (n + 1, i + usize::from(iid)));
    assert_eq!((events, by_iid), (6, 6), "counter events by descriptor iid");

    check_tp(&path, &t);
    if let Some(tables) = tp_tables(
        &path,
        "select name, ifnull(unit, ''), description from gpu_counter_track
           where name not like '% busy' order by name;
         select g.group_id, count(*) from gpu_counter_group g
           join gpu_counter_track k on g.track_id = k.id where k.name not like '% busy'
          group by 1;",
    ) {
        let mut want: Vec<Vec<String>> = specs
            .iter()
            .map(|(n, u, d)| {
                let unit = match u.first() {
                    Some(19) => "ns",
                    Some(37) => "%",
                    Some(7) => "B",
                    Some(40) => "Instruction",
                    _ => "",
                };
                vec![n.to_string(), unit.to_owned(), d.to_string()]
            })
            .collect();
        want.sort();
        assert_eq!(tables[0], want, "counter tracks: name, unit, description");
        assert_eq!(
            tables[1],
            [["6", "10"]],
            "every counter in GpuCounterGroup COMPUTE"
        );
    }
    assert!(out.report.profiler_calls["cuptiProfilerHostGetBaseMetrics"] >= 3);
    cleanup(&dir);
}

/// Kernel replay: each profiled kernel is replayed inside its launch, its activity record has
/// no timestamps, and the trace draws it ending at the launch's return, lasting the measured
/// `gpu__time_duration`, with its counters inside.
#[test]
fn kernel_replay_places_each_profiled_kernel_with_its_exact_counters_inside() {
    let dir = tmpdir("replay");
    let s = scenario(vec![
        launch("vadd"),
        launch("gemm"),
        Op::Memcpy {
            bytes: 4096,
            kind: cupti_sim::scenario::CopyKind::D2H,
            stream: Some(1),
        },
        launch("vadd"),
        launch("gemm"),
        sync(),
    ]);
    let metrics = [
        "gpu__time_duration.sum",
        "smsp__inst_executed.sum",
        "dram__bytes_read.sum",
    ];
    let (out, t, path) = run(
        &dir,
        &s,
        &[("INJECTION_METRICS", &metrics.join(",")), KERNEL_REPLAY],
        &[],
    );
    let ks = launched(&t);
    let symbols: Vec<&str> = ks
        .iter()
        .map(|k| k.kernel.as_ref().unwrap().name.as_str())
        .collect();
    assert_eq!(symbols, [VADD, GEMM, VADD, GEMM]);
    let launches: Vec<_> = {
        let mut l: Vec<_> = t
            .slices
            .iter()
            .filter(|s| s.name == "cuLaunchKernel")
            .collect();
        l.sort_by_key(|s| s.ts);
        l
    };
    for ((k, l), sym) in ks.iter().zip(&launches).zip(&symbols) {
        let ns = if *sym == VADD { 20_000 } else { 50_000 };
        assert_eq!(k.dur, ns, "{sym} lasts what the profiler measured");
        assert!(
            l.ts <= k.ts && k.ts + k.dur <= l.ts + l.dur,
            "{sym} is drawn inside its launch, which replayed it: {k:?} {l:?}"
        );
        assert_eq!(counters_of(&t, k), expected(sym, &metrics), "{sym}");
    }
    no_stray_samples(&t, &ks);
    // The copy keeps the timestamps of its record.
    let copy = t
        .gpu_events
        .iter()
        .find(|g| g.name == "Memcpy DtoH")
        .unwrap();
    assert!(copy.ts > launches[1].ts && copy.dur > 0, "{copy:?}");
    let placed = "profiled kernels have no GPU timestamps under kernel replay";
    assert_eq!(
        t.logs
            .iter()
            .filter(|l| l.message.starts_with(placed))
            .count(),
        1,
        "said once: {:#?}",
        t.logs
    );
    let r = &out.report;
    assert_eq!((r.ranges_profiled, r.kernel_replays), (4, 4));
    assert_eq!(
        r.profiler_calls["cuptiRangeProfilerEnable"], 1,
        "one per context"
    );
    assert_eq!(r.profiler_calls["cuptiRangeProfilerStart"], 4);
    assert_eq!(r.profiler_calls["cuptiRangeProfilerDecodeData"], 4);
    // Each replayed kernel's record is asked for at its launch's exit (a
    // buffer of its own), not a buffer later behind newer packets, which
    // Perfetto's trace processor would drop as out of order.
    assert!(
        r.flushes >= 4 && r.buffers_completed >= 4,
        "one forced flush per replayed launch: {} flush(es), {} buffer(s)",
        r.flushes,
        r.buffers_completed
    );
    check_tp(&path, &t);
    cleanup(&dir);
}

/// A set of several passes is collected by kernel replay, whether asked for or chosen by
/// `auto` (the default).
#[test]
fn a_metric_set_of_three_passes_replays_each_kernel_three_times() {
    for replay in ["auto", "kernel"] {
        let dir = tmpdir(&format!("passes-{replay}"));
        let mut s = scenario(vec![launch("vadd"), launch("gemm"), sync()]);
        s.profiler.metric_mut("dram__bytes_read").passes = 3;
        let metrics = ["gpu__time_duration.sum", "dram__bytes_read.sum"];
        let (out, t, path) = run(
            &dir,
            &s,
            &[
                ("INJECTION_METRICS", &metrics.join(",")),
                ("INJECTION_VERBOSE", "1"),
                ("INJECTION_COUNTERS_REPLAY", replay),
            ],
            &[],
        );
        assert_eq!(
            lines(&out.stderr, "pass(es) per profiled kernel"),
            [
                "gpu-trace: counters on GH100 (device 0): 2 metric(s), 3 pass(es) per profiled kernel, kernel replay"
            ],
            "{replay}: {}",
            out.stderr
        );
        assert_eq!(
            out.report.kernel_replays, 6,
            "{replay}: two kernels, three passes each"
        );
        assert_eq!(
            out.report.profiler_calls["cuptiRangeProfilerStart"], 2,
            "{replay}: a session per kernel"
        );
        let ks = launched(&t);
        for k in &ks {
            let sym = &k.kernel.as_ref().unwrap().name;
            // One pass's duration, not the three the launch took.
            assert_eq!(counters_of(&t, k), expected(sym, &metrics), "{sym}");
            assert_eq!(k.dur as f64, want(sym, "gpu__time_duration.sum"));
            let l = t
                .slices
                .iter()
                .find(|l| l.submissions.contains(&k.event_id))
                .unwrap();
            assert!(l.dur >= 3 * k.dur, "the launch ran every pass: {l:?}");
        }
        check_tp(&path, &t);
        cleanup(&dir);
    }
}

/// `INJECTION_KERNEL_FILTER`, `_SKIP` and `_COUNT` choose the profiled launches; the others
/// are traced as usual, with their own timestamps and no counters. Under kernel replay each
/// chosen launch is a session of its own (user replay's sessions:
/// [`user_replay_sessions_end_at_a_launch_the_filter_does_not_choose`]).
#[test]
fn the_kernel_filter_chooses_exactly_the_profiled_launches() {
    // v g v g v g v g
    let ops: Vec<Op> = (0..8)
        .map(|i| launch(if i % 2 == 0 { "vadd" } else { "gemm" }))
        .chain([sync()])
        .collect();
    let s = scenario(ops);
    let metrics = ["gpu__time_duration.sum", "smsp__inst_executed.sum"];
    /// (tag, the filter's variables, the launches it chooses)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [usize]);
    let cases: [Case<'_>; 5] = [
        (
            "glob",
            &[("INJECTION_KERNEL_FILTER", "*gemm*")],
            &[1, 3, 5, 7],
        ),
        (
            "demangled",
            &[
                ("INJECTION_KERNEL_FILTER", "vadd(*"),
                ("INJECTION_KERNEL_SKIP", "1"),
                ("INJECTION_KERNEL_COUNT", "2"),
            ],
            &[2, 4],
        ),
        ("skip", &[("INJECTION_KERNEL_SKIP", "5")], &[5, 6, 7]),
        ("count", &[("INJECTION_KERNEL_COUNT", "1")], &[0]),
        (
            "two globs",
            &[("INJECTION_KERNEL_FILTER", "nothing*, _Z4gemm*")],
            &[1, 3, 5, 7],
        ),
    ];
    for (tag, filter, chosen) in cases {
        let dir = tmpdir(&format!("filter-{}", tag.replace(' ', "-")));
        let m = metrics.join(",");
        let mut env: Vec<(&str, &str)> = vec![("INJECTION_METRICS", &m), KERNEL_REPLAY];
        env.extend_from_slice(filter);
        let (out, t, path) = run(&dir, &s, &env, &[]);
        let ks = launched(&t);
        assert_eq!(ks.len(), 8, "{tag}");
        let mut profiled = Vec::new();
        for (i, k) in ks.iter().enumerate() {
            let sym = k.kernel.as_ref().unwrap().name.as_str();
            assert_eq!(
                sym,
                if i % 2 == 0 { VADD } else { GEMM },
                "{tag}: launch {i}"
            );
            assert_eq!(
                k.dur as f64,
                want(sym, "gpu__time_duration.sum"),
                "{tag}: {i}"
            );
            let got = counters_of(&t, k);
            if chosen.contains(&i) {
                assert_eq!(got, expected(sym, &metrics), "{tag}: launch {i}");
                profiled.push(*k);
            } else {
                assert!(got.is_empty(), "{tag}: launch {i} has counters {got:?}");
            }
        }
        no_stray_samples(&t, &profiled);
        let r = &out.report;
        assert_eq!(r.ranges_profiled, chosen.len() as u64, "{tag}");
        assert_eq!(
            r.profiler_calls["cuptiRangeProfilerStart"],
            chosen.len() as u64,
            "{tag}: a session per chosen launch only"
        );
        check_tp(&path, &t);
        cleanup(&dir);
    }
}

#[test]
fn graph_launches_get_no_counters_and_say_so_once() {
    let dir = tmpdir("graphs");
    let s = scenario(vec![
        Op::BeginCapture { stream: 1 },
        launch("vadd"),
        launch("gemm"),
        Op::EndCapture {
            stream: 1,
            graph: "g".into(),
        },
        Op::GraphLaunch {
            graph: "g".into(),
            stream: 1,
        },
        launch("gemm"),
        Op::GraphLaunch {
            graph: "g".into(),
            stream: 1,
        },
        sync(),
    ]);
    let (out, t, path) = run(
        &dir,
        &s,
        &[("INJECTION_METRICS", "gpu__time_duration.sum")],
        &[],
    );
    let said = lines(&out.stderr, "CUDA graphs get no counters");
    assert_eq!(said.len(), 1, "{}", out.stderr);
    logged_as_warning(&t, said[0]);
    assert_eq!(t.kernels().count(), 5, "four graph nodes and a launch");
    let mut profiled = Vec::new();
    for k in t.kernels() {
        let got = counters_of(&t, k);
        if k.arg("graph_node_id").is_some() {
            assert!(got.is_empty(), "a graph node has counters: {got:?}");
        } else {
            assert_eq!(got, expected(GEMM, &["gpu__time_duration.sum"]));
            profiled.push(k);
        }
    }
    assert_eq!(profiled.len(), 1);
    no_stray_samples(&t, &profiled);
    // Launches into the capture ran nothing: no session for them.
    assert_eq!(out.report.profiler_calls["cuptiRangeProfilerStart"], 1);
    check_tp(&path, &t);
    cleanup(&dir);
}

/// A fault that ends counters for the process says so in one line, in the trace too, and
/// every kernel is still traced, with its own timestamps.
#[test]
fn profiler_faults_give_one_line_and_kernels_are_traced_as_usual() {
    let cases = [
        (
            "unsupported",
            Fault::always(ProfilerCall::Enable, "CUPTI_ERROR_NOT_SUPPORTED"),
            "CUPTI_ERROR_NOT_SUPPORTED",
            "cuptiRangeProfilerEnable",
        ),
        (
            "second-client",
            Fault::always(
                ProfilerCall::Initialize,
                "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
            ),
            "CUPTI is already in use by another profiler",
            "cuptiProfilerInitialize",
        ),
        (
            "no-chip",
            Fault::always(ProfilerCall::ChipName, "CUPTI_ERROR_NOT_SUPPORTED"),
            "CUPTI_ERROR_NOT_SUPPORTED",
            "cuptiDeviceGetChipName",
        ),
    ];
    for (tag, fault, says, failed) in cases {
        let dir = tmpdir(tag);
        let mut s = scenario(vec![
            launch("vadd"),
            launch("gemm"),
            launch("vadd"),
            launch("gemm"),
            sync(),
        ]);
        s.profiler.faults.push(fault);
        let (out, t, path) = run(&dir, &s, &[], &[]);
        let off = lines(&out.stderr, "per-kernel counters are off");
        assert_eq!(off.len(), 1, "{tag}: {}", out.stderr);
        assert!(off[0].contains(says), "{tag}: {}", off[0]);
        assert!(off[0].ends_with("traced as usual"), "{tag}: {}", off[0]);
        logged_as_warning(&t, off[0]);
        assert_eq!(kernel_counters(&t).count(), 0, "{tag}");
        let ks = launched(&t);
        assert_eq!(ks.len(), 4, "{tag}");
        for k in &ks {
            let sym = k.kernel.as_ref().unwrap().name.as_str();
            assert_eq!(k.dur as f64, want(sym, "gpu__time_duration.sum"), "{tag}");
        }
        let calls = &out.report.profiler_calls;
        assert_eq!(
            calls[failed], 1,
            "{tag}: tried once, not per kernel: {calls:#?}"
        );
        assert!(
            !calls.contains_key("cuptiRangeProfilerStart"),
            "{tag}: {calls:#?}"
        );
        assert_eq!(out.report.kernel_replays, 0, "{tag}");
        check_tp(&path, &t);
        cleanup(&dir);
    }
}

/// Under kernel replay, a replay that fails for one kernel costs that kernel's counters only
/// (counted as dropped, said once); the kernel is still traced, the kernels after it get
/// theirs. (User replay loses the session's batch:
/// [`a_failed_user_replay_session_loses_its_batch_and_says_so_once`].)
#[test]
fn a_failed_replay_loses_one_kernels_counters_and_says_so_once() {
    let cases = [
        (
            "stop",
            Fault::nth(ProfilerCall::Stop, 1, "CUPTI_ERROR_HARDWARE"),
            "CUPTI_ERROR_HARDWARE",
        ),
        (
            "passes",
            Fault::nth(ProfilerCall::Stop, 1, "CUPTI_SUCCESS"),
            "not every replay pass ran",
        ),
        (
            "decode",
            Fault::nth(ProfilerCall::Decode, 1, "CUPTI_ERROR_UNKNOWN"),
            "CUPTI_ERROR_UNKNOWN",
        ),
    ];
    for (tag, fault, says) in cases {
        let dir = tmpdir(&format!("replay-{tag}"));
        let mut s = scenario(vec![
            launch("vadd"),
            launch("gemm"),
            launch("vadd"),
            launch("gemm"),
            sync(),
        ]);
        s.profiler.faults.push(fault);
        let metrics = ["gpu__time_duration.sum", "smsp__inst_executed.sum"];
        let (out, t, path) = run(
            &dir,
            &s,
            &[("INJECTION_METRICS", &metrics.join(",")), KERNEL_REPLAY],
            &[("counters", 1)],
        );
        let failed = lines(&out.stderr, "replay failed");
        assert_eq!(failed.len(), 1, "{tag}: {}", out.stderr);
        assert!(failed[0].contains(says), "{tag}: {}", failed[0]);
        assert!(
            failed[0].contains("counted as dropped"),
            "{tag}: {}",
            failed[0]
        );
        let ks = launched(&t);
        assert_eq!(ks.len(), 4, "{tag}");
        let mut profiled = Vec::new();
        for (i, k) in ks.iter().enumerate() {
            let sym = k.kernel.as_ref().unwrap().name.as_str();
            let got = counters_of(&t, k);
            if i == 1 {
                assert!(got.is_empty(), "{tag}: the failed kernel has {got:?}");
            } else {
                assert_eq!(got, expected(sym, &metrics), "{tag}: launch {i}");
                assert_eq!(k.dur as f64, want(sym, "gpu__time_duration.sum"));
                profiled.push(*k);
            }
        }
        no_stray_samples(&t, &profiled);
        assert_eq!(
            out.report.profiler_calls["cuptiRangeProfilerStart"], 4,
            "{tag}"
        );
        check_tp(&path, &t);
        cleanup(&dir);
    }
}

/// Without counters the profiler is never touched, whatever else is recorded.
#[test]
fn without_counters_the_profiler_is_never_initialised() {
    for trace in ["gpu", "gpu,api", "gpu,api,markers"] {
        let dir = tmpdir(&format!("off-{}", trace.replace(',', "-")));
        let s = scenario(vec![launch("vadd"), launch("gemm"), sync()]);
        let (out, t, path) = run(&dir, &s, &[("INJECTION_TRACE", trace)], &[]);
        assert!(
            out.report.profiler_calls.is_empty(),
            "{trace}: {:#?}",
            out.report.profiler_calls
        );
        assert_eq!(kernel_counters(&t).count(), 0);
        assert_eq!(t.kernels().count(), 2, "{trace}");
        assert!(
            t.kernels().all(|k| k.dur > 0),
            "{trace}: kernels keep their timestamps"
        );
        check_tp(&path, &t);
        cleanup(&dir);
    }
}

/// A launch of another thread that is not profiled must not fall into a profiled launch's
/// session (CUPTI profiles the context, not a thread: its kernel would become a range of the
/// session, dropped or mistaken for the profiled one). It waits for the launch gate and closes
/// the session first, so it is never a range: it is traced with its own timestamps and no
/// counters, and the chosen kernel keeps its own.
/// - Kernel replay: the fast launches come while the slow launch replays its kernel (150 ms)
///   and wait for that launch to return.
/// - User replay (`auto`, one pass): the slow launch has returned and its session stays open
///   while its kernel runs; the first fast launch closes it.
#[test]
fn a_kernel_of_another_thread_during_a_profiled_launch_is_still_traced() {
    for replay in ["kernel", "auto"] {
        let dir = tmpdir(&format!("threads-{replay}"));
        let k = |name: &str, symbol: &str, us| KernelSpec {
            name: name.into(),
            symbol: symbol.into(),
            registers: 32,
            static_smem: 0,
            duration_us: us,
        };
        let on = |kernel: &str, stream| Op::Launch {
            kernel: kernel.into(),
            grid: [8, 1, 1],
            block: [256, 1, 1],
            stream,
            layer: Layer::Runtime,
        };
        let s = Scenario {
            kernels: vec![k("slow", "_Z4slowv", 150_000), k("fast", "_Z4fastv", 10)],
            threads: vec![
                ThreadSpec {
                    ops: vec![on("slow", 1), Op::StreamSync { stream: 1 }],
                },
                ThreadSpec {
                    ops: vec![
                        // While the slow kernel runs (replayed inside its launch, or queued).
                        Op::SleepUs { us: 25_000 },
                        on("fast", 2),
                        on("fast", 2),
                        Op::StreamSync { stream: 2 },
                    ],
                },
            ],
            profiler: Default::default(),
        };
        let (out, t, path) = run(
            &dir,
            &s,
            &[
                ("INJECTION_METRICS", "gpu__time_duration.sum"),
                ("INJECTION_KERNEL_FILTER", "slow*"),
                ("INJECTION_COUNTERS_REPLAY", replay),
            ],
            &[],
        );
        let ks = launched(&t);
        assert_eq!(ks.len(), 3, "{replay}: {}", out.stderr);
        let sym = |k: &GpuEvent| k.kernel.as_ref().unwrap().name.clone();
        let slow = *ks.iter().find(|k| sym(k) == "_Z4slowv").unwrap();
        let slow_end = slow.ts + slow.dur;
        assert_eq!(
            counters_of(&t, slow),
            BTreeMap::from([("gpu__time_duration.sum".into(), 150e6)]),
            "{replay}"
        );
        assert_eq!(slow.dur, 150_000_000, "{replay}");
        let slow_launch = launch_of(&t, slow);
        let fast: Vec<_> = ks.iter().filter(|k| sym(k) == "_Z4fastv").collect();
        assert!(
            launch_of(&t, fast[0]).ts < slow_end,
            "{replay}: the first fast launch came while the slow kernel ran"
        );
        for k in fast {
            let got = counters_of(&t, k);
            assert!(got.is_empty(), "{replay}: {got:?}");
            assert_eq!(k.dur, 10_000, "{replay}: its own record's timestamps");
            if replay == "kernel" {
                assert!(
                    k.ts >= slow_end,
                    "the fast launch waited for the profiled launch: {k:?} {slow:?}"
                );
            }
        }
        if replay == "auto" {
            assert!(
                slow_launch.ts + slow_launch.dur < slow_end,
                "user replay: the launch returned while its kernel ran (its own timestamps)"
            );
        }
        let r = &out.report;
        assert_eq!(
            (r.ranges_profiled, r.ranges_dropped),
            (1, 0),
            "{replay}: the fast kernels fell into no session"
        );
        assert_eq!(r.kernel_replays, u64::from(replay == "kernel"), "{replay}");
        assert_eq!(sessions(r), 1, "{replay}");
        check_tp(&path, &t);
        cleanup(&dir);
    }
}

/// The launch slice that submitted kernel `k`.
fn launch_of<'a>(t: &'a Trace, k: &GpuEvent) -> &'a Slice {
    t.slices
        .iter()
        .find(|l| l.submissions.contains(&k.event_id))
        .unwrap_or_else(|| panic!("no launch of {k:?}"))
}

/// The profiler sessions of a run in which none failed: each makes one start, push, pop, stop
/// and decode call.
fn sessions(r: &Report) -> u64 {
    let c = &r.profiler_calls;
    let n = c.get("cuptiRangeProfilerStart").copied().unwrap_or(0);
    for f in [
        "cuptiRangeProfilerPushRange",
        "cuptiRangeProfilerPopRange",
        "cuptiRangeProfilerStop",
        "cuptiRangeProfilerDecodeData",
    ] {
        assert_eq!(
            c.get(f).copied().unwrap_or(0),
            n,
            "{f}, one a session: {c:#?}"
        );
    }
    n
}

/// `v g v g v g v ...`: `n` launches, then a sync.
fn alternating(n: usize) -> Scenario {
    scenario(
        (0..n)
            .map(|i| launch(if i % 2 == 0 { "vadd" } else { "gemm" }))
            .chain([sync()])
            .collect(),
    )
}

// ----------------------------------------------------------------------------- user replay

/// User replay (what `auto` takes for a one-pass set): one session holds up to
/// `INJECTION_COUNTERS_BATCH` consecutive profiled kernels, one auto range each. Every kernel
/// runs once, as launched, keeps its own GPU timestamps (none is placed) and gets exactly its
/// own values.
#[test]
fn user_replay_batches_kernels_into_sessions_and_keeps_their_timestamps() {
    let dir = tmpdir("batches");
    let s = alternating(7);
    let metrics = [
        "gpu__time_duration.sum",
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
    ];
    let (out, t, path) = run(
        &dir,
        &s,
        &[
            ("INJECTION_METRICS", &metrics.join(",")),
            ("INJECTION_COUNTERS_BATCH", "3"),
            ("INJECTION_VERBOSE", "1"),
        ],
        &[],
    );
    assert_eq!(
        lines(&out.stderr, "pass(es) per profiled kernel"),
        [
            "gpu-trace: counters on GH100 (device 0): 3 metric(s), 1 pass(es) per profiled kernel, user replay (no replay, up to 3 kernels per session)"
        ],
        "{}",
        out.stderr
    );
    let ks = launched(&t);
    assert_eq!(ks.len(), 7);
    for (i, k) in ks.iter().enumerate() {
        let sym = k.kernel.as_ref().unwrap().name.as_str();
        assert_eq!(sym, if i % 2 == 0 { VADD } else { GEMM }, "launch {i}");
        assert_eq!(k.dur as f64, want(sym, "gpu__time_duration.sum"), "{i}");
        assert_eq!(counters_of(&t, k), expected(sym, &metrics), "launch {i}");
        if i > 0 {
            // Its record's interval: queued on the stream behind the kernel before it (a
            // kernel placed at its launch's return would overlap the one before).
            let p = ks[i - 1];
            assert!(k.ts >= p.ts + p.dur, "{i}: {k:?} after {p:?}");
        }
    }
    no_stray_samples(&t, &ks);
    assert!(
        t.log("profiled kernels have no GPU timestamps").is_none(),
        "nothing placed: {:#?}",
        t.logs
    );
    let r = &out.report;
    assert_eq!(
        sessions(r),
        3,
        "7 kernels, 3 a session: {:#?}",
        r.profiler_calls
    );
    assert_eq!(
        (r.ranges_profiled, r.ranges_dropped, r.kernel_replays),
        (7, 0, 0)
    );
    assert_eq!(r.profiler_calls["cuptiRangeProfilerEnable"], 1);
    check_tp(&path, &t);
    cleanup(&dir);
}

/// Under user replay a launch the filter does not choose closes the open session before it
/// runs (its kernel must not become a range of it), and the chosen launches after it open a
/// new one.
#[test]
fn user_replay_sessions_end_at_a_launch_the_filter_does_not_choose() {
    // g g v g g
    let s = scenario(vec![
        launch("gemm"),
        launch("gemm"),
        launch("vadd"),
        launch("gemm"),
        launch("gemm"),
        sync(),
    ]);
    let metrics = ["gpu__time_duration.sum", "dram__bytes_read.sum"];
    /// (tag, the filter's variables, the launches it chooses, the sessions)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [usize], u64);
    let cases: [Case<'_>; 3] = [
        // {0 1} closed by the vadd, {3 4} at exit.
        (
            "glob",
            &[("INJECTION_KERNEL_FILTER", "*gemm*")],
            &[0, 1, 3, 4],
            2,
        ),
        // {0 1} closed by the vadd, {3} by the last launch: the count is reached.
        (
            "count",
            &[
                ("INJECTION_KERNEL_FILTER", "*gemm*"),
                ("INJECTION_KERNEL_COUNT", "3"),
            ],
            &[0, 1, 3],
            2,
        ),
        // The skipped launch opens nothing; {1 2 3 4}.
        ("skip", &[("INJECTION_KERNEL_SKIP", "1")], &[1, 2, 3, 4], 1),
    ];
    for (tag, filter, chosen, want_sessions) in cases {
        let dir = tmpdir(&format!("user-filter-{tag}"));
        let m = metrics.join(",");
        let mut env: Vec<(&str, &str)> = vec![("INJECTION_METRICS", &m)];
        env.extend_from_slice(filter);
        let (out, t, path) = run(&dir, &s, &env, &[]);
        let ks = launched(&t);
        assert_eq!(ks.len(), 5, "{tag}");
        let mut profiled = Vec::new();
        for (i, k) in ks.iter().enumerate() {
            let sym = k.kernel.as_ref().unwrap().name.as_str();
            assert_eq!(sym, if i == 2 { VADD } else { GEMM }, "{tag}: launch {i}");
            assert_eq!(
                k.dur as f64,
                want(sym, "gpu__time_duration.sum"),
                "{tag}: {i}"
            );
            let got = counters_of(&t, k);
            if chosen.contains(&i) {
                assert_eq!(got, expected(sym, &metrics), "{tag}: launch {i}");
                profiled.push(*k);
            } else {
                assert!(got.is_empty(), "{tag}: launch {i} has counters {got:?}");
            }
        }
        no_stray_samples(&t, &profiled);
        let r = &out.report;
        assert_eq!(
            (r.ranges_profiled, r.ranges_dropped),
            (chosen.len() as u64, 0),
            "{tag}: only the chosen kernels are ranges"
        );
        assert_eq!(sessions(r), want_sessions, "{tag}");
        check_tp(&path, &t);
        cleanup(&dir);
    }
}

/// Under user replay a failed stop or decode loses the session's whole batch: counted as
/// dropped, said once however many sessions fail; every kernel is still traced once, and the
/// sessions after it get their counters.
#[test]
fn a_failed_user_replay_session_loses_its_batch_and_says_so_once() {
    let decode_twice = Fault {
        times: Some(2),
        ..Fault::always(ProfilerCall::Decode, "CUPTI_ERROR_UNKNOWN")
    };
    // (tag, fault, said, the kernels that lose their counters, decode calls)
    let cases = [
        (
            "stop",
            Fault::nth(ProfilerCall::Stop, 1, "CUPTI_ERROR_HARDWARE"),
            "CUPTI_ERROR_HARDWARE",
            3..6,
            2,
        ),
        (
            "passes",
            Fault::nth(ProfilerCall::Stop, 1, "CUPTI_SUCCESS"),
            "not every replay pass ran",
            3..6,
            2,
        ),
        ("decode", decode_twice, "CUPTI_ERROR_UNKNOWN", 0..6, 3),
    ];
    for (tag, fault, says, lost, decodes) in cases {
        let dir = tmpdir(&format!("user-fail-{tag}"));
        let mut s = alternating(7);
        s.profiler.faults.push(fault);
        let metrics = ["gpu__time_duration.sum", "dram__bytes_read.sum"];
        let (out, t, path) = run(
            &dir,
            &s,
            &[
                ("INJECTION_METRICS", &metrics.join(",")),
                ("INJECTION_COUNTERS_BATCH", "3"),
            ],
            &[("counters", lost.len() as u64)],
        );
        let failed = lines(&out.stderr, "failed");
        assert_eq!(failed.len(), 1, "{tag}: {}", out.stderr);
        assert!(
            failed[0].starts_with("gpu-trace: a profiler session of 3 kernel(s) failed (")
                && failed[0].contains(says)
                && failed[0].ends_with("); their counters are missing (counted as dropped)"),
            "{tag}: {}",
            failed[0]
        );
        let ks = launched(&t);
        assert_eq!(ks.len(), 7, "{tag}");
        let mut profiled = Vec::new();
        for (i, k) in ks.iter().enumerate() {
            let sym = k.kernel.as_ref().unwrap().name.as_str();
            assert_eq!(k.dur as f64, want(sym, "gpu__time_duration.sum"), "{tag}");
            let got = counters_of(&t, k);
            if lost.contains(&i) {
                assert!(
                    got.is_empty(),
                    "{tag}: launch {i} of a failed session has {got:?}"
                );
            } else {
                assert_eq!(got, expected(sym, &metrics), "{tag}: launch {i}");
                profiled.push(*k);
            }
        }
        no_stray_samples(&t, &profiled);
        let c = &out.report.profiler_calls;
        assert_eq!(c["cuptiRangeProfilerStart"], 3, "{tag}");
        assert_eq!(c["cuptiRangeProfilerStop"], 3, "{tag}");
        assert_eq!(c["cuptiRangeProfilerDecodeData"], decodes, "{tag}");
        check_tp(&path, &t);
        cleanup(&dir);
    }
}

/// A session still open at exit is closed by the tool's exit handler before the trace is
/// written: the last kernels' counters are in it. One still open when the counters session
/// ends (here `cudaProfilerStop` ending the capture range) is closed then: a kernel launched
/// after it is no range of it.
#[test]
fn an_open_user_replay_session_is_closed_at_exit_and_when_counters_end() {
    let metrics = ["gpu__time_duration.sum", "dram__bytes_write.sum"];
    let m = metrics.join(",");
    /// (tag, the program, its environment)
    type Case<'a> = (&'a str, Vec<Op>, Vec<(&'a str, &'a str)>);
    let cases: [Case<'_>; 2] = [
        // No sync: the program exits with its kernels running and the session open.
        (
            "exit",
            vec![launch("vadd"), launch("gemm")],
            vec![("INJECTION_METRICS", &m)],
        ),
        (
            "stop",
            vec![
                Op::ProfilerStart,
                launch("vadd"),
                launch("gemm"),
                sync(),
                Op::ProfilerStop,
                launch("vadd"),
                sync(),
            ],
            vec![
                ("INJECTION_METRICS", &m),
                ("INJECTION_CAPTURE_RANGE", "cudaProfilerApi"),
            ],
        ),
    ];
    for (tag, ops, env) in cases {
        let dir = tmpdir(&format!("open-{tag}"));
        let s = scenario(ops);
        let (out, t, path) = run(&dir, &s, &env, &[]);
        let ks = launched(&t);
        assert_eq!(ks.len(), 2, "{tag}: {}", out.stderr);
        for k in &ks {
            let sym = k.kernel.as_ref().unwrap().name.as_str();
            assert_eq!(counters_of(&t, k), expected(sym, &metrics), "{tag}: {sym}");
        }
        no_stray_samples(&t, &ks);
        let r = &out.report;
        assert_eq!((r.ranges_profiled, r.ranges_dropped), (2, 0), "{tag}");
        assert_eq!(sessions(r), 1, "{tag}");
        check_tp(&path, &t);
        cleanup(&dir);
    }
}

/// CUPTI instruments kernels under user replay, which biases instruction counts: a one-pass
/// set with an `inst_executed` metric says so once (in the trace too); kernel replay, or a set
/// without one, says nothing.
#[test]
fn user_replay_with_an_instruction_count_warns_once() {
    let said = "gpu-trace: counters use user replay (one pass, no kernel replay): CUPTI instruments each profiled kernel, which adds about 8 instructions per warp to inst_executed counts; INJECTION_COUNTERS_REPLAY=kernel gives exact counts at about 20 ms per kernel";
    // (tag, replay, metrics (empty: the defaults), warned)
    let cases = [
        ("defaults", "auto", "", true),
        (
            "user",
            "user",
            "smsp__inst_executed.sum,gpu__time_duration.sum",
            true,
        ),
        ("kernel", "kernel", "", false),
        (
            "no-inst",
            "auto",
            "gpu__time_duration.sum,dram__bytes_read.sum",
            false,
        ),
    ];
    for (tag, replay, metrics, warned) in cases {
        let dir = tmpdir(&format!("inst-{tag}"));
        let s = alternating(3);
        let mut env = vec![("INJECTION_COUNTERS_REPLAY", replay)];
        if !metrics.is_empty() {
            env.push(("INJECTION_METRICS", metrics));
        }
        let (out, t, path) = run(&dir, &s, &env, &[]);
        let got = lines(&out.stderr, "inst_executed counts");
        if warned {
            assert_eq!(got, [said], "{tag}: {}", out.stderr);
            logged_as_warning(&t, said);
        } else {
            assert!(got.is_empty(), "{tag}: {got:?}");
            assert!(t.log("counters use user replay").is_none(), "{tag}");
        }
        let ks = launched(&t);
        assert_eq!(ks.len(), 3, "{tag}");
        assert!(
            ks.iter().all(|k| !counters_of(&t, k).is_empty()),
            "{tag}: every kernel profiled"
        );
        check_tp(&path, &t);
        cleanup(&dir);
    }
}

/// Under user replay CUPTI launches a `WaitNs` kernel of its own after each profiled kernel
/// (the sim does, as on an H200): it is left out of the trace, counted in one line, and every
/// kernel of the program is in it with its counters. Kernel replay launches none.
#[test]
fn cuptis_own_wait_ns_kernels_are_left_out_of_the_trace() {
    for replay in ["auto", "kernel"] {
        let dir = tmpdir(&format!("waitns-{replay}"));
        let s = alternating(4);
        let (out, t, path) = run(
            &dir,
            &s,
            &[
                ("INJECTION_METRICS", "gpu__time_duration.sum"),
                ("INJECTION_COUNTERS_REPLAY", replay),
                ("INJECTION_VERBOSE", "1"),
            ],
            &[],
        );
        let user = replay == "auto";
        assert_eq!(
            out.report.profiler_kernels,
            if user { 4 } else { 0 },
            "{replay}: WaitNs records the sim wrote"
        );
        assert!(
            t.gpu_events.iter().all(|g| g.name != "WaitNs"),
            "{replay}: a WaitNs kernel in the trace"
        );
        let ks = launched(&t);
        assert_eq!(ks.len(), 4, "{replay}");
        for k in &ks {
            let sym = k.kernel.as_ref().unwrap().name.as_str();
            assert_eq!(
                counters_of(&t, k),
                expected(sym, &["gpu__time_duration.sum"]),
                "{replay}: {sym}"
            );
        }
        let line = "counters: 4 WaitNs kernel(s) that CUPTI's profiler launched itself are left out of the trace";
        if user {
            assert_eq!(
                lines(&out.stderr, "WaitNs"),
                [format!("gpu-trace: {line}")],
                "{}",
                out.stderr
            );
            assert!(t.logs.iter().any(|l| l.message == line), "{:#?}", t.logs);
        } else {
            assert!(lines(&out.stderr, "WaitNs").is_empty(), "{}", out.stderr);
        }
        check_tp(&path, &t);
        cleanup(&dir);
    }
}

/// `INJECTION_COUNTERS_REPLAY=user` with a set that needs several passes: the tool cannot
/// replay a launch, so kernel replay collects it, said in one line (in the trace too); no
/// user-replay warning follows.
#[test]
fn user_replay_asked_for_a_set_of_three_passes_falls_back_to_kernel_replay() {
    let dir = tmpdir("user-passes");
    let mut s = alternating(2);
    s.profiler.metric_mut("dram__bytes_read").passes = 3;
    let metrics = [
        "gpu__time_duration.sum",
        "dram__bytes_read.sum",
        "smsp__inst_executed.sum",
    ];
    let (out, t, path) = run(
        &dir,
        &s,
        &[
            ("INJECTION_METRICS", &metrics.join(",")),
            ("INJECTION_COUNTERS_REPLAY", "user"),
            ("INJECTION_VERBOSE", "1"),
        ],
        &[],
    );
    let said = lines(&out.stderr, "INJECTION_COUNTERS_REPLAY=user");
    assert_eq!(
        said,
        [
            "gpu-trace: INJECTION_COUNTERS_REPLAY=user: the metrics need 3 passes and a launch cannot be replayed by the tool, so kernels are replayed by CUPTI (kernel replay)"
        ],
        "{}",
        out.stderr
    );
    logged_as_warning(&t, said[0]);
    assert_eq!(
        lines(&out.stderr, "pass(es) per profiled kernel"),
        [
            "gpu-trace: counters on GH100 (device 0): 3 metric(s), 3 pass(es) per profiled kernel, kernel replay"
        ]
    );
    assert!(
        lines(&out.stderr, "counters use user replay").is_empty(),
        "{}",
        out.stderr
    );
    let ks = launched(&t);
    assert_eq!(ks.len(), 2);
    for k in &ks {
        let sym = k.kernel.as_ref().unwrap().name.as_str();
        assert_eq!(counters_of(&t, k), expected(sym, &metrics), "{sym}");
    }
    let r = &out.report;
    assert_eq!(r.kernel_replays, 6, "two kernels, three passes each");
    assert_eq!(sessions(r), 2, "a session per kernel");
    assert_eq!(r.profiler_kernels, 0);
    check_tp(&path, &t);
    cleanup(&dir);
}
