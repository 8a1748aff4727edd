//! What gpu-trace runs inside the traced process, for any backend (the
//! injections wire it to their vendor and to the Perfetto writer, which
//! this crate does not know):
//!
//! - configuration: every variable the tool reads ([`config`], the CUDA
//!   backend's [`cuda_config`], the kernel filter's [`filter`], ranks
//!   [`rank`]), checked as `gpu-trace record` checks them, and their
//!   reference table ([`environment`]);
//! - recording windows and their control socket, server and client
//!   ([`windows`]);
//! - the Python call sites of API calls ([`callsites`]);
//! - device telemetry: the sampler threads and the per-GPU lock files
//!   ([`telemetry`]);
//! - where the trace goes and what the launcher is told ([`output`]), in
//!   folders only this user controls ([`private_dir`]), and not at all in a
//!   setuid program (the `privilege` check of [`Startup`]).
#![forbid(unsafe_code)]

#[cfg(feature = "bench-hooks")]
pub mod bench;
pub mod callsites;
pub mod config;
pub mod cuda_config;
pub mod environment;
pub mod exit;
pub mod filter;
pub mod output;
pub mod private_dir;
mod privilege;
pub mod program;
pub mod rank;
pub mod startup;
pub mod telemetry;
pub mod windows;

pub use config::Config;
pub use output::{Announcement, RECORD_LOG_VAR};
pub use startup::{Backend, Startup};

// The model's process helpers, under the names this crate's modules use.
use gpu_trace_model::{clock, guard, log, thread, verbose, warn, warn_once};
