//! The decoded trace and how it is read.

use crate::checks::Problems;
use crate::decode::{Decoder, RawTe, TeKey};
use crate::frame::{Field, Frames};
use crate::model::{
    CounterValue, DeviceInfo, GpuEvent, Instant, LogLine, ProcessInfo, Slice, Stage, Thread,
    TrackInfo,
};
use crate::pb::DecodeError;
use crate::problem::{Problem, ProblemKind};
use crate::progress::Bar;
use crate::stats::ServiceLosses;
use crate::visit::Visitor;
use crate::wire;
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// A decoded trace.
#[derive(Debug, Default)]
pub struct Trace {
    /// Number of packets.
    pub packets: usize,
    /// GPU events in file order.
    pub gpu_events: Vec<GpuEvent>,
    /// Completed slices, sorted by start, then depth.
    pub slices: Vec<Slice>,
    /// Instants, by time.
    pub instants: Vec<Instant>,
    /// Counter values, in file order.
    pub counters: Vec<CounterValue>,
    /// Devices from the last `GpuInfo`.
    pub devices: Vec<DeviceInfo>,
    /// GPU log lines.
    pub logs: Vec<LogLine>,
    /// Track descriptors by uuid.
    pub tracks: HashMap<u64, TrackInfo>,
    /// The processes that process descriptors describe, in the order
    /// first described.
    pub processes: Vec<ProcessInfo>,
    /// Service statistics, if the trace has them.
    pub losses: Option<ServiceLosses>,
    /// Data-source names in the session's embedded `TraceConfig`.
    pub data_sources: Vec<String>,
    /// The track-event categories that config enables (`enabled_categories`
    /// of its `track_event` data sources).
    pub track_event_categories: Vec<String>,
    /// Where a trace cut short mid-packet stops: the byte offset of the end
    /// of its last whole packet. What follows (part of a packet) is left out.
    pub truncated_at: Option<u64>,
    /// Where a trace is damaged between packets (bytes that cannot start
    /// one: a run of zero bytes, a field that is not a packet): the byte
    /// offset of the damage. What came before is read; the rest is not,
    /// since where the next packet starts cannot be known.
    pub damaged_at: Option<u64>,
    /// Packets whose content is malformed (each a whole packet, framed
    /// right, with damage inside): each is left out from its damage on,
    /// and the first is in [`Trace::problems`] with its byte offset.
    pub damaged_packets: u64,
    /// Every custom (≥ 128) clock id used by a packet.
    pub custom_clocks_used: Vec<u32>,
    /// What Perfetto's trace processor would reject or drop (references it
    /// could not resolve, clock snapshots that go back, packets out of its
    /// sort window or without the incremental state they need, arrows to
    /// events not in the trace), unmatched ends, a trace cut short, and
    /// other problems: each once, with how many times it came up.
    pub problems: Vec<Problem>,
}

/// Read failures.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// I/O.
    #[error("cannot read {path}: {err}")]
    Io {
        /// Path.
        path: String,
        /// Error.
        err: std::io::Error,
    },
    /// Not a protobuf trace.
    #[error("not a Perfetto trace: {0}")]
    Malformed(#[from] DecodeError),
    /// Protobuf, but not a trace.
    #[error("not a Perfetto trace: {0}")]
    NotATrace(String),
    /// No bytes at all.
    #[error("empty trace (0 bytes)")]
    Empty,
    /// More bytes than the read may take ([`ReadOptions::max_bytes`], or
    /// [`STREAM_LIMIT`] for an input of unknown size).
    #[error("larger than the limit of {limit} bytes: not read past it")]
    TooLarge {
        /// The limit, bytes.
        limit: u64,
    },
}

/// Bytes read at most from an input whose size is not known beforehand
/// (a pipe, a FIFO, a character device), unless
/// [`ReadOptions::max_bytes`] says otherwise: 64 GiB. A regular file is
/// read whole.
pub const STREAM_LIMIT: u64 = 64 << 30;

/// How [`Trace::visit_with`] reads a file.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Bytes read at most: a larger input is [`ReadError::TooLarge`]
    /// (a regular file at once, from its size). `None`: a regular file
    /// whole, and at most [`STREAM_LIMIT`] bytes of anything else.
    pub max_bytes: Option<u64>,
    /// Draw [`Trace::open_showing_progress`]'s progress bar, its line
    /// starting with this.
    pub progress: Option<String>,
}

/// How often the progress callback runs, in bytes read.
const PROGRESS_EVERY: u64 = 4 << 20;

impl Trace {
    /// Reads and decodes a file, in chunks: memory holds the decoded trace
    /// and one packet of the file at a time, not the file.
    ///
    /// # Errors
    /// When the file cannot be read, is empty, or is not a protobuf trace
    /// (its first field is not a packet, or no packet in it is whole);
    /// [`ReadError::TooLarge`] for more than [`STREAM_LIMIT`] bytes of a
    /// pipe. Damage after a whole packet is no error: see
    /// [`Trace::damaged_at`], [`Trace::damaged_packets`] and
    /// [`Trace::truncated_at`].
    pub fn open(path: impl AsRef<Path>) -> Result<Trace, ReadError> {
        Self::open_with(path, |_, _| {})
    }

    /// [`Trace::open`], drawing a progress bar on stderr while a large file
    /// (see [`crate::progress`]) is read and stderr is a terminal. The line
    /// starts with `prefix`, e.g. `gpu-trace:`.
    ///
    /// # Errors
    /// As [`Trace::open`].
    pub fn open_showing_progress(path: impl AsRef<Path>, prefix: &str) -> Result<Trace, ReadError> {
        let p = path.as_ref();
        Self::read_path(p, None, None, bar(p, prefix))
    }

    /// [`Trace::open`], calling `progress(bytes read, file size)` every few
    /// MiB.
    ///
    /// # Errors
    /// As [`Trace::open`].
    pub fn open_with(
        path: impl AsRef<Path>,
        progress: impl FnMut(u64, u64),
    ) -> Result<Trace, ReadError> {
        Self::read_path(path.as_ref(), None, None, progress)
    }

    /// Reads a file, handing its GPU events, slices, instants and counter
    /// values to `v` as they are decoded instead of keeping them: memory
    /// holds the interned state, the open slices and one packet, however
    /// large the file. The returned trace has everything else
    /// ([`Trace::packets`], devices, logs, tracks, losses, data sources,
    /// problems) and empty `gpu_events`, `slices`, `instants` and
    /// `counters`. Problems are those [`Trace::open`] reports, in its order,
    /// but for those in parts `v` does not read ([`Visitor::parts`]).
    ///
    /// # Errors
    /// As [`Trace::open`].
    pub fn visit(path: impl AsRef<Path>, v: &mut impl Visitor) -> Result<Trace, ReadError> {
        Self::read_path(path.as_ref(), None, Some(v), |_, _| {})
    }

    /// [`Trace::visit`], with [`Trace::open_showing_progress`]'s progress
    /// bar.
    ///
    /// # Errors
    /// As [`Trace::open`].
    pub fn visit_showing_progress(
        path: impl AsRef<Path>,
        prefix: &str,
        v: &mut impl Visitor,
    ) -> Result<Trace, ReadError> {
        let p = path.as_ref();
        Self::read_path(p, None, Some(v), bar(p, prefix))
    }

    /// [`Trace::visit`], read as `o` says: at most so many bytes, with a
    /// progress bar.
    ///
    /// # Errors
    /// As [`Trace::open`], and [`ReadError::TooLarge`] past the limit.
    pub fn visit_with(
        path: impl AsRef<Path>,
        o: &ReadOptions,
        v: &mut impl Visitor,
    ) -> Result<Trace, ReadError> {
        let p = path.as_ref();
        match &o.progress {
            Some(prefix) => Self::read_path(p, o.max_bytes, Some(v), bar(p, prefix)),
            None => Self::read_path(p, o.max_bytes, Some(v), |_, _| {}),
        }
    }

    /// [`Trace::visit`] of a trace held in memory.
    ///
    /// # Errors
    /// As [`Trace::from_bytes`].
    pub fn visit_bytes(data: &[u8], v: &mut impl Visitor) -> Result<Trace, ReadError> {
        Self::read(data, Some(data.len() as u64), u64::MAX, Some(v), |_| {})
    }

    /// Reads the file at `p`, at most `max` bytes of it (`None`: a regular
    /// file whole, [`STREAM_LIMIT`] of anything else).
    fn read_path(
        p: &Path,
        max: Option<u64>,
        v: Option<&mut dyn Visitor>,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<Trace, ReadError> {
        let io = |err| ReadError::Io {
            path: p.display().to_string(),
            err,
        };
        let file = std::fs::File::open(p).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        // A pipe's or a device's size says nothing of what it will give.
        let size = meta.is_file().then_some(meta.len());
        let limit = match (max, size) {
            (Some(m), Some(s)) if s > m => return Err(ReadError::TooLarge { limit: m }),
            (Some(m), _) => m,
            (None, Some(_)) => u64::MAX,
            (None, None) => STREAM_LIMIT,
        };
        let total = size.unwrap_or(0);
        Self::read(file, size, limit, v, |done| progress(done, total)).map_err(|e| match e {
            ReadError::Io { err, .. } => io(err),
            e => e,
        })
    }

    /// Decodes a trace held in memory.
    ///
    /// # Errors
    /// When `data` is empty or not a protobuf trace. A trace cut short
    /// mid-packet (a killed writer) keeps the packets before the cut, and
    /// says so in [`Trace::problems`] and [`Trace::truncated_at`]; one
    /// damaged keeps what came before the damage ([`Trace::damaged_at`],
    /// [`Trace::damaged_packets`]).
    pub fn from_bytes(data: &[u8]) -> Result<Trace, ReadError> {
        Self::read(data, Some(data.len() as u64), u64::MAX, None, |_| {})
    }

    /// Decodes a trace from `src`, read in chunks; its size is not known,
    /// so at most [`STREAM_LIMIT`] bytes are read.
    ///
    /// # Errors
    /// As [`Trace::from_bytes`], when reading fails, and
    /// [`ReadError::TooLarge`] past the limit.
    pub fn from_reader(src: impl Read) -> Result<Trace, ReadError> {
        Self::from_reader_limited(src, STREAM_LIMIT)
    }

    /// [`Trace::from_reader`], reading at most `max_bytes`.
    ///
    /// # Errors
    /// As [`Trace::from_reader`].
    pub fn from_reader_limited(src: impl Read, max_bytes: u64) -> Result<Trace, ReadError> {
        Self::read(src, None, max_bytes, None, |_| {})
    }

    /// Decodes `src`, of `size` bytes if known, reading at most `limit`
    /// bytes of it, into a trace or, with `v`, through `v`.
    ///
    /// What is wrong costs as little as it can: a packet whose content is
    /// malformed is left out alone (its framing says where the next one
    /// starts); damage between packets, or a packet cut short, ends the
    /// read there, keeping what came before. Offsets are the file's.
    fn read(
        src: impl Read,
        size: Option<u64>,
        limit: u64,
        v: Option<&mut dyn Visitor>,
        mut progress: impl FnMut(u64),
    ) -> Result<Trace, ReadError> {
        let io = |err| ReadError::Io {
            path: "input".into(),
            err,
        };
        let mut frames = Frames::new(src, size, limit);
        let mut d = Decoder::new(v);
        d.reserve_for(size.unwrap_or(0));
        let mut first = true;
        // Whether a packet decoded whole, and the first that did not.
        let mut good = false;
        let mut first_bad: Option<String> = None;
        let mut next_report = PROGRESS_EVERY;
        loop {
            let at = frames.position();
            let Some(f) = frames.next().map_err(io)? else {
                break;
            };
            match f {
                Ok(Field::Len(wire::TRACE_PACKET, p, body_at)) => {
                    d.at(at);
                    match d.packet(p) {
                        Ok(()) => good = true,
                        Err(e) => {
                            let bad = body_at + e.offset_in(p).unwrap_or(0) as u64;
                            first_bad.get_or_insert_with(|| {
                                format!("malformed protobuf at byte {bad}: {}", e.what)
                            });
                            d.damaged_packet(at, bad, e.what);
                        }
                    }
                }
                // A trace is a sequence of packets: anything else first is
                // some other file that happens to parse as protobuf (text
                // does, for a few bytes).
                Ok(Field::Len(n, ..) | Field::Other(n)) if first => {
                    return Err(ReadError::NotATrace(format!(
                        "it starts with protobuf field {n}, not a TracePacket (field {})",
                        wire::TRACE_PACKET
                    )));
                }
                // Nothing but packets is ever written between packets.
                Ok(Field::Len(n, ..) | Field::Other(n)) => {
                    if frames.over_limit() {
                        return Err(ReadError::TooLarge { limit });
                    }
                    d.damaged_at(
                        at,
                        &format!("protobuf field {n} where a TracePacket (field 1) should start"),
                        size,
                    );
                    break;
                }
                Err(e) => {
                    if frames.over_limit() {
                        return Err(ReadError::TooLarge { limit });
                    }
                    if first {
                        return Err(ReadError::NotATrace(format!(
                            "{} (at byte {})",
                            e.what, e.offset
                        )));
                    }
                    if e.cut {
                        d.problem_first(
                            ProblemKind::Cut,
                            format!("trace ends mid-packet: {}", e.what),
                        );
                        d.truncated_at(at);
                    } else {
                        d.damaged_at(e.offset, &e.what, size);
                    }
                    break;
                }
            }
            first = false;
            if frames.position() >= next_report {
                progress(frames.position());
                next_report = frames.position() + PROGRESS_EVERY;
            }
        }
        if frames.over_limit() {
            return Err(ReadError::TooLarge { limit });
        }
        progress(frames.position());
        if first {
            return Err(ReadError::Empty);
        }
        if !good && let Some(bad) = first_bad {
            return Err(ReadError::NotATrace(bad));
        }
        Ok(d.finish())
    }

    /// Pairs begin and end events per track, in time order (file order
    /// among equal times), into slices and instants. Slices are laid out
    /// in begin order as they open, so the final sort finds them ordered.
    pub(crate) fn pair_slices(
        &mut self,
        mut te: Vec<Option<RawTe>>,
        mut keys: Vec<TeKey>,
        problems: &mut Problems,
    ) {
        // The stable sort finds the runs of mostly ordered sequences.
        keys.sort_by_key(|k| (k.ts, k.order));
        let mut stacks: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
        for k in keys {
            match k.ty {
                wire::track_event::TYPE_SLICE_BEGIN => {
                    let Some(e) = te[k.slot as usize].take() else {
                        continue;
                    };
                    let stack = stacks.entry(k.track).or_default();
                    stack.push(self.slices.len());
                    self.slices.push(Slice {
                        track: k.track,
                        name: e.name,
                        ts: k.ts,
                        dur: 0,
                        depth: stack.len() as u32 - 1,
                        submissions: e.submissions,
                        waits: e.waits,
                        gpu_api: e.gpu_api,
                        args: e.args,
                        callstack: e.callstack,
                    });
                }
                wire::track_event::TYPE_SLICE_END => {
                    match stacks.get_mut(&k.track).and_then(Vec::pop) {
                        Some(i) => {
                            let s = &mut self.slices[i];
                            s.dur = k.ts.saturating_sub(s.ts);
                        }
                        None => problems.push(
                            ProblemKind::Unpaired { slices: 1 },
                            format!("slice end without begin on track {:#x}", k.track),
                        ),
                    }
                }
                wire::track_event::TYPE_INSTANT => {
                    let Some(e) = te[k.slot as usize].take() else {
                        continue;
                    };
                    self.instants.push(Instant {
                        track: k.track,
                        name: e.name,
                        ts: k.ts,
                        args: e.args,
                    })
                }
                _ => {}
            }
        }
        let mut open: Vec<(u64, Vec<usize>)> =
            stacks.into_iter().filter(|(_, s)| !s.is_empty()).collect();
        if !open.is_empty() {
            open.sort_by_key(|(track, _)| *track);
            let mut unended = vec![false; self.slices.len()];
            for (track, s) in &open {
                problems.push(
                    ProblemKind::Unpaired {
                        slices: s.len() as u64,
                    },
                    format!("{} unterminated slices on track {track:#x}", s.len()),
                );
                s.iter().for_each(|&i| unended[i] = true);
            }
            let mut i = 0;
            self.slices.retain(|_| {
                i += 1;
                !unended[i - 1]
            });
        }
        self.slices.sort_by_key(|s| (s.ts, s.depth));
    }

    /// Kernel events.
    pub fn kernels(&self) -> impl Iterator<Item = &GpuEvent> {
        self.gpu_events.iter().filter(|e| e.stage == Stage::Kernel)
    }

    /// Copy and memset events.
    pub fn memory_ops(&self) -> impl Iterator<Item = &GpuEvent> {
        self.gpu_events
            .iter()
            .filter(|e| matches!(e.stage, Stage::Memcpy | Stage::Memset))
    }

    /// The GPU event with `id`.
    pub fn gpu_event(&self, id: u64) -> Option<&GpuEvent> {
        self.gpu_events.iter().find(|e| e.event_id == id)
    }

    /// GPU events by id.
    pub fn gpu_events_by_id(&self) -> HashMap<u64, &GpuEvent> {
        self.gpu_events.iter().map(|e| (e.event_id, e)).collect()
    }

    /// The process `pid`, as its descriptors describe it.
    pub fn process(&self, pid: i64) -> Option<&ProcessInfo> {
        self.processes.iter().find(|p| p.pid == pid)
    }

    /// The thread a slice's track belongs to.
    pub fn thread_of(&self, track: u64) -> Option<Thread> {
        self.tracks.get(&track).and_then(|t| t.thread)
    }

    /// The GpuLog line starting with `prefix`.
    pub fn log(&self, prefix: &str) -> Option<&LogLine> {
        self.logs
            .iter()
            .rev()
            .find(|l| l.message.starts_with(prefix))
    }

    /// Drop counts from the tool's own log line, by key.
    pub fn drop_counts(&self) -> Option<Vec<(String, u64)>> {
        let l = self.log("gpu-trace dropped:")?;
        let rest = l.message.trim_start_matches("gpu-trace dropped:").trim();
        if rest == "none" {
            return Some(Vec::new());
        }
        Some(
            rest.split_whitespace()
                .filter_map(|kv| {
                    let (k, v) = kv.split_once('=')?;
                    Some((k.to_owned(), v.parse().ok()?))
                })
                .collect(),
        )
    }
}

/// A progress callback drawing a bar for reading `p` on stderr (see
/// [`crate::progress`]).
fn bar<'a>(p: &'a Path, prefix: &'a str) -> impl FnMut(u64, u64) + 'a {
    let mut bar = None;
    move |done, total| {
        if let Some(b) = bar
            .get_or_insert_with(|| Bar::stderr(format!("{prefix} reading {}", p.display()), total))
            .as_mut()
        {
            b.update(done);
        }
    }
}
