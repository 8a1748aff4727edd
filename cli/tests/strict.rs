//! `gpu-trace stats` on traces that report losses: the header says them,
//! and `--strict` turns them into a failing exit status.

use gpu_trace_reader::pb::Writer;
use gpu_trace_reader::wire;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A trace holding only the tool's summary lines and, optionally, the
/// tracing service's statistics with `overwritten` chunks.
fn trace(dir: &Path, name: &str, dropped: Option<&str>, overwritten: Option<u64>) -> PathBuf {
    let mut w = Writer::new();
    let log = |w: &mut Writer, msg: &str| {
        w.nested(wire::TRACE_PACKET, |p| {
            p.varint(wire::packet::TIMESTAMP, 1_000)
                .nested(wire::packet::GPU_LOG, |l| {
                    l.varint(wire::gpu_log::SEVERITY, wire::gpu_log::INFO)
                        .string(wire::gpu_log::TAG, "gpu-trace")
                        .string(wire::gpu_log::MESSAGE, msg);
                });
        });
    };
    log(
        &mut w,
        "gpu-trace summary: kernels=0 memory_ops=0 api_calls=0 markers=0 counter_samples=0",
    );
    if let Some(d) = dropped {
        log(&mut w, &format!("gpu-trace dropped: {d}"));
    }
    if let Some(n) = overwritten {
        w.nested(wire::TRACE_PACKET, |p| {
            p.nested(wire::packet::TRACE_STATS, |s| {
                // buffer_stats { chunks_overwritten }
                s.nested(1, |b| {
                    b.varint(3, n);
                });
            });
        });
    }
    let path = dir.join(name);
    std::fs::write(&path, w.as_bytes()).unwrap();
    path
}

fn stats(args: &[&str], trace: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .arg("stats")
        .args(args)
        .arg(trace)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn losses_are_in_the_header_and_fail_strict() {
    let dir = std::env::temp_dir().join(format!("gpu-trace-strict-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let clean = trace(&dir, "clean.pftrace", Some("none"), Some(0));
    let (rc, out, _) = stats(&["--strict"], &clean);
    assert_eq!(rc, 0, "{out}");
    assert!(out.contains("Losses: none"), "{out}");

    let ours = trace(&dir, "ours.pftrace", Some("thread_buffer=17"), None);
    let (rc, out, _) = stats(&[], &ours);
    assert_eq!(rc, 0, "without --strict a loss is reported, not an error");
    assert!(
        out.contains("Losses: thread_buffer=17 (the trace is incomplete)"),
        "{out}"
    );
    let (rc, _, err) = stats(&["--strict"], &ours);
    assert_eq!(rc, 1);
    assert!(err.contains("incomplete (--strict)"), "{err}");

    // The service's own statistics count, even where our summary said none.
    let theirs = trace(&dir, "theirs.pftrace", Some("none"), Some(3));
    let (rc, out, _) = stats(&["--strict"], &theirs);
    assert_eq!(rc, 1, "{out}");
    assert!(out.contains("perfetto_chunks_overwritten=3"), "{out}");
    let (_, json, _) = stats(&["--json"], &theirs);
    assert!(json.contains("\"complete\":false"), "{json}");

    // No summary line: the process never finished tracing.
    let unfinished = trace(&dir, "unfinished.pftrace", None, None);
    let (rc, out, _) = stats(&["--strict"], &unfinished);
    assert_eq!(rc, 1);
    assert!(out.contains("Losses: unknown"), "{out}");

    std::fs::remove_dir_all(dir).unwrap();
}
