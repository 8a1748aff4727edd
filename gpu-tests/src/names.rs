//! Matching names in a trace with the names a program states.
//!
//! API slices may carry a callback's header name (`cudaLaunchKernel_v7000`,
//! `cuLaunchKernel_ptsz`, `__cudaLaunchKernel`) or the plain function name,
//! and an application's runtime call may be traced as its driver twin. The
//! checker therefore compares normalised names, and a runtime function
//! stands for its driver equivalents.

use gpu_trace_reader::GpuEvent;

/// The function name without leading underscores, `_ptsz` / `_ptds` and
/// `_vNNNN` / `_v2` decorations.
pub fn api_base(name: &str) -> &str {
    let mut b = name.trim_start_matches('_');
    loop {
        let before = b;
        for suffix in ["_ptsz", "_ptds"] {
            b = b.strip_suffix(suffix).unwrap_or(b);
        }
        if let Some(i) = b.rfind("_v")
            && i + 2 < b.len()
            && b[i + 2..].chars().all(|c| c.is_ascii_digit())
        {
            b = &b[..i];
        }
        if b == before {
            return b;
        }
    }
}

/// Runtime functions and the driver functions that do the same (what the
/// driver API layer, gpu-trace's default, records for them).
const TWINS: &[(&str, &[&str])] = &[
    ("cudaLaunchKernel", &["cuLaunchKernel", "cuLaunchKernelEx"]),
    ("cudaLaunchKernelExC", &["cuLaunchKernelEx"]),
    (
        "cudaLaunchCooperativeKernel",
        &["cuLaunchCooperativeKernel", "cuLaunchKernelEx"],
    ),
    (
        "cudaMemcpy",
        &["cuMemcpy", "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpyDtoD"],
    ),
    ("cudaMemcpy2D", &["cuMemcpy2D", "cuMemcpy2DUnaligned"]),
    (
        "cudaMemcpyAsync",
        &[
            "cuMemcpyAsync",
            "cuMemcpyHtoDAsync",
            "cuMemcpyDtoHAsync",
            "cuMemcpyDtoDAsync",
        ],
    ),
    ("cudaMemset", &["cuMemsetD8", "cuMemsetD16", "cuMemsetD32"]),
    (
        "cudaMemsetAsync",
        &["cuMemsetD8Async", "cuMemsetD16Async", "cuMemsetD32Async"],
    ),
    ("cudaMalloc", &["cuMemAlloc"]),
    ("cudaMallocPitch", &["cuMemAllocPitch"]),
    ("cudaFree", &["cuMemFree"]),
    ("cudaMallocHost", &["cuMemHostAlloc", "cuMemAllocHost"]),
    ("cudaHostAlloc", &["cuMemHostAlloc"]),
    ("cudaFreeHost", &["cuMemFreeHost"]),
    ("cudaStreamSynchronize", &["cuStreamSynchronize"]),
    ("cudaEventSynchronize", &["cuEventSynchronize"]),
    ("cudaDeviceSynchronize", &["cuCtxSynchronize"]),
    (
        "cudaEventRecord",
        &[
            "cuEventRecord",
            "cudaEventRecordWithFlags",
            "cuEventRecordWithFlags",
        ],
    ),
    ("cudaStreamWaitEvent", &["cuStreamWaitEvent"]),
    ("cudaGraphLaunch", &["cuGraphLaunch"]),
];

/// Whether the traced API name `traced` is the function `wanted` (or its
/// driver twin).
pub fn api_is(traced: &str, wanted: &str) -> bool {
    let t = api_base(traced);
    let w = api_base(wanted);
    if t == w {
        return true;
    }
    TWINS
        .iter()
        .any(|(rt, drv)| (*rt == w && drv.contains(&t)) || (*rt == t && drv.contains(&w)))
}

/// Whether a GPU event is the kernel `name`: its slice name, mangled name,
/// or demangled name with or without parameters.
pub fn kernel_is(e: &GpuEvent, name: &str) -> bool {
    if e.name == name {
        return true;
    }
    let Some(k) = &e.kernel else { return false };
    k.name == name
        || k.demangled == name
        || k.demangled
            .strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('('))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decorations_are_removed() {
        assert_eq!(api_base("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(api_base("__cudaLaunchKernel"), "cudaLaunchKernel");
        assert_eq!(api_base("cudaLaunchKernel_ptsz_v7000"), "cudaLaunchKernel");
        assert_eq!(api_base("cuLaunchKernel_ptsz"), "cuLaunchKernel");
        assert_eq!(api_base("cuMemcpyHtoD_v2"), "cuMemcpyHtoD");
        assert_eq!(api_base("cuLaunchKernelEx"), "cuLaunchKernelEx");
        assert_eq!(
            api_base("cudaLaunchKernelExC_v11060"),
            "cudaLaunchKernelExC"
        );
        assert_eq!(api_base("x_v"), "x_v");
    }

    #[test]
    fn runtime_and_driver_twins() {
        assert!(api_is("cuCtxSynchronize", "cudaDeviceSynchronize"));
        assert!(api_is(
            "cudaDeviceSynchronize_v3020",
            "cudaDeviceSynchronize"
        ));
        assert!(api_is("cuStreamSynchronize_ptsz", "cudaStreamSynchronize"));
        assert!(!api_is("cudaStreamSynchronize", "cudaEventSynchronize"));
        assert!(api_is("cuLaunchKernel", "cudaLaunchKernel"));
        assert!(api_is("cuMemcpyHtoDAsync_v2", "cudaMemcpyAsync_v3020"));
        assert!(!api_is("cuMemcpyHtoDAsync_v2", "cudaMemcpy"));
        assert!(!api_is("cuLaunchKernel", "cudaLaunchKernelExC"));
    }
}
