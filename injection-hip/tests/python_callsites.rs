//! Python call sites on HIP, with a real CPython: a Python program runs a
//! rocprofiler-sim program whose first thread runs on the Python thread
//! (`tests/python/hip_callsites.py`); the launches, copies and
//! synchronisations of that thread carry its Python frames, those of the
//! simulator's own threads none.
//!
//! The interpreter is `python3` on the PATH, or `GPU_TRACE_TEST_PYTHON`.

use gpu_trace_reader::{Slice, Trace};
use rocprofiler_sim::{RunSpec, Scenario};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/hip_callsites.py")
}

/// The line of each `# site:NAME` comment of the script.
fn sites() -> HashMap<String, u32> {
    let text = std::fs::read_to_string(script()).unwrap();
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let (_, name) = l.trim_end().rsplit_once("# site:")?;
            Some((name.to_owned(), i as u32 + 1))
        })
        .collect()
}

#[test]
fn the_launches_of_the_python_thread_carry_its_frames_and_the_others_none() {
    let dir = std::env::temp_dir().join(format!("gpu-trace-hip-py-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let tool = rocprofiler_sim::host::artifact("gpu_trace_hip").expect("libgpu_trace_hip.so built");
    let sim = rocprofiler_sim::host::simulator_library().unwrap();
    let scenario = Scenario::from_json(include_str!("scenarios/two_archs.json")).unwrap();
    assert!(
        scenario.threads.len() > 1,
        "the scenario has threads of its own"
    );
    let mut spec = RunSpec::new(tool, scenario);
    spec.caller_thread = true;
    std::fs::write(dir.join("spec.json"), serde_json::to_string(&spec).unwrap()).unwrap();
    let trace = dir.join("trace.pftrace");
    let out = Command::new(std::env::var("GPU_TRACE_TEST_PYTHON").unwrap_or("python3".into()))
        .arg(script())
        .arg(dir.join("spec.json"))
        .arg(dir.join("report.json"))
        .env("ROCPROFILER_SIM_LIBRARY", &sim)
        .env("INJECTION_OUTPUT", &trace)
        .env("INJECTION_TRACE", "gpu,api,python")
        .env("INJECTION_TELEMETRY_PERIOD", "off")
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the program failed: {stderr}");
    for l in stderr.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            l.starts_with("gpu-trace:"),
            "a line not ours on stderr: {l}"
        );
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
    gpu_trace_testkit::validate(&trace);
    let t = Trace::open(&trace).unwrap();
    let site = sites();
    let want = vec![
        ("<module>".to_owned(), site["module"]),
        ("main".to_owned(), site["run"]),
    ];
    let with: Vec<&Slice> = t.slices.iter().filter(|s| s.callstack.is_some()).collect();
    assert!(!with.is_empty(), "no API call has a call stack");
    let python_track = with[0].track;
    for s in &with {
        let frames: Vec<(String, u32)> = s
            .callstack
            .as_ref()
            .unwrap()
            .iter()
            .map(|f| (f.function.to_string(), f.line))
            .collect();
        assert_eq!(frames, want, "{}", s.name);
        assert_eq!(
            s.callstack.as_ref().unwrap()[0].file.as_str(),
            script().display().to_string()
        );
        assert_eq!(
            s.track, python_track,
            "{} has a stack off the Python thread",
            s.name
        );
    }
    // Every launch of the Python thread has one; the simulator's threads'
    // launches have none.
    let launches: Vec<&Slice> = t
        .slices
        .iter()
        .filter(|s| s.name.contains("Launch") && !s.submissions.is_empty())
        .collect();
    let (mine, theirs): (Vec<&&Slice>, Vec<&&Slice>) =
        launches.iter().partition(|s| s.track == python_track);
    assert!(
        !mine.is_empty() && !theirs.is_empty(),
        "{} launches",
        launches.len()
    );
    assert!(mine.iter().all(|s| s.callstack.is_some()));
    assert!(theirs.iter().all(|s| s.callstack.is_none()));
    // GPU time by line: the Python thread's kernels on the run line.
    let r = gpu_trace_analysis::python::report([&t], 2);
    assert_eq!(r.by_line.len(), 1);
    assert_eq!(
        (r.by_line[0].site.function.as_str(), r.by_line[0].site.line),
        ("main", site["run"])
    );
    assert!(r.attributed > 0 && r.attributed < r.kernels, "{r:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
