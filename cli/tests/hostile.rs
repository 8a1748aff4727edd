//! `gpu-trace stats` on hostile and damaged traces: lengths that claim
//! more than the file has, state that would grow without bound, control
//! characters in names, and damage in the middle. Memory is bounded by
//! running the command under an address-space limit (`ulimit -v`): a
//! reader that allocates what a file claims aborts there.

use gpu_trace_reader::pb::Writer;
use gpu_trace_reader::wire;
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-hostile-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `gpu-trace stats ARGS FILE` under an address-space limit of `limit_kib`
/// (none: 0): (exit code, or -1 for a signal; stdout; stderr).
fn stats_limited(limit_kib: u64, args: &[&str], trace: &Path) -> (i32, String, String) {
    let bin = env!("CARGO_BIN_EXE_gpu-trace");
    let mut cmd = if limit_kib > 0 {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(format!("ulimit -v {limit_kib} && exec \"$0\" \"$@\""))
            .arg(bin);
        c
    } else {
        Command::new(bin)
    };
    let out = cmd.arg("stats").args(args).arg(trace).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

/// One whole packet (a timestamp), then a packet that claims `len` bytes,
/// and `rest` bytes of it.
fn claiming(len: u64, rest: usize) -> Vec<u8> {
    let mut w = Writer::new();
    w.nested(wire::TRACE_PACKET, |p| {
        p.varint(wire::packet::TIMESTAMP, 1000);
    });
    let mut b = w.as_bytes().to_vec();
    b.push(0x0a);
    b.extend(varint(len));
    b.resize(b.len() + rest, 0x42);
    b
}

#[test]
fn lengths_past_the_end_of_the_file_are_a_cut_not_an_allocation() {
    let dir = scratch("claims");
    // A 107-byte file that claims a TiB aborted; claims near 2^63 and 2^64
    // panicked; 3 GiB claimed in 2 MiB took 3 GB of memory.
    for (len, rest) in [
        (1u64 << 40, 96),
        ((1 << 63) + 5, 80),
        (u64::MAX - 2, 80),
        (3 << 30, 2 << 20),
    ] {
        let p = dir.join(format!("claims-{len}.pftrace"));
        std::fs::write(&p, claiming(len, rest)).unwrap();
        let size = std::fs::metadata(&p).unwrap().len();
        let (rc, out, err) = stats_limited(512 << 10, &[], &p);
        assert_eq!(rc, 0, "{len}: {err}");
        assert!(
            err.contains(&format!("claims {len} bytes")),
            "{len}: the warning names the claim: {err}"
        );
        assert!(
            out.contains(&format!(
                "Losses: unknown: the trace stops at byte 5 of {size}"
            )) || out.contains("Losses: unknown: the trace stops at byte 5 of 2,"),
            "{len}: {out}"
        );
        let (rc, _, err) = stats_limited(512 << 10, &["--strict"], &p);
        assert_eq!(rc, 1, "{err}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// `n` packets, each from `packet(i)`, into a file.
fn packets(path: &Path, n: u64, packet: impl Fn(&mut Writer, u64)) -> u64 {
    let mut w = Writer::new();
    for i in 0..n {
        w.nested(wire::TRACE_PACKET, |p| packet(p, i));
    }
    std::fs::write(path, w.as_bytes()).unwrap();
    w.len() as u64
}

/// Writes packet `i` of a file.
type PacketFn<'a> = &'a dyn Fn(&mut Writer, u64);

fn track_event(p: &mut Writer, ts: u64, ty: u64, track: u64) {
    p.varint(wire::packet::TIMESTAMP, ts)
        .nested(wire::packet::TRACK_EVENT, |e| {
            e.varint(wire::track_event::TYPE, ty)
                .varint(wire::track_event::TRACK_UUID, track);
            if ty == wire::track_event::TYPE_SLICE_BEGIN {
                e.string(wire::track_event::NAME, "x");
            }
        });
}

#[test]
fn memory_stays_within_four_times_the_file_and_64_mib() {
    // A few bytes of file each grew memory 16 to 36 times the file's size:
    // tracks with a slice left open, sequences, slice ends without begins.
    let dir = scratch("state");
    // API calls, each submitting 20,000 ids of GPU work never seen.
    let ids = |call: u64| -> Vec<u8> {
        (0..20_000u64)
            .flat_map(|k| {
                let mut v = (1u64 << 21) + call * 20_000 + k;
                let mut b = Vec::new();
                while v >= 0x80 {
                    b.push(v as u8 | 0x80);
                    v >>= 7;
                }
                b.push(v as u8);
                b
            })
            .collect()
    };
    let call = |p: &mut Writer, i: u64| {
        p.varint(wire::packet::TIMESTAMP, 1000 + i)
            .nested(wire::packet::TRACK_EVENT, |e| {
                e.varint(wire::track_event::TRACK_UUID, 7);
                if i.is_multiple_of(2) {
                    e.varint(wire::track_event::TYPE, wire::track_event::TYPE_SLICE_BEGIN)
                        .string(wire::track_event::NAME, "cudaLaunchKernel")
                        .varint(wire::track_event::GPU_API, 4)
                        .nested(wire::track_event::GPU_CORRELATION, |c| {
                            c.bytes(wire::track_event::SUBMISSION_IDS, &ids(i / 2));
                        });
                } else {
                    e.varint(wire::track_event::TYPE, wire::track_event::TYPE_SLICE_END);
                }
            });
    };
    let cases: [(&str, u64, PacketFn<'_>); 4] = [
        ("submissions", 260, &call),
        ("tracks", 1_000_000, &|p, i| {
            track_event(
                p,
                1000 + i,
                wire::track_event::TYPE_SLICE_BEGIN,
                (1 << 40) + i,
            )
        }),
        ("sequences", 2_000_000, &|p, i| {
            p.varint(wire::packet::SEQUENCE_ID, i + 1)
                .varint(wire::packet::SEQUENCE_FLAGS, 1);
        }),
        ("ends", 1_000_000, &|p, i| {
            track_event(
                p,
                1000 + i,
                wire::track_event::TYPE_SLICE_END,
                (1 << 40) + i,
            )
        }),
    ];
    for (name, n, packet) in cases {
        let p = dir.join(format!("{name}.pftrace"));
        let size = packets(&p, n, packet);
        let limit_kib = (4 * size + (64 << 20)) / 1024;
        let (rc, _, err) = stats_limited(limit_kib, &[], &p);
        assert_eq!(
            rc, 0,
            "{name}: {size} bytes read within {limit_kib} KiB of address space: {err}"
        );
        assert!(
            err.contains("this reader's limit") || err.contains("this summary's limits"),
            "{name}: the limit is said: {err}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// What a trace writer puts in names that should not reach a terminal.
const EVIL: &str = "\x1b[2J\x1b]0;owned\x07\r\ngpu-trace: forged line\u{202e}";

/// A trace whose every name holds [`EVIL`]: a kernel, its stream, an API
/// call and a range on a named thread of a named process, a device, and
/// the tool's loss line.
fn evil_trace(path: &Path) {
    let name = |what: &str| format!("{what}{EVIL}");
    let mut w = Writer::new();
    w.nested(wire::TRACE_PACKET, |p| {
        p.varint(wire::packet::SEQUENCE_ID, 1)
            .varint(wire::packet::SEQUENCE_FLAGS, 1)
            .nested(wire::packet::INTERNED_DATA, |d| {
                d.nested(wire::interned::GPU_SPECIFICATIONS, |s| {
                    s.varint(wire::spec::IID, 1)
                        .string(wire::spec::NAME, "Kernel");
                })
                .nested(wire::interned::GPU_SPECIFICATIONS, |s| {
                    s.varint(wire::spec::IID, 2)
                        .string(wire::spec::NAME, &name("stream"));
                })
                .nested(wire::interned::COMPUTE_KERNELS, |k| {
                    k.varint(wire::kernel::IID, 1)
                        .string(wire::kernel::NAME, &name("mangled"))
                        .string(wire::kernel::DEMANGLED_NAME, &name("kernel"));
                });
            });
    });
    w.nested(wire::TRACE_PACKET, |p| {
        p.varint(wire::packet::SEQUENCE_ID, 1)
            .varint(wire::packet::TIMESTAMP, 1_000)
            .nested(wire::packet::GPU_RENDER_STAGE_EVENT, |e| {
                e.varint(wire::rse::EVENT_ID, 1)
                    .varint(wire::rse::DURATION, 500)
                    .varint(wire::rse::STAGE_IID, 1)
                    .varint(wire::rse::HW_QUEUE_IID, 2)
                    .varint(wire::rse::KERNEL_IID, 1);
            });
    });
    w.nested(wire::TRACE_PACKET, |p| {
        p.nested(wire::packet::TRACK_DESCRIPTOR, |t| {
            t.varint(wire::track_descriptor::UUID, 78).nested(
                wire::track_descriptor::PROCESS,
                |pr| {
                    pr.varint(wire::track_descriptor::PROCESS_PID, 42)
                        .string(wire::track_descriptor::PROCESS_NAME, &name("process"));
                },
            );
        });
    });
    w.nested(wire::TRACE_PACKET, |p| {
        p.nested(wire::packet::TRACK_DESCRIPTOR, |t| {
            t.varint(wire::track_descriptor::UUID, 77).nested(
                wire::track_descriptor::THREAD,
                |th| {
                    th.varint(wire::track_descriptor::THREAD_PID, 42)
                        .varint(wire::track_descriptor::THREAD_TID, 43)
                        .string(wire::track_descriptor::THREAD_NAME, &name("thread"));
                },
            );
        });
    });
    for (ts, ty, api, what) in [
        (2_000, wire::track_event::TYPE_SLICE_BEGIN, true, "call"),
        (3_000, wire::track_event::TYPE_SLICE_END, true, ""),
        (4_000, wire::track_event::TYPE_SLICE_BEGIN, false, "range"),
        (5_000, wire::track_event::TYPE_SLICE_END, false, ""),
    ] {
        w.nested(wire::TRACE_PACKET, |p| {
            p.varint(wire::packet::SEQUENCE_ID, 2)
                .varint(wire::packet::TIMESTAMP, ts)
                .nested(wire::packet::TRACK_EVENT, |e| {
                    e.varint(wire::track_event::TYPE, ty)
                        .varint(wire::track_event::TRACK_UUID, 77);
                    if ty == wire::track_event::TYPE_SLICE_BEGIN {
                        e.string(wire::track_event::NAME, &name(what));
                        if api {
                            e.varint(wire::track_event::GPU_API, 4);
                        }
                    }
                });
        });
    }
    w.nested(wire::TRACE_PACKET, |p| {
        p.nested(wire::packet::GPU_INFO, |g| {
            g.nested(wire::gpu_info::GPUS, |d| {
                d.string(wire::gpu_info::NAME, &name("device"))
                    .string(wire::gpu_info::MODEL, &name("model"));
            });
        });
    });
    for msg in [
        "gpu-trace summary: kernels=1".to_owned(),
        format!("gpu-trace dropped: {}=3", name("key").replace(' ', "_")),
    ] {
        w.nested(wire::TRACE_PACKET, |p| {
            p.varint(wire::packet::TIMESTAMP, 6_000)
                .nested(wire::packet::GPU_LOG, |l| {
                    l.varint(wire::gpu_log::SEVERITY, wire::gpu_log::INFO)
                        .string(wire::gpu_log::TAG, "gpu-trace")
                        .string(wire::gpu_log::MESSAGE, &msg);
                });
        });
    }
    std::fs::write(path, w.as_bytes()).unwrap();
}

/// The characters of `s` that act on a terminal (but newlines): control
/// characters and the bidirectional override in [`EVIL`].
fn controls(s: &str) -> Vec<char> {
    s.chars()
        .filter(|&c| c != '\n' && (c.is_control() || c == '\u{202e}'))
        .collect()
}

#[test]
fn control_characters_from_a_trace_never_reach_the_terminal() {
    let dir = scratch("escapes");
    let p = dir.join("evil.pftrace");
    evil_trace(&p);
    let (rc, out, err) = stats_limited(0, &["--name-width", "0"], &p);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(controls(&out), Vec::<char>::new(), "{out}");
    assert_eq!(controls(&err), Vec::<char>::new(), "{err}");
    // Every name is there, escaped, and no line was forged.
    let shown = r"\x1b[2J\x1b]0;owned\x07\r\ngpu-trace: forged line\u{202e}";
    for what in [
        "kernel", "stream", "call", "range", "thread", "device", "model",
    ] {
        assert!(out.contains(&format!("{what}{shown}")), "{what}: {out}");
    }
    // (The loss line splits at white space: its last key is what follows
    // the newline.)
    assert!(
        out.contains(r"Losses: gpu-trace:_forged_line\u{202e}=3"),
        "{out}"
    );
    assert!(
        !out.lines().any(|l| l.starts_with("gpu-trace: forged")),
        "{out}"
    );
    assert!(err.lines().all(|l| l.starts_with("gpu-trace: ")), "{err}");
    // Names are cut, escaped, to the width.
    let (_, out, _) = stats_limited(0, &["--report", "kernels"], &p);
    assert_eq!(controls(&out), Vec::<char>::new(), "{out}");
    assert!(
        out.contains(r"kernel\x1b[2J\x1b]0;owned\x07\r\ngpu-trace: forged line…"),
        "{out}"
    );
    // CSV and JSON keep the names as they are.
    let (_, csv, _) = stats_limited(0, &["--format", "csv", "--report", "kernels"], &p);
    assert!(csv.contains(&format!("kernel{EVIL}")), "{csv}");
    let (_, json, _) = stats_limited(0, &["--json", "--report", "kernels"], &p);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(json.contains(r"\u001b[2J"), "{json}");
    assert!(v.to_string().contains(r"kernel\u001b[2J"), "{v}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// The committed trace of 1000 launches.
fn launches() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../gpu-trace-reader/tests/data/launches-1000.pftrace"
    ))
    .unwrap()
}

/// `1,234`.
fn int(n: usize) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn damage_is_said_where_it_is_and_what_came_before_is_summarised() {
    let dir = scratch("damage");
    let good = launches();
    let (_, whole, _) = stats_limited(0, &["--json", "--report", "kernels"], &{
        let p = dir.join("good.pftrace");
        std::fs::write(&p, &good).unwrap();
        p
    });
    let whole: serde_json::Value = serde_json::from_str(&whole).unwrap();
    assert_eq!(whole["complete"], true);

    // A clean trace and a MiB of zero bytes: damage where they start.
    let p = dir.join("zeros.pftrace");
    let mut b = good.clone();
    b.resize(good.len() + (1 << 20), 0);
    std::fs::write(&p, &b).unwrap();
    let (rc, out, err) = stats_limited(0, &["--strict"], &p);
    assert_eq!(rc, 1, "{err}");
    assert!(
        err.contains(&format!(
            "the trace is damaged at byte {} (field number 0",
            good.len()
        )),
        "{err}"
    );
    assert!(err.contains("the trace is incomplete (--strict)"), "{err}");
    assert!(
        out.contains(&format!(
            "Losses: unknown: the trace is damaged at byte {} of {}",
            int(good.len()),
            int(b.len())
        )),
        "{out}"
    );
    let (rc, json, _) = stats_limited(0, &["--json", "--report", "kernels"], &p);
    assert_eq!(rc, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["files"][0]["damaged_at"], good.len());
    assert_eq!(v["complete"], false);
    // Everything before the zeros is summarised.
    assert_eq!(v["kernels"], whole["kernels"]);

    // One byte changed in the middle: the packet it is in is left out,
    // said at its offset in the file; the rest is read.
    let mid = good.len() / 2;
    let p = dir.join("flipped.pftrace");
    let mut b = good.clone();
    b[mid] ^= 0xff;
    std::fs::write(&p, &b).unwrap();
    let (rc, out, err) = stats_limited(0, &["--strict"], &p);
    assert_eq!(rc, 1, "{err}");
    assert!(!err.contains("not a Perfetto trace"), "{err}");
    let line = err
        .lines()
        .find(|l| l.contains("malformed inside"))
        .unwrap_or_else(|| panic!("the damaged packet is said: {err}"));
    let at: usize = line
        .split("(the first at byte ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        at <= mid && mid - at < 200,
        "the packet around byte {mid}: {line}"
    );
    assert!(out.contains("GPU kernels"), "{out}");
    let (_, json, _) = stats_limited(0, &["--json", "--report", "kernels"], &p);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["files"][0]["damaged_packets"], 1);
    let launches = |v: &serde_json::Value| -> u64 {
        v["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["count"].as_u64().unwrap())
            .sum()
    };
    assert!(
        launches(&v) >= launches(&whole) - 1,
        "{} of {}",
        launches(&v),
        launches(&whole)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[cfg(unix)]
#[test]
fn a_pipe_is_read_up_to_max_bytes() {
    let dir = scratch("pipe");
    // One FIFO per case: what a writer left in a shared one could reach
    // the next case's reader.
    let fifo_for = |name: &str| {
        let fifo = dir.join(name);
        assert!(
            Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        fifo
    };
    let good = launches();
    // Endless zero bytes after a trace: damage, not a read forever.
    let feed = |fifo: &std::path::Path, with_zeros: bool| {
        let fifo = fifo.to_path_buf();
        let good = good.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&fifo) else {
                return;
            };
            let _ = f.write_all(&good);
            if with_zeros {
                let zeros = vec![0u8; 1 << 16];
                while f.write_all(&zeros).is_ok() {}
            }
        })
    };
    let fifo = fifo_for("zeros");
    let t = feed(&fifo, true);
    let (rc, out, err) = stats_limited(0, &["--strict", "--report", "kernels"], &fifo);
    assert_eq!(rc, 1, "{err}");
    assert!(
        err.contains(&format!("damaged at byte {}", good.len())),
        "{err}"
    );
    assert!(out.contains("GPU kernels"), "{out}");
    t.join().unwrap();
    // More than --max-bytes: one line, and no summary.
    let fifo = fifo_for("long");
    let t = feed(&fifo, false);
    let (rc, out, err) = stats_limited(0, &["--max-bytes", "100K"], &fifo);
    t.join().unwrap();
    assert_eq!(rc, 1, "{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(
        err.trim(),
        format!(
            "gpu-trace: {}: more than 102,400 bytes (--max-bytes): not summarised",
            fifo.display()
        )
    );
    let (rc, _, err) = stats_limited(0, &["--max-bytes", "lots"], &fifo);
    assert_eq!(rc, 2);
    assert!(
        err.contains("--max-bytes \"lots\": expected a size"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
