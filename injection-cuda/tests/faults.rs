//! Fault handling of the injection library without a GPU: the application
//! must run on, with one clear line on stderr and its exit code untouched.
//!
//! Each case loads the built `libgpu_trace_cuda.so` into a child process
//! (this test binary re-run with `GPU_TRACE_FAULT_CHILD`) and calls its entry
//! points the way the CUDA driver and NVTX do.
#![allow(unsafe_code)] // dlopen of the library under test

use std::path::PathBuf;
use std::process::Command;

const CHILD: &str = "GPU_TRACE_FAULT_CHILD";
const APP_EXIT_CODE: i32 = 42;

fn library() -> PathBuf {
    // The test binary is target/<profile>/deps/faults-xxxx. `cargo test`
    // builds the cdylib next to it in deps/ and does not always copy it up
    // to target/<profile>/, so the copy in deps/ is the fresh one.
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let fresh = deps.join("libgpu_trace_cuda.so");
    if fresh.exists() {
        return fresh;
    }
    deps.parent().unwrap().join("libgpu_trace_cuda.so")
}

/// The "application": loads the library, calls the entry points, exits
/// with its own code. Run only as a child process (the tests below re-run
/// this binary with `--ignored --exact child`).
#[test]
#[ignore = "the traced application of the other tests; runs only in their child processes"]
fn child() {
    let case = std::env::var(CHILD).expect("run by a test, which sets GPU_TRACE_FAULT_CHILD");
    // SAFETY: loading the library under test; its initialisers are Rust's.
    let lib = unsafe { libloading::Library::new(library()) }.expect("load the injection library");
    match case.as_str() {
        "init" => {
            // SAFETY: the driver's view of the entry point.
            let init =
                unsafe { lib.get::<unsafe extern "C" fn() -> i32>(b"InitializeInjection\0") }
                    .unwrap();
            // SAFETY: no arguments; callable from any thread.
            let rc = unsafe { init() };
            println!("InitializeInjection={rc}");
            // A second call (another cuInit) must be harmless.
            // SAFETY: as above.
            let rc2 = unsafe { init() };
            println!("again={rc2}");
        }
        "nvtx" => {
            type Get = Option<unsafe extern "C" fn(u32) -> *const std::ffi::c_void>;
            // SAFETY: NVTX's view of the entry point.
            let init = unsafe {
                lib.get::<unsafe extern "C" fn(Get) -> i32>(b"InitializeInjectionNvtx2\0")
            }
            .unwrap();
            // SAFETY: a null export-table getter is only passed on to CUPTI
            // when CUPTI exists, which it does not in this case.
            let rc = unsafe { init(None) };
            println!("InitializeInjectionNvtx2={rc}");
        }
        other => panic!("unknown case {other}"),
    }
    std::mem::forget(lib);
    std::process::exit(APP_EXIT_CODE);
}

fn run(tag: &str, case: &str, envs: &[(&str, &str)]) -> (i32, String, String, PathBuf) {
    let dir = std::env::temp_dir().join(format!("gpu-trace-faults-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--ignored",
        "--exact",
        "child",
        "--nocapture",
        "--test-threads=1",
    ])
    .current_dir(&dir)
    .env(CHILD, case)
    .env_remove("LD_LIBRARY_PATH")
    .env_remove("CUDA_HOME")
    .env_remove("VIRTUAL_ENV")
    .env_remove("PYTHONPATH");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        dir,
    )
}

fn tool_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("gpu-trace:"))
        .collect()
}

#[test]
fn missing_cupti_gives_one_line_and_the_app_runs_on() {
    if !library().exists() {
        eprintln!("skipped: {} not built", library().display());
        return;
    }
    let (code, stdout, stderr, dir) = run(
        "missing",
        "init",
        &[("GPU_TRACE_CUPTI_PATH", "/nonexistent/libcupti.so")],
    );
    assert_eq!(
        code, APP_EXIT_CODE,
        "exit code untouched\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("InitializeInjection=1"), "{stdout}");
    assert!(stdout.contains("again=1"), "{stdout}");
    let lines = tool_lines(&stderr);
    assert_eq!(lines.len(), 1, "exactly one line: {stderr}");
    assert!(lines[0].contains("CUPTI"), "{}", lines[0]);
    assert!(
        lines[0].contains("/nonexistent/libcupti.so"),
        "names what was tried: {}",
        lines[0]
    );
    assert!(lines[0].contains("runs untraced"), "{}", lines[0]);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "no trace file");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn nvtx_hook_without_cupti_declines_quietly() {
    if !library().exists() {
        return;
    }
    let (code, stdout, stderr, dir) = run(
        "nvtx",
        "nvtx",
        &[("GPU_TRACE_CUPTI_PATH", "/nonexistent/libcupti.so")],
    );
    assert_eq!(code, APP_EXIT_CODE);
    assert!(stdout.contains("InitializeInjectionNvtx2=0"), "{stdout}");
    assert_eq!(tool_lines(&stderr).len(), 1, "{stderr}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_environment_is_reported_before_anything_else() {
    if !library().exists() {
        return;
    }
    let (code, _stdout, stderr, dir) = run(
        "badenv",
        "init",
        &[
            ("GPU_TRACE_CUPTI_PATH", "/nonexistent/libcupti.so"),
            ("INJECTION_MODE", "sideways"),
        ],
    );
    assert_eq!(code, APP_EXIT_CODE);
    let lines = tool_lines(&stderr);
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].contains("INJECTION_MODE=\"sideways\""),
        "{}",
        lines[0]
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// With the real libcupti (CI extracts it from the pinned wheel) but no GPU
/// driver, the library must still decline cleanly.
#[test]
fn real_cupti_without_a_driver_declines_cleanly() {
    let Ok(cupti) = std::env::var("GPU_TRACE_TEST_LIBCUPTI") else {
        eprintln!("skipped: set GPU_TRACE_TEST_LIBCUPTI to a libcupti.so.13");
        return;
    };
    if !library().exists() {
        return;
    }
    let (code, stdout, stderr, dir) = run("real", "init", &[("GPU_TRACE_CUPTI_PATH", &cupti)]);
    eprintln!("{stderr}");
    assert_eq!(code, APP_EXIT_CODE, "{stdout}\n{stderr}");
    assert!(stdout.contains("InitializeInjection=1"), "{stdout}");
    assert!(tool_lines(&stderr).len() <= 2, "{stderr}");
    std::fs::remove_dir_all(dir).unwrap();
}
