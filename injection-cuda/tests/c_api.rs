//! The C API of `gpu_trace.h` end to end, with the real `libgpu_trace_cuda.so` under the fake
//! CUPTI (`cupti-sim`): the program's own calls (`Op::GpuTrace`, found as an application finds
//! them, through `dlopen(CUDA_INJECTION64_PATH, RTLD_NOLOAD)`) open and close windows that hold
//! exactly the kernels launched inside them, and push ranges as NVTX does.

use cupti_sim::scenario::{KernelSpec, Layer, Op, ThreadSpec};
use cupti_sim::{RunSpec, Scenario};
use gpu_trace_agent::program::status;
use gpu_trace_testkit::{checked_trace, kernel_counts, recording_windows};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

cupti_sim::child_entry!();

fn tool() -> PathBuf {
    cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built")
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-c-api-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    d
}

fn scenario(ops: Vec<Op>) -> Scenario {
    let k = |name: &str| KernelSpec {
        name: name.into(),
        symbol: format!("_Z{}{name}v", name.len()),
        registers: 32,
        static_smem: 0,
        duration_us: 10,
    };
    let s = Scenario {
        kernels: ["before", "closed", "step", "nested", "after"]
            .into_iter()
            .map(k)
            .collect(),
        threads: vec![ThreadSpec { ops }],
        profiler: Default::default(),
    };
    s.validate().expect("valid scenario");
    s
}

fn launches(kernel: &str, n: u32) -> Op {
    Op::Repeat {
        times: n,
        ops: vec![
            Op::Launch {
                kernel: kernel.into(),
                grid: [4, 1, 1],
                block: [64, 1, 1],
                stream: 1,
                layer: Layer::Runtime,
            },
            Op::StreamSync { stream: 1 },
        ],
    }
}

fn call(f: &str) -> Op {
    Op::GpuTrace {
        call: f.into(),
        name: None,
    }
}

fn named(f: &str, name: &str) -> Op {
    Op::GpuTrace {
        call: f.into(),
        name: Some(name.into()),
    }
}

fn run(dir: &Path, ops: Vec<Op>, env: &[(&str, &str)]) -> cupti_sim::Outcome {
    let mut spec = RunSpec::new(tool(), scenario(ops))
        .env(
            "INJECTION_OUTPUT",
            dir.join("trace.pftrace").display().to_string(),
        )
        .env("INJECTION_TRACE", "gpu,api,nvtx")
        .env("XDG_RUNTIME_DIR", dir.display().to_string())
        .env("RUST_BACKTRACE", "0");
    for (k, v) in env {
        spec = spec.env(*k, *v);
    }
    cupti_sim::host::run_checked(spec, Duration::from_secs(120))
}

/// The results of the program's calls, by name.
fn results(out: &cupti_sim::Outcome) -> Vec<(&str, i32)> {
    out.report
        .gpu_trace_calls
        .iter()
        .map(|(f, rc)| (f.as_str(), rc.unwrap_or_else(|| panic!("{f} not exported"))))
        .collect()
}

fn ranges(t: &gpu_trace_reader::Trace) -> Vec<(&str, u32)> {
    t.slices
        .iter()
        .filter(|s| s.gpu_api.is_none())
        .map(|s| (s.name.as_str(), s.depth))
        .collect()
}

#[test]
fn the_programs_own_windows_hold_exactly_their_kernels_and_nest() {
    let dir = tmpdir("windows");
    let out = run(
        &dir,
        vec![
            launches("before", 2),
            call("is_active"),
            call("stop"),
            call("is_active"),
            launches("closed", 3),
            named("window_begin", "step 7"),
            launches("step", 4),
            // Inside an open window a window only nests: its end closes nothing.
            named("window_begin", "inner"),
            named("range_push", "forward"),
            launches("nested", 1),
            named("range_push", "matmul"),
            call("range_pop"),
            call("range_pop"),
            call("window_end"),
            call("is_active"),
            call("window_end"),
            call("is_active"),
            // Outside any window: neither recorded nor an error.
            named("range_push", "unseen"),
            call("range_pop"),
            launches("closed", 1),
            call("window_end"),
            call("start"),
            call("start"),
            launches("after", 2),
        ],
        &[],
    );
    use status::{INVALID, OK};
    assert_eq!(
        results(&out),
        [
            ("is_active", 1),
            ("stop", OK),
            ("is_active", 0),
            ("window_begin", OK),
            ("window_begin", OK),
            ("range_push", OK),
            ("range_push", OK),
            ("range_pop", OK),
            ("range_pop", OK),
            ("window_end", OK),
            ("is_active", 1),
            ("window_end", OK),
            ("is_active", 0),
            ("range_push", OK),
            ("range_pop", OK),
            ("window_end", INVALID),
            ("start", OK),
            ("start", OK),
        ],
        "{}",
        out.stderr
    );
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([
            ("_Z5afterv".to_owned(), 2),
            ("_Z6beforev".to_owned(), 2),
            ("_Z4stepv".to_owned(), 4),
            ("_Z6nestedv".to_owned(), 1),
        ]),
        "{}",
        out.stderr
    );
    let w = recording_windows(&t);
    assert_eq!(
        w.iter().map(|(n, ..)| n.as_str()).collect::<Vec<_>>(),
        [
            "recording window 1 opened (start)",
            "recording window 2 opened (step 7)",
            "recording window 3 opened (gpu_trace_start)",
        ],
        "{w:?}"
    );
    assert!(
        t.logs
            .iter()
            .any(|l| l.message == "recording window 2 closed (step 7)"),
        "{:?}",
        t.logs
    );
    assert_eq!(ranges(&t), [("forward", 0), ("matmul", 1)]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_paused_run_records_only_the_programs_window() {
    let dir = tmpdir("paused");
    let out = run(
        &dir,
        vec![
            launches("closed", 2),
            call("is_active"),
            named("window_begin", "only this"),
            launches("step", 3),
            call("window_end"),
            launches("closed", 2),
        ],
        &[("INJECTION_PAUSED", "1")],
    );
    assert_eq!(
        results(&out),
        [
            ("is_active", 0),
            ("window_begin", status::OK),
            ("window_end", status::OK)
        ]
    );
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([("_Z4stepv".to_owned(), 3)])
    );
    let w = recording_windows(&t);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].0, "recording window 1 opened (only this)");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_a_switchable_recording_calls_say_so_and_change_nothing() {
    let dir = tmpdir("fixed");
    let out = run(
        &dir,
        vec![
            call("stop"),
            named("window_begin", "w"),
            call("window_end"),
            call("is_active"),
            named("window_begin", ""),
            call("window_end"),
            launches("before", 2),
        ],
        &[("INJECTION_CONTROL", "off")],
    );
    use status::{FIXED, INVALID};
    assert_eq!(
        results(&out),
        [
            ("stop", FIXED),
            ("window_begin", FIXED),
            ("window_end", INVALID),
            ("is_active", 1),
            ("window_begin", FIXED),
            ("window_end", INVALID),
        ]
    );
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([("_Z6beforev".to_owned(), 2)])
    );
    assert!(recording_windows(&t).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A null name is refused; nothing else happens.
#[test]
fn null_names_are_refused() {
    let dir = tmpdir("null");
    let out = run(
        &dir,
        vec![
            call("window_begin"),
            call("range_push"),
            call("api_version"),
            launches("before", 1),
        ],
        &[],
    );
    assert_eq!(
        results(&out),
        [
            ("window_begin", status::INVALID),
            ("range_push", status::INVALID),
            ("api_version", gpu_trace_agent::program::API_VERSION),
        ]
    );
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(kernel_counts(&t).len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
