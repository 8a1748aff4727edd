//! Decodes gpu-trace's Perfetto (`.pftrace`) files into a GPU-centric view.
#![forbid(unsafe_code)]

pub mod pb;
mod trace;
pub mod wire;

pub use trace::*;

/// Set in every GPU event id from gpu-trace-core's second id space (GPU
/// work after the first of one correlation, such as graph nodes).
pub const SECONDARY_EVENT_ID_BIT: u64 = 1 << 63;
