//! Per-call parameter access: which `*_params` struct a callback id carries,
//! and where its stream, event and launch configuration are.
//!
//! CUPTI passes, for each runtime/driver callback id `X`, a pointer to the
//! struct `X_params` of `generated_cuda_runtime_api_meta.h` /
//! `generated_cuda_meta.h`. The tables below pair the ids with those structs.

use std::ffi::c_void;

use cupti_sys as sys;
use sys::CUpti_driver_api_trace_cbid_enum as D;
use sys::CUpti_runtime_api_trace_cbid_enum as R;

/// Launch geometry of a kernel launch call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Grid size in blocks (x, y, z).
    pub grid: [u32; 3],
    /// Block size in threads (x, y, z).
    pub block: [u32; 3],
    /// Dynamic shared memory in bytes.
    pub dynamic_shared_mem: u64,
}

impl LaunchConfig {
    /// Threads per block.
    pub fn threads_per_block(&self) -> u64 {
        self.block.iter().map(|&d| u64::from(d)).product()
    }
}

/// The stream argument of a runtime API call, for the calls that take one.
///
/// # Safety
///
/// `p` must be CUPTI's `functionParams` for runtime callback id `cbid`, valid
/// for the duration of the call.
pub(crate) unsafe fn runtime_stream(cbid: u32, p: *const c_void) -> Option<u64> {
    if p.is_null() {
        return None;
    }
    macro_rules! read {
        ($ty:ident, $field:ident) => {
            // SAFETY: for this id CUPTI passes a `$ty` (module docs); non-null above.
            Some(unsafe { (*p.cast::<sys::$ty>()).$field } as u64)
        };
    }
    match R(cbid) {
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020 => {
            read!(cudaMemcpyAsync_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020 => {
            read!(cudaMemcpyToSymbolAsync_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020 => {
            read!(cudaMemcpyFromSymbolAsync_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020 => {
            read!(cudaMemcpy2DAsync_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToArrayAsync_v3020 => {
            read!(cudaMemcpyToArrayAsync_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArrayAsync_v3020 => {
            read!(cudaMemcpy2DToArrayAsync_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromArrayAsync_v3020 => {
            read!(cudaMemcpyFromArrayAsync_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArrayAsync_v3020 => {
            read!(cudaMemcpy2DFromArrayAsync_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020 => {
            read!(cudaMemcpy3DAsync_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_v4000 => {
            read!(cudaMemcpy3DPeerAsync_v4000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000 => {
            read!(cudaMemcpyPeerAsync_v4000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020 => {
            read!(cudaMemsetAsync_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020 => {
            read!(cudaMemset2DAsync_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_v3020 => {
            read!(cudaMemset3DAsync_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000 => {
            read!(cudaMemcpyBatchAsync_v13000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_v13000 => {
            read!(cudaMemcpy3DBatchAsync_v13000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000 => {
            read!(cudaMemcpyAsync_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_ptsz_v7000 => {
            read!(cudaMemcpyToSymbolAsync_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000 => {
            read!(cudaMemcpyFromSymbolAsync_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000 => {
            read!(cudaMemcpy2DAsync_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToArrayAsync_ptsz_v7000 => {
            read!(cudaMemcpyToArrayAsync_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArrayAsync_ptsz_v7000 => {
            read!(cudaMemcpy2DToArrayAsync_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromArrayAsync_ptsz_v7000 => {
            read!(cudaMemcpyFromArrayAsync_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArrayAsync_ptsz_v7000 => {
            read!(cudaMemcpy2DFromArrayAsync_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000 => {
            read!(cudaMemcpy3DAsync_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_ptsz_v7000 => {
            read!(cudaMemcpy3DPeerAsync_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000 => {
            read!(cudaMemsetAsync_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_ptsz_v7000 => {
            read!(cudaMemset2DAsync_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_ptsz_v7000 => {
            read!(cudaMemset3DAsync_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v13000 => {
            read!(cudaMemcpyBatchAsync_ptsz_v13000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_ptsz_v13000 => {
            read!(cudaMemcpy3DBatchAsync_ptsz_v13000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 => {
            read!(cudaLaunchKernel_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 => {
            read!(cudaLaunchKernel_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000 => {
            read!(cudaLaunchCooperativeKernel_v9000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000 => {
            read!(cudaLaunchCooperativeKernel_ptsz_v9000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 => {
            read!(cudaGraphLaunch_v10000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000 => {
            read!(cudaGraphLaunch_ptsz_v10000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020 => {
            read!(cudaStreamSynchronize_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000 => {
            read!(cudaStreamSynchronize_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020 => {
            read!(cudaStreamWaitEvent_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000 => {
            read!(cudaStreamWaitEvent_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020 => {
            read!(cudaEventRecord_v3020_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000 => {
            read!(cudaEventRecord_ptsz_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010 => {
            read!(cudaEventRecordWithFlags_v11010_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010 => {
            read!(cudaEventRecordWithFlags_ptsz_v11010_params, stream)
        }
        // CUDA 13's `<<<>>>` path. The meta header has no params struct for
        // it; its C signature is cudaLaunchKernel's with a `cudaKernel_t` for
        // the `const void*` (crt/device_functions.h), so the layout is the
        // same. Inferred, and checked by the GPU smoke test.
        R::CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000
        | R::CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000 => {
            read!(cudaLaunchKernel_v7000_params, stream)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 => {
            // SAFETY: as above; `config` is checked for null before use.
            let c = unsafe { (*p.cast::<sys::cudaLaunchKernelExC_v11060_params>()).config };
            // SAFETY: CUPTI passes the caller's config, valid during the call.
            (!c.is_null()).then(|| unsafe { (*c).stream } as u64)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060 => {
            // SAFETY: as above.
            let c = unsafe { (*p.cast::<sys::cudaLaunchKernelExC_ptsz_v11060_params>()).config };
            // SAFETY: as above.
            (!c.is_null()).then(|| unsafe { (*c).stream } as u64)
        }
        _ => None,
    }
}

/// The stream argument of a driver API call, for the calls that take one.
///
/// # Safety
///
/// As [`runtime_stream`], for driver callback ids.
pub(crate) unsafe fn driver_stream(cbid: u32, p: *const c_void) -> Option<u64> {
    if p.is_null() {
        return None;
    }
    macro_rules! read {
        ($ty:ident, $field:ident) => {
            // SAFETY: for this id CUPTI passes a `$ty` (module docs); non-null above.
            Some(unsafe { (*p.cast::<sys::$ty>()).$field } as u64)
        };
    }
    match D(cbid) {
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync => read!(cuMemcpyHtoDAsync_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync => read!(cuMemcpyDtoHAsync_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync => read!(cuMemcpyDtoDAsync_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoAAsync => read!(cuMemcpyHtoAAsync_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync => read!(cuMemcpyAtoHAsync_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync => read!(cuMemcpy2DAsync_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync => read!(cuMemcpy3DAsync_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2 => {
            read!(cuMemcpyHtoDAsync_v2_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2 => {
            read!(cuMemcpyDtoHAsync_v2_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2 => {
            read!(cuMemcpyDtoDAsync_v2_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoAAsync_v2 => {
            read!(cuMemcpyHtoAAsync_v2_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync_v2 => {
            read!(cuMemcpyAtoHAsync_v2_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2 => read!(cuMemcpy2DAsync_v2_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2 => read!(cuMemcpy3DAsync_v2_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz => {
            read!(cuMemcpyHtoDAsync_v2_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz => {
            read!(cuMemcpyDtoHAsync_v2_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz => {
            read!(cuMemcpyDtoDAsync_v2_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoAAsync_v2_ptsz => {
            read!(cuMemcpyHtoAAsync_v2_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync_v2_ptsz => {
            read!(cuMemcpyAtoHAsync_v2_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2_ptsz => {
            read!(cuMemcpy2DAsync_v2_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2_ptsz => {
            read!(cuMemcpy3DAsync_v2_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync => read!(cuMemcpyAsync_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz => read!(cuMemcpyAsync_ptsz_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync => read!(cuMemcpyPeerAsync_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz => {
            read!(cuMemcpyPeerAsync_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync => {
            read!(cuMemcpy3DPeerAsync_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync_ptsz => {
            read!(cuMemcpy3DPeerAsync_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync => read!(cuMemcpyBatchAsync_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_ptsz => {
            read!(cuMemcpyBatchAsync_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2 => {
            read!(cuMemcpyBatchAsync_v2_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2_ptsz => {
            read!(cuMemcpyBatchAsync_v2_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync => {
            read!(cuMemcpy3DBatchAsync_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_ptsz => {
            read!(cuMemcpy3DBatchAsync_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_v2 => {
            read!(cuMemcpy3DBatchAsync_v2_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_v2_ptsz => {
            read!(cuMemcpy3DBatchAsync_v2_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async => read!(cuMemsetD8Async_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async => read!(cuMemsetD16Async_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async => read!(cuMemsetD32Async_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async => read!(cuMemsetD2D8Async_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async => read!(cuMemsetD2D16Async_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async => read!(cuMemsetD2D32Async_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz => {
            read!(cuMemsetD8Async_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz => {
            read!(cuMemsetD16Async_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz => {
            read!(cuMemsetD32Async_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async_ptsz => {
            read!(cuMemsetD2D8Async_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async_ptsz => {
            read!(cuMemsetD2D16Async_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async_ptsz => {
            read!(cuMemsetD2D32Async_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel => read!(cuLaunchKernel_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz => {
            read!(cuLaunchKernel_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel => {
            read!(cuLaunchCooperativeKernel_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz => {
            read!(cuLaunchCooperativeKernel_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch => read!(cuGraphLaunch_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz => read!(cuGraphLaunch_ptsz_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize => {
            read!(cuStreamSynchronize_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz => {
            read!(cuStreamSynchronize_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent => read!(cuStreamWaitEvent_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz => {
            read!(cuStreamWaitEvent_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuEventRecord => read!(cuEventRecord_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz => read!(cuEventRecord_ptsz_params, hStream),
        D::CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags => {
            read!(cuEventRecordWithFlags_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz => {
            read!(cuEventRecordWithFlags_ptsz_params, hStream)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx => {
            // SAFETY: as above; `config` is checked for null before use.
            let c = unsafe { (*p.cast::<sys::cuLaunchKernelEx_params>()).config };
            // SAFETY: CUPTI passes the caller's config, valid during the call.
            (!c.is_null()).then(|| unsafe { (*c).hStream } as u64)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz => {
            // SAFETY: as above.
            let c = unsafe { (*p.cast::<sys::cuLaunchKernelEx_ptsz_params>()).config };
            // SAFETY: as above.
            (!c.is_null()).then(|| unsafe { (*c).hStream } as u64)
        }
        _ => None,
    }
}

/// The size argument of the 1-D asynchronous copies and sets: bytes for
/// copies, elements for sets. Only its being zero is used (such a call
/// succeeds and runs nothing on the GPU).
///
/// # Safety
///
/// As [`runtime_stream`], for runtime callback id `cbid`.
pub(crate) unsafe fn runtime_size(cbid: u32, p: *const c_void) -> Option<u64> {
    if p.is_null() {
        return None;
    }
    macro_rules! read {
        ($ty:ident, $field:ident) => {
            // SAFETY: for this id CUPTI passes a `$ty` (module docs); non-null above.
            Some(unsafe { (*p.cast::<sys::$ty>()).$field } as u64)
        };
    }
    match R(cbid) {
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020 => {
            read!(cudaMemcpyAsync_v3020_params, count)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000 => {
            read!(cudaMemcpyAsync_ptsz_v7000_params, count)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000 => {
            read!(cudaMemcpyPeerAsync_v4000_params, count)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020 => {
            read!(cudaMemsetAsync_v3020_params, count)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000 => {
            read!(cudaMemsetAsync_ptsz_v7000_params, count)
        }
        _ => None,
    }
}

/// As [`runtime_size`], for driver callback id `cbid`.
///
/// # Safety
///
/// As [`driver_stream`].
pub(crate) unsafe fn driver_size(cbid: u32, p: *const c_void) -> Option<u64> {
    if p.is_null() {
        return None;
    }
    macro_rules! read {
        ($ty:ident, $field:ident) => {
            // SAFETY: for this id CUPTI passes a `$ty` (module docs); non-null above.
            Some(unsafe { (*p.cast::<sys::$ty>()).$field } as u64)
        };
    }
    match D(cbid) {
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync => read!(cuMemcpyHtoDAsync_params, ByteCount),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync => read!(cuMemcpyDtoHAsync_params, ByteCount),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync => read!(cuMemcpyDtoDAsync_params, ByteCount),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2 => {
            read!(cuMemcpyHtoDAsync_v2_params, ByteCount)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2 => {
            read!(cuMemcpyDtoHAsync_v2_params, ByteCount)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2 => {
            read!(cuMemcpyDtoDAsync_v2_params, ByteCount)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz => {
            read!(cuMemcpyHtoDAsync_v2_ptsz_params, ByteCount)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz => {
            read!(cuMemcpyDtoHAsync_v2_ptsz_params, ByteCount)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz => {
            read!(cuMemcpyDtoDAsync_v2_ptsz_params, ByteCount)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync => read!(cuMemcpyAsync_params, ByteCount),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz => {
            read!(cuMemcpyAsync_ptsz_params, ByteCount)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync => read!(cuMemcpyPeerAsync_params, ByteCount),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz => {
            read!(cuMemcpyPeerAsync_ptsz_params, ByteCount)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async => read!(cuMemsetD8Async_params, N),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async => read!(cuMemsetD16Async_params, N),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async => read!(cuMemsetD32Async_params, N),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz => read!(cuMemsetD8Async_ptsz_params, N),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz => read!(cuMemsetD16Async_ptsz_params, N),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz => read!(cuMemsetD32Async_ptsz_params, N),
        _ => None,
    }
}

/// The event argument of a runtime API call (record / synchronize / wait).
///
/// # Safety
///
/// As [`runtime_stream`].
pub(crate) unsafe fn runtime_event(cbid: u32, p: *const c_void) -> Option<u64> {
    if p.is_null() {
        return None;
    }
    macro_rules! read {
        ($ty:ident, $field:ident) => {
            // SAFETY: for this id CUPTI passes a `$ty` (module docs); non-null above.
            Some(unsafe { (*p.cast::<sys::$ty>()).$field } as u64)
        };
    }
    match R(cbid) {
        R::CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020 => {
            read!(cudaEventRecord_v3020_params, event)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000 => {
            read!(cudaEventRecord_ptsz_v7000_params, event)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010 => {
            read!(cudaEventRecordWithFlags_v11010_params, event)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010 => {
            read!(cudaEventRecordWithFlags_ptsz_v11010_params, event)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020 => {
            read!(cudaEventSynchronize_v3020_params, event)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020 => {
            read!(cudaStreamWaitEvent_v3020_params, event)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000 => {
            read!(cudaStreamWaitEvent_ptsz_v7000_params, event)
        }
        _ => None,
    }
}

/// The event argument of a driver API call (record / synchronize / wait).
///
/// # Safety
///
/// As [`runtime_stream`], for driver callback ids.
pub(crate) unsafe fn driver_event(cbid: u32, p: *const c_void) -> Option<u64> {
    if p.is_null() {
        return None;
    }
    macro_rules! read {
        ($ty:ident, $field:ident) => {
            // SAFETY: for this id CUPTI passes a `$ty` (module docs); non-null above.
            Some(unsafe { (*p.cast::<sys::$ty>()).$field } as u64)
        };
    }
    match D(cbid) {
        D::CUPTI_DRIVER_TRACE_CBID_cuEventRecord => read!(cuEventRecord_params, hEvent),
        D::CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz => read!(cuEventRecord_ptsz_params, hEvent),
        D::CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags => {
            read!(cuEventRecordWithFlags_params, hEvent)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz => {
            read!(cuEventRecordWithFlags_ptsz_params, hEvent)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize => read!(cuEventSynchronize_params, hEvent),
        D::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent => read!(cuStreamWaitEvent_params, hEvent),
        D::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz => {
            read!(cuStreamWaitEvent_ptsz_params, hEvent)
        }
        _ => None,
    }
}

/// Grid, block and dynamic shared memory of a runtime kernel launch.
///
/// # Safety
///
/// As [`runtime_stream`].
pub(crate) unsafe fn runtime_launch(cbid: u32, p: *const c_void) -> Option<LaunchConfig> {
    if p.is_null() {
        return None;
    }
    macro_rules! classic {
        ($ty:ident) => {{
            // SAFETY: for this id CUPTI passes a `$ty` (module docs); non-null above.
            let q = unsafe { &*p.cast::<sys::$ty>() };
            Some(LaunchConfig {
                grid: [q.gridDim.x, q.gridDim.y, q.gridDim.z],
                block: [q.blockDim.x, q.blockDim.y, q.blockDim.z],
                dynamic_shared_mem: q.sharedMem as u64,
            })
        }};
    }
    macro_rules! ex {
        ($ty:ident) => {{
            // SAFETY: as above; `config` is checked for null before use.
            let c = unsafe { (*p.cast::<sys::$ty>()).config };
            // SAFETY: CUPTI passes the caller's config, valid during the call.
            let c = unsafe { c.as_ref() }?;
            Some(LaunchConfig {
                grid: [c.gridDim.x, c.gridDim.y, c.gridDim.z],
                block: [c.blockDim.x, c.blockDim.y, c.blockDim.z],
                dynamic_shared_mem: c.dynamicSmemBytes as u64,
            })
        }};
    }
    match R(cbid) {
        R::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 => {
            classic!(cudaLaunchKernel_v7000_params)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 => {
            classic!(cudaLaunchKernel_ptsz_v7000_params)
        }
        // Same layout as cudaLaunchKernel (see `runtime_stream`).
        R::CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000
        | R::CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000 => {
            classic!(cudaLaunchKernel_v7000_params)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000 => {
            classic!(cudaLaunchCooperativeKernel_v9000_params)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000 => {
            classic!(cudaLaunchCooperativeKernel_ptsz_v9000_params)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 => {
            ex!(cudaLaunchKernelExC_v11060_params)
        }
        R::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060 => {
            ex!(cudaLaunchKernelExC_ptsz_v11060_params)
        }
        _ => None,
    }
}

/// Grid, block, dynamic shared memory and `CUfunction` of a driver kernel launch.
///
/// # Safety
///
/// As [`runtime_stream`], for driver callback ids.
pub(crate) unsafe fn driver_launch(
    cbid: u32,
    p: *const c_void,
) -> Option<(LaunchConfig, sys::CUfunction)> {
    if p.is_null() {
        return None;
    }
    macro_rules! classic {
        ($ty:ident) => {{
            // SAFETY: for this id CUPTI passes a `$ty` (module docs); non-null above.
            let q = unsafe { &*p.cast::<sys::$ty>() };
            Some((
                LaunchConfig {
                    grid: [q.gridDimX, q.gridDimY, q.gridDimZ],
                    block: [q.blockDimX, q.blockDimY, q.blockDimZ],
                    dynamic_shared_mem: u64::from(q.sharedMemBytes),
                },
                q.f,
            ))
        }};
    }
    macro_rules! ex {
        ($ty:ident) => {{
            // SAFETY: as above; `config` is checked for null before use.
            let q = unsafe { &*p.cast::<sys::$ty>() };
            // SAFETY: CUPTI passes the caller's config, valid during the call.
            let c = unsafe { q.config.as_ref() }?;
            Some((
                LaunchConfig {
                    grid: [c.gridDimX, c.gridDimY, c.gridDimZ],
                    block: [c.blockDimX, c.blockDimY, c.blockDimZ],
                    dynamic_shared_mem: u64::from(c.sharedMemBytes),
                },
                q.f,
            ))
        }};
    }
    match D(cbid) {
        D::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel => classic!(cuLaunchKernel_params),
        D::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz => classic!(cuLaunchKernel_ptsz_params),
        D::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel => {
            classic!(cuLaunchCooperativeKernel_params)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz => {
            classic!(cuLaunchCooperativeKernel_ptsz_params)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx => ex!(cuLaunchKernelEx_params),
        D::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz => ex!(cuLaunchKernelEx_ptsz_params),
        _ => None,
    }
}

/// What an allocation or free call did, as its parameters say at the
/// call's exit (an allocation's pointer is an out-parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryCall {
    /// Device memory at `ptr` (`cuMemAlloc_v2`, `cuMemAllocPitch_v2`,
    /// `cuMemAllocManaged`, and the stream-ordered `cuMemAllocAsync` /
    /// `cuMemAllocFromPoolAsync`).
    Alloc {
        /// The device pointer returned.
        ptr: u64,
        /// Bytes (pitch × height for a pitched allocation).
        bytes: u64,
        /// Managed (unified) memory.
        managed: bool,
        /// Allocated in stream order (it exists once the stream reaches it).
        stream_ordered: bool,
    },
    /// `cuMemFree_v2`, or the stream-ordered `cuMemFreeAsync`.
    Free {
        /// The device pointer freed.
        ptr: u64,
        /// Freed in stream order.
        stream_ordered: bool,
    },
    /// Physical memory created for virtual memory management
    /// (`cuMemCreate`), on the device `device` (`None`: not device memory).
    Create {
        /// The allocation handle returned.
        handle: u64,
        /// Bytes.
        bytes: u64,
        /// CUDA device ordinal of the memory, if on a device.
        device: Option<u32>,
    },
    /// `cuMemRelease` of a `cuMemCreate` handle.
    Release {
        /// The handle.
        handle: u64,
    },
}

/// The driver callback ids [`driver_memory`] reads.
pub(crate) const MANAGED_ALLOC_CALL_ID: D = D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged;

pub(crate) const MEMORY_CALL_IDS: [D; 12] = [
    D::CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
    D::CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    D::CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    D::CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
    D::CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
    D::CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
];

/// What the driver allocation or free `cbid` did, read from its
/// parameters at its exit. `None` for other calls, and for an allocation
/// whose out-parameter is null.
///
/// # Safety
///
/// As [`driver_stream`]; and the call has returned (its out-parameters
/// are written).
pub(crate) unsafe fn driver_memory(cbid: u32, p: *const c_void) -> Option<MemoryCall> {
    if p.is_null() {
        return None;
    }
    macro_rules! alloc {
        ($ty:ident, $managed:expr, $ordered:expr) => {{
            // SAFETY: for this id CUPTI passes a `$ty` (module docs); non-null above.
            let q = unsafe { &*p.cast::<sys::$ty>() };
            // SAFETY: the caller's out-pointer, written by the call that returned.
            let ptr = unsafe { q.dptr.as_ref() }.copied()?;
            Some(MemoryCall::Alloc {
                ptr,
                bytes: q.bytesize as u64,
                managed: $managed,
                stream_ordered: $ordered,
            })
        }};
    }
    macro_rules! free {
        ($ty:ident, $ordered:expr) => {{
            // SAFETY: for this id CUPTI passes a `$ty` (module docs); non-null above.
            let q = unsafe { &*p.cast::<sys::$ty>() };
            Some(MemoryCall::Free {
                ptr: q.dptr,
                stream_ordered: $ordered,
            })
        }};
    }
    match D(cbid) {
        D::CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2 => alloc!(cuMemAlloc_v2_params, false, false),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged => {
            alloc!(cuMemAllocManaged_params, true, false)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync => alloc!(cuMemAllocAsync_params, false, true),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz => {
            alloc!(cuMemAllocAsync_ptsz_params, false, true)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync => {
            alloc!(cuMemAllocFromPoolAsync_params, false, true)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz => {
            alloc!(cuMemAllocFromPoolAsync_ptsz_params, false, true)
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2 => {
            // SAFETY: as in `alloc!`.
            let q = unsafe { &*p.cast::<sys::cuMemAllocPitch_v2_params>() };
            // SAFETY: the caller's out-pointers, written by the call.
            let (ptr, pitch) = unsafe { (q.dptr.as_ref()?, q.pPitch.as_ref()?) };
            Some(MemoryCall::Alloc {
                ptr: *ptr,
                bytes: (*pitch as u64).saturating_mul(q.Height as u64),
                managed: false,
                stream_ordered: false,
            })
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2 => free!(cuMemFree_v2_params, false),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync => free!(cuMemFreeAsync_params, true),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz => free!(cuMemFreeAsync_ptsz_params, true),
        D::CUPTI_DRIVER_TRACE_CBID_cuMemCreate => {
            // SAFETY: as in `alloc!`.
            let q = unsafe { &*p.cast::<sys::cuMemCreate_params>() };
            // SAFETY: the caller's out-pointer, written by the call.
            let handle = unsafe { q.handle.as_ref() }.copied()?;
            // SAFETY: the caller's property block, valid during the call.
            let device = unsafe { q.prop.as_ref() }.and_then(|prop| {
                (prop.location.type_ == sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE)
                    .then(|| u32::try_from(prop.location.id).ok())
                    .flatten()
            });
            Some(MemoryCall::Create {
                handle,
                bytes: q.size as u64,
                device,
            })
        }
        D::CUPTI_DRIVER_TRACE_CBID_cuMemRelease => {
            // SAFETY: as in `alloc!`.
            let q = unsafe { &*p.cast::<sys::cuMemRelease_params>() };
            Some(MemoryCall::Release { handle: q.handle })
        }
        _ => None,
    }
}
