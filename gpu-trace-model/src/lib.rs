//! gpu-trace's event model, and what every crate that records or reads GPU
//! events shares with it.
//!
//! - The events ([`model`]): devices, kernels, copies and memsets, API
//!   calls, markers, counter samples, unified-memory events, device memory
//!   in use; plain values, built with `new` and filled in.
//! - Where backends put them: the per-thread [`Recorder`] ([`collector`]),
//!   drained by a writer.
//! - The tables events refer to: interned [`names`] and kernels, source
//!   [`callstack`]s of API calls, devices
//!   and counters ([`registry`]); submit/wait correlation ([`correlate`]).
//! - The kernel filter's matching engine ([`filter`]), the busy-time
//!   interval union ([`intervals`]), the synchronising API calls
//!   ([`waits`]), the vendor-neutral telemetry metrics ([`telemetry`]), a
//!   process's rank ([`rank`]), PCI addresses ([`pci`]).
//! - Who a backend is, as plain data ([`backend`]).
//! - The [`schema`] of the traces: Perfetto field numbers, the busy tracks,
//!   the recording-window markers.
//! - The contract between the agent and a writer, which know each other
//!   only through it: the settings a writer is given and what it tells the
//!   agent ([`writer`]), and the switch capture ranges and windows flip
//!   ([`capture`]).
//! - How gpu-trace behaves inside someone else's process: one clock
//!   ([`clock`]), one-line diagnostics on stderr ([`log`], [`text`]), the
//!   panic guard ([`guard`]), threads that keep the application's signals
//!   ([`thread`]), the program's name ([`process`]).
//!
//! No Perfetto SDK, no vendor library, no C++ build: a third-party backend
//! or an analysis tool depends on this crate alone.
#![forbid(unsafe_code)]

pub mod backend;
pub mod callstack;
pub mod capture;
pub mod clock;
pub mod collector;
pub mod correlate;
pub mod filter;
pub mod guard;
pub mod intervals;
pub mod log;
pub mod model;
pub mod names;
pub mod pci;
pub mod process;
pub mod rank;
pub mod registry;
pub mod schema;
mod sharded;
pub mod telemetry;
pub mod text;
pub mod thread;
pub mod waits;
pub mod writer;

pub use collector::{Batch, DEFAULT_QUEUE_KB, Limits, Recorder, STALL_LIMIT};
