//! Device memory and unified memory: the scripted allocations and frees
//! (runtime calls with their driver calls inside, with the parameter
//! blocks CUPTI passes, the pointer written at exit), and the
//! unified-memory counter records (`CUpti_ActivityUnifiedMemoryCounter3`)
//! of the counters the tool configured.
#![allow(unreachable_pub, non_snake_case)] // exported to C under CUPTI's names

use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::sync::{LazyLock, Mutex};

use cupti_sys as sys;

use super::exec::{Fun, call, run_on};
use super::{emit, guard, kind_on, lock};
use crate::scenario::{AllocKind, UvmOp};

/// What the simulated driver handed out.
#[derive(Default)]
struct Memory {
    next: u64,
    /// Slot (per thread, by name) → pointer or handle, and its kind.
    live: HashMap<String, (u64, AllocKind)>,
}

static MEMORY: LazyLock<Mutex<Memory>> = LazyLock::new(|| Mutex::new(Memory::default()));

/// The unified-memory counter kinds the tool configured on.
static UM_CONFIGURED: LazyLock<Mutex<HashSet<u32>>> = LazyLock::new(|| Mutex::new(HashSet::new()));
/// Every config passed, in order: (counter kind, enable).
pub(crate) static UM_LOG: Mutex<Vec<(u32, u32)>> = Mutex::new(Vec::new());

/// Forgets the unified-memory configuration ([`super::reset`]).
pub(crate) fn reset() {
    lock(&UM_CONFIGURED).clear();
    lock(&UM_LOG).clear();
}

/// Pitch the fake gives a row of `width` bytes (CUDA pads to the texture
/// alignment; 512 here).
pub(crate) fn pitch(width: u64) -> u64 {
    width.div_ceil(512) * 512
}

/// `cudaMalloc`-style allocation of `bytes` kept under `slot`.
pub(crate) fn alloc(bytes: u64, kind: &AllocKind, slot: &str) {
    let ptr = {
        let mut m = lock(&MEMORY);
        m.next += 1;
        0x7f00_0000_0000 + m.next * 0x1000_0000
    };
    let mut out: sys::CUdeviceptr = ptr;
    let mut pitch_out = 0usize;
    let mut handle: sys::CUmemGenericAllocationHandle = ptr;
    let rt_ptr = ptr as *mut c_void;
    let rt = MallocParams {
        dev_ptr: &rt_ptr,
        size: bytes as usize,
    };
    let stream = std::ptr::null_mut();
    let drv_alloc = sys::cuMemAlloc_v2_params {
        dptr: &mut out,
        bytesize: bytes as usize,
    };
    let drv_managed = sys::cuMemAllocManaged_params {
        dptr: &mut out,
        bytesize: bytes as usize,
        flags: 1,
    };
    let drv_async = sys::cuMemAllocAsync_params {
        dptr: &mut out,
        bytesize: bytes as usize,
        hStream: stream,
    };
    let rows = match kind {
        AllocKind::Pitch { rows } => *rows,
        _ => 1,
    };
    let drv_pitch = sys::cuMemAllocPitch_v2_params {
        dptr: &mut out,
        pPitch: &mut pitch_out,
        WidthInBytes: bytes as usize,
        Height: rows as usize,
        ElementSizeBytes: 4,
    };
    // SAFETY: plain C data; all zeroes is valid.
    let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    let drv_create = sys::cuMemCreate_params {
        handle: &mut handle,
        size: bytes as usize,
        prop: &prop,
        flags: 0,
    };
    let p = |x: *const c_void| x;
    let funs: Vec<Fun> = match kind {
        AllocKind::Device => vec![
            Fun::new("cudaMalloc_v3020", p((&raw const rt).cast())),
            Fun::new("cuMemAlloc_v2", p((&raw const drv_alloc).cast())),
        ],
        AllocKind::Managed => vec![
            Fun::new("cudaMallocManaged_v6000", p((&raw const rt).cast())),
            Fun::new("cuMemAllocManaged", p((&raw const drv_managed).cast())),
        ],
        AllocKind::Async => vec![
            Fun::new("cudaMallocAsync_v11020", p((&raw const rt).cast())),
            Fun::new("cuMemAllocAsync", p((&raw const drv_async).cast())),
        ],
        AllocKind::Pitch { .. } => vec![
            Fun::new("cudaMallocPitch_v3020", p((&raw const rt).cast())),
            Fun::new("cuMemAllocPitch_v2", p((&raw const drv_pitch).cast())),
        ],
        // Virtual memory management is driver API only.
        AllocKind::Vmm => vec![Fun::new("cuMemCreate", p((&raw const drv_create).cast()))],
    };
    // The driver writes its out-parameters before the exit callbacks run.
    let pitched = pitch(bytes) as usize;
    let pitch_slot: *mut usize = &mut pitch_out;
    call(&funs, |_| {
        // SAFETY: a local of this frame, alive for the call.
        unsafe { *pitch_slot = pitched };
    });
    lock(&MEMORY)
        .live
        .insert(slot.to_owned(), (ptr, kind.clone()));
}

/// The free matching the allocation kept under `slot`.
pub(crate) fn free(slot: &str) {
    let Some((ptr, kind)) = lock(&MEMORY).live.remove(slot) else {
        super::violation(format!("scenario frees {slot}, which holds nothing"));
        return;
    };
    let rt = FreeParams {
        dev_ptr: ptr as *mut c_void,
    };
    let drv_free = sys::cuMemFree_v2_params { dptr: ptr };
    let drv_async = sys::cuMemFreeAsync_params {
        dptr: ptr,
        hStream: std::ptr::null_mut(),
    };
    let drv_release = sys::cuMemRelease_params { handle: ptr };
    let funs: Vec<Fun> = match kind {
        AllocKind::Async => vec![
            Fun::new("cudaFreeAsync_v11020", (&raw const rt).cast()),
            Fun::new("cuMemFreeAsync", (&raw const drv_async).cast()),
        ],
        AllocKind::Vmm => vec![Fun::new("cuMemRelease", (&raw const drv_release).cast())],
        _ => vec![
            Fun::new("cudaFree_v3020", (&raw const rt).cast()),
            Fun::new("cuMemFree_v2", (&raw const drv_free).cast()),
        ],
    };
    call(&funs, |_| {});
}

/// A unified-memory event: a record, if the kind is on and the tool
/// configured its counter.
pub(crate) fn uvm(op: UvmOp, bytes: u64, address: u64) {
    type C = sys::CUpti_ActivityUnifiedMemoryCounterKind;
    let (counter, dur, flags, src, dst) = match op {
        UvmOp::HtoD => (
            C::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
            2_000 + bytes / 50,
            sys::CUpti_ActivityUnifiedMemoryMigrationCause::CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE.0,
            HOST,
            0,
        ),
        UvmOp::DtoH => (
            C::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
            2_000 + bytes / 50,
            sys::CUpti_ActivityUnifiedMemoryMigrationCause::CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_EVICTION.0,
            0,
            HOST,
        ),
        UvmOp::GpuFault => (
            C::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
            5_000,
            sys::CUpti_ActivityUnifiedMemoryAccessType::CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE.0,
            0,
            0,
        ),
        UvmOp::CpuFault => (
            C::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT,
            0,
            sys::CUpti_ActivityUnifiedMemoryAccessType::CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ.0,
            HOST,
            HOST,
        ),
        UvmOp::Thrashing => (
            C::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING,
            0,
            sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_THRASHING_IN_CPU.0,
            1,
            0,
        ),
    };
    // Migrations and faults are the device's work, on no stream of ours.
    let (start, end) = run_on(u32::MAX, dur.max(1));
    let kind = sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
    if !kind_on(kind) || !lock(&UM_CONFIGURED).contains(&counter.0) {
        return;
    }
    // SAFETY: plain C data; all zeroes is valid.
    let mut r: sys::CUpti_ActivityUnifiedMemoryCounter3 = unsafe { std::mem::zeroed() };
    r.kind = kind;
    r.counterKind = counter;
    r.value = if op == UvmOp::GpuFault { 1 } else { bytes };
    r.start = start;
    // CUPTI leaves the end of instants unset.
    r.end = if dur == 0 { 0 } else { end };
    r.address = address;
    r.srcId = src;
    r.dstId = dst;
    r.processId = std::process::id();
    r.flags = flags;
    if op == UvmOp::Thrashing {
        r.processors = [0b1, 0, 0, 0, 0];
    }
    emit(kind, "UNIFIED_MEMORY_COUNTER", r);
}

/// The processor id the fake gives the host (any id past the devices).
const HOST: u32 = 0xffff;

/// `cudaMalloc*(devPtr, size)` (the meta header's blocks for these all
/// start so).
#[repr(C)]
struct MallocParams {
    dev_ptr: *const *mut c_void,
    size: usize,
}

/// `cudaFree*(devPtr)`.
#[repr(C)]
struct FreeParams {
    dev_ptr: *mut c_void,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiActivityConfigureUnifiedMemoryCounter(
    config: *mut sys::CUpti_ActivityUnifiedMemoryCounterConfig,
    count: u32,
) -> sys::CUptiResult {
    guard(
        "cuptiActivityConfigureUnifiedMemoryCounter",
        sys::CUptiResult::CUPTI_ERROR_INVALID_PARAMETER,
        || {
            if config.is_null() {
                return sys::CUptiResult::CUPTI_ERROR_INVALID_PARAMETER;
            }
            if let Some(r) = super::forced("cuptiActivityConfigureUnifiedMemoryCounter") {
                return r;
            }
            // CUPTI needs the driver initialised: the fake's is once the
            // program's context exists (after `InitializeInjection`).
            if !super::exec::context_created() {
                return sys::CUptiResult::CUPTI_ERROR_NOT_INITIALIZED;
            }
            // SAFETY: the tool passes `count` configs.
            let configs = unsafe { std::slice::from_raw_parts(config, count as usize) };
            let mut on = lock(&UM_CONFIGURED);
            lock(&UM_LOG).extend(configs.iter().map(|c| (c.kind.0, c.enable)));
            for c in configs {
                if c.enable != 0 {
                    on.insert(c.kind.0);
                } else {
                    on.remove(&c.kind.0);
                }
            }
            sys::CUptiResult::CUPTI_SUCCESS
        },
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetDevice(d: *mut sys::CUdevice) -> sys::CUresult {
    guard(
        "cuCtxGetDevice",
        sys::CUresult::CUDA_ERROR_INVALID_VALUE,
        || {
            if d.is_null() {
                return sys::CUresult::CUDA_ERROR_INVALID_VALUE;
            }
            // SAFETY: valid out-pointer (checked).
            unsafe { *d = 0 };
            sys::CUresult::CUDA_SUCCESS
        },
    )
}

/// Compile-time check that these exports have the prototypes the cupti-sys
/// tables expect.
#[allow(dead_code)]
fn prototypes(c: &mut sys::CuptiApi, d: &mut sys::DriverApi) {
    c.cuptiActivityConfigureUnifiedMemoryCounter = Some(cuptiActivityConfigureUnifiedMemoryCounter);
    d.cuCtxGetDevice = Some(cuCtxGetDevice);
}
