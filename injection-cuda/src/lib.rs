//! `libgpu_trace_cuda.so`: traces an unmodified CUDA application.
//!
//! The CUDA driver loads this library when `CUDA_INJECTION64_PATH` names it
//! and calls `InitializeInjection` during `cuInit`. From then on:
//!
//! - GPU work comes from CUPTI activity records (kernels, copies, memsets),
//!   enabled only while a session records GPU work;
//! - API calls come from callbacks on the few runtime/driver functions that
//!   launch, copy, set, allocate, free, synchronise or record events;
//! - NVTX comes from our own NVTX injection: when `NVTX_INJECTION64_PATH`
//!   names this library, NVTX calls `InitializeInjectionNvtx2` and we fill
//!   its function tables with handlers that record ranges and marks.
//!
//! Nothing here can take the application down: every entry point runs inside
//! a panic guard, a failure prints one line and leaves the application
//! untraced, and the exit code is never touched.
#![deny(unsafe_code)]

mod api;
#[cfg(feature = "bench-hooks")]
pub mod bench;
mod config;
mod counters;
mod detach;
mod failpoint;
#[allow(unsafe_code)]
mod ffi;
mod memory;
mod nvtx_capture;
mod occupancy;
mod profiler_capture;
mod records;
mod telemetry;
mod tool;
mod uvm;

use gpu_trace_agent::program::{ProgramControl, status};
use std::ffi::CStr;
use std::sync::OnceLock;

static TOOL: OnceLock<Option<tool::Tool>> = OnceLock::new();

/// The program's own control of recording (the C API of `gpu_trace.h`,
/// exported by [`ffi`]).
static PROGRAM: ProgramControl = ProgramControl::new();

/// Starts the tool once per process (later calls do nothing). Returns
/// whether it is running.
fn init() -> bool {
    // Threads made while starting (ours, Perfetto's, CUPTI's) inherit a mask
    // that keeps the application's signals away from them.
    let running = TOOL
        .get_or_init(|| gpu_trace_model::thread::with_signals_blocked(tool::Tool::start))
        .is_some();
    if !running {
        PROGRAM.off();
    }
    running
}

/// `gpu_trace_range_push` (`Some(name)`) or `gpu_trace_range_pop`: an NVTX
/// push or pop of the default domain on this thread, through the same
/// handler as the application's NVTX calls (recorded while NVTX ranges
/// are; an NVTX capture range sees it too).
fn range(push: Option<&CStr>) -> i32 {
    use cupti::nvtx::{NvtxEvent, NvtxMessage};
    let rc = PROGRAM.running();
    if rc != status::OK {
        return rc;
    }
    let Some(Some(t)) = TOOL.get() else {
        // Still starting, on another thread.
        return status::PENDING;
    };
    t.on_nvtx(&match push {
        Some(name) => NvtxEvent::Push {
            domain: None,
            message: NvtxMessage::Ascii(name),
            attributes: Default::default(),
        },
        None => NvtxEvent::Pop { domain: None },
    });
    status::OK
}

/// An NVTX call through our NVTX injection.
fn on_nvtx(ev: &cupti::nvtx::NvtxEvent<'_>) {
    if let Some(Some(t)) = TOOL.get()
        && !gpu_trace_model::guard::tripped()
    {
        t.on_nvtx(ev);
    }
}

/// Flushes and finalises the trace at exit.
fn shutdown() {
    if let Some(Some(t)) = TOOL.get() {
        t.shutdown();
    }
}
