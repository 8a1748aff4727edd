//! End to end: the simulated rocprofiler-sdk loads a tool built on this crate
//! (`rocprofiler-count-tool`), runs a scripted HIP program, and the tool's counts must match the
//! script. Each run is a fresh child process (see `rocprofiler_sim::host::run_isolated`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use rocprofiler_sim::scenario::{Op, ThreadSpec};
use rocprofiler_sim::{Outcome, RunSpec, Scenario};
use serde_json::Value;

rocprofiler_sim::child_entry!();

fn tool() -> PathBuf {
    rocprofiler_sim::host::artifact("rocprofiler_count_tool")
        .expect("count tool built (dev-dependency)")
}

fn out_path(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("count-tool-{}-{tag}.json", std::process::id()))
}

/// Runs `scenario` with the count tool and returns the simulator's outcome and the tool's counts.
fn run(tag: &str, spec: RunSpec) -> (Outcome, Option<Value>) {
    let out = out_path(tag);
    let _ = std::fs::remove_file(&out);
    let spec = spec.env("COUNT_TOOL_OUT", out.display().to_string());
    let outcome = rocprofiler_sim::host::run_isolated(&spec).expect("simulator run");
    let counts = std::fs::read(&out)
        .ok()
        .map(|b| serde_json::from_slice(&b).expect("counts JSON"));
    let _ = std::fs::remove_file(&out);
    (outcome, counts)
}

fn map_u64(v: &Value) -> BTreeMap<String, u64> {
    serde_json::from_value(v.clone()).unwrap_or_default()
}

#[test]
fn default_scenario_counts_match_the_script() {
    let scenario = Scenario::default_scenario();
    let expected = scenario.expected();
    // A small buffer: several watermark deliveries and LOSSLESS back-pressure.
    let spec = RunSpec::new(tool(), scenario).env("COUNT_TOOL_BUFFER", "2048,1024");
    let (out, counts) = run("default", spec);
    let r = &out.report;
    let c = counts.unwrap_or_else(|| panic!("tool wrote no counts; stderr:\n{}", out.stderr));
    eprintln!("{}", serde_json::to_string_pretty(&c).unwrap());

    // Registration and lifecycle.
    assert!(r.configure_accepted && r.client_id_intact, "{r:#?}");
    assert_eq!(r.client_name.as_deref(), Some("rocprofiler-count-tool"));
    assert_eq!(r.result_size, Some(32));
    assert_eq!(r.initialize_status, Some(0));
    assert_eq!(r.finalize_calls, 1);
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
    assert_eq!(r.undelivered_records, 0);
    assert_eq!(c["finalized"], true);
    assert_eq!(c["errors"], serde_json::json!([]), "tool errors");
    assert_eq!(c["sdk_version"], "1.0.0");

    // Configuration is locked after initialize; flushing from inside the callback is refused.
    assert_eq!(c["late_context_status"], "Some(ConfigurationLocked)");
    assert_eq!(
        r.failed_calls["rocprofiler_create_context"]["ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED"],
        1
    );
    assert_eq!(c["flush_in_callback"], "Some(BufferBusy)");

    // HIP API: one ENTER and one EXIT per scripted call, on the calling threads.
    assert_eq!(map_u64(&c["hip_enter"]), expected.hip_calls);
    assert_eq!(map_u64(&c["hip_exit"]), expected.hip_calls);
    assert_eq!(
        c["hip_thread_ids"].as_array().unwrap().len() as u64,
        expected.threads
    );
    let mut app_tids = r.app_thread_ids.clone();
    app_tids.sort_unstable();
    let seen: Vec<u64> = serde_json::from_value(c["hip_thread_ids"].clone()).unwrap();
    assert_eq!(seen, app_tids);

    // Markers.
    assert_eq!(map_u64(&c["marker_calls"]), expected.marker_calls);
    let msgs: std::collections::BTreeSet<String> =
        serde_json::from_value(c["marker_messages"].clone()).unwrap();
    assert_eq!(msgs, expected.marker_messages);
    assert_eq!(c["range_ids_started"], c["range_ids_stopped"]);

    // Code objects and kernel symbols before dispatches; unloaded at exit.
    assert_eq!(c["code_objects_loaded"], expected.code_objects);
    assert_eq!(c["code_objects_unloaded"], expected.code_objects);
    assert_eq!(c["symbols_registered"], expected.kernel_symbols);
    assert_eq!(c["symbols_unregistered"], expected.kernel_symbols);
    let gemm = c["symbols"]
        .as_object()
        .unwrap()
        .values()
        .find(|s| s["name"] == "_Z4gemmPKfS0_Pfiii")
        .unwrap();
    assert_eq!(
        (
            gemm["sgpr"].as_u64(),
            gemm["vgpr"].as_u64(),
            gemm["accum_vgpr"].as_u64()
        ),
        (Some(48), Some(128), Some(64))
    );
    assert_eq!(
        (gemm["lds"].as_u64(), gemm["scratch"].as_u64()),
        (Some(16384), Some(64))
    );

    // Kernel dispatches: all of them, named through kernel ids, joined to their launch.
    assert_eq!(c["kernel_dispatches"], expected.kernel_dispatches);
    assert_eq!(
        map_u64(&c["dispatches_by_symbol"]),
        expected.dispatches_by_symbol
    );
    assert_eq!(c["correlated_dispatches"], expected.kernel_dispatches);
    assert_eq!(c["uncorrelated"], 0);
    assert_eq!(c["grid_mismatches"], 0);
    assert_eq!(c["bad_timestamps"], 0);

    // Memory copies.
    assert_eq!(map_u64(&c["memory_copies"]), expected.memory_copies);
    assert_eq!(c["memory_copy_bytes"], expected.memory_copy_bytes);
    assert_eq!(c["memcpy_call_bytes"], expected.memory_copy_bytes);

    // Buffers: watermark deliveries happened, nothing dropped, the simulator agrees.
    assert!(c["buffer_batches"].as_u64().unwrap() > 1);
    assert_eq!(c["buffer_batches"], r.delivered.buffer_batches);
    assert_eq!(c["dropped"], 0);
    assert_eq!(
        r.delivered.buffer_records["KERNEL_DISPATCH"],
        expected.kernel_dispatches
    );

    // Counters: every dispatch counted, per-instance records summed per counter.
    assert_eq!(c["counting_requests"], expected.kernel_dispatches);
    assert_eq!(c["counted_dispatches"], expected.kernel_dispatches);
    assert_eq!(map_u64(&c["counter_records"]), expected.counter_records);
    let sums: BTreeMap<String, f64> = serde_json::from_value(c["counter_sums"].clone()).unwrap();
    assert_eq!(sums, expected.counter_sums);
    assert_eq!(c["counter_max"]["SQ_WAVES"], 65.0);
    assert_eq!(
        r.delivered.counter_records,
        expected.counter_records.values().sum::<u64>()
    );
}

#[test]
fn sdk_0x_is_refused_without_touching_client_id() {
    let mut spec = RunSpec::new(tool(), Scenario::default_scenario());
    spec.sdk_version = 400; // 0.4.0, ROCm 6.2
    let (out, counts) = run("0x", spec);
    let r = &out.report;
    assert!(r.configure_called && !r.configure_accepted, "{r:#?}");
    assert!(r.client_id_intact, "the tool wrote into a 0.x client_id");
    assert_eq!(r.initialize_status, None);
    assert_eq!(r.finalize_calls, 0);
    assert!(counts.is_none());
    assert!(
        out.stderr
            .contains("rocprofiler-sdk 0.4.0 is not supported"),
        "{}",
        out.stderr
    );
    // The application still ran, untraced.
    assert!(r.delivered.callbacks.is_empty() && r.delivered.buffer_records.is_empty());
}

#[test]
fn stopped_context_gets_no_records() {
    // Six launches; the middle two run while the tool has stopped its tracing context.
    let launch = Op::Launch {
        kernel: "vadd".into(),
        grid: [8, 1, 1],
        block: [64, 1, 1],
        shared_mem: 0,
        device: 0,
        stream: 0,
        counters: BTreeMap::new(),
    };
    let sync = Op::DeviceSync { device: 0 };
    let mark = |m: &str| Op::Mark { message: m.into() };
    let mut scenario = Scenario::default_scenario();
    scenario.threads = vec![ThreadSpec {
        ops: vec![
            launch.clone(),
            launch.clone(),
            sync.clone(),
            mark("gpu-trace:stop"),
            launch.clone(),
            launch.clone(),
            sync.clone(),
            mark("gpu-trace:start"),
            launch.clone(),
            launch,
            sync,
        ],
    }];
    let spec = RunSpec::new(tool(), scenario).env("COUNT_TOOL_MARKER_CONTROL", "1");
    let (out, counts) = run("stop", spec);
    let c = counts.expect("counts");
    assert!(
        out.report.violations.is_empty(),
        "{:#?}",
        out.report.violations
    );
    assert_eq!(c["kernel_dispatches"], 4);
    // The other contexts kept running.
    assert_eq!(c["hip_enter"]["hipLaunchKernel"], 6);
    assert_eq!(c["counted_dispatches"], 6);
}

#[test]
fn a_panicking_callback_is_contained() {
    // The tool panics once, in the first HIP callback; the guard catches it, reports it once and
    // switches that callback off. The application and the tool's other services carry on (this
    // tool does not stop them; gpu-trace's injections do, through the guard's tripped state).
    let spec = RunSpec::new(tool(), Scenario::default_scenario())
        .env("COUNT_TOOL_PANIC", "hip")
        .env("RUST_BACKTRACE", "0");
    let (out, counts) = run("panic", spec);
    let c = counts.expect("the tool still finalised");
    let r = &out.report;
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
    assert_eq!(
        out.stderr.matches("internal error in").count(),
        1,
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("deliberate panic in a HIP callback"));
    // Calls on the other thread may get through while the panic unwinds (how many depends on
    // scheduling, so no fraction is asserted); once it is caught the callback is off, so the
    // panicking thread's later calls are never seen.
    let all: u64 = Scenario::default_scenario()
        .expected()
        .hip_calls
        .values()
        .sum();
    assert!(
        map_u64(&c["hip_enter"]).values().sum::<u64>() < all,
        "{c:#}"
    );
    assert!(r.delivered.callbacks.values().sum::<u64>() > 10);
    assert_eq!(
        c["kernel_dispatches"],
        Scenario::default_scenario().expected().kernel_dispatches
    );
}

#[test]
fn buffered_services_and_callback_threads() {
    // HIP API calls through buffer tracing, counters through the buffered counting service on
    // a callback thread of the tool's own.
    let scenario = Scenario::default_scenario();
    let expected = scenario.expected();
    let spec = RunSpec::new(tool(), scenario).env("COUNT_TOOL_MODE", "buffered");
    let (out, counts) = run("buffered", spec);
    let c = counts.expect("counts");
    let r = &out.report;
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
    assert_eq!(c["errors"], serde_json::json!([]));
    assert_eq!(map_u64(&c["hip_buffered"]), expected.hip_calls);
    assert_eq!(c["counted_dispatches"], expected.kernel_dispatches);
    assert_eq!(map_u64(&c["counter_records"]), expected.counter_records);
    let sums: BTreeMap<String, f64> = serde_json::from_value(c["counter_sums"].clone()).unwrap();
    assert_eq!(sums, expected.counter_sums);
    assert_eq!(
        r.delivered.buffer_records["COUNTER_HEADER"],
        expected.kernel_dispatches
    );
    assert!(
        r.delivered.delivery_thread_ids.len() >= 2,
        "the assigned callback thread delivered"
    );
    assert!(
        !r.delivered
            .delivery_thread_ids
            .iter()
            .any(|t| r.app_thread_ids.contains(t))
    );
}

#[test]
fn discard_policy_drops_and_counts() {
    // Room for one record: everything after the first is dropped until the final flush, which
    // reports the drops.
    let scenario = Scenario::default_scenario();
    let expected = scenario.expected();
    let spec = RunSpec::new(tool(), scenario)
        .env("COUNT_TOOL_BUFFER", "250,250")
        .env("COUNT_TOOL_POLICY", "discard");
    let (out, counts) = run("discard", spec);
    let c = counts.expect("counts");
    let delivered = c["kernel_dispatches"].as_u64().unwrap()
        + map_u64(&c["memory_copies"]).values().sum::<u64>();
    let total = expected.kernel_dispatches + expected.memory_copies.values().sum::<u64>();
    assert!(
        c["dropped"].as_u64().unwrap() > 0,
        "{c:#}\n{:#?}",
        out.report
    );
    assert_eq!(delivered + c["dropped"].as_u64().unwrap(), total);
    assert_eq!(
        out.report.delivered.dropped_records,
        c["dropped"].as_u64().unwrap()
    );
}
