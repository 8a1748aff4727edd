//! `gpu-trace stats` over a two-rank job recorded without a GPU: two runs of the fake CUPTI
//! (`cupti-sim`) with the real `libgpu_trace_cuda.so`, as torchrun starts them (`RANK=0/1`,
//! `WORLD_SIZE=2`), each writing its own file through `INJECTION_OUTPUT=...%q{RANK}...`. Rank
//! 1 launches more and longer kernels each step, so it is the one holding the job up.

use cupti_sim::scenario::{CopyKind, KernelSpec, Layer, Op, ThreadSpec};
use cupti_sim::{RunSpec, Scenario};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

cupti_sim::child_entry!();

const STEPS: u32 = 3;

/// A rank's program: `STEPS` NVTX ranges `step N`, each with `kernels` launches of a kernel
/// of `kernel_us`, one copy and a synchronisation.
fn rank_program(kernels: u32, kernel_us: u64) -> Scenario {
    let mut ops = Vec::new();
    for step in 0..STEPS {
        ops.push(Op::NvtxPush {
            message: format!("step {step}"),
            domain: None,
        });
        for _ in 0..kernels {
            ops.push(Op::Launch {
                kernel: "train".into(),
                grid: [8, 1, 1],
                block: [128, 1, 1],
                stream: 1,
                layer: Layer::Runtime,
            });
        }
        ops.push(Op::Memcpy {
            bytes: 1 << 16,
            kind: CopyKind::D2H,
            stream: Some(1),
        });
        ops.push(Op::StreamSync { stream: 1 });
        ops.push(Op::NvtxPop { domain: None });
    }
    let s = Scenario {
        kernels: vec![KernelSpec {
            name: "train".into(),
            symbol: "_Z5trainv".into(),
            registers: 32,
            static_smem: 0,
            duration_us: kernel_us,
        }],
        threads: vec![ThreadSpec { ops }],
        profiler: Default::default(),
    };
    s.validate().expect("valid scenario");
    s
}

/// Kernels, copies and API calls a trace of `s` holds (API calls under the default driver
/// layer).
fn expected(s: &Scenario) -> (u64, u64, u64) {
    let e = s.expected(Layer::Driver, false);
    (
        e.kernels.values().sum(),
        e.copies.values().sum(),
        e.api_slices.values().sum(),
    )
}

fn record(dir: &Path, rank: u32, s: Scenario) {
    let tool = cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built");
    let spec = RunSpec::new(tool, s)
        .env(
            "INJECTION_OUTPUT",
            dir.join("job-rank%q{RANK}.pftrace").display().to_string(),
        )
        .env("INJECTION_TRACE", "gpu,api,markers")
        .env("XDG_RUNTIME_DIR", dir.display().to_string())
        .env("RANK", rank.to_string())
        .env("LOCAL_RANK", rank.to_string())
        .env("WORLD_SIZE", "2")
        .env("RUST_BACKTRACE", "0");
    let out = cupti_sim::host::run_checked(spec, Duration::from_secs(120));
    assert_eq!(out.status, Some(0), "{}", out.stderr);
}

fn stats(args: &[&str], traces: &[PathBuf]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .arg("stats")
        .args(args)
        .args(traces)
        .output()
        .unwrap();
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{so}\n{se}");
    assert!(se.is_empty(), "no warnings: {se}");
    so
}

#[test]
fn stats_over_a_two_rank_job_counts_each_rank_and_names_the_slow_one() {
    let dir = std::env::temp_dir().join(format!("gpu-trace-job-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // As XDG_RUNTIME_DIR: used only when it is ours and 0700, as a login makes it.
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let (fast, slow) = (rank_program(2, 10), rank_program(3, 40));
    let want = [expected(&fast), expected(&slow)];
    assert_eq!(want[0], (6, 3, 6 + 3 + 3), "the script");
    assert_eq!(want[1], (9, 3, 9 + 3 + 3), "the script");
    record(&dir, 0, fast);
    record(&dir, 1, slow);
    let files: Vec<PathBuf> = [0, 1]
        .map(|r| dir.join(format!("job-rank{r}.pftrace")))
        .into();
    for f in &files {
        assert!(f.exists(), "%q{{RANK}} made {}", f.display());
    }

    // Given rank 1 first: the table is in rank order all the same.
    let given = [files[1].clone(), files[0].clone()];
    let j: Value = serde_json::from_str(&stats(&["--json"], &given)).unwrap();
    let r = &j["ranks"];
    assert_eq!(r["known"], true, "{r:#}");
    assert_eq!(r["compared"], "gpu_time_per_step");
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{r:#}");
    for (i, row) in rows.iter().enumerate() {
        let (k, c, a) = want[i];
        assert_eq!(row["rank"], i as u64, "{row:#}");
        assert_eq!(row["world_size"], 2);
        assert_eq!(row["file"], files[i].display().to_string());
        assert_eq!(row["kernels"], k, "rank {i}: {row:#}");
        assert_eq!(row["copies"], c, "rank {i}: {row:#}");
        assert_eq!(row["api_calls"], a, "rank {i}: {row:#}");
        assert_eq!(row["steps"], STEPS as u64, "rank {i}: {row:#}");
        assert_eq!(row["gpus"], serde_json::json!([0]));
    }
    assert_eq!(r["total"]["kernels"], want[0].0 + want[1].0);
    assert_eq!(r["total"]["copies"], want[0].1 + want[1].1);
    assert_eq!(r["total"]["api_calls"], want[0].2 + want[1].2);
    // Rank 1 runs 3 × 40 µs of kernels a step against rank 0's 2 × 10 µs.
    let per_step = |i: usize| rows[i]["gpu_per_step_ns"].as_f64().unwrap();
    assert!(per_step(0) >= 20_000.0 && per_step(1) >= 120_000.0, "{r:#}");
    let s = &r["straggler"];
    assert_eq!(s["rank"], 1, "{r:#}");
    assert_eq!(s["measure"], "gpu_time_per_step");
    assert_eq!(s["value"].as_f64(), Some(per_step(1)));
    assert_eq!(s["median_of_others"].as_f64(), Some(per_step(0)));
    let verdict = r["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("slowest rank: rank 1 (pid "),
        "{verdict}"
    );
    assert!(verdict.contains("GPU time per step"), "{verdict}");
    // The totals over the job are the tables over all processes.
    let all: u64 = j["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["count"].as_u64().unwrap())
        .sum();
    assert_eq!(all, want[0].0 + want[1].0);

    let text = stats(&[], &given);
    assert!(text.contains("== Ranks =="), "{text}");
    assert!(text.contains(&format!("\nVerdict: {verdict}\n")), "{text}");
    assert!(
        text.contains("All ranks: 15 kernels, 6 copies, 27 API calls"),
        "{text}"
    );
    assert!(!text.contains("ranks unknown"), "{text}");
    assert!(
        text.contains(", rank 1/2 ("),
        "the process's own section: {text}"
    );

    let csv = stats(&["--format", "csv", "--report", "ranks"], &given);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].starts_with("report,scope,file,pid,rank,order,gpus,kernels,copies,api_calls"),
        "{csv}"
    );
    let rank_rows: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("ranks,rank,"))
        .collect();
    assert_eq!(rank_rows.len(), 2, "{csv}");
    assert!(
        rank_rows[1].contains(",1,0,0,9,3,15,"),
        "rank 1, given first, is second: {csv}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("ranks,job,,,,,,15,6,27,")),
        "{csv}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("rank_verdict,job,") && l.contains(",1,0,gpu_time_per_step,")),
        "{csv}"
    );
    if std::env::var_os("GPU_TRACE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("kept {}", dir.display());
    }
}
