//! Device memory in use per GPU, from the driver's allocation and free
//! callbacks (`INJECTION_TRACE=...,memory`).
//!
//! Every way the runtime and libraries allocate device memory reaches one
//! of the driver calls [`cupti::callback::memory_call_ids`] lists
//! (`cudaMalloc` is `cuMemAlloc_v2`, `cudaMallocAsync` is
//! `cuMemAllocAsync`, PyTorch's expandable segments are `cuMemCreate`).
//! At each call's exit its size and the pointer it returned are read from
//! its parameters and kept (pointer → size and GPU) until the matching
//! free, and the GPU's new total is recorded at that moment:
//!
//! - stream-ordered allocations and frees count when the call is made,
//!   not when the stream reaches them;
//! - virtual memory counts physical memory: `cuMemCreate` adds, and
//!   `cuMemRelease` subtracts, however often it is mapped (mapping changes
//!   nothing); the driver frees it only once it is unmapped too;
//! - managed memory counts in full on the GPU of the context that made
//!   it, whether or not its pages are resident there (the unified-memory
//!   records, `-t uvm`, show where they move);
//! - memory allocated before recording started (or while it was off) is
//!   not known, and its frees change nothing.
//!
//! The callbacks are enabled only while memory is recorded, so that they
//! cost nothing otherwise; an allocation then costs a map insert under one
//! lock.

use crate::records::RecordState;
use cupti::callback::{ApiCallback, MemoryCall};
use gpu_trace_model::Recorder;
use gpu_trace_model::model::MemoryUsage;
use rustc_hash::FxHashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Allocations known, and what they add up to.
#[derive(Debug, Default)]
struct Ledger {
    /// Device pointer → (bytes, `gpu_id`).
    ptrs: FxHashMap<u64, (u64, u32)>,
    /// `cuMemCreate` handle → (bytes, `gpu_id`).
    handles: FxHashMap<u64, (u64, u32)>,
    /// `gpu_id` → bytes in use.
    in_use: FxHashMap<u32, u64>,
    /// Context → `gpu_id`, asked of the driver once per context.
    contexts: FxHashMap<u64, u32>,
}

/// Device memory accounting, one per process.
pub(crate) struct MemoryState {
    recorder: Recorder,
    on: AtomicBool,
    ledger: Mutex<Ledger>,
}

impl MemoryState {
    pub(crate) fn new(recorder: Recorder) -> Self {
        Self {
            recorder,
            on: AtomicBool::new(false),
            ledger: Mutex::new(Ledger::default()),
        }
    }

    /// Starts or stops accounting. Either way what was known is forgotten:
    /// frees made while it was off were not seen.
    pub(crate) fn set_on(&self, on: bool) {
        *self.ledger.lock().unwrap_or_else(|e| e.into_inner()) = Ledger::default();
        self.on.store(on, Ordering::Relaxed);
    }

    pub(crate) fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// A context is going away (its handle may be reused for another
    /// device).
    pub(crate) fn forget_context(&self, ctx: u64) {
        self.ledger
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contexts
            .remove(&ctx);
    }

    /// A driver callback: at the exit of a successful allocation or free,
    /// the GPU's new total.
    pub(crate) fn on_api(&self, cb: &ApiCallback<'_>, records: &RecordState) {
        if !self.is_on() || crate::api::is_internal() {
            return;
        }
        let Some(call) = cb.memory_call() else {
            return;
        };
        if cb.return_value().unwrap_or(0) != 0 {
            return;
        }
        let mut l = self.ledger.lock().unwrap_or_else(|e| e.into_inner());
        let changed = match call {
            MemoryCall::Alloc { ptr, bytes, .. } => {
                let gpu = context_gpu(&mut l, cb.context_handle(), records);
                // A pointer handed out again was freed without our seeing it.
                if let Some(old) = l.ptrs.insert(ptr, (bytes, gpu)) {
                    sub(&mut l, old);
                }
                *l.in_use.entry(gpu).or_default() += bytes;
                Some(gpu)
            }
            MemoryCall::Free { ptr, .. } => l.ptrs.remove(&ptr).map(|old| sub(&mut l, old)),
            MemoryCall::Create {
                handle,
                bytes,
                device: Some(ordinal),
            } => {
                let gpu = records.gpu_id(ordinal);
                if let Some(old) = l.handles.insert(handle, (bytes, gpu)) {
                    sub(&mut l, old);
                }
                *l.in_use.entry(gpu).or_default() += bytes;
                Some(gpu)
            }
            MemoryCall::Release { handle } => l.handles.remove(&handle).map(|old| sub(&mut l, old)),
            _ => None,
        };
        if let Some(gpu) = changed {
            // Taken under the lock, so that totals and times agree across
            // threads.
            let ts = gpu_trace_model::clock::boottime_ns();
            let bytes = l.in_use.get(&gpu).copied().unwrap_or(0);
            self.recorder.memory_usage(MemoryUsage::new(gpu, ts, bytes));
        }
    }
}

/// Takes a known allocation off its GPU's total; returns the GPU.
fn sub(l: &mut Ledger, (bytes, gpu): (u64, u32)) -> u32 {
    let t = l.in_use.entry(gpu).or_default();
    *t = t.saturating_sub(bytes);
    gpu
}

/// The `gpu_id` of the context current in the callback (the device the
/// allocation is on).
fn context_gpu(l: &mut Ledger, ctx: u64, records: &RecordState) -> u32 {
    if let Some(&g) = l.contexts.get(&ctx) {
        return g;
    }
    let ordinal = crate::api::driver()
        .and_then(|d| crate::api::internal(|| d.current_device()).ok())
        .map(|d| d.0.max(0) as u32);
    let ordinal = ordinal.unwrap_or_else(|| {
        gpu_trace_model::warn_once!(
            "cannot ask the driver which device a context is on; its allocations count on CUDA device 0"
        );
        0
    });
    let g = records.gpu_id(ordinal);
    l.contexts.insert(ctx, g);
    g
}
