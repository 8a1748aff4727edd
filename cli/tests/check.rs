//! `gpu-trace check`, `completions` and `man`.

use std::process::Command;

fn gpu_trace(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn row<'a>(text: &'a str, section: &str, key: &str) -> &'a str {
    let body = text
        .split_once(&format!("{section}\n"))
        .unwrap_or_else(|| panic!("no {section} section:\n{text}"))
        .1;
    body.lines()
        .find_map(|l| l.strip_prefix("  ")?.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} in {section}:\n{text}"))
        .trim()
}

#[test]
fn check_finds_cupti_as_the_injection_does_and_names_every_library() {
    let fake = cupti_sim::host::fake_library().unwrap();
    let libs = cupti_sim::host::artifact("gpu_trace_cuda").unwrap();
    let dir = libs.parent().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .args(["check", "--lib-dir"])
        .arg(dir)
        .env("GPU_TRACE_CUPTI_PATH", &fake)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // The fake reports CUPTI 13.0's API version.
    let cupti = row(&text, "CUDA", "CUPTI");
    assert!(
        cupti.starts_with(&format!("{} (CUPTI API version 1300", fake.display()))
            && cupti.ends_with(", CUDA 13.0)"),
        "{cupti}"
    );
    assert_eq!(
        row(&text, "CUDA", "injection"),
        dir.join("libgpu_trace_cuda.so")
            .canonicalize()
            .unwrap()
            .display()
            .to_string()
    );
    assert_eq!(
        row(&text, "ROCm", "injection"),
        dir.join("libgpu_trace_hip.so")
            .canonicalize()
            .unwrap()
            .display()
            .to_string()
    );
    let driver = row(&text, "CUDA", "driver");
    let rocm = row(&text, "ROCm", "rocprofiler-sdk");
    if driver.starts_with("not found") {
        assert!(driver.contains("libcuda.so.1"), "{driver}");
        assert!(
            text.contains("CUDA programs cannot be traced here: no CUDA driver (libcuda.so.1)")
        );
    } else {
        assert!(driver.contains("supports CUDA"), "{driver}");
        assert!(text.contains("CUDA programs can be traced here"), "{text}");
    }
    if rocm.starts_with("not found") {
        assert!(
            rocm.contains("librocprofiler-sdk.so.1 in /opt/rocm/lib"),
            "{rocm}"
        );
    }
    let usable = !driver.starts_with("not found") || !rocm.starts_with("not found");
    assert_eq!(
        out.status.code(),
        Some(if usable { 0 } else { 1 }),
        "{text}"
    );

    // Without CUPTI where it is looked for, the places are counted.
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .args(["check", "--lib-dir"])
        .arg(dir)
        .env("GPU_TRACE_CUPTI_PATH", "/no/such/libcupti.so.13")
        .env_remove("CUDA_HOME")
        .env_remove("CUDA_PATH")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let cupti = row(&text, "CUDA", "CUPTI");
    if cupti.starts_with("not found") {
        assert!(
            cupti.contains(
                "places tried, from /no/such/libcupti.so.13 on; GPU_TRACE_CUPTI_PATH names one"
            ),
            "{cupti}"
        );
    }
}

#[test]
fn completions_and_man_pages_come_from_the_clap_definition() {
    let (code, bash, _) = gpu_trace(&["completions", "bash"]);
    assert_eq!(code, Some(0));
    assert!(bash.contains("complete -F _gpu__trace "), "{bash}");
    assert!(bash.contains("--force-overwrite") && bash.contains("--capture-range"));
    let (code, zsh, _) = gpu_trace(&["completions", "zsh"]);
    assert_eq!(code, Some(0));
    assert!(zsh.starts_with("#compdef gpu-trace"), "{zsh}");

    let (code, man, _) = gpu_trace(&["man"]);
    assert_eq!(code, Some(0));
    assert!(man.contains(".TH gpu-trace"), "{man}");
    assert!(man.contains("record"), "{man}");
    let (code, man, _) = gpu_trace(&["man", "record"]);
    assert_eq!(code, Some(0));
    assert!(man.contains(".TH gpu-trace-record"), "{man}");
    assert!(man.contains("force\\-overwrite"), "{man}");
    let (code, _, err) = gpu_trace(&["man", "nope"]);
    assert_eq!(code, Some(2));
    assert_eq!(
        err.trim(),
        "gpu-trace: man \"nope\": expected one of record, stats, diff, export, metrics, start, stop, status, check, completions, man"
    );
}

#[test]
fn record_help_has_examples_and_points_at_the_variables() {
    let (code, help, _) = gpu_trace(&["record", "--help"]);
    assert_eq!(code, Some(0));
    assert!(
        help.contains("Examples:\n  gpu-trace record -- python train.py"),
        "{help}"
    );
    assert!(help.contains("%q{VAR}"), "{help}");
    assert!(help.contains("\"Environment variables\""), "{help}");
}
