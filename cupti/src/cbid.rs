//! Runtime and driver callback ids: names and a classification of what each
//! call does, used to pick which ids to enable and which calls get arrows.
//!
//! Enable single ids ([`crate::callback::Subscriber::enable`]) rather than
//! whole domains: subscribing to all runtime/driver callbacks costs 20–45% on
//! a PyTorch training loop, mostly in calls nobody looks at.

use std::sync::OnceLock;

use cupti_sys::cbid_names;

/// The two API callback domains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApiDomain {
    /// `CUPTI_CB_DOMAIN_RUNTIME_API` (`cuda*`).
    Runtime,
    /// `CUPTI_CB_DOMAIN_DRIVER_API` (`cu*`).
    Driver,
}

/// What a synchronizing call waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncKind {
    /// `cudaStreamSynchronize`, `cuStreamSynchronize`.
    Stream,
    /// `cudaDeviceSynchronize` (and the old `cudaThreadSynchronize`).
    Device,
    /// `cuCtxSynchronize`.
    Context,
    /// `cudaEventSynchronize`, `cuEventSynchronize`.
    Event,
}

/// What a runtime or driver call does, as far as a timeline cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallKind {
    /// Any kernel launch (`cudaLaunchKernel*`, `cuLaunchKernel*`, cooperative, `Ex`).
    KernelLaunch,
    /// `cudaGraphLaunch`, `cuGraphLaunch`.
    GraphLaunch,
    /// Any copy (`cudaMemcpy*`, `cuMemcpy*`, sync or async).
    Memcpy,
    /// Any set (`cudaMemset*`, `cuMemsetD*`).
    Memset,
    /// Device, host or managed allocation.
    Alloc,
    /// The matching frees.
    Free,
    /// A call that blocks the host until something finishes.
    Sync(SyncKind),
    /// `cudaEventRecord*`, `cuEventRecord*`.
    EventRecord,
    /// `cudaStreamWaitEvent`, `cuStreamWaitEvent`.
    StreamWaitEvent,
    /// Anything else.
    Other,
}

fn table(domain: ApiDomain) -> &'static [(u32, &'static str)] {
    match domain {
        ApiDomain::Runtime => cbid_names::RUNTIME_CBID_NAMES,
        ApiDomain::Driver => cbid_names::DRIVER_CBID_NAMES,
    }
}

/// The header name of a callback id, without the `CUPTI_*_TRACE_CBID_` prefix
/// (e.g. `cudaLaunchKernel_v7000`, `cuMemcpyHtoDAsync_v2`).
pub fn name(domain: ApiDomain, cbid: u32) -> Option<&'static str> {
    let t = table(domain);
    t.binary_search_by_key(&cbid, |e| e.0).ok().map(|i| t[i].1)
}

/// The callback id of a header name (see [`name`]).
pub fn by_name(domain: ApiDomain, name: &str) -> Option<u32> {
    table(domain).iter().find(|e| e.1 == name).map(|e| e.0)
}

/// The function name a callback id stands for: [`name`] without the runtime
/// `_vNNNN` suffix and the `_ptsz` / `_ptds` / driver `_v2` decorations.
pub fn base_name(name: &str) -> &str {
    let mut b = name.strip_prefix("__").unwrap_or(name);
    loop {
        let before = b;
        for suffix in ["_ptsz", "_ptds"] {
            b = b.strip_suffix(suffix).unwrap_or(b);
        }
        if let Some(i) = b.rfind("_v")
            && b[i + 2..].chars().all(|c| c.is_ascii_digit())
            && i + 2 < b.len()
        {
            b = &b[..i];
        }
        if b == before {
            return b;
        }
    }
}

/// Classifies a function by name (a [`base_name`]).
pub fn classify_name(base: &str) -> CallKind {
    let (rt, f) = match base.strip_prefix("cuda") {
        Some(f) => (true, f),
        None => match base
            .strip_prefix("cu64")
            .or_else(|| base.strip_prefix("cu"))
        {
            Some(f) => (false, f),
            None => return CallKind::Other,
        },
    };
    let is = |s: &str| f == s;
    match () {
        _ if is("GraphLaunch") => CallKind::GraphLaunch,
        _ if f.starts_with("Launch") && !f.contains("HostFunc") => CallKind::KernelLaunch,
        _ if f.starts_with("Memcpy") => CallKind::Memcpy,
        _ if (rt && f.starts_with("Memset")) || (!rt && f.starts_with("MemsetD")) => {
            CallKind::Memset
        }
        _ if rt && (f.starts_with("Malloc") || is("HostAlloc")) => CallKind::Alloc,
        _ if !rt && (f.starts_with("MemAlloc") || is("MemHostAlloc")) => CallKind::Alloc,
        _ if rt && f.starts_with("Free") => CallKind::Free,
        _ if !rt && f.starts_with("MemFree") => CallKind::Free,
        _ if is("StreamSynchronize") => CallKind::Sync(SyncKind::Stream),
        _ if rt && (is("DeviceSynchronize") || is("ThreadSynchronize")) => {
            CallKind::Sync(SyncKind::Device)
        }
        _ if !rt && is("CtxSynchronize") => CallKind::Sync(SyncKind::Context),
        _ if is("EventSynchronize") => CallKind::Sync(SyncKind::Event),
        _ if is("EventRecord") || is("EventRecordWithFlags") => CallKind::EventRecord,
        _ if is("StreamWaitEvent") => CallKind::StreamWaitEvent,
        _ => CallKind::Other,
    }
}

fn kinds(domain: ApiDomain) -> &'static [CallKind] {
    static RT: OnceLock<Vec<CallKind>> = OnceLock::new();
    static DRV: OnceLock<Vec<CallKind>> = OnceLock::new();
    let cell = match domain {
        ApiDomain::Runtime => &RT,
        ApiDomain::Driver => &DRV,
    };
    cell.get_or_init(|| {
        let t = table(domain);
        let len = t.last().map_or(0, |e| e.0 as usize + 1);
        let mut v = vec![CallKind::Other; len];
        for (id, name) in t {
            v[*id as usize] = classify_name(base_name(name));
        }
        v
    })
}

/// Classifies a callback id (O(1) after the first call per domain). Ids newer
/// than the bound headers are [`CallKind::Other`].
pub fn classify(domain: ApiDomain, cbid: u32) -> CallKind {
    kinds(domain)
        .get(cbid as usize)
        .copied()
        .unwrap_or(CallKind::Other)
}

/// Every callback id of `domain` whose call is of kind `kind`.
pub fn ids_of(domain: ApiDomain, kind: CallKind) -> impl Iterator<Item = u32> {
    kinds(domain)
        .iter()
        .enumerate()
        .filter(move |(_, k)| **k == kind)
        .map(|(i, _)| i as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(n: &str) -> CallKind {
        classify(ApiDomain::Runtime, by_name(ApiDomain::Runtime, n).unwrap())
    }
    fn drv(n: &str) -> CallKind {
        classify(ApiDomain::Driver, by_name(ApiDomain::Driver, n).unwrap())
    }

    #[test]
    fn base_names() {
        assert_eq!(base_name("cudaLaunchKernel_ptsz_v7000"), "cudaLaunchKernel");
        assert_eq!(base_name("cuMemcpyHtoDAsync_v2_ptsz"), "cuMemcpyHtoDAsync");
        assert_eq!(base_name("__cudaLaunchKernel_v13000"), "cudaLaunchKernel");
        assert_eq!(base_name("cuCtxSynchronize_v2"), "cuCtxSynchronize");
        assert_eq!(base_name("cudaMemcpy_ptds_v7000"), "cudaMemcpy");
        assert_eq!(
            base_name("cuMemcpy3DBatchAsync_v2_ptsz"),
            "cuMemcpy3DBatchAsync"
        );
    }

    #[test]
    fn classification_covers_every_launch_path() {
        for n in [
            "cudaLaunchKernel_v7000",
            "cudaLaunchKernel_ptsz_v7000",
            "cudaLaunchKernelExC_v11060",
            "cudaLaunchCooperativeKernel_v9000",
        ] {
            assert_eq!(rt(n), CallKind::KernelLaunch, "{n}");
        }
        for n in [
            "cuLaunchKernel",
            "cuLaunchKernel_ptsz",
            "cuLaunchKernelEx",
            "cuLaunchKernelEx_ptsz",
            "cuLaunchCooperativeKernel",
            "cuLaunchCooperativeKernel_ptsz",
        ] {
            assert_eq!(drv(n), CallKind::KernelLaunch, "{n}");
        }
        assert_eq!(rt("cudaLaunchHostFunc_v10000"), CallKind::Other);
        assert_eq!(rt("cudaGraphLaunch_v10000"), CallKind::GraphLaunch);
        assert_eq!(drv("cuGraphLaunch_ptsz"), CallKind::GraphLaunch);
    }

    #[test]
    fn classification_of_memory_and_sync() {
        assert_eq!(rt("cudaMemcpy_v3020"), CallKind::Memcpy);
        assert_eq!(rt("cudaMemcpyAsync_ptsz_v7000"), CallKind::Memcpy);
        assert_eq!(drv("cuMemcpyHtoDAsync_v2"), CallKind::Memcpy);
        assert_eq!(rt("cudaMemset_v3020"), CallKind::Memset);
        assert_eq!(drv("cuMemsetD8Async_ptsz"), CallKind::Memset);
        assert_eq!(rt("cudaMalloc_v3020"), CallKind::Alloc);
        assert_eq!(rt("cudaMallocAsync_v11020"), CallKind::Alloc);
        assert_eq!(drv("cuMemAlloc_v2"), CallKind::Alloc);
        assert_eq!(rt("cudaFree_v3020"), CallKind::Free);
        assert_eq!(drv("cuMemFreeAsync"), CallKind::Free);
        assert_eq!(drv("cuMemGetAllocationGranularity"), CallKind::Other);
        assert_eq!(
            rt("cudaStreamSynchronize_v3020"),
            CallKind::Sync(SyncKind::Stream)
        );
        assert_eq!(
            rt("cudaDeviceSynchronize_v3020"),
            CallKind::Sync(SyncKind::Device)
        );
        assert_eq!(drv("cuCtxSynchronize"), CallKind::Sync(SyncKind::Context));
        assert_eq!(drv("cuEventSynchronize"), CallKind::Sync(SyncKind::Event));
        assert_eq!(rt("cudaEventRecordWithFlags_v11010"), CallKind::EventRecord);
        assert_eq!(drv("cuEventRecord_ptsz"), CallKind::EventRecord);
        assert_eq!(drv("cuStreamWaitEvent"), CallKind::StreamWaitEvent);
        assert_eq!(rt("cudaGetDeviceCount_v3020"), CallKind::Other);
        assert_eq!(classify(ApiDomain::Runtime, 1_000_000), CallKind::Other);
    }

    #[test]
    fn ids_of_kind() {
        let launches: Vec<_> = ids_of(ApiDomain::Driver, CallKind::KernelLaunch).collect();
        assert!(launches.contains(&by_name(ApiDomain::Driver, "cuLaunchKernel").unwrap()));
        assert!(!launches.contains(&by_name(ApiDomain::Driver, "cuLaunchHostFunc").unwrap()));
        assert_eq!(
            name(
                ApiDomain::Runtime,
                by_name(ApiDomain::Runtime, "cudaMalloc_v3020").unwrap()
            ),
            Some("cudaMalloc_v3020")
        );
    }
}
