//! Summaries of gpu-trace's Perfetto traces: what `gpu-trace stats` and
//! the closing lines of `gpu-trace record` show, as one [`Summary`] that
//! serialises (serde) to the JSON `gpu-trace stats --format json` writes.
//!
//! Each trace is read once as it streams by ([`Analyzer::read`], through
//! [`gpu_trace_reader::Trace::visit`]), per-kernel counter values included:
//! memory holds every duration of each group (4 bytes each: medians and
//! percentiles are exact), the union of each engine's, stream's and
//! thread's busy intervals ([`Intervals`]), the counter values (and, where
//! the session recorded counters, every kernel's start, about 3 bytes, to
//! find the kernel of each value) and the telemetry samples; not the
//! trace. Several traces (one per
//! process of a job, or a system-mode trace of several processes) are
//! summarised per process and together, with the ranks of the job side by
//! side.
//!
//! ```no_run
//! use gpu_trace_analysis::{Analyzer, ReadOptions, render};
//!
//! let mut a = Analyzer::new();
//! let file = a.read("train-1234.pftrace", &ReadOptions::default())?;
//! for w in &file.warnings {
//!     eprintln!("{w}");
//! }
//! let summary = a.finish();
//! for k in summary.all.kernels.iter().take(5) {
//!     println!("{:>12} ns  {:>8}  {}", k.total, k.count, k.name);
//! }
//! print!("{}", render::to_text(&summary, &render::Options::default()));
//! # Ok::<(), gpu_trace_analysis::ReadError>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod diagnose;
pub mod diff;
mod durations;
#[cfg(feature = "parquet")]
pub mod export;
pub mod intervals;
mod launch;
pub mod names;
pub mod python;
mod ranks;
mod read;
pub mod render;
mod summary;
mod telemetry;

pub use diagnose::{Finding, IdleRow, LaunchRow, OutlierRow, TemporalRow, Verdict};
pub use durations::Row;
pub use gpu_trace_reader::{ReadError, ReadOptions, STREAM_LIMIT};
pub use intervals::Intervals;
pub use names::NameStyle;
pub use ranks::{Measure, RankRow, Ranks, SLOWER_BY, Straggler, WAITS_MORE_BY, is_step};
pub use summary::{
    CounterRow, Counts, EngineRow, FileSummary, KERNEL_ENGINE, Pid, Process, Span, StreamRow,
    Summary, Tables, ThreadRow, UNKNOWN_PID, pid_text,
};
pub use telemetry::{DeviceTelemetry, ReasonRow, TelemetryRow, Throttle, reason};

use gpu_trace_reader::Trace;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The README's example, compiled.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

/// Reads traces, one at a time, into one [`Summary`].
#[derive(Default)]
pub struct Analyzer {
    files: Vec<(FileSummary, read::FileData)>,
}

impl Analyzer {
    /// No traces yet.
    pub fn new() -> Analyzer {
        Analyzer::default()
    }

    /// Reads the trace at `path` once, as it streams by, as `o` says (at
    /// most so many bytes, with a progress bar), and keeps what the
    /// summary needs of it. Returns its header, with its warnings.
    ///
    /// Slices pair per track in file order, even on a track whose events
    /// are out of time order there: gpu-trace writes a thread's API calls
    /// and its NVTX ranges in separate passes onto the same track, so
    /// nearly every trace with ranges has such tracks, and each pass is
    /// balanced (a call's begin and end are written together), which file
    /// order keeps apart where sorting by time may not (a range and a call
    /// that begin at the same nanosecond). Memory stays bounded either way.
    ///
    /// # Errors
    /// As [`Trace::visit_with`]: the file cannot be read, is not a trace,
    /// or is larger than the limit. Nothing of it is kept then.
    pub fn read(
        &mut self,
        path: impl AsRef<Path>,
        o: &ReadOptions,
    ) -> Result<&FileSummary, ReadError> {
        let f = read_one(path.as_ref(), o)?;
        Ok(self.keep(f))
    }

    /// [`Analyzer::read`] of every trace at `paths`, on up to `jobs`
    /// threads at once (0: one per core), kept in the order given; each
    /// result says how that trace's read went. With more than one thread,
    /// no progress bar is drawn (several would fight over the line).
    ///
    /// Each thread reads one trace at a time, as it streams by: memory
    /// holds, besides what the summary keeps of the traces read, one
    /// trace's reading state per thread. The threads take the next trace
    /// from a shared counter, so a large trace does not hold up the
    /// others.
    pub fn read_all<P: AsRef<Path> + Sync>(
        &mut self,
        paths: &[P],
        o: &ReadOptions,
        jobs: usize,
    ) -> Vec<Result<(), ReadError>> {
        let jobs = match jobs {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
        .min(paths.len());
        if jobs <= 1 {
            return paths.iter().map(|p| self.read(p, o).map(|_| ())).collect();
        }
        let quiet = ReadOptions {
            progress: None,
            ..o.clone()
        };
        let next = AtomicUsize::new(0);
        let slots: Vec<Mutex<Option<ReadResult>>> =
            paths.iter().map(|_| Mutex::new(None)).collect();
        std::thread::scope(|scope| {
            for _ in 0..jobs {
                let work = || {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(p) = paths.get(i) else { break };
                        let r = read_one(p.as_ref(), &quiet);
                        *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                    }
                };
                // The reader's decoding recurses a little: the main
                // thread's stack size, not a spawned thread's 2 MiB.
                if std::thread::Builder::new()
                    .name("gpu-trace-read".to_owned())
                    .stack_size(8 << 20)
                    .spawn_scoped(scope, work)
                    .is_err()
                {
                    // No thread to be had: this one reads what is left.
                    break;
                }
            }
        });
        slots
            .into_iter()
            .zip(paths)
            .map(|(slot, p)| {
                let r = slot.into_inner().unwrap_or_else(|e| e.into_inner());
                // A trace no thread got to (none could be started).
                let r = r.unwrap_or_else(|| read_one(p.as_ref(), o));
                r.map(|f| {
                    self.keep(f);
                })
            })
            .collect()
    }

    /// [`Analyzer::read`] of a trace in memory, named `name` in the summary.
    ///
    /// # Errors
    /// As [`Trace::visit_bytes`].
    pub fn read_bytes(&mut self, name: &str, data: &[u8]) -> Result<&FileSummary, ReadError> {
        let mut acc = read::Acc::default();
        let t = Trace::visit_bytes(data, &mut acc)?;
        Ok(self.keep(acc.finish(&t, name.to_owned(), data.len() as u64)))
    }

    fn keep(&mut self, f: (FileSummary, read::FileData)) -> &FileSummary {
        self.files.push(f);
        &self.files.last().expect("just pushed").0
    }

    /// The traces read so far.
    pub fn files(&self) -> impl Iterator<Item = &FileSummary> {
        self.files.iter().map(|f| &f.0)
    }

    /// The summary of the traces read, per process and over all of them,
    /// in the order read.
    pub fn finish(self) -> Summary {
        summary::build(self.files)
    }
}

/// What one read keeps of a trace.
type ReadResult = Result<(FileSummary, read::FileData), ReadError>;

/// Reads the trace at `p` once, as it streams by.
fn read_one(p: &Path, o: &ReadOptions) -> ReadResult {
    let mut acc = read::Acc::default();
    let t = Trace::visit_with(p, o, &mut acc)?;
    // 0: not known (a pipe).
    let size = std::fs::metadata(p)
        .ok()
        .filter(|m| m.is_file())
        .map_or(0, |m| m.len());
    Ok(acc.finish(&t, p.display().to_string(), size))
}

/// The summary of the traces at `paths`, each read once with `o`.
///
/// # Errors
/// The first trace that cannot be read (see [`Analyzer::read`]); to go on
/// past one, use an [`Analyzer`].
pub fn summarize<P: AsRef<Path>>(paths: &[P], o: &ReadOptions) -> Result<Summary, ReadError> {
    let mut a = Analyzer::new();
    for p in paths {
        a.read(p, o)?;
    }
    Ok(a.finish())
}
