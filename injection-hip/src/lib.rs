//! `libgpu_trace_hip.so`: traces an unmodified HIP application through rocprofiler-sdk 1.x
//! (ROCm 7.x).
//!
//! rocprofiler-sdk loads this library when `ROCP_TOOL_LIBRARIES` names it (or when it is
//! preloaded) and calls its `rocprofiler_configure`. From then on:
//!
//! - GPU work comes from buffer tracing: kernel dispatches (named through the kernel symbols
//!   that code-object tracing registers before any dispatch) and memory copies;
//! - HIP API calls come from callback tracing on the application's threads, with arrows to the
//!   GPU work they launched (the SDK's internal correlation id is on both) and from the work a
//!   synchronisation waited for;
//! - roctx ranges and marks come from marker callback tracing;
//! - per-kernel hardware counters come from the dispatch counting service, mapped per GPU.
//!
//! Each runs only while a trace session asks for it. Nothing here can take the application
//! down: every callback runs inside a panic guard, a failure prints one line and leaves the
//! application untraced, and the exit code is never touched.
#![deny(unsafe_code)]

mod api;
mod counters;
mod failpoint;
#[allow(unsafe_code)]
mod ffi;
mod records;
mod telemetry;
mod tool;

/// The program's own control of recording (the C API of `gpu_trace.h`,
/// exported by [`ffi`]).
static PROGRAM: gpu_trace_agent::program::ProgramControl =
    gpu_trace_agent::program::ProgramControl::new();
