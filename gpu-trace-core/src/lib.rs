#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
// Without `perfetto`, the collector's drain side has no caller.
#![cfg_attr(not(feature = "perfetto"), allow(dead_code))]

#[cfg(feature = "perfetto")]
#[doc(hidden)]
pub use perfetto_sdk as __perfetto;

#[cfg(feature = "perfetto")]
pub mod backend;
#[cfg(feature = "perfetto")]
#[doc(hidden)]
pub mod bench;
#[cfg_attr(not(feature = "perfetto"), allow(dead_code))]
pub mod busy;
#[cfg(feature = "perfetto")]
mod emit;
pub mod filter;
#[cfg(feature = "perfetto")]
mod sink;
#[doc(hidden)]
pub mod testing;
#[cfg(feature = "perfetto")]
mod tracer;
#[cfg(all(test, feature = "perfetto"))]
mod wire_check;

pub use gpu_trace_agent::{
    config, cuda_config, environment, output, private_dir, privilege, rank, telemetry, windows,
};
pub use gpu_trace_model::{
    clock, collector, correlate, guard, log, model, names, registry, thread, verbose, waits, warn,
    warn_once,
};
pub use gpu_trace_reader as reader;

#[cfg(feature = "perfetto")]
pub use backend::{BackendInfo, Categories};
pub use config::Config;
pub use gpu_trace_model::{Batch, Limits, Recorder, STALL_LIMIT};
pub use output::{Announcement, RECORD_LOG_VAR};
#[cfg(feature = "perfetto")]
pub use sink::{RegisterError, SessionError};
#[cfg(feature = "perfetto")]
pub use tracer::{
    Backend, CaptureSwitch, GpuClock, Notes, Sources, StartError, Tracer, TracerOptions,
};
