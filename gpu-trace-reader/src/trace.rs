//! Decodes `.pftrace` files into a GPU-centric view: GPU events with their
//! interned specs resolved, API and marker slices with their correlation
//! ids, counter samples, devices, logs and the service's loss statistics.
//!
//! Interning is resolved per sequence exactly as trace_processor does, so a
//! reference that would not resolve there is reported in
//! [`Trace::problems`] rather than silently patched up. The tests decode
//! every trace they produce with this reader, and `gpu-trace stats` uses it.

use crate::pb::{DecodeError, Fields, Value};
use crate::wire;
use std::collections::HashMap;

/// An argument value.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgVal {
    /// Signed integer.
    Int(i64),
    /// Unsigned integer.
    Uint(u64),
    /// Floating point.
    Double(f64),
    /// Text.
    Str(String),
}

impl ArgVal {
    /// The value as an unsigned integer, if it is an integer ≥ 0.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            ArgVal::Uint(u) => Some(u),
            ArgVal::Int(i) if i >= 0 => Some(i as u64),
            _ => None,
        }
    }

    /// The value as a double.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            ArgVal::Uint(u) => Some(u as f64),
            ArgVal::Int(i) => Some(i as f64),
            ArgVal::Double(d) => Some(d),
            ArgVal::Str(_) => None,
        }
    }

    /// The value as text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            ArgVal::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Named arguments.
pub type Args = Vec<(String, ArgVal)>;

fn arg<'a>(args: &'a Args, name: &str) -> Option<&'a ArgVal> {
    args.iter().find(|(n, _)| n == name).map(|(_, v)| v)
}

/// Render-stage kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Kernel execution.
    Kernel,
    /// Memory copy.
    Memcpy,
    /// Memory set.
    Memset,
    /// Anything else (by stage name).
    Other(String),
}

/// An interned compute kernel.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KernelInfo {
    /// Mangled name.
    pub name: String,
    /// Demangled name.
    pub demangled: String,
    /// Architecture.
    pub arch: String,
    /// Per-kernel args.
    pub args: Args,
}

/// One `GpuRenderStageEvent`.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuEvent {
    /// `event_id`.
    pub event_id: u64,
    /// Start, ns in the trace clock.
    pub ts: u64,
    /// Duration, ns.
    pub dur: u64,
    /// `gpu_id`.
    pub gpu_id: Option<i64>,
    /// Stage kind.
    pub stage: Stage,
    /// Slice name as the UI shows it.
    pub name: String,
    /// Hardware queue (track) name.
    pub queue: String,
    /// Hardware queue description.
    pub queue_description: String,
    /// Context iid, pid and API of the context.
    pub context: Option<(u64, i64, u64)>,
    /// The interned kernel, for kernels.
    pub kernel: Option<KernelInfo>,
    /// Grid size.
    pub grid: Option<[u32; 3]>,
    /// Workgroup (block) size.
    pub block: Option<[u32; 3]>,
    /// Launch args.
    pub args: Args,
    /// Sequence it was written on.
    pub sequence: u32,
}

impl GpuEvent {
    /// A launch arg by name.
    pub fn arg(&self, name: &str) -> Option<&ArgVal> {
        arg(&self.args, name)
    }

    /// Bytes moved or set (memory operations).
    pub fn bytes(&self) -> Option<u64> {
        self.arg("bytes").and_then(ArgVal::as_u64)
    }
}

/// A completed track-event slice (API call or marker range).
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    /// Track uuid.
    pub track: u64,
    /// Name.
    pub name: String,
    /// Start, ns.
    pub ts: u64,
    /// Duration, ns.
    pub dur: u64,
    /// Nesting depth on its track (0 = outermost).
    pub depth: u32,
    /// GpuCorrelation submission event ids.
    pub submissions: Vec<u64>,
    /// GpuCorrelation wait event ids.
    pub waits: Vec<u64>,
    /// `gpu_api` value, if set.
    pub gpu_api: Option<u64>,
    /// Debug annotations.
    pub args: Args,
}

impl Slice {
    /// A debug annotation by name.
    pub fn arg(&self, name: &str) -> Option<&ArgVal> {
        arg(&self.args, name)
    }
}

/// An instant track event.
#[derive(Debug, Clone, PartialEq)]
pub struct Instant {
    /// Track uuid.
    pub track: u64,
    /// Name.
    pub name: String,
    /// When.
    pub ts: u64,
    /// Debug annotations.
    pub args: Args,
}

/// A thread or named track.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrackInfo {
    /// Name (thread name for thread tracks).
    pub name: String,
    /// pid and tid for thread tracks.
    pub thread: Option<(i64, i64)>,
    /// Parent track.
    pub parent: Option<u64>,
}

/// One counter value.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterValue {
    /// `gpu_id`.
    pub gpu_id: i64,
    /// Counter name.
    pub name: String,
    /// When, ns.
    pub ts: u64,
    /// Value.
    pub value: f64,
    /// `GpuCounterGroup` values of the counter.
    pub groups: Vec<u64>,
    /// Numerator and denominator unit codes.
    pub units: (Vec<u64>, Vec<u64>),
    /// Description.
    pub description: String,
}

/// A device from `GpuInfo`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeviceInfo {
    /// Position in the list: the `gpu_id`.
    pub gpu_id: usize,
    /// Name.
    pub name: String,
    /// Vendor.
    pub vendor: String,
    /// Model / ISA.
    pub model: String,
    /// Architecture.
    pub architecture: String,
    /// PCI bus id.
    pub pci_bdf: String,
    /// UUID bytes.
    pub uuid: Vec<u8>,
    /// Extra key/values.
    pub extra: Vec<(String, String)>,
}

/// A `GpuLog` line.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// Severity code.
    pub severity: u64,
    /// Tag.
    pub tag: String,
    /// Message.
    pub message: String,
}

/// Losses reported by the tracing service in its `TraceStats` (cumulative;
/// the last such packet of a trace holds the totals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServiceLosses {
    /// Chunks discarded: a full `DISCARD` buffer, or rejected by the service.
    pub chunks_discarded: u64,
    /// Chunks overwritten before they were read (`RING_BUFFER`).
    pub chunks_overwritten: u64,
    /// Packets lost inside trace writers (the shared memory was full).
    pub writer_packet_loss: u64,
    /// Packets too large for the buffer.
    pub oversized_packets: u64,
    /// Chunks the producer wrote against the ABI, and failed patches.
    pub abi_violations: u64,
    /// Patches of fragmented packets that could not be applied.
    pub patches_failed: u64,
    /// Flushes that did not complete in time.
    pub flushes_failed: u64,
}

impl ServiceLosses {
    /// Chunks and packets lost, all kinds together (failed flushes are not
    /// a loss in themselves).
    pub fn lost(&self) -> u64 {
        self.chunks_discarded
            + self.chunks_overwritten
            + self.writer_packet_loss
            + self.oversized_packets
            + self.abi_violations
            + self.patches_failed
    }

    /// `name=value` pairs of the non-zero counts, for messages.
    pub fn describe(&self) -> Vec<String> {
        self.counts()
            .into_iter()
            .map(|(k, n)| format!("{k}={n}"))
            .collect()
    }

    /// The non-zero counts by name.
    pub fn counts(&self) -> Vec<(&'static str, u64)> {
        [
            ("chunks_discarded", self.chunks_discarded),
            ("chunks_overwritten", self.chunks_overwritten),
            ("writer_packet_loss", self.writer_packet_loss),
            ("oversized_packets", self.oversized_packets),
            ("abi_violations", self.abi_violations),
            ("patches_failed", self.patches_failed),
            ("flushes_failed", self.flushes_failed),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
    }
}

/// A decoded trace.
#[derive(Debug, Default)]
pub struct Trace {
    /// Number of packets.
    pub packets: usize,
    /// GPU events in file order.
    pub gpu_events: Vec<GpuEvent>,
    /// Completed slices, sorted by start.
    pub slices: Vec<Slice>,
    /// Instants.
    pub instants: Vec<Instant>,
    /// Counter values.
    pub counters: Vec<CounterValue>,
    /// Devices from the last `GpuInfo`.
    pub devices: Vec<DeviceInfo>,
    /// GPU log lines.
    pub logs: Vec<LogLine>,
    /// Track descriptors by uuid.
    pub tracks: HashMap<u64, TrackInfo>,
    /// Service statistics, if the trace has them.
    pub losses: Option<ServiceLosses>,
    /// Data-source names in the session's embedded `TraceConfig`.
    pub data_sources: Vec<String>,
    /// Every custom (≥ 128) clock id used by a packet.
    pub custom_clocks_used: Vec<u32>,
    /// References that trace_processor could not resolve, unmatched ends,
    /// and other problems.
    pub problems: Vec<String>,
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
}

#[derive(Default)]
struct SeqState {
    specs: HashMap<u64, (String, String, u64)>,
    contexts: HashMap<u64, (i64, u64)>,
    kernels: HashMap<u64, KernelInfo>,
    arg_names: HashMap<u64, String>,
    event_names: HashMap<u64, String>,
    annotation_names: HashMap<u64, String>,
    counter_descs: HashMap<u64, (i64, HashMap<u64, CounterSpecInfo>)>,
    default_clock: Option<u32>,
    default_track: Option<u64>,
    /// Sequence-scoped incremental clocks: id → (current value, boot at base, base).
    incremental: HashMap<u32, (u64, u64, u64)>,
}

#[derive(Clone, Default)]
struct CounterSpecInfo {
    name: String,
    description: String,
    groups: Vec<u64>,
    num: Vec<u64>,
    den: Vec<u64>,
}

struct RawTe {
    ts: u64,
    order: usize,
    ty: u64,
    track: u64,
    name: String,
    submissions: Vec<u64>,
    waits: Vec<u64>,
    gpu_api: Option<u64>,
    args: Args,
}

/// A timestamp waiting for a global custom clock to be resolved.
enum Ts {
    Boot(u64),
    Custom(u32, u64),
}

impl Trace {
    /// Reads and decodes a file.
    ///
    /// # Errors
    /// When the file cannot be read or is not a protobuf trace.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Trace, ReadError> {
        let p = path.as_ref();
        let bytes = std::fs::read(p).map_err(|err| ReadError::Io {
            path: p.display().to_string(),
            err,
        })?;
        Self::from_bytes(&bytes)
    }

    /// Decodes a trace held in memory.
    ///
    /// # Errors
    /// When `data` is not a protobuf trace. A trace cut short mid-packet
    /// (a killed writer) keeps the packets before the cut.
    pub fn from_bytes(data: &[u8]) -> Result<Trace, ReadError> {
        let mut t = Trace::default();
        let mut seqs: HashMap<u32, SeqState> = HashMap::new();
        let mut te: Vec<RawTe> = Vec::new();
        let mut gpu_ts: Vec<Ts> = Vec::new();
        let mut counter_ts: Vec<Ts> = Vec::new();
        let mut snapshots: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
        for (i, f) in Fields::new(data).enumerate() {
            let (n, v) = match f {
                Ok(x) => x,
                Err(e) if i > 0 => {
                    t.problems.push(format!("trace ends mid-packet: {e}"));
                    break;
                }
                Err(e) => return Err(e.into()),
            };
            if n != wire::TRACE_PACKET {
                continue;
            }
            let Some(p) = v.as_bytes() else { continue };
            t.packets += 1;
            t.packet(
                p,
                &mut seqs,
                &mut te,
                &mut gpu_ts,
                &mut counter_ts,
                &mut snapshots,
            )?;
        }
        // Resolve global custom clocks with the nearest snapshot.
        for list in snapshots.values_mut() {
            list.sort();
        }
        let resolve = |ts: &Ts, problems: &mut Vec<String>| -> u64 {
            match *ts {
                Ts::Boot(v) => v,
                Ts::Custom(id, v) => match snapshots.get(&id) {
                    Some(list) if !list.is_empty() => {
                        let i = list.partition_point(|&(c, _)| c <= v);
                        let (c, b) = list[i.saturating_sub(1)];
                        (b as i128 + (v as i128 - c as i128)) as u64
                    }
                    _ => {
                        problems.push(format!("clock {id} used without a ClockSnapshot"));
                        v
                    }
                },
            }
        };
        let mut problems = Vec::new();
        for (e, ts) in t.gpu_events.iter_mut().zip(&gpu_ts) {
            e.ts = resolve(ts, &mut problems);
        }
        for (c, ts) in t.counters.iter_mut().zip(&counter_ts) {
            c.ts = resolve(ts, &mut problems);
        }
        problems.dedup();
        t.problems.extend(problems);
        t.pair_slices(te);
        Ok(t)
    }

    #[allow(clippy::too_many_arguments)]
    fn packet(
        &mut self,
        p: &[u8],
        seqs: &mut HashMap<u32, SeqState>,
        te: &mut Vec<RawTe>,
        gpu_ts: &mut Vec<Ts>,
        counter_ts: &mut Vec<Ts>,
        snapshots: &mut HashMap<u32, Vec<(u64, u64)>>,
    ) -> Result<(), ReadError> {
        let mut seq_id = 0u32;
        let mut flags = 0u64;
        let mut ts = None;
        let mut clock = None;
        for f in Fields::new(p) {
            let (n, v) = f?;
            match n {
                wire::packet::SEQUENCE_ID => seq_id = v.as_u64().unwrap_or(0) as u32,
                wire::packet::SEQUENCE_FLAGS => flags = v.as_u64().unwrap_or(0),
                wire::packet::TIMESTAMP => ts = v.as_u64(),
                wire::packet::TIMESTAMP_CLOCK_ID => clock = v.as_u64().map(|c| c as u32),
                _ => {}
            }
        }
        if flags & wire::packet::SEQ_INCREMENTAL_STATE_CLEARED != 0 {
            seqs.insert(seq_id, SeqState::default());
        }
        let seq = seqs.entry(seq_id).or_default();
        // Defaults and interned data first: they apply to this packet too.
        for f in Fields::new(p) {
            let (n, v) = f?;
            match (n, v) {
                (wire::packet::DEFAULTS, Value::Len(b)) => {
                    for (dn, dv) in Fields::new(b).map_while(Result::ok) {
                        match dn {
                            wire::packet::DEFAULTS_CLOCK_ID => {
                                seq.default_clock = dv.as_u64().map(|c| c as u32)
                            }
                            11 => {
                                // track_event_defaults.track_uuid
                                for (tn, tv) in Fields::new(dv.as_bytes().unwrap_or_default())
                                    .map_while(Result::ok)
                                {
                                    if tn == wire::track_event::TRACK_UUID {
                                        seq.default_track = tv.as_u64();
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                }
                (wire::packet::INTERNED_DATA, Value::Len(b)) => intern(seq, b)?,
                _ => {}
            }
        }
        let clock_id = clock.or(seq.default_clock).unwrap_or(wire::clock::BOOTTIME);
        let raw_ts = ts.unwrap_or(0);
        let stamp = if clock_id == wire::clock::BOOTTIME || ts.is_none() {
            Ts::Boot(raw_ts)
        } else if clock_id >= 128 {
            if !self.custom_clocks_used.contains(&clock_id) {
                self.custom_clocks_used.push(clock_id);
            }
            Ts::Custom(clock_id, raw_ts)
        } else if let Some(st) = seq.incremental.get_mut(&clock_id) {
            st.0 = st.0.wrapping_add(raw_ts);
            Ts::Boot(st.1.wrapping_add(st.0.wrapping_sub(st.2)))
        } else {
            // Other builtin clocks are not converted by this reader.
            Ts::Boot(raw_ts)
        };
        for f in Fields::new(p) {
            let (n, v) = f?;
            let Value::Len(b) = v else { continue };
            match n {
                wire::packet::CLOCK_SNAPSHOT => {
                    let clocks = parse_snapshot(b)?;
                    let boot = clocks
                        .iter()
                        .find(|c| c.0 == wire::clock::BOOTTIME)
                        .map(|c| c.1);
                    if let Some(boot) = boot {
                        for &(id, val, incremental) in &clocks {
                            if id >= 128 {
                                snapshots.entry(id).or_default().push((val, boot));
                            } else if incremental {
                                seq.incremental.insert(id, (val, boot, val));
                            }
                        }
                    }
                }
                wire::packet::GPU_RENDER_STAGE_EVENT => {
                    let e = render_stage(seq, b, seq_id, &mut self.problems)?;
                    self.gpu_events.push(e);
                    gpu_ts.push(match stamp {
                        Ts::Boot(v) => Ts::Boot(v),
                        Ts::Custom(c, v) => Ts::Custom(c, v),
                    });
                }
                wire::packet::TRACK_EVENT => {
                    let Ts::Boot(v) = stamp else {
                        self.problems.push(
                            "track event on a custom clock (not supported by this reader)".into(),
                        );
                        continue;
                    };
                    te.push(track_event(seq, b, v, te.len())?);
                }
                wire::packet::TRACK_DESCRIPTOR => {
                    let (uuid, info) = track_descriptor(b)?;
                    self.tracks.insert(uuid, info);
                }
                wire::packet::GPU_COUNTER_EVENT => {
                    if ts.is_none() {
                        self.problems.push("counter event without timestamp".into());
                    }
                    for c in counter_event(seq, b, &mut self.problems)? {
                        self.counters.push(c);
                        counter_ts.push(match stamp {
                            Ts::Boot(v) => Ts::Boot(v),
                            Ts::Custom(c, v) => Ts::Custom(c, v),
                        });
                    }
                }
                wire::packet::GPU_LOG => self.logs.push(gpu_log(b)?),
                wire::packet::GPU_INFO => self.devices = gpu_info(b)?,
                wire::packet::TRACE_STATS => self.losses = Some(trace_stats(b)?),
                wire::packet::TRACE_CONFIG => self.data_sources.extend(config_sources(b)?),
                _ => {}
            }
        }
        Ok(())
    }

    fn pair_slices(&mut self, mut te: Vec<RawTe>) {
        te.sort_by_key(|e| (e.ts, e.order));
        let mut stacks: HashMap<u64, Vec<RawTe>> = HashMap::new();
        for e in te {
            match e.ty {
                wire::track_event::TYPE_SLICE_BEGIN => stacks.entry(e.track).or_default().push(e),
                wire::track_event::TYPE_SLICE_END => {
                    let stack = stacks.entry(e.track).or_default();
                    match stack.pop() {
                        Some(b) => self.slices.push(Slice {
                            track: b.track,
                            name: b.name,
                            ts: b.ts,
                            dur: e.ts.saturating_sub(b.ts),
                            depth: stack.len() as u32,
                            submissions: b.submissions,
                            waits: b.waits,
                            gpu_api: b.gpu_api,
                            args: b.args,
                        }),
                        None => self
                            .problems
                            .push(format!("slice end without begin on track {:#x}", e.track)),
                    }
                }
                wire::track_event::TYPE_INSTANT => self.instants.push(Instant {
                    track: e.track,
                    name: e.name,
                    ts: e.ts,
                    args: e.args,
                }),
                _ => {}
            }
        }
        for (track, s) in stacks {
            if !s.is_empty() {
                self.problems.push(format!(
                    "{} unterminated slices on track {track:#x}",
                    s.len()
                ));
            }
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

    /// The thread (pid, tid) a slice's track belongs to.
    pub fn thread_of(&self, track: u64) -> Option<(i64, i64)> {
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

fn s(v: &Value<'_>) -> String {
    v.as_bytes()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

fn intern(seq: &mut SeqState, b: &[u8]) -> Result<(), DecodeError> {
    for f in Fields::new(b) {
        let (n, v) = f?;
        let Value::Len(m) = v else { continue };
        match n {
            wire::interned::GPU_SPECIFICATIONS => {
                let (mut iid, mut name, mut desc, mut cat) = (0, String::new(), String::new(), 0);
                for f in Fields::new(m) {
                    let (n, v) = f?;
                    match n {
                        wire::spec::IID => iid = v.as_u64().unwrap_or(0),
                        wire::spec::NAME => name = s(&v),
                        wire::spec::DESCRIPTION => desc = s(&v),
                        wire::spec::CATEGORY => cat = v.as_u64().unwrap_or(0),
                        _ => {}
                    }
                }
                seq.specs.insert(iid, (name, desc, cat));
            }
            wire::interned::GRAPHICS_CONTEXTS => {
                let (mut iid, mut pid, mut api) = (0, 0, 0);
                for f in Fields::new(m) {
                    let (n, v) = f?;
                    match n {
                        wire::context::IID => iid = v.as_u64().unwrap_or(0),
                        wire::context::PID => pid = v.as_u64().unwrap_or(0) as i64,
                        wire::context::API => api = v.as_u64().unwrap_or(0),
                        _ => {}
                    }
                }
                seq.contexts.insert(iid, (pid, api));
            }
            wire::interned::COMPUTE_KERNELS => {
                let mut iid = 0;
                let mut k = KernelInfo::default();
                for f in Fields::new(m) {
                    let (n, v) = f?;
                    match n {
                        wire::kernel::IID => iid = v.as_u64().unwrap_or(0),
                        wire::kernel::NAME => k.name = s(&v),
                        wire::kernel::DEMANGLED_NAME => k.demangled = s(&v),
                        wire::kernel::ARCH => k.arch = s(&v),
                        wire::kernel::ARGS => {
                            if let Some(a) = compute_arg(seq, v.as_bytes().unwrap_or_default())? {
                                k.args.push(a);
                            }
                        }
                        _ => {}
                    }
                }
                seq.kernels.insert(iid, k);
            }
            wire::interned::COMPUTE_ARG_NAMES => {
                let (iid, name) = iid_name(m)?;
                seq.arg_names.insert(iid, name);
            }
            wire::interned::EVENT_NAMES => {
                let (iid, name) = iid_name(m)?;
                seq.event_names.insert(iid, name);
            }
            wire::interned::DEBUG_ANNOTATION_NAMES => {
                let (iid, name) = iid_name(m)?;
                seq.annotation_names.insert(iid, name);
            }
            wire::interned::GPU_COUNTER_DESCRIPTORS => {
                let (mut iid, mut gpu, mut specs) = (0, 0i64, HashMap::new());
                for f in Fields::new(m) {
                    let (n, v) = f?;
                    match n {
                        wire::counters::IDESC_IID => iid = v.as_u64().unwrap_or(0),
                        wire::counters::IDESC_GPU_ID => gpu = v.as_u64().unwrap_or(0) as i64,
                        wire::counters::IDESC_DESCRIPTOR => {
                            for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                                let (n, v) = f?;
                                if n != wire::counters::DESC_SPECS {
                                    continue;
                                }
                                let mut id = 0;
                                let mut sp = CounterSpecInfo::default();
                                for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                                    let (n, v) = f?;
                                    match n {
                                        wire::counters::SPEC_COUNTER_ID => {
                                            id = v.as_u64().unwrap_or(0)
                                        }
                                        wire::counters::SPEC_NAME => sp.name = s(&v),
                                        wire::counters::SPEC_DESCRIPTION => sp.description = s(&v),
                                        wire::counters::SPEC_GROUPS => {
                                            sp.groups.push(v.as_u64().unwrap_or(0))
                                        }
                                        wire::counters::SPEC_NUM_UNITS => {
                                            sp.num.push(v.as_u64().unwrap_or(0))
                                        }
                                        wire::counters::SPEC_DEN_UNITS => {
                                            sp.den.push(v.as_u64().unwrap_or(0))
                                        }
                                        _ => {}
                                    }
                                }
                                specs.insert(id, sp);
                            }
                        }
                        _ => {}
                    }
                }
                seq.counter_descs.insert(iid, (gpu, specs));
            }
            _ => {}
        }
    }
    Ok(())
}

fn iid_name(m: &[u8]) -> Result<(u64, String), DecodeError> {
    let (mut iid, mut name) = (0, String::new());
    for f in Fields::new(m) {
        let (n, v) = f?;
        match n {
            wire::interned::IID => iid = v.as_u64().unwrap_or(0),
            wire::interned::NAME => name = s(&v),
            _ => {}
        }
    }
    Ok((iid, name))
}

fn compute_arg(seq: &SeqState, m: &[u8]) -> Result<Option<(String, ArgVal)>, DecodeError> {
    let (mut name, mut val) = (None, None);
    for f in Fields::new(m) {
        let (n, v) = f?;
        match n {
            wire::arg::NAME_IID => {
                let iid = v.as_u64().unwrap_or(0);
                name = Some(
                    seq.arg_names
                        .get(&iid)
                        .cloned()
                        .unwrap_or_else(|| format!("<unresolved arg name {iid}>")),
                );
            }
            wire::arg::NAME => name = Some(s(&v)),
            wire::arg::INT => val = v.as_u64().map(|x| ArgVal::Int(x as i64)),
            wire::arg::UINT => val = v.as_u64().map(ArgVal::Uint),
            wire::arg::DOUBLE => val = v.as_f64().map(ArgVal::Double),
            wire::arg::STRING => val = Some(ArgVal::Str(s(&v))),
            _ => {}
        }
    }
    Ok(name.zip(val))
}

fn dim3(m: &[u8]) -> Result<[u32; 3], DecodeError> {
    let mut d = [0u32; 3];
    for f in Fields::new(m) {
        let (n, v) = f?;
        let x = v.as_u64().unwrap_or(0) as u32;
        match n {
            wire::rse::X => d[0] = x,
            wire::rse::Y => d[1] = x,
            wire::rse::Z => d[2] = x,
            _ => {}
        }
    }
    Ok(d)
}

fn render_stage(
    seq: &SeqState,
    b: &[u8],
    seq_id: u32,
    problems: &mut Vec<String>,
) -> Result<GpuEvent, DecodeError> {
    let mut e = GpuEvent {
        event_id: 0,
        ts: 0,
        dur: 0,
        gpu_id: None,
        stage: Stage::Other(String::new()),
        name: String::new(),
        queue: String::new(),
        queue_description: String::new(),
        context: None,
        kernel: None,
        grid: None,
        block: None,
        args: Vec::new(),
        sequence: seq_id,
    };
    let mut has_id = false;
    let mut name_iid = None;
    for f in Fields::new(b) {
        let (n, v) = f?;
        match n {
            wire::rse::EVENT_ID => {
                has_id = true;
                e.event_id = v.as_u64().unwrap_or(0)
            }
            wire::rse::DURATION => e.dur = v.as_u64().unwrap_or(0),
            wire::rse::GPU_ID => e.gpu_id = v.as_u64().map(|x| x as i64),
            wire::rse::HW_QUEUE_IID => {
                let iid = v.as_u64().unwrap_or(0);
                match seq.specs.get(&iid) {
                    Some((name, desc, _)) => {
                        e.queue = name.clone();
                        e.queue_description = desc.clone();
                    }
                    None => problems.push(format!("hw_queue_iid {iid} not interned")),
                }
            }
            wire::rse::STAGE_IID => {
                let iid = v.as_u64().unwrap_or(0);
                match seq.specs.get(&iid) {
                    Some((name, _, _)) => {
                        e.stage = match name.as_str() {
                            "Kernel" => Stage::Kernel,
                            "Memcpy" => Stage::Memcpy,
                            "Memset" => Stage::Memset,
                            other => Stage::Other(other.to_owned()),
                        };
                        if e.name.is_empty() {
                            e.name = name.clone();
                        }
                    }
                    None => problems.push(format!("stage_iid {iid} not interned")),
                }
            }
            wire::rse::CONTEXT => {
                let iid = v.as_u64().unwrap_or(0);
                match seq.contexts.get(&iid) {
                    Some(&(pid, api)) => e.context = Some((iid, pid, api)),
                    None => problems.push(format!("context {iid:#x} not interned")),
                }
            }
            wire::rse::KERNEL_IID => {
                let iid = v.as_u64().unwrap_or(0);
                match seq.kernels.get(&iid) {
                    Some(k) => e.kernel = Some(k.clone()),
                    None => problems.push(format!("kernel_iid {iid} not interned")),
                }
            }
            wire::rse::NAME_IID => name_iid = v.as_u64(),
            wire::rse::LAUNCH => {
                for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                    let (n, v) = f?;
                    let m = v.as_bytes().unwrap_or_default();
                    match n {
                        wire::rse::LAUNCH_GRID => e.grid = Some(dim3(m)?),
                        wire::rse::LAUNCH_WORKGROUP => e.block = Some(dim3(m)?),
                        wire::rse::LAUNCH_ARGS => {
                            if let Some(a) = compute_arg(seq, m)? {
                                if a.0.starts_with("<unresolved") {
                                    problems.push(a.0.clone());
                                }
                                e.args.push(a);
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(iid) = name_iid {
        match seq.event_names.get(&iid) {
            Some(n) => e.name = n.clone(),
            None => problems.push(format!("name_iid {iid} not in event_names")),
        }
    }
    if !has_id {
        problems.push("render stage without event_id".into());
    }
    Ok(e)
}

fn annotation(seq: &SeqState, m: &[u8]) -> Result<Option<(String, ArgVal)>, DecodeError> {
    let (mut name, mut val) = (None, None);
    for f in Fields::new(m) {
        let (n, v) = f?;
        match n {
            1 => {
                name = v
                    .as_u64()
                    .and_then(|i| seq.annotation_names.get(&i).cloned())
            }
            wire::debug_annotation::NAME => name = Some(s(&v)),
            wire::debug_annotation::UINT => val = v.as_u64().map(ArgVal::Uint),
            wire::debug_annotation::INT => val = v.as_u64().map(|x| ArgVal::Int(x as i64)),
            wire::debug_annotation::STRING => val = Some(ArgVal::Str(s(&v))),
            2 => val = v.as_u64().map(ArgVal::Uint),
            5 => val = v.as_f64().map(ArgVal::Double),
            _ => {}
        }
    }
    Ok(name.zip(val))
}

fn track_event(seq: &SeqState, b: &[u8], ts: u64, order: usize) -> Result<RawTe, DecodeError> {
    let mut e = RawTe {
        ts,
        order,
        ty: 0,
        track: seq.default_track.unwrap_or(0),
        name: String::new(),
        submissions: Vec::new(),
        waits: Vec::new(),
        gpu_api: None,
        args: Vec::new(),
    };
    for f in Fields::new(b) {
        let (n, v) = f?;
        match n {
            wire::track_event::TYPE => e.ty = v.as_u64().unwrap_or(0),
            wire::track_event::TRACK_UUID => e.track = v.as_u64().unwrap_or(0),
            wire::track_event::NAME_IID => {
                let iid = v.as_u64().unwrap_or(0);
                e.name = seq
                    .event_names
                    .get(&iid)
                    .cloned()
                    .unwrap_or_else(|| format!("<unresolved name {iid}>"));
            }
            wire::track_event::NAME => e.name = s(&v),
            wire::track_event::GPU_API => e.gpu_api = v.as_u64(),
            wire::track_event::GPU_CORRELATION => {
                for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                    let (n, v) = f?;
                    match (n, v) {
                        (wire::track_event::SUBMISSION_IDS, Value::Varint(x)) => {
                            e.submissions.push(x)
                        }
                        (wire::track_event::WAIT_IDS, Value::Varint(x)) => e.waits.push(x),
                        (wire::track_event::SUBMISSION_IDS, Value::Len(p)) => {
                            e.submissions.extend(packed(p)?)
                        }
                        (wire::track_event::WAIT_IDS, Value::Len(p)) => e.waits.extend(packed(p)?),
                        _ => {}
                    }
                }
            }
            wire::track_event::DEBUG_ANNOTATIONS => {
                if let Some(a) = annotation(seq, v.as_bytes().unwrap_or_default())? {
                    e.args.push(a);
                }
            }
            _ => {}
        }
    }
    Ok(e)
}

fn packed(p: &[u8]) -> Result<Vec<u64>, DecodeError> {
    // Packed varints: re-use the field decoder by prefixing each with a tag.
    let mut out = Vec::new();
    let mut i = 0;
    while i < p.len() {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = *p.get(i).ok_or(DecodeError {
                offset: i,
                what: "truncated packed varint",
            })?;
            i += 1;
            v |= ((b & 0x7f) as u64) << shift;
            shift += 7;
            if b < 0x80 {
                break;
            }
        }
        out.push(v);
    }
    Ok(out)
}

fn track_descriptor(b: &[u8]) -> Result<(u64, TrackInfo), DecodeError> {
    let mut uuid = 0;
    let mut t = TrackInfo::default();
    for f in Fields::new(b) {
        let (n, v) = f?;
        match n {
            wire::track_descriptor::UUID => uuid = v.as_u64().unwrap_or(0),
            wire::track_descriptor::PARENT_UUID => t.parent = v.as_u64(),
            wire::track_descriptor::NAME => t.name = s(&v),
            wire::track_descriptor::THREAD => {
                let (mut pid, mut tid) = (0i64, 0i64);
                for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                    let (n, v) = f?;
                    match n {
                        wire::track_descriptor::THREAD_PID => pid = v.as_u64().unwrap_or(0) as i64,
                        wire::track_descriptor::THREAD_TID => tid = v.as_u64().unwrap_or(0) as i64,
                        wire::track_descriptor::THREAD_NAME => t.name = s(&v),
                        _ => {}
                    }
                }
                t.thread = Some((pid, tid));
            }
            _ => {}
        }
    }
    Ok((uuid, t))
}

fn counter_event(
    seq: &SeqState,
    b: &[u8],
    problems: &mut Vec<String>,
) -> Result<Vec<CounterValue>, DecodeError> {
    let mut iid = None;
    let mut gpu = None;
    let mut raw = Vec::new();
    for f in Fields::new(b) {
        let (n, v) = f?;
        match n {
            wire::counters::DESCRIPTOR_IID => iid = v.as_u64(),
            wire::counters::GPU_ID => gpu = v.as_u64().map(|x| x as i64),
            wire::counters::COUNTERS => {
                let (mut id, mut val) = (0, 0.0);
                for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                    let (n, v) = f?;
                    match n {
                        wire::counters::COUNTER_ID => id = v.as_u64().unwrap_or(0),
                        wire::counters::INT_VALUE => val = v.as_u64().unwrap_or(0) as i64 as f64,
                        wire::counters::DOUBLE_VALUE => val = v.as_f64().unwrap_or(0.0),
                        _ => {}
                    }
                }
                raw.push((id, val));
            }
            _ => {}
        }
    }
    let desc = iid.and_then(|i| seq.counter_descs.get(&i));
    if iid.is_some() && desc.is_none() {
        problems.push(format!(
            "counter_descriptor_iid {} not interned",
            iid.unwrap_or(0)
        ));
    }
    Ok(raw
        .into_iter()
        .map(|(id, value)| {
            let spec = desc.and_then(|d| d.1.get(&id)).cloned().unwrap_or_default();
            CounterValue {
                gpu_id: desc.map(|d| d.0).or(gpu).unwrap_or(0),
                name: spec.name,
                ts: 0,
                value,
                groups: spec.groups,
                units: (spec.num, spec.den),
                description: spec.description,
            }
        })
        .collect())
}

fn gpu_log(b: &[u8]) -> Result<LogLine, DecodeError> {
    let mut l = LogLine {
        severity: 0,
        tag: String::new(),
        message: String::new(),
    };
    for f in Fields::new(b) {
        let (n, v) = f?;
        match n {
            wire::gpu_log::SEVERITY => l.severity = v.as_u64().unwrap_or(0),
            wire::gpu_log::TAG => l.tag = s(&v),
            wire::gpu_log::MESSAGE => l.message = s(&v),
            _ => {}
        }
    }
    Ok(l)
}

fn gpu_info(b: &[u8]) -> Result<Vec<DeviceInfo>, DecodeError> {
    let mut out = Vec::new();
    for f in Fields::new(b) {
        let (n, v) = f?;
        if n != wire::gpu_info::GPUS {
            continue;
        }
        let mut d = DeviceInfo {
            gpu_id: out.len(),
            ..Default::default()
        };
        for f in Fields::new(v.as_bytes().unwrap_or_default()) {
            let (n, v) = f?;
            match n {
                wire::gpu_info::NAME => d.name = s(&v),
                wire::gpu_info::VENDOR => d.vendor = s(&v),
                wire::gpu_info::MODEL => d.model = s(&v),
                wire::gpu_info::ARCHITECTURE => d.architecture = s(&v),
                wire::gpu_info::PCI_BDF => d.pci_bdf = s(&v),
                wire::gpu_info::UUID => d.uuid = v.as_bytes().unwrap_or_default().to_vec(),
                wire::gpu_info::EXTRA_INFO => {
                    let (mut k, mut val) = (String::new(), String::new());
                    for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                        let (n, v) = f?;
                        match n {
                            wire::gpu_info::KEY => k = s(&v),
                            wire::gpu_info::VALUE => val = s(&v),
                            _ => {}
                        }
                    }
                    d.extra.push((k, val));
                }
                _ => {}
            }
        }
        out.push(d);
    }
    Ok(out)
}

/// Decodes a `TraceStats` message (trace/trace_stats.proto).
pub fn trace_stats(b: &[u8]) -> Result<ServiceLosses, DecodeError> {
    let mut l = ServiceLosses::default();
    for f in Fields::new(b) {
        let (n, v) = f?;
        match n {
            // buffer_stats
            1 => {
                for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                    let (n, v) = f?;
                    let x = v.as_u64().unwrap_or(0);
                    match n {
                        3 => l.chunks_overwritten += x,
                        6 => l.patches_failed += x,
                        9 => l.abi_violations += x,
                        18 => l.chunks_discarded += x,
                        19 => l.writer_packet_loss += x,
                        22 => l.oversized_packets += x,
                        _ => {}
                    }
                }
            }
            // chunks_discarded, patches_discarded (service-wide)
            8 => l.chunks_discarded += v.as_u64().unwrap_or(0),
            9 => l.patches_failed += v.as_u64().unwrap_or(0),
            14 => l.flushes_failed += v.as_u64().unwrap_or(0),
            _ => {}
        }
    }
    Ok(l)
}

fn parse_snapshot(b: &[u8]) -> Result<Vec<(u32, u64, bool)>, DecodeError> {
    let mut out = Vec::new();
    for f in Fields::new(b) {
        let (n, v) = f?;
        if n != wire::clock_snapshot::CLOCKS {
            continue;
        }
        let (mut id, mut ts, mut inc) = (0u32, 0u64, false);
        for f in Fields::new(v.as_bytes().unwrap_or_default()) {
            let (n, v) = f?;
            match n {
                wire::clock_snapshot::CLOCK_ID => id = v.as_u64().unwrap_or(0) as u32,
                wire::clock_snapshot::TIMESTAMP => ts = v.as_u64().unwrap_or(0),
                3 => inc = v.as_u64() == Some(1),
                _ => {}
            }
        }
        out.push((id, ts, inc));
    }
    Ok(out)
}

fn config_sources(b: &[u8]) -> Result<Vec<String>, DecodeError> {
    let mut out = Vec::new();
    for f in Fields::new(b) {
        let (n, v) = f?;
        if n != wire::config::DATA_SOURCES {
            continue;
        }
        for f in Fields::new(v.as_bytes().unwrap_or_default()) {
            let (n, v) = f?;
            if n != wire::config::DS_CONFIG {
                continue;
            }
            for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                let (n, v) = f?;
                if n == wire::config::DSC_NAME {
                    out.push(s(&v));
                }
            }
        }
    }
    Ok(out)
}
