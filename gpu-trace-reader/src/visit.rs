//! Streaming reads: the events of a trace handed to a [`Visitor`] as they
//! are decoded, so that memory holds the sequences' interned state and the
//! open slices, not the trace.

use crate::model::{CounterValue, GpuEvent, Instant, Slice};

/// The parts of the events a [`Visitor`] reads, so that the reader can
/// leave the others undecoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// The launch of kernels: [`GpuEvent::grid`], [`GpuEvent::block`] and
    /// [`GpuEvent::args`] of [`crate::Stage::Kernel`] events. Without it
    /// they are `None` and empty, and what is wrong in them (an arg name
    /// that is not interned, a malformed launch) is not reported.
    pub kernel_launch: bool,
}

impl Parts {
    /// Everything.
    pub const ALL: Parts = Parts {
        kernel_launch: true,
    };
}

/// Receives the events of a trace read by [`crate::Trace::visit`].
///
/// Every method has an empty default. The references are valid for the
/// call only (the reader reuses them); clone what is kept.
pub trait Visitor {
    /// The parts of the events this visitor reads; asked once, before the
    /// first event. All of them unless it says otherwise.
    fn parts(&self) -> Parts {
        Parts::ALL
    }

    /// A GPU event, in file order. A timestamp on a custom clock is
    /// resolved against the clock snapshots read so far.
    fn gpu_event(&mut self, e: &GpuEvent) {
        let _ = e;
    }

    /// A slice, when its end is read. Each track's begins and ends are
    /// paired in file order, which is their time order in the traces
    /// gpu-trace writes (see [`Visitor::unordered_track`]). `begin` is the
    /// position of its begin among the trace's track events: sorting by
    /// `(ts, depth, begin)` gives the order of [`crate::Trace::slices`].
    fn slice(&mut self, s: &Slice, begin: u32) {
        let _ = (s, begin);
    }

    /// An instant, in file order.
    fn instant(&mut self, i: &Instant) {
        let _ = i;
    }

    /// A counter value, in file order.
    fn counter(&mut self, c: &CounterValue) {
        let _ = c;
    }

    /// The data sources the session's config (`TraceConfig`) names, once,
    /// when the trace holds a config. The tracing service writes it before
    /// any event, so a visitor learns there what the trace can hold: a
    /// per-kernel counter value, for instance, comes only from a
    /// `gpu.counters` source.
    fn config(&mut self, data_sources: &[String]) {
        let _ = data_sources;
    }

    /// Called once for a track whose events are not in time order in the
    /// file: from there on its slices may pair differently from
    /// [`crate::Trace::open`], which sorts them first.
    fn unordered_track(&mut self, track: u64) {
        let _ = track;
    }
}
