//! `gpu-trace record --telemetry-period` and `--no-telemetry` reach the
//! traced command as `INJECTION_TELEMETRY_PERIOD`; a period that does not
//! parse stops before the command runs.

use std::path::PathBuf;
use std::process::Command;

fn seen(tag: &str, flags: &[&str]) -> (Option<i32>, String, Option<String>) {
    let file: PathBuf =
        std::env::temp_dir().join(format!("gpu-trace-tel-flags-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .arg("record")
        .args(flags)
        .args(["--no-stats", "--", "sh", "-c"])
        .arg(format!(
            "printf %s \"${{INJECTION_TELEMETRY_PERIOD-unset}}\" > {}",
            file.display()
        ))
        .env_remove("INJECTION_TELEMETRY_PERIOD")
        .output()
        .unwrap();
    let got = std::fs::read_to_string(&file).ok();
    let _ = std::fs::remove_file(&file);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        got,
    )
}

#[test]
fn the_period_and_the_switch_reach_the_command() {
    let (code, _, got) = seen("default", &[]);
    assert_eq!((code, got.as_deref()), (Some(0), Some("unset")));
    let (code, _, got) = seen("period", &["--telemetry-period", "5ms"]);
    assert_eq!((code, got.as_deref()), (Some(0), Some("5ms")));
    let (code, _, got) = seen("off", &["--no-telemetry"]);
    assert_eq!((code, got.as_deref()), (Some(0), Some("off")));
}

#[test]
fn a_bad_period_names_the_flag_and_runs_nothing() {
    let (code, stderr, got) = seen("bad", &["--telemetry-period", "fast"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(
        stderr.trim(),
        "gpu-trace: --telemetry-period \"fast\": expected a period like 10ms, 500us or 1s (a bare number is ms), or off"
    );
    assert_eq!(got, None, "the command must not run");
}

/// A trace with one GPU's telemetry (`clocks.sm`, SYSTEM group) beside a
/// per-kernel counter (`sm__throughput`, COMPUTE), as the emitter writes
/// them: the kernel's value at its start and zero at its end.
fn mixed_counters(path: &std::path::Path) {
    use gpu_trace_reader::pb::Writer;
    use gpu_trace_reader::wire::{self, counters as C};
    let mut w = Writer::new();
    let samples: [(u64, &[(u64, f64)]); 4] = [
        (100, &[(1, 1980.0), (2, 55.0)]),
        (150, &[(2, 0.0)]),
        (200, &[(1, 1410.0)]),
        (300, &[(1, 1980.0)]),
    ];
    for (i, (ts, values)) in samples.iter().enumerate() {
        w.nested(wire::TRACE_PACKET, |p| {
            p.varint(wire::packet::TIMESTAMP, *ts)
                .varint(wire::packet::SEQUENCE_ID, 7);
            if i == 0 {
                p.varint(
                    wire::packet::SEQUENCE_FLAGS,
                    wire::packet::SEQ_INCREMENTAL_STATE_CLEARED,
                );
                p.nested(wire::packet::INTERNED_DATA, |d| {
                    d.nested(wire::interned::GPU_COUNTER_DESCRIPTORS, |x| {
                        x.varint(C::IDESC_IID, 1).varint(C::IDESC_GPU_ID, 0);
                        x.nested(C::IDESC_DESCRIPTOR, |cd| {
                            for (id, name, group) in [
                                (1, "clocks.sm", C::GROUP_SYSTEM),
                                (2, "sm__throughput", C::GROUP_COMPUTE),
                            ] {
                                cd.nested(C::DESC_SPECS, |s| {
                                    s.varint(C::SPEC_COUNTER_ID, id)
                                        .string(C::SPEC_NAME, name)
                                        .varint(C::SPEC_GROUPS, group);
                                });
                            }
                        });
                    });
                });
            } else {
                p.varint(
                    wire::packet::SEQUENCE_FLAGS,
                    wire::packet::SEQ_NEEDS_INCREMENTAL_STATE,
                );
            }
            p.nested(wire::packet::GPU_COUNTER_EVENT, |e| {
                e.varint(C::DESCRIPTOR_IID, 1);
                for (id, v) in values.iter() {
                    e.nested(C::COUNTERS, |c| {
                        c.varint(C::COUNTER_ID, *id).double(C::DOUBLE_VALUE, *v);
                    });
                }
            });
        });
    }
    std::fs::write(path, w.as_bytes()).unwrap();
}

#[test]
fn stats_leaves_telemetry_out_of_the_per_kernel_counters() {
    let path = std::env::temp_dir().join(format!(
        "gpu-trace-tel-stats-{}.pftrace",
        std::process::id()
    ));
    mixed_counters(&path);
    let t = gpu_trace_reader::Trace::open(&path).unwrap();
    assert_eq!(t.counters.len(), 5, "the reader sees both kinds");
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .args(["stats", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    let json = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let names = |table: &str| -> Vec<String> {
        v[table]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        names("counters"),
        ["sm__throughput"],
        "telemetry is no kernel's value"
    );
    // It is the GPU's telemetry: 1980 MHz for 100 ns, 1410 for 100, then
    // 1980 again for one period (the trace ends there: no time).
    let m = &v["telemetry"][0]["metrics"][0];
    assert_eq!(m["name"], "clocks.sm");
    assert_eq!((&m["samples"], &m["sampled_ns"]), (&3.into(), &200.into()));
    assert_eq!(m["mean"], (1980.0 + 1410.0) / 2.0);
    let _ = std::fs::remove_file(&path);
}
