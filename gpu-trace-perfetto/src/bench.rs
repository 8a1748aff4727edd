//! The emitter's encoding paths and busy accounting without a Perfetto
//! session, for `benches/` only: built with the `bench-hooks` feature,
//! which only the benchmarks' dev-dependency turns on, so no shipped build
//! has it.

use crate::collector::Batch;
use crate::emit::{ClockSpec, CtrSeq, Encoder, PacketSink, RsSeq, Tables, TrackEventSink};
use crate::tracer::Tracer;
use rustc_hash::FxHashSet;

/// Encodes batches the way the emitter does, into a sink that only counts
/// bytes. Interning state persists between calls (steady state: interning
/// hits) until [`Encoding::forget_interning`] (a fresh sequence: misses).
pub struct Encoding {
    enc: Encoder,
    rs: RsSeq,
    ctr: CtrSeq,
    te: CountingTe,
}

impl Encoding {
    /// An encoder over `tracer`'s names, kernels, devices and counters.
    pub fn new(tracer: &Tracer) -> Self {
        Self {
            enc: Encoder::new(
                std::process::id(),
                *tracer.backend(),
                ClockSpec::Boottime,
                None,
                Tables {
                    names: tracer.names().clone(),
                    kernels: tracer.kernels().clone(),
                    devices: tracer.devices().clone(),
                    counters: tracer.counters().clone(),
                    callstacks: tracer.callstacks().clone(),
                    thread_names: tracer.recorder().thread_names(),
                },
            ),
            rs: RsSeq::default(),
            ctr: CtrSeq::default(),
            te: CountingTe::default(),
        }
    }

    /// Starts new sequences, as after an incremental-state clear: the next
    /// batch interns everything again.
    pub fn forget_interning(&mut self) {
        self.rs = RsSeq::default();
        self.ctr = CtrSeq::default();
        self.te = CountingTe::default();
    }

    /// Render stages (kernels, copies, memsets) of `batches`; returns bytes.
    pub fn render_stages(&mut self, batches: &[Batch]) -> usize {
        let ids = self.enc.prepare(batches);
        let mut sink = Counting::default();
        self.enc
            .write_render_stages(&mut self.rs, batches, &ids, &mut sink);
        sink.bytes
    }

    /// API-call slices of `batches`; returns bytes.
    pub fn api_calls(&mut self, batches: &[Batch]) -> usize {
        self.te.sink.bytes = 0;
        self.enc.write_api_calls(batches, &mut self.te);
        self.te.sink.bytes
    }

    /// Counter samples of `batches`; returns bytes.
    pub fn counters(&mut self, batches: &[Batch]) -> usize {
        let mut sink = Counting::default();
        self.enc.write_counters(&mut self.ctr, batches, &mut sink);
        sink.bytes
    }
}

#[derive(Default)]
struct Counting {
    bytes: usize,
}

impl PacketSink for Counting {
    fn packet(&mut self, bytes: &[u8]) {
        self.bytes += std::hint::black_box(bytes).len();
    }
}

/// A track-event sequence with its own interning, like the SDK's.
#[derive(Default)]
struct CountingTe {
    sink: Counting,
    names: crate::emit::Interner,
    callsites: crate::emit::Interner,
    tracks: FxHashSet<u64>,
}

impl PacketSink for CountingTe {
    fn packet(&mut self, bytes: &[u8]) {
        self.sink.packet(bytes);
    }
}

impl TrackEventSink for CountingTe {
    fn intern_name(&mut self, name: &[u8]) -> (u64, bool) {
        self.names.intern(name)
    }

    fn intern_callsite(&mut self, key: &[u8]) -> (u64, bool) {
        self.callsites.intern(key)
    }

    fn track_seen(&mut self, uuid: u64) -> bool {
        !self.tracks.insert(uuid)
    }

    fn instance(&self) -> u32 {
        0
    }
}

/// The busy accounting of [`crate::busy`] (what the emitter does with every
/// kernel, copy and synchronising call), for `benches/`.
#[derive(Default)]
pub struct BusyAccounting(crate::busy::Busy<u32>);

impl BusyAccounting {
    /// Track `key` busy from `start` to `end`.
    pub fn add(&mut self, key: u32, start: u64, end: u64) {
        self.0.add(key, start, end);
    }

    /// Writes what ended before `watermark`; returns the points.
    pub fn advance(&mut self, watermark: u64) -> usize {
        self.0.advance(watermark).len()
    }
}
