#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

#[cfg(feature = "bench-hooks")]
pub mod bench;
mod busy;
mod categories;
mod direct;
mod emit;
mod sink;
mod trace_config;
mod tracer;

pub use sink::{RegisterError, SessionError};
pub use tracer::{
    Backend, CaptureSwitch, GpuClock, Losses, Notes, Sources, StartError, Tracer, TracerOptions,
};

// The model's process helpers, under the names this crate's modules use.
use gpu_trace_model::{clock, collector, guard, log, model, names, registry, thread, waits};
use gpu_trace_model::{verbose, warn};
