//! The few lines `record` prints after the run: each file with its size,
//! how long it spans, what it holds and what was lost, then the kernels
//! that took the most GPU time over all of them, names shortened. The
//! numbers are those of `gpu-trace stats` (the same summary,
//! [`gpu_trace_analysis`]); the full report is `gpu-trace stats`. Text from the traces (kernel names, the
//! reader's notes, loss keys) is escaped: each line stays one line, and no
//! control sequence in a trace reaches the terminal.

use gpu_trace_analysis::{Analyzer, FileSummary, ReadOptions};
use gpu_trace_reader::text::{clip, escape, printable};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Kernels listed.
pub(crate) const TOP: usize = 10;
/// Longest kernel name shown, in characters.
pub(crate) const NAME_WIDTH: usize = 72;

/// `name`, escaped, cut to `width` characters, with `…` where it was cut.
pub(crate) fn shorten(name: &str, width: usize) -> String {
    clip(name, width.max(1)).into_owned()
}

/// Characters of a note from the reader shown at most.
const NOTE_WIDTH: usize = 300;

fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn duration(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.1} us", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// Thousands separated by commas.
fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

/// What was lost in the trace, or `None` when nothing was.
fn losses(f: &FileSummary) -> Option<String> {
    match &f.losses {
        None => Some("unknown: the trace was not finalised".to_owned()),
        Some(l) if l.is_empty() => None,
        Some(l) => Some(
            l.iter()
                .map(|(k, n)| format!("{}={n}", printable(k, 64)))
                .collect::<Vec<_>>()
                .join(" "),
        ),
    }
}

/// The summary of the traces at `paths`, each line prefixed `gpu-trace:`.
pub(crate) fn render(paths: &[PathBuf]) -> String {
    let mut out = String::new();
    let mut analyzer = Analyzer::new();
    let read = ReadOptions {
        max_bytes: None,
        progress: Some("gpu-trace:".to_owned()),
    };
    for p in paths {
        let path = p.display().to_string();
        let path = escape(&path);
        let f = match analyzer.read(p, &read) {
            Ok(f) => f,
            Err(e) => {
                let bytes = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
                let _ = writeln!(
                    out,
                    "gpu-trace: wrote {path} ({}), which cannot be read: {}",
                    size(bytes),
                    printable(&e.to_string(), NOTE_WIDTH)
                );
                continue;
            }
        };
        let c = f.counts;
        let mut what = vec![
            plural(c.kernels, "kernel", "kernels"),
            plural(c.copies, "copy", "copies"),
        ];
        if c.memsets > 0 {
            what.push(plural(c.memsets, "memset", "memsets"));
        }
        what.push(plural(c.api_calls, "API call", "API calls"));
        if c.ranges > 0 {
            what.push(plural(c.ranges, "range", "ranges"));
        }
        // A switched run says how much of it was recorded: its events'
        // span alone would read as the whole run.
        let windows = match f.windows {
            Some((n, recorded)) => format!(
                ", in {} ({} recorded)",
                plural(u64::from(n), "recording window", "recording windows"),
                duration(recorded)
            ),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "gpu-trace: wrote {path} ({}): {} over {}{windows}; lost: {}",
            size(f.size),
            what.join(", "),
            duration(f.span.map_or(0, |s| s.dur())),
            losses(f).unwrap_or_else(|| "nothing".to_owned())
        );
        // Not losses: what the reader noticed (a range the program left
        // open at exit, a trace cut short), said as it is.
        if let Some(first) = f.problems.first() {
            let more = match f.problems.len() - 1 {
                0 => String::new(),
                n => format!(
                    " (and {} more; gpu-trace stats shows them)",
                    count(n as u64)
                ),
            };
            let _ = writeln!(
                out,
                "gpu-trace:   note: {}{more}",
                printable(&first.to_string(), NOTE_WIDTH)
            );
        }
    }
    // The kernels over all the traces, by GPU time (most first, then name).
    let kernels = analyzer.finish().all.kernels;
    if !kernels.is_empty() {
        let shown = kernels.len().min(TOP);
        let _ = writeln!(
            out,
            "gpu-trace: top {shown} of {} kernels by GPU time{}:",
            kernels.len(),
            if paths.len() > 1 { " (all files)" } else { "" }
        );
        let _ = writeln!(
            out,
            "gpu-trace:   {:>6} {:>10} {:>10}  name",
            "time%", "total", "count"
        );
        for k in kernels.iter().take(TOP) {
            let _ = writeln!(
                out,
                "gpu-trace:   {:>5.1}% {:>10} {:>10}  {}",
                k.pct,
                duration(k.total),
                count(k.count),
                shorten(&k.name, NAME_WIDTH)
            );
        }
    }
    let files = if paths.len() <= 4 {
        paths
            .iter()
            .map(|p| escape(&p.display().to_string()).into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        "FILE... (the files above)".to_owned()
    };
    if !paths.is_empty() {
        let _ = writeln!(out, "gpu-trace: the full report: gpu-trace stats {files}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_cut_with_an_ellipsis() {
        assert_eq!(shorten("vadd", 10), "vadd");
        let long =
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>";
        let s = shorten(long, 20);
        assert_eq!(s.chars().count(), 20);
        assert_eq!(s, "void at::native::ve…");
    }

    #[test]
    fn names_from_the_trace_are_escaped_and_each_line_stays_one() {
        use gpu_trace_reader::pb::Writer;
        use gpu_trace_reader::wire;
        let evil = "k\x1b[2J\x1b]0;owned\x07\ngpu-trace: forged\u{202e}";
        let mut w = Writer::new();
        w.nested(wire::TRACE_PACKET, |p| {
            p.varint(wire::packet::SEQUENCE_ID, 1)
                .varint(wire::packet::SEQUENCE_FLAGS, 1)
                .nested(wire::packet::INTERNED_DATA, |d| {
                    d.nested(wire::interned::GPU_SPECIFICATIONS, |s| {
                        s.varint(wire::spec::IID, 1)
                            .string(wire::spec::NAME, "Kernel");
                    })
                    .nested(wire::interned::COMPUTE_KERNELS, |k| {
                        k.varint(wire::kernel::IID, 1)
                            .string(wire::kernel::DEMANGLED_NAME, evil);
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
                        .varint(wire::rse::KERNEL_IID, 1);
                });
        });
        let dir = std::env::temp_dir().join(format!("gpu-trace-summary-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("evil\x1b[31m.pftrace");
        std::fs::write(&p, w.as_bytes()).unwrap();
        let out = render(std::slice::from_ref(&p));
        std::fs::remove_dir_all(&dir).unwrap();
        let controls: Vec<char> = out
            .chars()
            .filter(|&c| c != '\n' && (c.is_control() || c == '\u{202e}'))
            .collect();
        assert!(controls.is_empty(), "{controls:?} in {out}");
        assert!(out.lines().all(|l| l.starts_with("gpu-trace: ")), "{out}");
        assert!(
            out.contains(r"k\x1b[2J\x1b]0;owned\x07\ngpu-trace: forged\u{202e}"),
            "{out}"
        );
        assert!(out.contains(r"evil\x1b[31m.pftrace"), "{out}");
    }

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(count(0), "0");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(count(100), "100");
        assert_eq!(duration(1_500), "1.5 us");
        assert_eq!(duration(2_000_000_000), "2.00 s");
        assert_eq!(size(512), "512 B");
        assert_eq!(size(3 * 1024 * 1024), "3.0 MiB");
    }
}
