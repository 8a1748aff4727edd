//! An in-memory [`PacketSink`] and decoding helpers for the encoder's
//! unit tests.

use super::{ClockSpec, Encoder, PacketSink, Tables, TrackEventSink};
use crate::names::{Kernels, Names};
use crate::registry::{Counters, Devices};
use gpu_trace_reader::pb::{Fields, Value};
use std::collections::HashSet;
use std::sync::Arc;

/// Collects packets as written.
#[derive(Default)]
pub(super) struct Packets(pub(super) Vec<Vec<u8>>);

impl PacketSink for Packets {
    fn packet(&mut self, bytes: &[u8]) {
        self.0.push(bytes.to_vec());
    }
}

/// A track-event sequence: interns names and remembers tracks as the SDK
/// does.
#[derive(Default)]
pub(super) struct TePackets {
    pub(super) packets: Vec<Vec<u8>>,
    names: super::Interner,
    callsites: super::Interner,
    tracks: HashSet<u64>,
}

impl PacketSink for TePackets {
    fn packet(&mut self, bytes: &[u8]) {
        self.packets.push(bytes.to_vec());
    }
}

impl TrackEventSink for TePackets {
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

/// An encoder for pid [`PID`] over fresh tables.
pub(super) struct Fixture {
    pub(super) enc: Encoder,
    pub(super) names: Arc<Names>,
    pub(super) kernels: Arc<Kernels>,
    pub(super) devices: Arc<Devices>,
    pub(super) counters: Arc<Counters>,
    pub(super) callstacks: Arc<gpu_trace_model::callstack::Callstacks>,
}

pub(super) const PID: u32 = 42;

impl Fixture {
    pub(super) fn new(clock: ClockSpec) -> Self {
        let names = Arc::new(Names::default());
        let kernels = Arc::new(Kernels::default());
        let devices = Arc::new(Devices::default());
        let counters = Arc::new(Counters::default());
        let callstacks = Arc::new(gpu_trace_model::callstack::Callstacks::default());
        let enc = Encoder::new(
            PID,
            gpu_trace_testkit::BACKEND,
            clock,
            None,
            Tables {
                names: names.clone(),
                kernels: kernels.clone(),
                devices: devices.clone(),
                counters: counters.clone(),
                callstacks: callstacks.clone(),
                thread_names: crate::collector::ThreadNames::default(),
            },
        );
        Self {
            enc,
            names,
            kernels,
            devices,
            counters,
            callstacks,
        }
    }
}

/// Every value of field `f` in `msg`.
pub(super) fn all(msg: &[u8], f: u32) -> Vec<Value<'_>> {
    Fields::new(msg)
        .map(|r| r.expect("decodes"))
        .filter(|(n, _)| *n == f)
        .map(|(_, v)| v)
        .collect()
}

/// The first value at `path` (nested messages, first of each).
pub(super) fn at<'a>(msg: &'a [u8], path: &[u32]) -> Option<Value<'a>> {
    let (&last, parents) = path.split_last()?;
    let mut m = msg;
    for &f in parents {
        m = all(m, f).first()?.as_bytes()?;
    }
    all(m, last).into_iter().next()
}

/// `at` as an integer.
pub(super) fn u(msg: &[u8], path: &[u32]) -> Option<u64> {
    at(msg, path).and_then(|v| v.as_u64())
}

/// `at` as a string.
pub(super) fn s<'a>(msg: &'a [u8], path: &[u32]) -> Option<&'a str> {
    at(msg, path).and_then(|v| v.as_str())
}
