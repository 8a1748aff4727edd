//! Decodes gpu-trace's Perfetto (`.pftrace`) files into a GPU-centric view:
//! GPU events with their interned specs resolved, API and marker slices
//! with their correlation ids, counter samples, devices, logs and the
//! tracing service's loss statistics.
//!
//! Interning is resolved per sequence as trace_processor resolves it, so a
//! reference that would not resolve there is reported in
//! [`Trace::problems`] rather than silently patched up. Files are read in
//! chunks, never whole. `gpu-trace stats`, `gpu-check` and the tests of
//! the writer and the injections read traces with it; it needs no Perfetto
//! SDK (the field numbers are `gpu_trace_model::schema`'s).
//!
//! ```no_run
//! let t = gpu_trace_reader::Trace::open("app-1234.pftrace")?;
//! for k in t.kernels() {
//!     println!("{} {} ns", k.name, k.dur);
//! }
//! # Ok::<(), gpu_trace_reader::ReadError>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod checks;
mod decode;
mod frame;
mod model;
pub mod pb;
mod problem;
pub mod progress;
mod stats;
pub mod text;
mod trace;
mod visit;

/// The field numbers of the traces read: `gpu_trace_model::schema`.
pub use gpu_trace_model::schema as wire;
pub use model::*;
pub use problem::{Problem, ProblemKind};
pub use stats::{ServiceLosses, loss_counts, trace_stats};
pub use trace::{ReadError, ReadOptions, STREAM_LIMIT, Trace};
pub use visit::{Parts, Visitor};

/// How the problem line of submission arrows to GPU events not in the
/// trace starts (`{DANGLING_SUBMISSIONS}: N (the first: ...)`), for a
/// checker that counts them itself.
pub const DANGLING_SUBMISSIONS: &str = "submission arrows to GPU events not in the trace";

/// Set in every GPU event id from the writer's second id space (GPU
/// work after the first of one correlation, such as graph nodes).
pub const SECONDARY_EVENT_ID_BIT: u64 = 1 << 63;
