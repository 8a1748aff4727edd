//! One pass over a trace: what the summary keeps of its events, per
//! process.
//!
//! Memory holds, per group (kernel name, API function ...), every duration
//! (4 bytes each, for exact medians); per device engine, stream and
//! thread, the union of its busy intervals (16 bytes per idle gap); per
//! profiled kernel, its counter values; per telemetry sample, its time and
//! value (16 bytes); where the session recorded per-kernel counters, every
//! kernel's start, compactly (about 3 bytes: see [`KernelStarts`]); and
//! the reader's own state. Not the trace.

use crate::durations::Durations;
use crate::intervals::Intervals;
use crate::launch::{LaunchAcc, Matcher, NO_GROUP, Work};
use crate::render::text::int;
use crate::summary::{Counts, FileSummary, KERNEL_ENGINE, Pid, Span, UNKNOWN_PID};
use gpu_trace_model::waits::waits_for_gpu;
use gpu_trace_reader::{
    CounterValue, GpuEvent, KernelInfo, Parts, Problem, ProblemKind, Slice, Stage, Str, Trace,
    Visitor,
};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::Arc;

/// What a group's key is found by: kept alive, so that its address (the
/// key) is not reused.
#[allow(dead_code)] // held, never read
enum Holder {
    Kernel(Arc<KernelInfo>),
    Name(Str),
}

struct Group<K> {
    owner: K,
    name: String,
    durs: Durations,
    bytes: u64,
    /// Whether the name is that of a call waiting for the GPU.
    waits: bool,
    /// Whether the name is that of a communication kernel (NCCL, RCCL).
    comm: bool,
    /// A kernel's mangled name (empty: not known).
    mangled: String,
}

/// Durations and bytes by owner (a process, or a track) and name. Each
/// event finds its group by the address of its interned name (or kernel),
/// without hashing the text.
struct Groups<K> {
    by_ptr: FxHashMap<(usize, K), u32>,
    keep: Vec<Holder>,
    by_name: FxHashMap<(K, String), u32>,
    groups: Vec<Group<K>>,
}

impl<K> Default for Groups<K> {
    fn default() -> Self {
        Groups {
            by_ptr: FxHashMap::default(),
            keep: Vec::new(),
            by_name: FxHashMap::default(),
            groups: Vec::new(),
        }
    }
}

impl<K: Copy + Eq + Hash> Groups<K> {
    fn named(&mut self, owner: K, name: &str) -> u32 {
        match self.by_name.entry((owner, name.to_owned())) {
            Entry::Occupied(o) => *o.get(),
            Entry::Vacant(v) => {
                self.groups.push(Group {
                    owner,
                    name: name.to_owned(),
                    durs: Durations::default(),
                    bytes: 0,
                    waits: waits_for_gpu(name),
                    comm: crate::diagnose::is_communication(name),
                    mangled: String::new(),
                });
                *v.insert(self.groups.len() as u32 - 1)
            }
        }
    }

    #[inline]
    fn of_str(&mut self, name: &Str, owner: K) -> u32 {
        let key = (name.as_str().as_ptr() as usize, owner);
        match self.by_ptr.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.named(owner, name);
                self.keep.push(Holder::Name(name.clone()));
                self.by_ptr.insert(key, i);
                i
            }
        }
    }

    #[inline]
    fn of_kernel(&mut self, k: &Arc<KernelInfo>, owner: K) -> u32 {
        let key = (Arc::as_ptr(k) as usize, owner);
        match self.by_ptr.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.named(owner, &k.demangled);
                let g = &mut self.groups[i as usize];
                if g.mangled.is_empty() {
                    g.mangled = k.name.clone();
                }
                self.keep.push(Holder::Kernel(k.clone()));
                self.by_ptr.insert(key, i);
                i
            }
        }
    }

    #[inline]
    fn add(&mut self, i: u32, dur: u64, bytes: u64) {
        let g = &mut self.groups[i as usize];
        g.durs.push(dur);
        g.bytes += bytes;
    }
}

/// Hashes GPU event ids, which differ in their middle bits
/// (`correlation << 22 | pid`), with splitmix64's finaliser: every bit of
/// the id reaches the bits the table indexes and tags by.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHash;

impl std::hash::BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }
}

/// A set of GPU event ids, as bits in pages of consecutive correlations.
/// Ids are `correlation << 22 | pid` (and a flag bit) with correlations
/// counting up, so a trace's ids fill few pages densely: an eighth of a
/// byte an id, and a page found again mostly by the last lookup. Any id
/// is stored exactly, whatever its layout.
#[derive(Default)]
struct IdSet {
    index: HashMap<u64, u32, IdHash>,
    pages: Vec<[u64; PAGE_WORDS]>,
    /// The page of the last insert and of the last lookup.
    last_insert: Option<(u64, u32)>,
    last_lookup: Option<(u64, u32)>,
}

/// Pages of ids kept at most (16 MiB, 134M correlations): a trace's ids
/// fill few pages, but ids scattered on purpose would take a page (128
/// bytes) each.
const MAX_ID_PAGES: usize = 1 << 17;

/// Submissions awaited at once, at most: each costs a byte or two of file
/// (a packed varint) and some 80 of memory. GPU work is mostly written
/// before the call that submitted it, so few are awaited at once.
const MAX_AWAITED: usize = 1 << 18;

/// Correlations per page: bits 22.. of an id.
const PAGE_BITS: u32 = 10;
const PAGE_WORDS: usize = (1 << PAGE_BITS) / 64;
const PAGE_MASK: u64 = ((1 << PAGE_BITS) - 1) << 22;

impl IdSet {
    /// The page key of `id` and its bit in the page.
    #[inline]
    fn split(id: u64) -> (u64, usize) {
        (id & !PAGE_MASK, ((id & PAGE_MASK) >> 22) as usize)
    }

    /// Adds `id`; false when that takes a page past [`MAX_ID_PAGES`].
    fn insert(&mut self, id: u64) -> bool {
        let (key, bit) = Self::split(id);
        let page = match self.last_insert {
            Some((k, p)) if k == key => p,
            _ => {
                let next = self.pages.len() as u32;
                let p = match self.index.get(&key) {
                    Some(&p) => p,
                    None if self.pages.len() < MAX_ID_PAGES => {
                        self.index.insert(key, next);
                        self.pages.push([0; PAGE_WORDS]);
                        next
                    }
                    None => return false,
                };
                self.last_insert = Some((key, p));
                p
            }
        };
        self.pages[page as usize][bit / 64] |= 1 << (bit % 64);
        true
    }

    fn contains(&mut self, id: u64) -> bool {
        let (key, bit) = Self::split(id);
        let page = match self.last_lookup {
            Some((k, p)) if k == key => p,
            _ => match self.index.get(&key) {
                Some(&p) => {
                    self.last_lookup = Some((key, p));
                    p
                }
                None => return false,
            },
        };
        self.pages[page as usize][bit / 64] & (1 << (bit % 64)) != 0
    }
}

/// The start of every kernel of a trace, per GPU, with its group: what
/// each per-kernel counter value is matched against when the pass ends.
///
/// A value and its kernel come in either order in the file (the counters
/// are on sequences of their own, which the tracing service may hand out
/// before or after the kernels'), so neither can wait for the other: the
/// kernels are kept, compactly. Each start is a varint of its distance
/// from the GPU's previous start (zigzag: kernels of several streams come
/// a little out of order), then a varint of its group: three bytes or so a
/// kernel, in blocks, so that the log grows without copying.
///
/// A trace whose session's config names no per-kernel counters source
/// (`gpu.counters...`) before its first kernel can have no value to match:
/// nothing is kept for it.
#[derive(Default)]
pub(crate) struct KernelStarts {
    gpus: Vec<(i64, StartLog)>,
    /// The GPU of the last start (work comes in runs on one GPU).
    last: usize,
    /// Nothing is kept: the trace can have no per-kernel counter values.
    off: bool,
    /// Kept only since the first value: one came although the config named
    /// no counters source.
    partial: bool,
}

/// One GPU's kernel starts; see [`KernelStarts`].
#[derive(Default)]
struct StartLog {
    blocks: Vec<Vec<u8>>,
    prev: u64,
}

/// How the data sources of per-kernel counters are named
/// (`gpu.counters.nv` ...).
const COUNTERS_SOURCE: &str = "gpu.counters";

/// Bytes of a block of [`StartLog`].
const START_BLOCK: usize = 64 << 10;

/// Writes `v` as a varint into `out` at `n`; returns the new end.
pub(crate) fn put_varint(out: &mut [u8; 20], mut n: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        out[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    out[n] = v as u8;
    n + 1
}

/// Reads a varint at `*at` of `b`, moving `*at` past it.
pub(crate) fn get_varint(b: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = b[*at];
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return v;
        }
        shift += 7;
    }
}

impl StartLog {
    fn push(&mut self, ts: u64, group: u32) {
        let delta = ts.wrapping_sub(self.prev) as i64;
        self.prev = ts;
        let mut buf = [0u8; 20];
        let n = put_varint(&mut buf, 0, ((delta << 1) ^ (delta >> 63)) as u64);
        let n = put_varint(&mut buf, n, u64::from(group));
        let block = match self.blocks.last_mut() {
            Some(b) if b.len() + n <= START_BLOCK => b,
            _ => {
                self.blocks.push(Vec::with_capacity(START_BLOCK));
                self.blocks.last_mut().expect("just pushed")
            }
        };
        block.extend_from_slice(&buf[..n]);
    }

    /// Every (start, group), in the order pushed.
    fn for_each(&self, mut f: impl FnMut(u64, u32)) {
        let mut ts = 0u64;
        for b in &self.blocks {
            let mut at = 0;
            while at < b.len() {
                let z = get_varint(b, &mut at);
                let delta = ((z >> 1) as i64) ^ -((z & 1) as i64);
                ts = ts.wrapping_add(delta as u64);
                let group = get_varint(b, &mut at) as u32;
                f(ts, group);
            }
        }
    }

    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.blocks.iter().map(Vec::capacity).sum()
    }
}

impl KernelStarts {
    /// The session's config names no source of per-kernel counters: if no
    /// kernel came yet, none need be kept.
    fn not_needed(&mut self) {
        if self.gpus.is_empty() {
            self.off = true;
        }
    }

    /// A per-kernel counter value came: its kernel must be found.
    #[inline]
    fn needed(&mut self) {
        if self.off {
            self.off = false;
            self.partial = true;
        }
    }

    #[inline]
    fn push(&mut self, gpu: i64, ts: u64, group: u32) {
        if self.off {
            return;
        }
        let i = match self.gpus.get(self.last) {
            Some((g, _)) if *g == gpu => self.last,
            _ => match self.gpus.iter().position(|(g, _)| *g == gpu) {
                Some(i) => i,
                None => {
                    self.gpus.push((gpu, StartLog::default()));
                    self.gpus.len() - 1
                }
            },
        };
        self.last = i;
        self.gpus[i].1.push(ts, group);
    }

    /// The group of the kernel that starts at each of `wanted`'s (GPU,
    /// time): the last in file order, where several do.
    fn find(&self, wanted: &mut FxHashMap<(i64, u64), Option<u32>>) {
        if wanted.is_empty() {
            return;
        }
        for (gpu, log) in &self.gpus {
            log.for_each(|ts, group| {
                if let Some(slot) = wanted.get_mut(&(*gpu, ts)) {
                    *slot = Some(group);
                }
            });
        }
    }

    /// Bytes held.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.gpus.iter().map(|(_, l)| l.bytes()).sum()
    }
}

/// A slice whose submissions are not all among the GPU events read so far.
struct Waiting {
    ts: u64,
    depth: u32,
    begin: u32,
    name: Str,
    /// Submissions not seen yet.
    missing: u32,
}

/// A hardware queue (stream) of one process.
struct StreamAcc {
    pid: Pid,
    gpu: i64,
    name: String,
    kernels: u64,
    memory: u64,
    busy: Intervals,
}

/// One engine of a device, in one process.
struct EngineAcc {
    pid: Pid,
    gpu: i64,
    engine: u32,
    ops: u64,
    span: Span,
    busy: Intervals,
    /// Of the kernels' engine: the union of its communication kernels,
    /// and, once one came (before, they are all of `busy`), of its other
    /// (compute) kernels.
    comm: Intervals,
    compute: Option<Intervals>,
}

/// (queue address, pid, gpu, engine).
type LaneKey = (usize, Pid, i64, u32);

/// Indices into [`Acc::engines`] and [`Acc::streams`].
#[derive(Clone, Copy)]
struct Lane {
    engine: u32,
    stream: u32,
}

/// One track's slices.
#[derive(Default)]
struct TrackAcc {
    span: Span,
    calls: u64,
    waiting_calls: u64,
    waiting: Intervals,
}

/// A per-kernel counter of one GPU.
struct CounterSlot {
    name: Str,
    /// Whether its next sample is a kernel's value (a kernel's counters
    /// are written as its value at its start, then a return to zero at its
    /// end).
    next_is_value: bool,
}

/// A telemetry counter of one GPU (SYSTEM or MEMORY group: periodic, not
/// per kernel), with its samples as they came.
#[derive(Debug, Clone, Default)]
pub(crate) struct TelemetryTrack {
    pub(crate) gpu: i64,
    pub(crate) name: String,
    /// As its descriptor has it (`MHz`, `B/s`; empty: none).
    pub(crate) unit: String,
    /// (ns, value).
    pub(crate) samples: Vec<(u64, f64)>,
}

/// One per-kernel counter value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    pub(crate) gpu: i64,
    pub(crate) ts: u64,
    slot: u32,
    pub(crate) value: f64,
}

/// Accumulates the statistics of a trace as its events stream by.
#[derive(Default)]
pub(crate) struct Acc {
    kernels: Groups<Pid>,
    memory: Groups<Pid>,
    api: Groups<u64>,
    ranges: Groups<u64>,
    /// Per (pid, gpu, engine: 0 for kernels, else the memory group + 1):
    /// operations and busy time.
    engines: Vec<EngineAcc>,
    engine_index: FxHashMap<(Pid, i64, u32), u32>,
    /// The engine and stream of a (queue, pid, gpu, engine), found by the
    /// queue's address; and the last one found (work mostly comes in runs
    /// of one kind on one queue).
    lanes: FxHashMap<LaneKey, Lane>,
    last_lane: Option<(LaneKey, Lane)>,
    streams: Vec<StreamAcc>,
    stream_by_ptr: FxHashMap<(usize, Pid), u32>,
    stream_by_name: FxHashMap<(Pid, i64, String), u32>,
    stream_keep: Vec<Str>,
    tracks: Vec<TrackAcc>,
    track_index: FxHashMap<u64, u32>,
    track_uuids: Vec<u64>,
    last_track: Option<(u64, u32)>,
    /// The span of the counter values (that of GPU work is the engines',
    /// that of slices the tracks').
    counter_span: Span,
    counter_slots: Vec<CounterSlot>,
    counter_by_ptr: FxHashMap<(i64, usize), u32>,
    counter_by_name: FxHashMap<(i64, String), u32>,
    counter_keep: Vec<Str>,
    /// Every per-kernel value with its device and time, to meet the kernel
    /// that starts there (see [`KernelStarts`]).
    pub(crate) samples: Vec<Sample>,
    /// Every kernel's start and group.
    pub(crate) starts: KernelStarts,
    /// Events of each kind.
    counts: Counts,
    /// Telemetry, per (GPU, counter); found as the per-kernel counters are.
    telemetry: Vec<TelemetryTrack>,
    telemetry_by_ptr: FxHashMap<(i64, usize), u32>,
    telemetry_by_name: FxHashMap<(i64, String), u32>,
    telemetry_keep: Vec<Str>,
    /// The last telemetry sample's time.
    telemetry_end: u64,
    /// Graphics APIs of the contexts seen (4 CUDA, 5 HIP).
    apis: Vec<u64>,
    /// Every GPU event id read so far.
    ids: IdSet,
    /// Submission ids not seen (yet) among the GPU events, with the
    /// slices waiting for them (indices into `waiting`). GPU work is
    /// mostly written before its slice, so this stays small.
    awaited: HashMap<u64, (u32, Vec<u32>), IdHash>,
    /// Slices with submissions not seen (yet); `None` once all are.
    waiting: Vec<Option<Waiting>>,
    /// Free slots of `waiting`.
    free: Vec<u32>,
    /// The submissions of one slice not seen yet (reused).
    missing: Vec<u64>,
    /// Whether API calls are no longer checked against their GPU work: the
    /// ids to keep for it passed a limit.
    unchecked: bool,
    /// GPU work matched with its calls.
    launch: Matcher,
}

impl Visitor for Acc {
    /// Kernels are summarised by name: their grid, block and args are
    /// left undecoded.
    fn parts(&self) -> Parts {
        Parts {
            kernel_launch: false,
        }
    }

    fn config(&mut self, data_sources: &[String]) {
        if !data_sources.iter().any(|d| d.starts_with(COUNTERS_SOURCE)) {
            self.starts.not_needed();
        }
    }

    fn gpu_event(&mut self, e: &GpuEvent) {
        if !self.unchecked && !self.ids.insert(e.event_id) {
            self.stop_checking();
        }
        if !self.awaited.is_empty()
            && let Some((first, more)) = self.awaited.remove(&e.event_id)
        {
            for w in std::iter::once(first).chain(more) {
                self.seen(w);
            }
        }
        let pid = match e.context {
            Some(c) => {
                if !self.apis.contains(&c.api) {
                    self.apis.push(c.api);
                }
                c.pid
            }
            None => UNKNOWN_PID,
        };
        let gpu = e.gpu_id.unwrap_or(0);
        let end = e.ts.saturating_add(e.dur);
        let (engine, group) = match e.stage {
            Stage::Kernel => {
                let g = match &e.kernel {
                    Some(k) if !k.demangled.is_empty() => self.kernels.of_kernel(k, pid),
                    _ => self.kernels.of_str(&e.name, pid),
                };
                self.kernels.add(g, e.dur, 0);
                self.starts.push(gpu, e.ts, g);
                self.counts.kernels += 1;
                (0, g)
            }
            Stage::Memcpy | Stage::Memset => {
                if e.stage == Stage::Memcpy {
                    self.counts.copies += 1;
                } else {
                    self.counts.memsets += 1;
                }
                let g = self.memory.of_str(&e.name, pid);
                self.memory.add(g, e.dur, e.bytes().unwrap_or(0));
                (g + 1, NO_GROUP)
            }
            Stage::Other(_) => return,
        };
        let is_kernel = group != NO_GROUP;
        let lane = self.lane(&e.queue, pid, gpu, engine);
        self.launch.work(
            e.event_id,
            Work {
                pid,
                gpu,
                ts: e.ts,
                dur: e.dur,
                group,
                stream: lane.stream,
            },
        );
        let comm = is_kernel && self.kernels.groups[group as usize].comm;
        let en = &mut self.engines[lane.engine as usize];
        en.ops += 1;
        en.span.add(e.ts, end);
        if comm {
            // Every kernel so far was compute.
            en.compute.get_or_insert_with(|| en.busy.clone());
            en.comm.add(e.ts, end);
        } else if let Some(c) = &mut en.compute {
            c.add(e.ts, end);
        }
        en.busy.add(e.ts, end);
        let s = &mut self.streams[lane.stream as usize];
        if is_kernel {
            s.kernels += 1;
        } else {
            s.memory += 1;
        }
        s.busy.add(e.ts, end);
    }

    fn slice(&mut self, s: &Slice, begin: u32) {
        let end = s.ts.saturating_add(s.dur);
        let t = self.track(s.track);
        match s.gpu_api {
            Some(_) => {
                self.counts.api_calls += 1;
                let g = self.api.of_str(&s.name, s.track);
                self.api.add(g, s.dur, 0);
                let waits = self.api.groups[g as usize].waits || !s.waits.is_empty();
                let t = &mut self.tracks[t as usize];
                t.span.add(s.ts, end);
                t.calls += 1;
                if waits {
                    t.waiting_calls += 1;
                    t.waiting.add(s.ts, end);
                }
            }
            None => {
                self.counts.ranges += 1;
                let g = self.ranges.of_str(&s.name, s.track);
                self.ranges.add(g, s.dur, 0);
                self.tracks[t as usize].span.add(s.ts, end);
            }
        }
        if s.submissions.is_empty() {
            return;
        }
        for &id in &s.submissions {
            self.launch.call(id, s.ts, s.dur, &s.name, s.track);
        }
        if self.unchecked {
            return;
        }
        let mut missing = std::mem::take(&mut self.missing);
        missing.clear();
        missing.extend(
            s.submissions
                .iter()
                .copied()
                .filter(|&id| !self.ids.contains(id)),
        );
        if missing.is_empty() {
            self.missing = missing;
            return;
        }
        if self.awaited.len() + missing.len() > MAX_AWAITED {
            self.missing = missing;
            self.stop_checking();
            return;
        }
        let w = Waiting {
            ts: s.ts,
            depth: s.depth,
            begin,
            name: s.name.clone(),
            missing: missing.len() as u32,
        };
        let slot = match self.free.pop() {
            Some(i) => {
                self.waiting[i as usize] = Some(w);
                i
            }
            None => {
                self.waiting.push(Some(w));
                self.waiting.len() as u32 - 1
            }
        };
        for &id in &missing {
            match self.awaited.entry(id) {
                Entry::Occupied(mut o) => o.get_mut().1.push(slot),
                Entry::Vacant(v) => {
                    v.insert((slot, Vec::new()));
                }
            }
        }
        self.missing = missing;
    }

    fn counter(&mut self, c: &CounterValue) {
        // Telemetry (SYSTEM and MEMORY groups) is periodic, not per kernel.
        if !c.groups.is_empty()
            && !c
                .groups
                .contains(&gpu_trace_reader::wire::counters::GROUP_COMPUTE)
        {
            // Engine busy time, drawn from the activity, is in those groups
            // too: the devices table has it exactly.
            if gpu_trace_model::schema::busy::ENGINE_COUNTERS.contains(&c.name.as_str()) {
                return;
            }
            let i = self.telemetry_track(c);
            self.telemetry[i as usize].samples.push((c.ts, c.value));
            self.telemetry_end = self.telemetry_end.max(c.ts);
            return;
        }
        self.counter_span.add(c.ts, c.ts);
        let slot = self.counter_slot(c);
        // Per-kernel counters return to zero at the kernel's end: every
        // other sample of a device's counter is that reset, not a value (a
        // kernel's value may be zero too).
        let cs = &mut self.counter_slots[slot as usize];
        let is_value = cs.next_is_value;
        cs.next_is_value = !is_value;
        if is_value {
            self.starts.needed();
            self.samples.push(Sample {
                gpu: c.gpu_id,
                ts: c.ts,
                slot,
                value: c.value,
            });
        }
    }
}

impl Acc {
    /// Stops checking submissions against GPU events, and lets go of
    /// what that kept.
    fn stop_checking(&mut self) {
        self.unchecked = true;
        self.ids = IdSet::default();
        self.awaited = HashMap::default();
        self.waiting = Vec::new();
        self.free = Vec::new();
    }

    /// One submission of slice `w` is among the GPU events.
    fn seen(&mut self, w: u32) {
        if let Some(x) = &mut self.waiting[w as usize] {
            x.missing -= 1;
            if x.missing == 0 {
                self.waiting[w as usize] = None;
                self.free.push(w);
            }
        }
    }

    #[inline]
    fn track(&mut self, uuid: u64) -> u32 {
        if let Some((u, i)) = self.last_track
            && u == uuid
        {
            return i;
        }
        let next = self.tracks.len() as u32;
        let i = *self.track_index.entry(uuid).or_insert(next);
        if i == next {
            self.tracks.push(TrackAcc::default());
            self.track_uuids.push(uuid);
        }
        self.last_track = Some((uuid, i));
        i
    }

    #[inline]
    fn lane(&mut self, queue: &Str, pid: Pid, gpu: i64, engine: u32) -> Lane {
        let key = (queue.as_str().as_ptr() as usize, pid, gpu, engine);
        if let Some((k, l)) = self.last_lane
            && k == key
        {
            return l;
        }
        let l = match self.lanes.get(&key) {
            Some(&l) => l,
            None => {
                let stream = self.stream(queue, pid, gpu);
                let next = self.engines.len() as u32;
                let e = *self.engine_index.entry((pid, gpu, engine)).or_insert(next);
                if e == next {
                    self.engines.push(EngineAcc {
                        pid,
                        gpu,
                        engine,
                        ops: 0,
                        span: Span::default(),
                        busy: Intervals::default(),
                        comm: Intervals::default(),
                        compute: None,
                    });
                }
                let l = Lane { engine: e, stream };
                self.lanes.insert(key, l);
                l
            }
        };
        self.last_lane = Some((key, l));
        l
    }

    fn stream(&mut self, queue: &Str, pid: Pid, gpu: i64) -> u32 {
        let key = (queue.as_str().as_ptr() as usize, pid);
        if let Some(&i) = self.stream_by_ptr.get(&key) {
            return i;
        }
        let next = self.streams.len() as u32;
        let i = *self
            .stream_by_name
            .entry((pid, gpu, queue.to_string()))
            .or_insert(next);
        if i == next {
            self.streams.push(StreamAcc {
                pid,
                gpu,
                name: queue.to_string(),
                kernels: 0,
                memory: 0,
                busy: Intervals::default(),
            });
        }
        self.stream_keep.push(queue.clone());
        self.stream_by_ptr.insert(key, i);
        i
    }

    fn counter_slot(&mut self, c: &CounterValue) -> u32 {
        let key = (c.gpu_id, c.name.as_str().as_ptr() as usize);
        if let Some(&i) = self.counter_by_ptr.get(&key) {
            return i;
        }
        let next = self.counter_slots.len() as u32;
        let i = *self
            .counter_by_name
            .entry((c.gpu_id, c.name.to_string()))
            .or_insert(next);
        if i == next {
            self.counter_slots.push(CounterSlot {
                name: c.name.clone(),
                next_is_value: true,
            });
        }
        self.counter_keep.push(c.name.clone());
        self.counter_by_ptr.insert(key, i);
        i
    }

    fn telemetry_track(&mut self, c: &CounterValue) -> u32 {
        let key = (c.gpu_id, c.name.as_str().as_ptr() as usize);
        if let Some(&i) = self.telemetry_by_ptr.get(&key) {
            return i;
        }
        let next = self.telemetry.len() as u32;
        let i = *self
            .telemetry_by_name
            .entry((c.gpu_id, c.name.to_string()))
            .or_insert(next);
        if i == next {
            self.telemetry.push(TelemetryTrack {
                gpu: c.gpu_id,
                name: c.name.to_string(),
                unit: crate::telemetry::unit_text(&c.units),
                samples: Vec::new(),
            });
        }
        self.telemetry_keep.push(c.name.clone());
        self.telemetry_by_ptr.insert(key, i);
        i
    }

    /// What the trace holds, per process, with what `t` (the trace
    /// without its events) holds besides: the header of the file at `path`
    /// (`size` bytes, 0: not known), and the rest of what the summary
    /// needs.
    pub(crate) fn finish(mut self, t: &Trace, path: String, size: u64) -> (FileSummary, FileData) {
        // The kernel of each per-kernel counter value: the one that starts
        // on its GPU at its time.
        let mut wanted: FxHashMap<(i64, u64), Option<u32>> =
            self.samples.iter().map(|s| ((s.gpu, s.ts), None)).collect();
        self.starts.find(&mut wanted);
        // Kernels before the first value were not kept where the config
        // named no counters source: say what that left unmatched.
        let unmatched = if self.starts.partial {
            let missed: FxHashSet<(i64, u64)> = wanted
                .iter()
                .filter(|(_, k)| k.is_none())
                .map(|(key, _)| *key)
                .collect();
            self.samples
                .iter()
                .filter(|s| missed.contains(&(s.gpu, s.ts)))
                .count()
        } else {
            0
        };
        drop(self.starts);
        // One allocation per kernel name, shared by its values.
        let kernel_names: Vec<(Str, Pid)> = if wanted.is_empty() {
            Vec::new()
        } else {
            self.kernels
                .groups
                .iter()
                .map(|g| (Str::from(g.name.as_str()), g.owner))
                .collect()
        };
        // What is still awaited was never seen: every GPU event read after
        // a slice answered its wait.
        let mut dangling: Vec<Waiting> = self.waiting.into_iter().flatten().collect();
        dangling.sort_by_key(|w| (w.ts, w.depth, w.begin));

        // The processes: those of GPU work and of threads.
        let owners: Vec<(Pid, Option<i64>)> = self
            .track_uuids
            .iter()
            .map(|&u| track_owner(t, u))
            .collect();
        let mut pids: Vec<Pid> = self
            .engines
            .iter()
            .map(|e| e.pid)
            .chain(owners.iter().map(|o| o.0))
            .collect();
        pids.sort_unstable();
        pids.dedup();
        // What no process claims belongs to the only one there is.
        let known: Vec<Pid> = pids.iter().copied().filter(|&p| p != UNKNOWN_PID).collect();
        let fold = |p: Pid| -> Pid {
            match known.as_slice() {
                [only] if p == UNKNOWN_PID => *only,
                _ => p,
            }
        };
        let mut procs: BTreeMap<Pid, ProcData> = BTreeMap::new();
        let mut span = self.counter_span;
        for e in &self.engines {
            span.join(e.span);
            procs.entry(fold(e.pid)).or_default().span.join(e.span);
        }
        for t in &self.tracks {
            span.join(t.span);
        }
        let track_pid = |uuid: u64| -> Pid {
            let i = self.track_index[&uuid] as usize;
            fold(owners[i].0)
        };
        // The launch-delay outliers, with their names, streams and threads.
        for o in &self.launch.outliers {
            let g = &self.kernels.groups[o.work.group as usize];
            procs
                .entry(fold(o.work.pid))
                .or_default()
                .outliers
                .push(OutlierData {
                    kernel: g.name.clone(),
                    gpu: o.work.gpu,
                    stream: self.streams[o.work.stream as usize].name.clone(),
                    start: o.work.ts,
                    dur: o.work.dur,
                    delay: o.delay,
                    api: o.call.name.to_string(),
                    api_start: o.call.ts,
                    api_dur: o.call.dur,
                    tid: track_owner(t, o.call.track).1,
                });
        }
        let mut launches = std::mem::take(&mut self.launch.kernels).into_iter();
        for g in self.kernels.groups {
            let p = procs.entry(fold(g.owner)).or_default();
            if let Some(l) = launches.next()
                && l.calls.len() > 0
            {
                p.launches.push((g.name.clone(), l));
            }
            if !g.mangled.is_empty() && g.mangled != g.name {
                p.mangled.push((g.name.clone(), g.mangled));
            }
            p.kernels.push((g.name, g.durs));
        }
        for ((pid, gpu), log) in std::mem::take(&mut self.launch.devices) {
            procs.entry(fold(pid)).or_default().pairs.push((gpu, log));
        }
        let mut engine_names: Vec<String> = Vec::with_capacity(self.memory.groups.len());
        for g in self.memory.groups {
            engine_names.push(g.name.clone());
            procs
                .entry(fold(g.owner))
                .or_default()
                .memory
                .push((g.name, g.durs, g.bytes));
        }
        for e in self.engines {
            let engine = match e.engine {
                0 => KERNEL_ENGINE.to_owned(),
                g => engine_names[g as usize - 1].clone(),
            };
            procs
                .entry(fold(e.pid))
                .or_default()
                .engines
                .push(EngineData {
                    gpu: e.gpu,
                    engine,
                    ops: e.ops,
                    busy: e.busy,
                    comm: e.comm,
                    compute: e.compute,
                });
        }
        for s in self.streams {
            procs
                .entry(fold(s.pid))
                .or_default()
                .streams
                .push(StreamData {
                    gpu: s.gpu,
                    name: s.name,
                    kernels: s.kernels,
                    memory: s.memory,
                    busy: s.busy,
                });
        }
        // API calls and ranges were grouped per track: per process now.
        for (groups, api) in [(self.api.groups, true), (self.ranges.groups, false)] {
            let mut index: FxHashMap<(Pid, String), usize> = FxHashMap::default();
            for g in groups {
                let pid = track_pid(g.owner);
                let p = procs.entry(pid).or_default();
                let list = if api { &mut p.api } else { &mut p.ranges };
                match index.entry((pid, g.name)) {
                    Entry::Occupied(o) => list[*o.get()].1.append(g.durs),
                    Entry::Vacant(v) => {
                        list.push((v.key().1.clone(), g.durs));
                        v.insert(list.len() - 1);
                    }
                }
            }
        }
        for ((acc, uuid), owner) in self.tracks.into_iter().zip(self.track_uuids).zip(owners) {
            let pid = fold(owner.0);
            let p = procs.entry(pid).or_default();
            p.span.join(acc.span);
            // Range tracks are the process's, not a thread's; a track of
            // API calls is a thread's, even one the trace does not name.
            if owner.1.is_none() && acc.calls == 0 {
                continue;
            }
            let tid = owner.1;
            let name = t
                .tracks
                .get(&uuid)
                .map(|i| i.name.clone())
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| match tid {
                    Some(tid) => format!("thread {tid}"),
                    None => format!("track {uuid:#x}"),
                });
            p.threads.push(ThreadData {
                tid,
                name,
                span: acc.span,
                calls: acc.calls,
                waiting_calls: acc.waiting_calls,
                waiting: acc.waiting,
            });
        }
        let slots = self.counter_slots;
        let single = match known.as_slice() {
            [only] => *only,
            _ => UNKNOWN_PID,
        };
        let missing = Str::from("(kernel not in the trace)");
        for s in &self.samples {
            let (kernel, pid) = match wanted.get(&(s.gpu, s.ts)).copied().flatten() {
                Some(g) => {
                    let (k, p) = &kernel_names[g as usize];
                    (k.clone(), fold(*p))
                }
                None => (missing.clone(), single),
            };
            procs.entry(pid).or_default().counters.push(CounterData {
                kernel,
                metric: slots[s.slot as usize].name.clone(),
                value: s.value,
            });
        }
        // Where the trace ends, for the hold of the last telemetry sample:
        // its last event of any kind, log lines (the summary) included.
        let end = t
            .logs
            .iter()
            .map(|l| l.ts)
            .chain([span.end, self.telemetry_end])
            .filter(|&e| e != u64::MAX)
            .max()
            .unwrap_or(0);
        let window_spans = window_spans(&t.logs, end);
        let mut header = FileSummary {
            path,
            size,
            span: (!span.is_empty()).then_some(span),
            devices: t.devices.clone(),
            pids: procs.keys().copied().collect(),
            sources: t.data_sources.clone(),
            categories: t.track_event_categories.clone(),
            losses: losses(t),
            truncated_at: t.truncated_at,
            damaged_at: t.damaged_at,
            damaged_packets: t.damaged_packets,
            problems: {
                let mut p = t.problems.clone();
                if unmatched > 0 {
                    p.insert(
                        0,
                        Problem::new(ProblemKind::Malformed, format!(
                            "{} per-kernel counter values are not matched to their kernels: the trace's config names no counters data source, so the kernels before the first value were not kept",
                            int(unmatched as u64)
                        )),
                    );
                }
                if self.launch.overflowed && self.launch.matched > 0 {
                    p.insert(
                        0,
                        Problem::new(ProblemKind::OverLimit, format!(
                            "some GPU work is not matched with the API call that submitted it (more than {} waited for their other half at once): the launch statistics and the idle breakdown leave it out",
                            int(crate::launch::MAX_PENDING as u64)
                        )),
                    );
                }
                if self.unchecked {
                    p.insert(
                        0,
                        Problem::new(ProblemKind::OverLimit, format!(
                            "API calls are not checked against the GPU work they submit: the GPU event ids and awaited submissions passed this summary's limits ({} pages of ids, {} awaited submissions)",
                            int(MAX_ID_PAGES as u64),
                            int(MAX_AWAITED as u64)
                        )),
                    );
                }
                p
            },
            dangling: dangling
                .into_iter()
                .map(|w| (w.name.to_string(), w.ts))
                .collect(),
            apis: self.apis,
            windows: windows_of(&t.logs, span.end),
            // A window still open lasts until the trace's end here: its
            // telemetry may go on after the last GPU work.
            window_spans: window_spans.unwrap_or_default(),
            counts: self.counts,
            warnings: Vec::new(),
        };
        header.warnings = warnings(&header);
        let data = FileData {
            end,
            telemetry: self.telemetry,
            procs,
            processes: t.processes.clone(),
        };
        (header, data)
    }
}

/// The warnings a trace deserves, each one line: a trace cut short says
/// where, once (with the slices left open and the GPU work missing there).
fn warnings(f: &FileSummary) -> Vec<String> {
    let mut out = Vec::new();
    let mut problems: Vec<&Problem> = f.problems.iter().collect();
    if let Some(at) = f.truncated_at {
        let mut open = 0u64;
        let mut why = None;
        problems.retain(|p| match p.kind {
            ProblemKind::Cut => {
                why = Some(
                    p.text
                        .strip_prefix("trace ends mid-packet: ")
                        .unwrap_or(&p.text)
                        .to_owned(),
                );
                false
            }
            // Slices left open by the cut: the cut's line counts them.
            ProblemKind::Unpaired { slices } if p.text.contains(" unterminated slices ") => {
                open += slices;
                false
            }
            _ => true,
        });
        let mut w = format!(
            "the trace stops at byte {}{}, in the middle of a packet (cut short: was the process killed, or the file copied while written?); read up to there",
            int(at),
            if f.size == 0 {
                String::new()
            } else {
                format!(" of {}", int(f.size))
            }
        );
        if let Some(why) = why {
            w.push_str(&format!(" ({why})"));
        }
        if open > 0 {
            w.push_str(&format!("; {open} slices still open there are left out"));
        }
        if !f.dangling.is_empty() {
            w.push_str(&format!(
                "; {} API calls point at GPU work after the cut",
                f.dangling.len()
            ));
        }
        out.push(w);
    } else if let Some((name, ts)) = f.dangling.first() {
        out.push(format!(
            "{} API calls point at GPU work that is not in the trace (the first: {name} at {ts} ns)",
            f.dangling.len()
        ));
    }
    let shown = 5;
    out.extend(problems.iter().take(shown).map(|p| p.to_string()));
    if problems.len() > shown {
        out.push(format!("and {} more problems", problems.len() - shown));
    }
    if f.pids.is_empty() && f.losses.is_none() {
        out.push(
            "no GPU work, API calls, ranges or counters in the trace (not one of gpu-trace's?)"
                .to_owned(),
        );
    }
    out
}

/// Everything lost, by kind: the tool's own counts (from its summary line)
/// and the tracing service's (`perfetto_*`, from its statistics). `None`
/// when the trace has no summary line.
fn losses(t: &Trace) -> Option<Vec<(String, u64)>> {
    t.drop_counts().map(|ours| {
        // The service's last statistics are final; the tool's copy of them
        // in its summary may be a moment older.
        let mut all: Vec<(String, u64)> = ours
            .into_iter()
            .filter(|(k, n)| *n > 0 && (t.losses.is_none() || !k.starts_with("perfetto_")))
            .collect();
        if let Some(l) = t.losses {
            all.extend(
                l.counts()
                    .into_iter()
                    .map(|(k, n)| (format!("perfetto_{k}"), n)),
            );
        }
        all
    })
}

/// The process and thread a track belongs to: its thread descriptor's, or,
/// without one, what gpu-trace's track uuids hold (`gpu-trace-perfetto`'s
/// `thread_track_uuid`: bit 54, the pid in bits 32–53 and the tid below;
/// `range_track_uuid`: the pid from bit 40, with bit 61 flipped).
pub(crate) fn track_owner(t: &Trace, uuid: u64) -> (Pid, Option<i64>) {
    if let Some(th) = t.thread_of(uuid) {
        return (th.pid, Some(th.tid));
    }
    const THREAD_BIT: u64 = 1 << 54;
    const RANGE_BIT: u64 = 1 << 61;
    const PID_MASK: u64 = (1 << 22) - 1;
    if uuid >> 55 == 0 && uuid & THREAD_BIT != 0 {
        return (
            ((uuid >> 32) & PID_MASK) as Pid,
            Some((uuid & 0xffff_ffff) as i64),
        );
    }
    let pid = (uuid ^ RANGE_BIT) >> 40;
    if pid != 0 && pid <= PID_MASK && t.tracks.get(&uuid).is_some_and(|i| i.thread.is_none()) {
        return (pid as Pid, None);
    }
    (UNKNOWN_PID, None)
}

/// A device engine's work in one process: kernels, or one kind of memory
/// operation ("Memcpy HtoD", "Memset" ...).
#[derive(Debug, Default)]
pub(crate) struct EngineData {
    pub(crate) gpu: i64,
    pub(crate) engine: String,
    pub(crate) ops: u64,
    pub(crate) busy: Intervals,
    /// Of the kernels' engine: its communication kernels' union, and its
    /// other kernels' (`None`: the same as `busy`, none was communication).
    pub(crate) comm: Intervals,
    pub(crate) compute: Option<Intervals>,
}

/// A kernel that started long after its launch call returned.
#[derive(Debug, Clone)]
pub(crate) struct OutlierData {
    pub(crate) kernel: String,
    pub(crate) gpu: i64,
    pub(crate) stream: String,
    pub(crate) start: u64,
    pub(crate) dur: u64,
    pub(crate) delay: u64,
    pub(crate) api: String,
    pub(crate) api_start: u64,
    pub(crate) api_dur: u64,
    pub(crate) tid: Option<i64>,
}

/// A stream's work.
#[derive(Debug, Default)]
pub(crate) struct StreamData {
    pub(crate) gpu: i64,
    pub(crate) name: String,
    pub(crate) kernels: u64,
    pub(crate) memory: u64,
    pub(crate) busy: Intervals,
}

/// A thread's API calls.
#[derive(Debug, Default)]
pub(crate) struct ThreadData {
    /// `None` for a track that names no thread.
    pub(crate) tid: Option<i64>,
    pub(crate) name: String,
    /// From its first slice's start to its last slice's end.
    pub(crate) span: Span,
    pub(crate) calls: u64,
    pub(crate) waiting_calls: u64,
    /// The union of its calls that wait for the GPU.
    pub(crate) waiting: Intervals,
}

/// One per-kernel counter value, its names shared with the others (a
/// profiled trace has many values of few kernels and metrics).
#[derive(Debug, Clone)]
pub(crate) struct CounterData {
    pub(crate) kernel: Str,
    pub(crate) metric: Str,
    pub(crate) value: f64,
}

/// One process's events.
#[derive(Debug, Default)]
pub(crate) struct ProcData {
    pub(crate) span: Span,
    pub(crate) kernels: Vec<(String, Durations)>,
    pub(crate) memory: Vec<(String, Durations, u64)>,
    pub(crate) api: Vec<(String, Durations)>,
    pub(crate) ranges: Vec<(String, Durations)>,
    pub(crate) engines: Vec<EngineData>,
    pub(crate) streams: Vec<StreamData>,
    pub(crate) threads: Vec<ThreadData>,
    pub(crate) counters: Vec<CounterData>,
    /// Per kernel name, its launches matched with their calls.
    pub(crate) launches: Vec<(String, LaunchAcc)>,
    /// Per device, (work start, call start) of the work matched.
    pub(crate) pairs: Vec<(i64, crate::launch::PairLog)>,
    /// The kernels that waited longest after their calls.
    pub(crate) outliers: Vec<OutlierData>,
    /// Kernel names whose mangled name differs: (demangled, mangled).
    pub(crate) mangled: Vec<(String, String)>,
}

/// What the summary needs of one file besides its header
/// ([`FileSummary`]).
#[derive(Debug, Default)]
pub(crate) struct FileData {
    /// The last time anything happened in the trace, ns (its events, log
    /// lines and telemetry).
    pub(crate) end: u64,
    /// Device telemetry, per GPU and counter.
    pub(crate) telemetry: Vec<TelemetryTrack>,
    pub(crate) procs: BTreeMap<Pid, ProcData>,
    /// The processes' descriptors (names, rank labels).
    pub(crate) processes: Vec<gpu_trace_reader::ProcessInfo>,
}

/// The window lines of a trace's log, (ts, opened), in time order.
fn window_lines(logs: &[gpu_trace_reader::LogLine]) -> Vec<(u64, bool)> {
    let prefix = gpu_trace_model::schema::WINDOW_LOG;
    let mut lines: Vec<(u64, bool)> = logs
        .iter()
        .filter_map(|l| {
            let rest = l.message.strip_prefix(prefix)?.trim_start();
            let (_, what) = rest.split_once(' ')?;
            Some((l.ts, what.starts_with("opened")))
        })
        .collect();
    lines.sort_by_key(|l| l.0);
    lines
}

/// The recording windows of a trace, [start, end) ns, from its log lines
/// (`recording window N opened (why)` / `... closed (why)`, see
/// `gpu_trace_agent::windows`); a window still open at the end lasts until
/// `end`. `None` when the run was never switched.
pub(crate) fn window_spans(
    logs: &[gpu_trace_reader::LogLine],
    end: u64,
) -> Option<Vec<(u64, u64)>> {
    let lines = window_lines(logs);
    if lines.is_empty() {
        return None;
    }
    let (mut out, mut open) = (Vec::new(), None::<u64>);
    for (ts, opened) in lines {
        match (opened, open) {
            (true, None) => open = Some(ts),
            (false, Some(at)) => {
                out.push((at, ts.max(at)));
                open = None;
            }
            _ => {}
        }
    }
    if let Some(at) = open {
        out.push((at, end.max(at)));
    }
    Some(out)
}

/// How many recording windows, and their total time, ns (see
/// [`window_spans`]).
pub(crate) fn windows_of(logs: &[gpu_trace_reader::LogLine], end: u64) -> Option<(u32, u64)> {
    window_spans(logs, end).map(|w| (w.len() as u32, w.iter().map(|(s, e)| e - s).sum()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(gpu: i64, ts: u64, name: &Str, v: f64) -> CounterValue {
        CounterValue {
            gpu_id: gpu,
            name: name.clone(),
            ts,
            value: v,
            groups: Vec::new(),
            units: Default::default(),
            description: "".into(),
        }
    }

    fn kernel(gpu: i64, ts: u64, name: &str, pid: Pid) -> GpuEvent {
        GpuEvent {
            event_id: ts << 22 | pid as u64,
            ts,
            dur: 10,
            gpu_id: Some(gpu),
            stage: Stage::Kernel,
            name: name.into(),
            queue: "stream 7".into(),
            queue_description: "".into(),
            context: Some(gpu_trace_reader::Context {
                iid: 1,
                pid,
                api: 4,
            }),
            kernel: None,
            grid: None,
            block: None,
            args: Vec::new(),
            sequence: 1,
        }
    }

    #[test]
    fn per_kernel_counters_keep_zero_values_and_skip_the_resets() {
        let mut acc = Acc::default();
        // Kernel a at 100 (bytes 0, a real value), b at 300 (bytes 64) on
        // GPU 0, and a at 100 on GPU 1; each value followed by its reset
        // to zero. The name comes from two sequences (two allocations).
        // The first kernel comes before its values, the others after them,
        // as the counters' sequences may come either side of the kernels'.
        acc.gpu_event(&kernel(0, 100, "a", 7));
        let (a, b) = (Str::from("bytes"), Str::from("bytes"));
        for (gpu, ts, name, v) in [
            (0, 100, &a, 0.0),
            (0, 200, &b, 0.0),
            (1, 100, &a, 8.0),
            (0, 300, &a, 64.0),
            (1, 150, &b, 0.0),
            (0, 400, &a, 0.0),
        ] {
            acc.counter(&value(gpu, ts, name, v));
        }
        acc.gpu_event(&kernel(0, 300, "b", 7));
        acc.gpu_event(&kernel(1, 100, "a", 7));
        // Not profiled.
        acc.gpu_event(&kernel(0, 500, "c", 7));
        let got: Vec<(i64, u64, f64)> =
            acc.samples.iter().map(|s| (s.gpu, s.ts, s.value)).collect();
        assert_eq!(got, [(0, 100, 0.0), (1, 100, 8.0), (0, 300, 64.0)]);
        let (h, f) = acc.finish(&Trace::default(), "t".into(), 0);
        assert_eq!(h.counts.kernels, 4);
        let c: Vec<(&str, &str, f64)> = f.procs[&7]
            .counters
            .iter()
            .map(|c| (c.kernel.as_str(), c.metric.as_str(), c.value))
            .collect();
        assert_eq!(
            c,
            [
                ("a", "bytes", 0.0),
                ("a", "bytes", 8.0),
                ("b", "bytes", 64.0)
            ]
        );
    }

    #[test]
    fn a_value_without_its_kernel_says_so() {
        let mut acc = Acc::default();
        acc.gpu_event(&kernel(0, 100, "a", 7));
        let n = Str::from("bytes");
        // At 101 on GPU 0, and at 100 on GPU 1: no kernel starts there.
        for (gpu, ts) in [(0, 101), (0, 102), (1, 100), (1, 110)] {
            acc.counter(&value(gpu, ts, &n, 1.0));
        }
        let (_, f) = acc.finish(&Trace::default(), "t".into(), 0);
        let c: Vec<&str> = f.procs[&7]
            .counters
            .iter()
            .map(|c| c.kernel.as_str())
            .collect();
        assert_eq!(c, ["(kernel not in the trace)"; 2]);
    }

    #[test]
    fn a_trace_whose_config_has_no_counters_keeps_no_kernel_starts() {
        let sources = ["track_event".to_owned(), "gpu.renderstages.nv".to_owned()];
        let mut acc = Acc::default();
        acc.config(&sources);
        acc.gpu_event(&kernel(0, 100, "a", 7));
        assert!(acc.starts.gpus.is_empty());
        // Named, or read after a kernel: kept.
        let mut acc = Acc::default();
        acc.config(&[sources[1].clone(), "gpu.counters.nv".to_owned()]);
        acc.gpu_event(&kernel(0, 100, "a", 7));
        assert_eq!(acc.starts.gpus.len(), 1);
        let mut acc = Acc::default();
        acc.gpu_event(&kernel(0, 100, "a", 7));
        acc.config(&sources);
        acc.gpu_event(&kernel(0, 200, "a", 7));
        assert_eq!(acc.starts.bytes(), START_BLOCK);
        let (h, _) = acc.finish(&Trace::default(), "t".into(), 0);
        assert!(h.problems.is_empty(), "{:?}", h.problems);
    }

    #[test]
    fn values_the_config_did_not_announce_still_find_the_kernels_after_them() {
        let mut acc = Acc::default();
        acc.config(&["gpu.renderstages.nv".to_owned()]);
        acc.gpu_event(&kernel(0, 100, "a", 7));
        let n = Str::from("bytes");
        for (ts, v) in [(100, 1.0), (110, 0.0), (300, 2.0), (310, 0.0)] {
            acc.counter(&value(0, ts, &n, v));
        }
        acc.gpu_event(&kernel(0, 300, "b", 7));
        let (h, f) = acc.finish(&Trace::default(), "t".into(), 0);
        let c: Vec<&str> = f.procs[&7]
            .counters
            .iter()
            .map(|c| c.kernel.as_str())
            .collect();
        assert_eq!(c, ["(kernel not in the trace)", "b"]);
        assert!(
            h.problems[0]
                .text
                .starts_with("1 per-kernel counter values are not matched"),
            "{:?}",
            h.problems
        );
    }

    #[test]
    fn kernel_starts_come_back_as_pushed_whatever_their_order() {
        let mut k = KernelStarts::default();
        let starts: Vec<(i64, u64, u32)> = (0..50_000u64)
            .map(|i| {
                // Forwards mostly, sometimes back, a few far apart.
                let ts = match i % 7 {
                    0 => i * 5_000 - i.min(3) * 100,
                    3 => u64::MAX - i,
                    _ => i * 5_000,
                };
                ((i % 3) as i64 - 1, ts, (i % 300) as u32)
            })
            .collect();
        for &(gpu, ts, g) in &starts {
            k.push(gpu, ts, g);
        }
        let mut back = Vec::new();
        for (gpu, log) in &k.gpus {
            log.for_each(|ts, g| back.push((*gpu, ts, g)));
        }
        let mut want = starts.clone();
        want.sort_by_key(|s| s.0);
        back.sort_by_key(|s| s.0);
        assert_eq!(back, want, "per GPU, in the order pushed");
        // A few bytes a start, whole blocks held.
        assert!(k.bytes() <= 4 * START_BLOCK + 50_000 * 8, "{}", k.bytes());
    }

    /// The calls counted as waiting are the injections' own list.
    #[test]
    fn waiting_calls_are_found_under_their_decorated_names() {
        for n in [
            "cudaStreamSynchronize",
            "cudaStreamSynchronize_v3020",
            "cuStreamSynchronize_ptsz",
            "cuMemcpyDtoH_v2",
            "cudaMemcpy_v3020",
            "hipStreamSynchronize_spt",
            "hipDeviceSynchronize",
            "cuCtxSynchronize",
        ] {
            assert!(waits_for_gpu(n), "{n}");
        }
        for n in [
            "cudaMemcpyAsync",
            "cuMemcpyHtoDAsync_v2",
            "cudaLaunchKernel",
            "cudaStreamWaitEvent",
            "hipMemcpyAsync",
            "cudaMemcpy_vx",
        ] {
            assert!(!waits_for_gpu(n), "{n}");
        }
    }

    #[test]
    fn id_set_holds_exactly_the_ids_inserted() {
        let mut set = IdSet::default();
        let ids: Vec<u64> = (0..5000u64)
            .map(|c| c << 22 | 4242)
            .chain([
                0,
                1,
                u64::MAX,
                gpu_trace_reader::SECONDARY_EVENT_ID_BIT | 7 << 22 | 4242,
            ])
            .collect();
        for &id in ids.iter().step_by(2) {
            set.insert(id);
        }
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!(set.contains(id), i % 2 == 0, "{id:#x}");
        }
        assert!(!set.contains(4243));
    }

    #[test]
    fn tracks_without_descriptors_belong_to_the_pid_in_their_uuid() {
        let t = Trace::default();
        let thread = (1 << 54) | (4242u64 << 32) | 77;
        assert_eq!(track_owner(&t, thread), (4242, Some(77)));
        assert_eq!(track_owner(&t, 12345), (UNKNOWN_PID, None));
    }
}

#[cfg(test)]
mod window_tests {
    use super::windows_of;
    use gpu_trace_reader::LogLine;

    fn line(ts: u64, message: &str) -> LogLine {
        LogLine {
            ts,
            severity: 3,
            tag: "gpu-trace".into(),
            message: message.into(),
        }
    }

    #[test]
    fn windows_are_counted_and_timed_from_the_log() {
        assert_eq!(windows_of(&[line(5, "gpu-trace summary: x")], 100), None);
        let logs = [
            line(300, "recording window 2 opened (gpu-trace start)"),
            line(10, "recording window 1 opened (start)"),
            line(60, "recording window 1 closed (gpu-trace stop)"),
            line(5, "gpu-trace summary: x"),
        ];
        // 50 ns, then one still open at the end (300 to 1,000).
        assert_eq!(windows_of(&logs, 1_000), Some((2, 750)));
    }
}
