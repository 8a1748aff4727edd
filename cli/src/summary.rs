//! The few lines `record` prints after the run: each file with its size,
//! how long it spans, what it holds and what was lost, then the kernels
//! that took the most GPU time over all of them, names shortened. The full
//! report is `gpu-trace stats`. Text from the traces (kernel names, the
//! reader's notes, loss keys) is escaped: each line stays one line, and no
//! control sequence in a trace reaches the terminal.

use gpu_trace_reader::text::{clip, escape, printable};
use gpu_trace_reader::{GpuEvent, KernelInfo, Parts, Slice, Stage, Trace, Visitor};
use rustc_hash::FxHashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

/// Kernels listed.
pub(crate) const TOP: usize = 10;
/// Longest kernel name shown, in characters.
pub(crate) const NAME_WIDTH: usize = 72;

/// What one trace holds.
#[derive(Default)]
struct Counts {
    first: Option<u64>,
    last: u64,
    kernels: u64,
    copies: u64,
    memsets: u64,
    api: u64,
    ranges: u64,
    /// GPU time by kernel, found by the kernel's interned record.
    by_kernel: FxHashMap<usize, (Arc<KernelInfo>, u64, u64)>,
    /// Kernels without an interned record, by name.
    by_name: FxHashMap<String, (u64, u64)>,
}

impl Counts {
    fn span(&mut self, ts: u64, dur: u64) {
        self.first = Some(self.first.map_or(ts, |f| f.min(ts)));
        self.last = self.last.max(ts.saturating_add(dur));
    }
}

impl Visitor for Counts {
    fn parts(&self) -> Parts {
        Parts {
            kernel_launch: false,
        }
    }

    fn gpu_event(&mut self, e: &GpuEvent) {
        self.span(e.ts, e.dur);
        match e.stage {
            Stage::Kernel => {
                self.kernels += 1;
                match &e.kernel {
                    Some(k) => {
                        let entry = self
                            .by_kernel
                            .entry(Arc::as_ptr(k) as usize)
                            .or_insert_with(|| (k.clone(), 0, 0));
                        entry.1 += 1;
                        entry.2 += e.dur;
                    }
                    None => {
                        let entry = self.by_name.entry(e.name.to_string()).or_default();
                        entry.0 += 1;
                        entry.1 += e.dur;
                    }
                }
            }
            Stage::Memcpy => self.copies += 1,
            Stage::Memset => self.memsets += 1,
            Stage::Other(_) => {}
        }
    }

    fn slice(&mut self, s: &Slice, _begin: u32) {
        self.span(s.ts, s.dur);
        if s.gpu_api.is_some() {
            self.api += 1;
        } else {
            self.ranges += 1;
        }
    }
}

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

/// What was lost in `t`, or `None` when nothing was.
fn losses(t: &Trace) -> Option<String> {
    let mut lost: Vec<String> = Vec::new();
    match t.drop_counts() {
        None => lost.push("unknown: the trace was not finalised".to_owned()),
        Some(d) => lost.extend(
            d.into_iter()
                .filter(|(_, n)| *n > 0)
                .map(|(k, n)| format!("{}={n}", printable(&k, 64))),
        ),
    }
    if let Some(l) = t.losses {
        lost.extend(l.describe().into_iter().map(|d| format!("perfetto_{d}")));
    }
    (!lost.is_empty()).then(|| lost.join(" "))
}

/// The summary of the traces at `paths`, each line prefixed `gpu-trace:`.
pub(crate) fn render(paths: &[PathBuf]) -> String {
    let mut out = String::new();
    let mut kernels: FxHashMap<String, (u64, u64)> = FxHashMap::default();
    let mut gpu_total = 0u64;
    for p in paths {
        let bytes = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let path = p.display().to_string();
        let path = escape(&path);
        let mut c = Counts::default();
        let t = match Trace::visit_showing_progress(p, "gpu-trace:", &mut c) {
            Ok(t) => t,
            Err(e) => {
                let _ = writeln!(
                    out,
                    "gpu-trace: wrote {path} ({}), which cannot be read: {}",
                    size(bytes),
                    printable(&e.to_string(), NOTE_WIDTH)
                );
                continue;
            }
        };
        let span = c.first.map_or(0, |f| c.last.saturating_sub(f));
        let mut what = vec![
            plural(c.kernels, "kernel", "kernels"),
            plural(c.copies, "copy", "copies"),
        ];
        if c.memsets > 0 {
            what.push(plural(c.memsets, "memset", "memsets"));
        }
        what.push(plural(c.api, "API call", "API calls"));
        if c.ranges > 0 {
            what.push(plural(c.ranges, "range", "ranges"));
        }
        // A switched run says how much of it was recorded: its events'
        // span alone would read as the whole run.
        let windows = match gpu_trace_analysis::windows_of(&t.logs, c.last) {
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
            size(bytes),
            what.join(", "),
            duration(span),
            losses(&t).unwrap_or_else(|| "nothing".to_owned())
        );
        // Not losses: what the reader noticed (a range the program left
        // open at exit, a trace cut short), said as it is.
        if let Some(first) = t.problems.first() {
            let more = match t.problems.len() - 1 {
                0 => String::new(),
                n => format!(
                    " (and {} more; gpu-trace stats shows them)",
                    count(n as u64)
                ),
            };
            let _ = writeln!(
                out,
                "gpu-trace:   note: {}{more}",
                printable(first, NOTE_WIDTH)
            );
        }
        for (k, n, d) in c.by_kernel.into_values() {
            let name = if k.demangled.is_empty() {
                k.name.clone()
            } else {
                k.demangled.clone()
            };
            let e = kernels.entry(name).or_default();
            e.0 += n;
            e.1 += d;
            gpu_total += d;
        }
        for (name, (n, d)) in c.by_name {
            let e = kernels.entry(name).or_default();
            e.0 += n;
            e.1 += d;
            gpu_total += d;
        }
    }
    if !kernels.is_empty() {
        let mut rows: Vec<(String, u64, u64)> =
            kernels.into_iter().map(|(k, (n, d))| (k, n, d)).collect();
        rows.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        let shown = rows.len().min(TOP);
        let _ = writeln!(
            out,
            "gpu-trace: top {shown} of {} kernels by GPU time{}:",
            rows.len(),
            if paths.len() > 1 { " (all files)" } else { "" }
        );
        let _ = writeln!(
            out,
            "gpu-trace:   {:>6} {:>10} {:>10}  name",
            "time%", "total", "count"
        );
        for (name, n, d) in rows.into_iter().take(TOP) {
            let pct = if gpu_total == 0 {
                0.0
            } else {
                d as f64 * 100.0 / gpu_total as f64
            };
            let _ = writeln!(
                out,
                "gpu-trace:   {pct:>5.1}% {:>10} {:>10}  {}",
                duration(d),
                count(n),
                shorten(&name, NAME_WIDTH)
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
