//! The standalone trace written straight into its file: the encoder's
//! packets go into one buffer, framed as `Trace.packet` fields with their
//! sequence id, and the buffer into the file. No Perfetto service, shared
//! memory or session thread sits in between (system mode keeps those; see
//! [`crate::sink`]).
//!
//! Everything the in-process service used to add that a reader uses is
//! written here instead: a `ClockSnapshot` of the builtin clocks at the
//! start and the end, the `TraceConfig` the session would have run (its
//! data sources tell readers what was recorded), and, on the track-event
//! sequence, the packet the SDK starts a sequence with (the incremental
//! state cleared, the process described). Each packet family keeps a
//! sequence of its own, numbered as the service would ([`SEQ_META`] for the
//! file's own packets, then one per family), and its first packet says
//! `first_packet_on_sequence`.
//!
//! Only the emitter thread encodes. The buffer goes to the file when it
//! holds [`WRITE_AT`] bytes and at the end of every emitter cycle
//! ([`FileWriter::write_out`]), so a killed process leaves a valid trace up
//! to the last write: at most what the emitter wrote since its last cycle
//! ended (and up to two full buffers on their way into the file), besides
//! what was still in the recorder's queue or the vendor's buffers (up to
//! one flush period, `INJECTION_FLUSH_PERIOD_MS`).
//!
//! The `write` calls themselves run on a thread of their own,
//! `gpu-trace-write`, while the emitter encodes the next buffer: copying
//! into the page cache took a third of the emitter's time on a 2-core AMD
//! EPYC virtual machine (4M launches, 466 MB). It waits on its channel,
//! never on a timer, so an idle process's writer never wakes; should it
//! not start, the emitter writes itself.

use crate::emit::{CtrSeq, Interner, PacketSink, RsSeq, TrackEventSink};
use gpu_trace_model::schema as wire;
use gpu_trace_reader::pb::Writer;
use rustc_hash::FxHashSet;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

/// The file's own packets (clock snapshots, the config).
const SEQ_META: u32 = 1;
/// Render stages, GPU info and logs.
const SEQ_RS: u32 = 2;
/// Track events (API calls, markers, GPU waits).
const SEQ_TE: u32 = 3;
/// Per-kernel counters.
const SEQ_CTR: u32 = 4;
/// Telemetry.
const SEQ_TEL: u32 = 5;

/// `TracePacket.first_packet_on_sequence` (trace/trace_packet.proto), which
/// the service sets on a sequence's first packet.
const FIRST_PACKET_ON_SEQUENCE: u32 = 87;
/// `TracePacket.trusted_pid` is left out, as the in-process service wrote 0.
/// `ClockSnapshot.primary_trace_clock` (trace/clock_snapshot.proto).
const PRIMARY_TRACE_CLOCK: u32 = 2;
/// `ProcessDescriptor.cmdline` (trace/track_event/process_descriptor.proto).
const PROCESS_CMDLINE: u32 = 2;

/// The buffer goes to the file once it holds this much.
pub(crate) const WRITE_AT: usize = 1 << 20;

/// One sequence's framing state.
#[derive(Debug)]
struct Seq {
    id: u32,
    started: bool,
}

impl Seq {
    const fn new(id: u32) -> Self {
        Self { id, started: false }
    }
}

/// Appends `body` as one `Trace.packet` on sequence `seq`.
fn frame(buf: &mut Vec<u8>, seq: &mut Seq, body: &[u8]) {
    let first = !std::mem::replace(&mut seq.started, true);
    let id = seq.id as u64;
    let extra = 1 + varint_len(id) + if first { 3 } else { 0 };
    buf.push(0x0a); // field 1, length-delimited
    put_varint(buf, (body.len() + extra) as u64);
    buf.extend_from_slice(body);
    put_varint(buf, (wire::packet::SEQUENCE_ID as u64) << 3);
    put_varint(buf, id);
    if first {
        put_varint(buf, (FIRST_PACKET_ON_SEQUENCE as u64) << 3);
        buf.push(1);
    }
}

fn varint_len(v: u64) -> usize {
    gpu_trace_reader::pb::varint_len(v)
}

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// A data-source sequence: its framing and the encoder's interning state.
struct DsSeq<S> {
    seq: Seq,
    state: S,
}

/// The track-event sequence: the interning the SDK did on the SDK's
/// sequences (event names, tracks described).
struct TeSeq {
    seq: Seq,
    names: Interner,
    /// Call-site items (function and file names, frames, stacks) by their
    /// key: one iid space, each unique within its own interned type.
    callsites: Interner,
    tracks: FxHashSet<u64>,
}

/// Where packets of one sequence go: the shared buffer.
struct Framed<'a> {
    buf: &'a mut Vec<u8>,
    seq: &'a mut Seq,
}

impl PacketSink for Framed<'_> {
    fn packet(&mut self, bytes: &[u8]) {
        frame(self.buf, self.seq, bytes);
    }
}

struct TeFramed<'a> {
    buf: &'a mut Vec<u8>,
    te: &'a mut TeSeq,
}

impl PacketSink for TeFramed<'_> {
    fn packet(&mut self, bytes: &[u8]) {
        frame(self.buf, &mut self.te.seq, bytes);
    }
}

impl TrackEventSink for TeFramed<'_> {
    fn intern_name(&mut self, name: &[u8]) -> (u64, bool) {
        self.te.names.intern(name)
    }

    fn intern_callsite(&mut self, key: &[u8]) -> (u64, bool) {
        self.te.callsites.intern(key)
    }

    fn track_seen(&mut self, uuid: u64) -> bool {
        !self.te.tracks.insert(uuid)
    }

    fn instance(&self) -> u32 {
        0
    }
}

/// What the writing thread and the emitter share.
#[derive(Default)]
struct Written {
    bytes: AtomicU64,
    /// The first write error, after which nothing more is written.
    error: Mutex<Option<String>>,
}

impl Written {
    fn write(&self, file: &mut std::fs::File, buf: &[u8]) {
        let mut error = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if error.is_some() {
            return;
        }
        match file.write_all(buf) {
            Ok(()) => {
                self.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
            }
            Err(e) => *error = Some(e.to_string()),
        }
    }
}

/// Where full buffers go: the writing thread, or (when it could not start)
/// the file itself.
enum Sink {
    Thread {
        full: mpsc::SyncSender<Vec<u8>>,
        empty: mpsc::Receiver<Vec<u8>>,
        /// The file, once everything handed over is written.
        done: mpsc::Receiver<std::fs::File>,
    },
    Here(std::fs::File),
    Closed,
}

/// The writing thread: writes each buffer it is given, and gives it back.
fn start_writer(
    mut file: std::fs::File,
    written: Arc<Written>,
) -> Result<Sink, (std::fs::File, std::io::Error)> {
    // One buffer waits while another is written: the emitter fills a third.
    let (full, full_rx) = mpsc::sync_channel::<Vec<u8>>(1);
    let (empty_tx, empty) = mpsc::channel::<Vec<u8>>();
    let (done_tx, done) = mpsc::sync_channel::<std::fs::File>(1);
    let probe = file.try_clone();
    let spawned = crate::thread::spawn("gpu-trace-write", move || {
        for mut buf in full_rx {
            crate::guard::run("trace write", || written.write(&mut file, &buf));
            buf.clear();
            let _ = empty_tx.send(buf);
        }
        let _ = done_tx.send(file);
    });
    match (spawned, probe) {
        (Ok(_), _) => Ok(Sink::Thread { full, empty, done }),
        (Err(e), Ok(file)) => Err((file, e)),
        // Neither a thread nor a second handle: nothing can be written.
        (Err(e), Err(_)) => {
            crate::warn!("cannot write the trace ({e})");
            Ok(Sink::Closed)
        }
    }
}

/// The standalone trace file and its sequences.
pub(crate) struct FileWriter {
    sink: Sink,
    written: Arc<Written>,
    buf: Vec<u8>,
    meta: Seq,
    rs: DsSeq<RsSeq>,
    ctr: DsSeq<CtrSeq>,
    tel: DsSeq<CtrSeq>,
    te: TeSeq,
    /// The process track's uuid, which the track-event sequence describes.
    process_uuid: u64,
}

/// What the writer reports when it ends.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriterReport {
    /// Bytes written into the file.
    pub(crate) bytes: u64,
    /// The first write error, after which nothing more was written.
    pub(crate) error: Option<String>,
}

impl FileWriter {
    /// Creates `path` (it must not exist, and a symbolic link there is not
    /// followed) and writes the trace's head: the clocks and `config`, the
    /// `TraceConfig` the session records with.
    pub(crate) fn create(
        path: &Path,
        config: &[u8],
        process_uuid: u64,
    ) -> Result<FileWriter, crate::sink::SessionError> {
        let file = crate::sink::create_trace_file(path)?;
        let written = Arc::new(Written::default());
        let sink = match start_writer(file, written.clone()) {
            Ok(s) => s,
            Err((file, e)) => {
                crate::verbose!("no writing thread ({e}); the emitter writes the trace itself");
                Sink::Here(file)
            }
        };
        let mut w = FileWriter {
            sink,
            written,
            buf: new_buffer(),
            meta: Seq::new(SEQ_META),
            rs: DsSeq {
                seq: Seq::new(SEQ_RS),
                state: RsSeq::default(),
            },
            ctr: DsSeq {
                seq: Seq::new(SEQ_CTR),
                state: CtrSeq::default(),
            },
            tel: DsSeq {
                seq: Seq::new(SEQ_TEL),
                state: CtrSeq::default(),
            },
            te: TeSeq {
                seq: Seq::new(SEQ_TE),
                names: Interner::default(),
                callsites: Interner::default(),
                tracks: FxHashSet::default(),
            },
            process_uuid,
        };
        w.clock_snapshot();
        let mut p = Writer::new();
        p.bytes(wire::packet::TRACE_CONFIG, config);
        frame(&mut w.buf, &mut w.meta, p.as_bytes());
        w.write_out();
        Ok(w)
    }

    /// A `ClockSnapshot` of the builtin clocks, BOOTTIME the trace's
    /// (as the service snapshots them): what lets a reader place the
    /// trace in wall-clock time.
    pub(crate) fn clock_snapshot(&mut self) {
        use rustix::time::{ClockId, clock_gettime};
        let ns = |id| {
            let t = clock_gettime(id);
            t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
        };
        let boot = crate::clock::boottime_ns();
        let mut p = Writer::new();
        p.varint(wire::packet::TIMESTAMP, boot);
        p.varint(
            wire::packet::TIMESTAMP_CLOCK_ID,
            wire::clock::BOOTTIME as u64,
        );
        p.nested(wire::packet::CLOCK_SNAPSHOT, |cs| {
            // BuiltinClock: REALTIME 1, REALTIME_COARSE 2, MONOTONIC 3,
            // MONOTONIC_COARSE 4, MONOTONIC_RAW 5, BOOTTIME 6.
            for (id, v) in [
                (wire::clock::BOOTTIME, boot),
                (1, ns(ClockId::Realtime)),
                (2, ns(ClockId::RealtimeCoarse)),
                (3, ns(ClockId::Monotonic)),
                (4, ns(ClockId::MonotonicCoarse)),
                (5, ns(ClockId::MonotonicRaw)),
            ] {
                cs.nested(wire::clock_snapshot::CLOCKS, |c| {
                    c.varint(wire::clock_snapshot::CLOCK_ID, id as u64)
                        .varint(wire::clock_snapshot::TIMESTAMP, v);
                });
            }
            cs.varint(PRIMARY_TRACE_CLOCK, wire::clock::BOOTTIME as u64);
        });
        frame(&mut self.buf, &mut self.meta, p.as_bytes());
    }

    /// Runs `f` on the render-stage sequence.
    pub(crate) fn rs(&mut self, f: &mut dyn FnMut(&mut RsSeq, &mut dyn PacketSink)) {
        let s = &mut self.rs;
        f(
            &mut s.state,
            &mut Framed {
                buf: &mut self.buf,
                seq: &mut s.seq,
            },
        );
        self.write_if_full();
    }

    /// Runs `f` on the per-kernel counter sequence.
    pub(crate) fn ctr(&mut self, f: &mut dyn FnMut(&mut CtrSeq, &mut dyn PacketSink)) {
        let s = &mut self.ctr;
        f(
            &mut s.state,
            &mut Framed {
                buf: &mut self.buf,
                seq: &mut s.seq,
            },
        );
        self.write_if_full();
    }

    /// Runs `f` on the telemetry sequence.
    pub(crate) fn tel(&mut self, f: &mut dyn FnMut(&mut CtrSeq, &mut dyn PacketSink)) {
        let s = &mut self.tel;
        f(
            &mut s.state,
            &mut Framed {
                buf: &mut self.buf,
                seq: &mut s.seq,
            },
        );
        self.write_if_full();
    }

    /// Runs `f` on the track-event sequence, which starts, as the SDK
    /// starts its own, with the incremental state cleared and the process
    /// described.
    pub(crate) fn te(&mut self, f: &mut dyn FnMut(&mut dyn TrackEventSink)) {
        if !self.te.seq.started {
            let p = process_packet(self.process_uuid);
            frame(&mut self.buf, &mut self.te.seq, p.as_bytes());
        }
        f(&mut TeFramed {
            buf: &mut self.buf,
            te: &mut self.te,
        });
        self.write_if_full();
    }

    fn write_if_full(&mut self) {
        if self.buf.len() >= WRITE_AT {
            self.write_out();
        }
    }

    /// Hands the buffer to be written into the file. Nothing is kept
    /// back, and the file ends with whole packets after every write.
    pub(crate) fn write_out(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        match &mut self.sink {
            Sink::Thread { full, empty, .. } => {
                let next = empty.try_recv().unwrap_or_else(|_| new_buffer());
                let buf = std::mem::replace(&mut self.buf, next);
                // Waits while the thread still writes the one before.
                if full.send(buf).is_err() {
                    self.sink = Sink::Closed;
                }
            }
            Sink::Here(file) => {
                self.written.write(file, &self.buf);
                self.buf.clear();
            }
            Sink::Closed => self.buf.clear(),
        }
    }

    /// Writes the end (a last clock snapshot), and the rest of the buffer,
    /// waits (at most `limit`: a write that never returns must not hang
    /// the exit) for the writes, and syncs the file.
    pub(crate) fn finish(&mut self, limit: std::time::Duration) -> WriterReport {
        self.clock_snapshot();
        self.write_out();
        let file = match std::mem::replace(&mut self.sink, Sink::Closed) {
            Sink::Thread { full, done, .. } => {
                drop(full);
                let file = done.recv_timeout(limit).ok();
                if file.is_none() {
                    let mut error = self.written.error.lock().unwrap_or_else(|e| e.into_inner());
                    error.get_or_insert_with(|| {
                        format!("the last writes did not finish within {limit:?}")
                    });
                }
                file
            }
            Sink::Here(file) => Some(file),
            Sink::Closed => None,
        };
        let mut error = self
            .written
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(Err(e)) = file.map(|f| f.sync_data())
            && error.is_none()
        {
            error = Some(e.to_string());
        }
        WriterReport {
            bytes: self.written.bytes.load(Ordering::Relaxed),
            error,
        }
    }
}

fn new_buffer() -> Vec<u8> {
    Vec::with_capacity(WRITE_AT + (64 << 10))
}

/// The packet the SDK starts a track-event sequence with: the incremental
/// state cleared, and the process's track (its pid, command line and name).
fn process_packet(uuid: u64) -> Writer {
    let cmdline: Vec<String> = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default();
    let name = cmdline
        .first()
        .cloned()
        .unwrap_or_else(gpu_trace_model::process::program_name);
    let mut p = Writer::new();
    p.varint(wire::packet::TIMESTAMP, crate::clock::boottime_ns());
    p.varint(
        wire::packet::TIMESTAMP_CLOCK_ID,
        wire::clock::BOOTTIME as u64,
    );
    p.varint(
        wire::packet::SEQUENCE_FLAGS,
        wire::packet::SEQ_INCREMENTAL_STATE_CLEARED,
    );
    p.nested(wire::packet::TRACK_DESCRIPTOR, |t| {
        t.varint(wire::track_descriptor::UUID, uuid);
        t.nested(wire::track_descriptor::PROCESS, |pd| {
            pd.varint(
                wire::track_descriptor::PROCESS_PID,
                std::process::id() as u64,
            );
            for a in &cmdline {
                pd.string(PROCESS_CMDLINE, a);
            }
            pd.string(wire::track_descriptor::PROCESS_NAME, &name);
        });
    });
    p
}

/// A uuid for this process's track: unique across the processes of a run
/// (their traces may be merged), as the SDK's is, from the pid and the
/// moment the tracer started.
pub(crate) fn process_track_uuid() -> u64 {
    let seed = format!("{}-{}", std::process::id(), crate::clock::boottime_ns());
    // Below 2^63, clear of the bits gpu-trace's own track uuids use.
    perfetto_sdk::fnv1a(seed.as_bytes()) & !(1 << 63 | 1 << 61 | 1 << 54)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_trace_reader::pb::Fields;

    fn packets(buf: &[u8]) -> Vec<Vec<(u32, u64)>> {
        Fields::new(buf)
            .map(|f| {
                let (n, v) = f.unwrap();
                assert_eq!(n, 1, "Trace.packet");
                Fields::new(v.as_bytes().unwrap())
                    .map(|f| {
                        let (n, v) = f.unwrap();
                        (n, v.as_u64().unwrap_or(u64::MAX))
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn packets_carry_their_sequence_and_the_first_says_so() {
        let mut buf = Vec::new();
        let mut a = Seq::new(2);
        let mut b = Seq::new(300);
        let mut body = Writer::new();
        body.varint(wire::packet::TIMESTAMP, 5);
        frame(&mut buf, &mut a, body.as_bytes());
        frame(&mut buf, &mut a, body.as_bytes());
        frame(&mut buf, &mut b, body.as_bytes());
        let p = packets(&buf);
        assert_eq!(
            p,
            vec![
                vec![(8, 5), (10, 2), (87, 1)],
                vec![(8, 5), (10, 2)],
                vec![(8, 5), (10, 300), (87, 1)],
            ]
        );
    }

    #[test]
    fn track_event_interning_is_per_name_and_tracks_are_seen_once() {
        let mut buf = Vec::new();
        let mut te = TeSeq {
            seq: Seq::new(SEQ_TE),
            names: Interner::default(),
            callsites: Interner::default(),
            tracks: FxHashSet::default(),
        };
        let mut s = TeFramed {
            buf: &mut buf,
            te: &mut te,
        };
        assert_eq!(s.intern_name(b"a"), (1, false));
        assert_eq!(s.intern_name(b"b"), (2, false));
        assert_eq!(s.intern_name(b"a"), (1, true));
        assert!(!s.track_seen(7));
        assert!(s.track_seen(7));
    }
}
