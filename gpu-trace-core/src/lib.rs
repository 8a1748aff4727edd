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
pub mod clock;
mod collector;
pub mod config;
pub mod correlate;
pub mod cuda_config;
#[cfg(feature = "perfetto")]
mod emit;
pub mod environment;
pub mod filter;
pub mod guard;
pub mod log;
pub mod model;
pub mod names;
pub mod output;
pub mod private_dir;
pub mod privilege;
#[cfg(feature = "perfetto")]
pub mod program;
pub mod rank;
pub mod registry;
mod sharded;
#[cfg(feature = "perfetto")]
mod sink;
pub mod telemetry;
#[doc(hidden)]
pub mod testing;
pub mod thread;
#[cfg(feature = "perfetto")]
mod tracer;
pub mod waits;
pub mod windows;
#[cfg(all(test, feature = "perfetto"))]
mod wire_check;

pub use gpu_trace_reader as reader;

#[cfg(feature = "perfetto")]
pub use backend::{BackendInfo, Categories};
pub use collector::{Batch, Limits, Recorder, STALL_LIMIT};
pub use config::Config;
pub use output::{Announcement, RECORD_LOG_VAR};
#[cfg(feature = "perfetto")]
pub use sink::{RegisterError, SessionError};
#[cfg(feature = "perfetto")]
pub use tracer::{
    Backend, CaptureSwitch, GpuClock, Notes, Sources, StartError, Tracer, TracerOptions,
};
