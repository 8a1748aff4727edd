//! Backend-neutral GPU event model and its mapping to Perfetto.
//!
//! Backends (`injection-cuda`, `injection-hip`) translate vendor records into
//! the [`model`] and hand them to a [`Recorder`]. The [`Tracer`] owns the
//! Perfetto side: data sources `gpu.renderstages.<suffix>` and
//! `gpu.counters.<suffix>`, track events for API calls and markers, the
//! standalone file session, and an emitter thread that turns recorded events
//! into packets off the application's threads. [`reader`] decodes the
//! resulting `.pftrace` files back into the model.
#![forbid(unsafe_code)]

#[doc(hidden)]
pub use perfetto_sdk as __perfetto;

pub mod backend;
#[doc(hidden)]
pub mod bench;
pub mod clock;
pub mod collector;
pub mod config;
pub mod correlate;
mod emit;
pub mod guard;
pub mod log;
pub mod model;
pub mod names;
pub mod output;
pub mod pb;
pub mod reader;
pub mod registry;
pub mod sharded;
mod sink;
#[doc(hidden)]
pub mod testing;
mod tracer;
pub mod wire;

pub use backend::{BackendInfo, Categories};
pub use collector::{Batch, Limits, Recorder};
pub use config::Config;
pub use emit::{
    SECONDARY_EVENT_ID_BIT, Totals, primary_event_id, range_track_uuid, secondary_event_id,
    thread_track_uuid,
};
pub use sink::{
    CounterRequest, RegisterError, SessionError, data_source_names, parse_counter_config,
};
pub use tracer::{
    Backend, CaptureSwitch, GpuClock, RECORD_LOG_VAR, Sources, StartError, Tracer, TracerOptions,
};
