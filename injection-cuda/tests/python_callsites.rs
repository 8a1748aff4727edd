//! Python call sites, end to end with a real CPython: a Python program
//! (`tests/python/callsites.py`) drives the fake CUDA driver (cupti-sim)
//! through ctypes from known lines, on two threads and through a nested
//! call chain; the injection records the trace; the test decodes each
//! launch's call stack with the reader and checks every function, file and
//! line, then the GPU time `stats --report python` gives each line.
//!
//! The interpreter is `python3` on the PATH, or `GPU_TRACE_TEST_PYTHON`;
//! `GPU_TRACE_TEST_OLD_PYTHON` names one outside 3.10-3.13 (e.g. a 3.9) for
//! the refusal test, which says it is skipped without one.

use gpu_trace_reader::{CallFrame, Slice, Stage, Trace};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn tool() -> PathBuf {
    cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built")
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/callsites.py")
}

/// The line of each `# site:NAME` comment of the script.
fn sites(script: &Path) -> HashMap<String, u32> {
    let text = std::fs::read_to_string(script).unwrap();
    let mut out = HashMap::new();
    for (i, l) in text.lines().enumerate() {
        if let Some((_, name)) = l.trim_end().rsplit_once("# site:")
            && !name.contains(' ')
            && !name.contains('`')
        {
            out.insert(name.to_owned(), i as u32 + 1);
        }
    }
    out
}

fn python() -> String {
    std::env::var("GPU_TRACE_TEST_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Runs the script under the injection; returns the trace's path and the
/// child's stderr.
fn record(dir: &Path, trace: &str) -> (PathBuf, String) {
    record_with(&python(), dir, trace)
}

fn record_with(python: &str, dir: &Path, trace: &str) -> (PathBuf, String) {
    record_env(python, dir, trace, &[])
}

fn record_env(python: &str, dir: &Path, trace: &str, env: &[(&str, &str)]) -> (PathBuf, String) {
    let path = dir.join("callsites.pftrace");
    let fake = cupti_sim::host::fake_library().unwrap();
    let out = Command::new(python)
        .arg(script())
        .env("GPU_TRACE_CUPTI_PATH", &fake)
        .env("CUDA_INJECTION64_PATH", tool())
        .env("INJECTION_OUTPUT", &path)
        .env("INJECTION_TRACE", trace)
        .env("CUPTI_SIM_REPORT", dir.join("report.json"))
        .env_remove("INJECTION_VERBOSE")
        .envs(env.iter().copied())
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "the program failed: {stderr}");
    (path, stderr)
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-py-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// (function, line) of each frame, outermost first.
fn frames(c: &[CallFrame]) -> Vec<(String, u32)> {
    c.iter().map(|f| (f.function.to_string(), f.line)).collect()
}

/// The launch slice of each kernel, by kernel name.
fn launches(t: &Trace) -> HashMap<String, Vec<&Slice>> {
    let mut by_id: HashMap<u64, &Slice> = HashMap::new();
    for s in &t.slices {
        for &id in &s.submissions {
            by_id.insert(id, s);
        }
    }
    let mut out: HashMap<String, Vec<&Slice>> = HashMap::new();
    for k in t.gpu_events.iter().filter(|e| e.stage == Stage::Kernel) {
        let s = by_id
            .get(&k.event_id)
            .unwrap_or_else(|| panic!("no launch of {}", k.name));
        out.entry(k.name.to_string()).or_default().push(s);
    }
    out
}

#[test]
fn each_launch_names_the_python_lines_that_made_it_and_stats_gives_them_its_time() {
    let dir = tmpdir("sites");
    let (path, stderr) = record(&dir, "gpu,api,python");
    for l in stderr.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            l.starts_with("gpu-trace:"),
            "a line not ours on stderr: {l}"
        );
    }
    gpu_trace_testkit::validate(&path);
    let t = Trace::open(&path).unwrap();
    let site = sites(&script());
    let file = script().display().to_string();
    let at = |f: &str, s: &str| (f.to_owned(), site[s]);
    let main_chain = vec![at("<module>", "module"), at("main", "main_model")];
    let l = launches(&t);

    let mut attn = main_chain.clone();
    attn.extend([
        at("model", "model_layer"),
        at("layer", "layer_attention"),
        at("attention", "attention"),
    ]);
    let mut mlp = main_chain.clone();
    mlp.extend([
        at("model", "model_layer"),
        at("layer", "layer_mlp"),
        at("mlp", "mlp"),
    ]);
    let mut loss = main_chain.clone();
    loss.push(at("model", "loss"));
    for (kernel, n, want) in [("attn", 3, &attn), ("mlp", 6, &mlp), ("loss", 1, &loss)] {
        let calls = &l[kernel];
        assert_eq!(calls.len(), n, "{kernel} launches");
        for c in calls {
            let stack = c
                .callstack
                .as_ref()
                .unwrap_or_else(|| panic!("the launch of {kernel} has no call stack"));
            assert_eq!(&frames(stack), want, "the call stack of {kernel}'s launch");
            for f in stack.iter() {
                assert_eq!(f.file.as_str(), file, "{kernel}: {f:?}");
            }
        }
    }
    // The synchronisation after the loss launch carries the same stack.
    let sync = t
        .slices
        .iter()
        .find(|s| s.name.contains("Synchronize") && s.callstack.is_some())
        .expect("a synchronisation with a call stack");
    assert_eq!(frames(sync.callstack.as_ref().unwrap()), loss);

    // The second thread: its own stack, innermost `worker`, under the
    // threading module's frames, on its own track.
    let side = l["side"][0];
    let stack = side
        .callstack
        .as_ref()
        .expect("the worker's launch has a call stack");
    assert_eq!(frames(&stack[stack.len() - 1..]), [at("worker", "worker")]);
    assert!(
        stack.len() > 1 && stack[0].file.ends_with("threading.py"),
        "{stack:?}"
    );
    assert_ne!(
        side.track, l["attn"][0].track,
        "the worker's launch is on its thread"
    );

    // A call made with the GIL released (ctypes.CDLL, as PyTorch's
    // operators release it), after launches that held it: read by layout,
    // the same frames, file and lines.
    let nogil = l["nogil"][0]
        .callstack
        .as_ref()
        .expect("the launch without the GIL has a call stack");
    let mut want = main_chain[..1].to_vec();
    want.extend([at("main", "main_released"), at("released", "nogil")]);
    assert_eq!(frames(nogil), want);
    for f in nogil.iter() {
        assert_eq!(f.file.as_str(), file, "nogil: {f:?}");
    }
    // Its synchronisation too.
    assert!(
        t.slices.iter().any(|s| s.name.contains("Synchronize")
            && s.callstack.as_ref().is_some_and(|c| frames(c) == want)),
        "the GIL-less synchronisation has the launch's stack"
    );

    // GPU time by line: each kernel's known time (cupti-sim runs each for
    // its scenario duration) on the line that launched it.
    let r = gpu_trace_analysis::python::report([&t], 3);
    assert_eq!((r.kernels, r.attributed), (12, 12));
    let by_line: HashMap<(String, u32), (u64, u64)> = r
        .by_line
        .iter()
        .map(|row| {
            (
                (row.site.function.clone(), row.site.line),
                (row.count, row.total_ns),
            )
        })
        .collect();
    assert_eq!(by_line[&at("attention", "attention")], (3, 3 * 30_000));
    assert_eq!(by_line[&at("mlp", "mlp")], (6, 6 * 50_000));
    assert_eq!(by_line[&at("model", "loss")], (1, 10_000));
    assert_eq!(by_line[&at("worker", "worker")], (1, 20_000));
    assert_eq!(by_line[&at("released", "nogil")], (1, 40_000));
    assert_eq!(by_line.len(), 5);
    let mlp_row = r
        .by_line
        .iter()
        .find(|row| row.site.function == "mlp")
        .unwrap();
    let kernels: Vec<_> = mlp_row
        .kernels
        .iter()
        .map(|k| (k.name.as_str(), k.count, k.total_ns))
        .collect();
    assert_eq!(kernels, [("mlp", 6, 6 * 50_000)]);
    let top = &r.top_down[0];
    assert_eq!(
        (top.site.function.as_str(), top.site.line),
        ("<module>", site["module"])
    );
    assert_eq!((top.depth, top.count, top.total_ns), (0, 11, 440_000));
    // Of all kernel time (the worker's 20 us are under threading's frames).
    assert!((top.share - 440.0 / 460.0).abs() < 1e-9, "{}", top.share);
    let _ = std::fs::remove_dir_all(&dir);
}

const LAYOUT_MATCH: &str = "gpu-trace: Python frames read by layout match the C API (";

#[test]
fn the_layout_self_check_runs_with_the_gil_and_gates_the_gil_less_reads() {
    // Launches with the GIL first: the check runs once, says so, and the
    // GIL-less launch that follows has its stack.
    let dir = tmpdir("check");
    let (path, stderr) = record_env(
        &python(),
        &dir,
        "gpu,api,python",
        &[("INJECTION_VERBOSE", "1")],
    );
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("read by layout"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].starts_with(LAYOUT_MATCH), "{stderr}");
    let t = Trace::open(&path).unwrap();
    assert!(launches(&t)["nogil"][0].callstack.is_some());
    let _ = std::fs::remove_dir_all(&dir);

    // Only GIL-less calls, as in a PyTorch program: the first asks the
    // main thread to run the check and has no stack; the main thread runs
    // it as soon as it runs Python code again, and the next launch has
    // its stack.
    let dir = tmpdir("asked");
    let (path, stderr) = record_env(
        &python(),
        &dir,
        "gpu,api,python",
        &[("INJECTION_VERBOSE", "1"), ("CALLSITES_ONLY_RELEASED", "1")],
    );
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("read by layout"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].starts_with(LAYOUT_MATCH), "{stderr}");
    let t = Trace::open(&path).unwrap();
    let l = launches(&t);
    assert_eq!(l.len(), 2);
    assert!(l["nogil"][0].callstack.is_none());
    let site = sites(&script());
    let late = l["late"][0]
        .callstack
        .as_ref()
        .expect("the launch after the main thread's check has a stack");
    assert_eq!(
        frames(late),
        [
            ("<module>".to_owned(), site["module"]),
            ("main".to_owned(), site["late"])
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_python_in_the_list_no_stack_is_read() {
    let dir = tmpdir("off");
    let (path, _) = record(&dir, "gpu,api");
    let t = Trace::open(&path).unwrap();
    let l = launches(&t);
    assert_eq!(l["mlp"].len(), 6);
    assert!(t.slices.iter().all(|s| s.callstack.is_none()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unsupported_python_is_said_in_one_line_and_the_program_runs_on() {
    let Ok(old) = std::env::var("GPU_TRACE_TEST_OLD_PYTHON") else {
        eprintln!("skipped: set GPU_TRACE_TEST_OLD_PYTHON to a Python outside 3.10-3.13");
        return;
    };
    let dir = tmpdir("old");
    let (path, stderr) = record_with(&old, &dir, "gpu,api,python");
    let ours: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(ours.len(), 1, "{stderr}");
    assert!(
        ours[0].starts_with("gpu-trace: Python 3.")
            && ours[0].ends_with(
                " is not supported for call stacks (3.10 to 3.13 are); API calls are recorded without Python call stacks"
            ),
        "{stderr}"
    );
    let t = Trace::open(&path).unwrap();
    assert_eq!(launches(&t)["mlp"].len(), 6);
    assert!(t.slices.iter().all(|s| s.callstack.is_none()));
    let _ = std::fs::remove_dir_all(&dir);
}
