//! Safe wrapper over rocprofiler-sdk 1.x (ROCm 7.x) for tool libraries.
//!
//! * **Registration**: implement [`Tool`], keep one `static` [`ToolCell`] and forward the
//!   exported `rocprofiler_configure` to [`ToolCell::configure`] (see [`tool`]). SDK 0.x
//!   (ROCm 6.x) is refused there with a message, before anything is written.
//! * **Objects**: [`Context`] (services; `Drop` stops it), [`Buffer`] (`Drop` destroys it,
//!   `close` flushes first), [`CounterConfig`]. All callbacks are boxed closures run behind
//!   gpu-trace's panic guard (`gpu_trace_model::guard`): a panic is caught, the first of the
//!   process reported once on stderr, and it switches that callback off; nothing unwinds into
//!   the SDK.
//! * **Records**: buffer batches decode into [`BufferRecord`] (kernel dispatches, memory copies,
//!   HIP API calls, counter records); callback tracing hands a [`CallbackEvent`] whose
//!   [`Payload`] is a HIP call, a roctx marker, a code object or a kernel symbol; dispatch
//!   counting hands [`DispatchCounts`].
//! * **Errors** keep the raw status and the runtime's text ([`Error::Status`]).
//!
//! Timestamps are CLOCK_BOOTTIME nanoseconds. Grid sizes in dispatch records are work-items.
#![warn(clippy::missing_errors_doc)]
#![deny(missing_docs)]

pub use rocprofiler_sys as sys;

mod agent;
mod buffer;
mod callback;
mod context;
mod counting;
mod error;
mod guard;
mod ids;
mod records;
mod runtime;
pub mod tool;

pub use agent::{Agent, AgentKind};
pub use buffer::{Buffer, BufferBatch, BufferOptions, CallbackThread, Policy};
pub use callback::{
    CallbackEvent, CodeObject, CodeObjectStorage, HipCall, KernelSymbol, KernelSymbolInfo,
    LaunchArgs, MarkerCall, MarkerOp, MemcpyArgs, Payload, Phase,
};
pub use context::Context;
pub use counting::{
    CounterAggregate, CounterConfig, CounterDimension, CounterInfo, CounterSample,
    DispatchCountingRequest, DispatchCounts,
};
pub use error::{Error, Result, Status, StatusKind};
pub use ids::{
    AgentId, AsyncCorrelationId, BufferId, ContextId, CorrelationId, CounterId, Dim3, QueueId,
};
pub use records::{
    BufferRecord, CounterRecord, CountingDispatch, DispatchInfo, HipApiRecord, KernelDispatch,
    MemoryCopy, MemoryCopyDirection,
};
pub use runtime::{Progress, Runtime, Version};
pub use tool::{ConfigureInfo, Tool, ToolCell};

/// Callback-tracing kinds (`sys::rocprofiler_callback_tracing_kind_t`).
pub type CallbackTracingKind = sys::rocprofiler_callback_tracing_kind_t;
/// Buffer-tracing kinds (`sys::rocprofiler_buffer_tracing_kind_t`).
pub type BufferTracingKind = sys::rocprofiler_buffer_tracing_kind_t;
/// HIP runtime API operation ids.
pub type HipApiId = sys::rocprofiler_hip_runtime_api_id_t;

// The SDK calls the registered closures on its own threads, and a tool
// keeps these handles in statics and in its callbacks; what a callback is
// handed borrows the SDK's memory for the call and stays on its thread.
static_assertions::assert_impl_all!(Runtime: Send, Sync);
static_assertions::assert_impl_all!(Context: Send, Sync);
static_assertions::assert_impl_all!(Buffer: Send, Sync);
static_assertions::assert_impl_all!(Agent: Send, Sync);
static_assertions::assert_not_impl_any!(BufferBatch<'static>: Send, Sync);
static_assertions::assert_not_impl_any!(CallbackEvent<'static>: Send, Sync);
