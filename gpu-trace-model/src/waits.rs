//! Which API calls block the calling thread until the GPU has done
//! something: the synchronisations, and the copies that return only once
//! the copy is done. The time a thread spends inside them is the time it
//! stalled on the GPU (Linux perf shows this as `dma_fence` waits for
//! drivers it knows; CUDA and HIP keep it inside their own libraries).
//!
//! One list for both backends, keyed by the function's name as the trace
//! names its API slices, without the decorations that name versions and
//! per-thread default streams (`_v2`, `_v3020`, `_ptsz`, `_ptds`, `_spt`).
//! A call in the list that happens not to block (a device-to-device
//! `cudaMemcpy`) only adds its own, short, time.

/// Functions whose calls wait for the GPU, by base name.
///
/// - CUDA runtime: device, stream and event synchronisation, and the
///   synchronous copies (a pageable copy returns once the data has been
///   staged; every other returns when it is done).
/// - CUDA driver: the same, as the driver spells them (`cuCtxSynchronize`
///   for the device).
/// - HIP: the same again, plus `hipMemcpyWithStream` (a copy on a stream
///   that returns when it is done).
///
/// Memsets are left out (the synchronous ones return before the set is
/// done, except on pinned host or managed memory), and so are frees,
/// whose implicit synchronisation is an implementation detail.
pub const GPU_WAITS: &[&str] = &[
    // CUDA runtime
    "cudaDeviceSynchronize",
    "cudaThreadSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cudaMemcpy2D",
    "cudaMemcpy3D",
    "cudaMemcpyPeer",
    "cudaMemcpy3DPeer",
    "cudaMemcpyToSymbol",
    "cudaMemcpyFromSymbol",
    "cudaMemcpyToArray",
    "cudaMemcpyFromArray",
    "cudaMemcpy2DToArray",
    "cudaMemcpy2DFromArray",
    "cudaMemcpyArrayToArray",
    "cudaMemcpy2DArrayToArray",
    "cudaMemcpyBatch",
    // CUDA driver
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "cuMemcpy",
    "cuMemcpyHtoD",
    "cuMemcpyDtoH",
    "cuMemcpyDtoD",
    "cuMemcpyHtoA",
    "cuMemcpyAtoH",
    "cuMemcpyAtoD",
    "cuMemcpyDtoA",
    "cuMemcpyAtoA",
    "cuMemcpy2D",
    "cuMemcpy2DUnaligned",
    "cuMemcpy3D",
    "cuMemcpyPeer",
    "cuMemcpy3DPeer",
    // HIP
    "hipDeviceSynchronize",
    "hipCtxSynchronize",
    "hipStreamSynchronize",
    "hipEventSynchronize",
    "hipMemcpy",
    "hipMemcpyWithStream",
    "hipMemcpyHtoD",
    "hipMemcpyDtoH",
    "hipMemcpyDtoD",
    "hipMemcpyHtoA",
    "hipMemcpyAtoH",
    "hipMemcpyPeer",
    "hipMemcpy2D",
    "hipMemcpy3D",
    "hipMemcpyParam2D",
    "hipMemcpyToSymbol",
    "hipMemcpyFromSymbol",
    "hipMemcpyToArray",
    "hipMemcpyFromArray",
    "hipMemcpy2DToArray",
    "hipMemcpy2DFromArray",
    "hipDrvMemcpy2DUnaligned",
    "hipDrvMemcpy3D",
];

/// `name` without the decorations the backends add to function names: a
/// leading `__`, and trailing `_ptsz`, `_ptds`, `_spt`, `_v2`, `_v3020`
/// (in any combination: `cuMemcpyHtoDAsync_v2_ptsz`).
pub fn base_name(name: &str) -> &str {
    let mut b = name.strip_prefix("__").unwrap_or(name);
    loop {
        let before = b;
        for suffix in ["_ptsz", "_ptds", "_spt"] {
            b = b.strip_suffix(suffix).unwrap_or(b);
        }
        if let Some(i) = b.rfind("_v")
            && i + 2 < b.len()
            && b[i + 2..].bytes().all(|c| c.is_ascii_digit())
        {
            b = &b[..i];
        }
        if b == before {
            return b;
        }
    }
}

/// Whether a call of the function `name` (as the trace names it) waits
/// for the GPU.
pub fn waits_for_gpu(name: &str) -> bool {
    GPU_WAITS.contains(&base_name(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synchronisations_and_blocking_copies_of_every_layer_wait() {
        for n in [
            "cuStreamSynchronize",
            "cuStreamSynchronize_ptsz",
            "cuCtxSynchronize",
            "cuEventSynchronize",
            "cudaDeviceSynchronize_v3020",
            "cudaStreamSynchronize_ptsz_v7000",
            "cudaEventSynchronize",
            "cudaMemcpy_v3020",
            "cudaMemcpy_ptds_v7000",
            "cuMemcpyHtoD_v2",
            "cuMemcpyDtoH_v2_ptds",
            "cuMemcpy",
            "cuMemcpyPeer",
            "hipStreamSynchronize",
            "hipStreamSynchronize_spt",
            "hipDeviceSynchronize",
            "hipMemcpy",
            "hipMemcpyWithStream",
        ] {
            assert!(waits_for_gpu(n), "{n}");
        }
    }

    #[test]
    fn asynchronous_calls_do_not_wait() {
        for n in [
            "cuMemcpyHtoDAsync_v2",
            "cuMemcpyAsync_ptsz",
            "cudaMemcpyAsync_v3020",
            "cuLaunchKernel",
            "cudaLaunchKernel_v7000",
            "cuMemsetD8_v2",
            "cudaMemset_v3020",
            "cuStreamWaitEvent",
            "cuEventRecord",
            "cuMemFree_v2",
            "hipMemcpyAsync",
            "hipLaunchKernel",
            "hipStreamQuery",
            "cuStreamSynchronizeX",
            "",
        ] {
            assert!(!waits_for_gpu(n), "{n}");
        }
    }

    #[test]
    fn base_names_drop_every_decoration() {
        assert_eq!(base_name("cuMemcpyHtoDAsync_v2_ptsz"), "cuMemcpyHtoDAsync");
        assert_eq!(base_name("__cudaLaunchKernel_v13000"), "cudaLaunchKernel");
        assert_eq!(base_name("hipMemcpy_spt"), "hipMemcpy");
        assert_eq!(base_name("cudaMemcpy_ptds_v7000"), "cudaMemcpy");
        // `_v` without digits is part of the name.
        assert_eq!(base_name("cuFoo_v"), "cuFoo_v");
        assert_eq!(base_name("cuFoo_vx2"), "cuFoo_vx2");
    }

    #[test]
    fn the_list_holds_base_names_only() {
        for n in GPU_WAITS {
            assert_eq!(base_name(n), *n, "{n} carries a decoration");
        }
    }
}
