//! The C API of `gpu_trace.h` on the HIP path: the real `libgpu_trace_hip.so` under the
//! simulated rocprofiler-sdk (`rocprofiler-sim`). The program's own calls (`Op::GpuTrace`,
//! found through `dlopen` of the tool with `RTLD_NOLOAD`) open and close windows that hold
//! exactly the dispatches launched inside them, and push ranges as roctx does, as on the CUDA
//! path (`injection-cuda/tests/c_api.rs`).

use gpu_trace_agent::program::status;
use gpu_trace_testkit::{checked_trace, kernel_counts, recording_windows};
use rocprofiler_sim::scenario::{Op, ThreadSpec};
use rocprofiler_sim::{RunSpec, Scenario};
use std::collections::BTreeMap;
use std::path::PathBuf;

rocprofiler_sim::child_entry!();

const VADD: &str = "_Z4vaddPKfS0_Pfi";
const GEMM: &str = "_Z4gemmPKfS0_Pfiii";

fn tool() -> PathBuf {
    rocprofiler_sim::host::artifact("gpu_trace_hip").expect("libgpu_trace_hip.so built")
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-hip-c-api-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    d
}

fn launches(kernel: &str, n: u32) -> Vec<Op> {
    vec![
        Op::Repeat {
            times: n,
            ops: vec![Op::Launch {
                kernel: kernel.into(),
                grid: [4, 1, 1],
                block: [64, 1, 1],
                shared_mem: 0,
                device: 0,
                stream: 1,
                counters: BTreeMap::new(),
            }],
        },
        Op::StreamSync {
            device: 0,
            stream: 1,
        },
    ]
}

fn call(f: &str, name: Option<&str>) -> Op {
    Op::GpuTrace {
        call: f.into(),
        name: name.map(Into::into),
    }
}

#[test]
fn the_programs_own_windows_hold_exactly_their_dispatches_and_ranges_are_recorded() {
    let dir = tmpdir("windows");
    let mut ops = vec![call("stop", None), call("is_active", None)];
    ops.extend(launches("reduce", 2));
    ops.push(call("window_begin", Some("step 3")));
    ops.push(call("range_push", Some("forward")));
    ops.extend(launches("vadd", 3));
    ops.push(call("range_pop", None));
    ops.push(call("is_active", None));
    ops.push(call("window_end", None));
    ops.extend(launches("reduce", 1));
    ops.push(call("window_end", None));
    ops.push(call("start", None));
    ops.extend(launches("gemm", 2));
    let mut s = Scenario::default_scenario();
    s.threads = vec![ThreadSpec { ops }];
    s.validate().unwrap();
    let spec = RunSpec::new(tool(), s)
        .env(
            "INJECTION_OUTPUT",
            dir.join("trace.pftrace").display().to_string(),
        )
        .env("INJECTION_TRACE", "gpu,api,markers")
        .env("INJECTION_TELEMETRY_PERIOD", "off")
        .env("XDG_RUNTIME_DIR", dir.display().to_string())
        .env("RUST_BACKTRACE", "0");
    let out = rocprofiler_sim::host::run_isolated(&spec).expect("simulator run");
    assert_eq!(
        out.report.violations,
        Vec::<String>::new(),
        "{}",
        out.stderr
    );
    use status::{INVALID, OK};
    let results: Vec<(&str, i32)> = out
        .report
        .gpu_trace_calls
        .iter()
        .map(|(f, rc)| (f.as_str(), rc.expect("exported")))
        .collect();
    assert_eq!(
        results,
        [
            ("stop", OK),
            ("is_active", 0),
            ("window_begin", OK),
            ("range_push", OK),
            ("range_pop", OK),
            ("is_active", 1),
            ("window_end", OK),
            ("window_end", INVALID),
            ("start", OK),
        ],
        "{}",
        out.stderr
    );
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([(VADD.to_owned(), 3), (GEMM.to_owned(), 2)]),
        "{}",
        out.stderr
    );
    let w = recording_windows(&t);
    assert_eq!(
        w.iter().map(|(n, ..)| n.as_str()).collect::<Vec<_>>(),
        [
            "recording window 1 opened (start)",
            "recording window 2 opened (step 3)",
            "recording window 3 opened (gpu_trace_start)",
        ],
        "{w:?}"
    );
    let ranges: Vec<&str> = t
        .slices
        .iter()
        .filter(|s| s.gpu_api.is_none())
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(ranges, ["forward"]);
    let _ = std::fs::remove_dir_all(&dir);
}
