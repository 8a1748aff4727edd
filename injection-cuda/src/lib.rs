//! `libgpu_trace_cuda.so`: traces an unmodified CUDA application.
//!
//! The CUDA driver loads this library when `CUDA_INJECTION64_PATH` names it
//! and calls `InitializeInjection` during `cuInit`. From then on:
//!
//! - GPU work comes from CUPTI activity records (kernels, copies, memsets),
//!   enabled only while a session records GPU work;
//! - API calls come from callbacks on the few runtime/driver functions that
//!   launch, copy, set, allocate, free, synchronise or record events;
//! - NVTX comes from CUPTI's NVTX domain: NVTX must load an injection too
//!   (`NVTX_INJECTION64_PATH`), and this library forwards that to CUPTI.
//!
//! Nothing here can take the application down: every entry point runs inside
//! a panic guard, a failure prints one line and leaves the application
//! untraced, and the exit code is never touched.
#![deny(unsafe_code)]

mod api;
#[allow(unsafe_code)]
mod ffi;
pub mod occupancy;
mod records;
mod tool;

use std::sync::OnceLock;

static TOOL: OnceLock<Option<tool::Tool>> = OnceLock::new();

/// Starts the tool once per process (later calls do nothing).
fn init() {
    TOOL.get_or_init(tool::Tool::start);
}

/// Flushes and finalises the trace at exit.
fn shutdown() {
    if let Some(Some(t)) = TOOL.get() {
        t.shutdown();
    }
}
