//! The CUDA backend: how CUPTI's activity kinds and callbacks follow the
//! writer's sources, and attaching CUPTI again after a detach.

use super::callbacks::{Shared, subscribe};
use crate::api::TRACED_KINDS;
use cupti::Cupti;
use cupti::activity::{self, Activity, ActivityKind};
use cupti::callback::{Domain, Subscriber};
use cupti::cbid::{ApiDomain, CallKind};
use gpu_trace_model::backend::{BackendInfo, Categories, Category};
use gpu_trace_model::filter::SessionFilter;
use gpu_trace_perfetto::{Backend, Sources};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};

/// The CUDA backend as the trace names it.
pub(crate) static BACKEND: BackendInfo = BackendInfo::new(
    "CUDA",
    Categories {
        api: Category::new("cuda", "CUDA runtime and driver API calls on CPU threads"),
        markers: Category::new("nvtx", "NVTX ranges and marks"),
    },
    // Perfetto's `InternedGraphicsContext.Api.CUDA` and `gpu_api` CUDA.
    4,
    "nv",
);

const GPU_KINDS: [ActivityKind; 4] = [
    ActivityKind::ConcurrentKernel,
    ActivityKind::Memcpy,
    ActivityKind::MemcpyPeer,
    ActivityKind::Memset,
];

pub(super) struct CudaBackend {
    pub(super) shared: Arc<Shared>,
    /// Replaced when CUPTI is attached again after a detach.
    pub(super) subscriber: arc_swap::ArcSwap<Subscriber>,
    pub(super) cupti: Cupti,
    /// What the subscriber's callbacks reach.
    pub(super) gate: Arc<OnceLock<Arc<Shared>>>,
    /// Activity timestamps come from our CLOCK_BOOTTIME callback.
    pub(super) boottime: bool,
    pub(super) detach: &'static crate::detach::Detach,
    /// The callback domains of API recording (see [`ApiLayer`](crate::config::ApiLayer)).
    pub(super) api_domains: &'static [ApiDomain],
    pub(super) activity: Option<Activity>,
    pub(super) current: Mutex<Sources>,
}

impl CudaBackend {
    fn set_gpu(&self, on: bool) {
        let Some(a) = &self.activity else { return };
        for k in GPU_KINDS {
            let r = if on { a.enable(k) } else { a.disable(k) };
            if let Err(e) = r {
                gpu_trace_model::warn_once!("cannot switch activity kind {k:?}: {e}");
            }
        }
    }

    fn set_api(&self, on: bool) {
        if on {
            crate::api::new_api_epoch();
        }
        self.shared.set_api_on(on);
        for (d, id) in self
            .shared
            .api
            .extra_ids()
            .filter(|(d, _)| self.api_domains.contains(d))
        {
            let r = if on {
                self.subscriber.load().enable(d.into(), id)
            } else {
                self.subscriber.load().disable(d.into(), id)
            };
            if let Err(e) = r {
                gpu_trace_model::verbose!("cannot switch callback {id}: {e}");
            }
        }
        for &d in self.api_domains {
            for k in TRACED_KINDS {
                let r = if on {
                    self.subscriber.load().enable_kind(d, k)
                } else {
                    self.subscriber.load().disable_kind(d, k)
                };
                if let Err(e) = r {
                    gpu_trace_model::warn_once!("cannot switch API callbacks: {e}");
                }
            }
        }
    }

    fn set_markers(&self, on: bool) {
        self.shared.markers_on.store(on, Ordering::Relaxed);
        // An NVTX capture range or the counters filter may still need the
        // ranges.
        let r = if on || self.shared.nvtx_capture.is_some() || gpu_trace_model::filter::tx::is_on()
        {
            self.subscriber.load().enable_domain(Domain::Nvtx)
        } else {
            self.subscriber.load().disable_domain(Domain::Nvtx)
        };
        if let Err(e) = r {
            gpu_trace_model::warn_once!("cannot switch NVTX callbacks: {e}");
        }
    }
}

impl CudaBackend {
    /// Memory accounting needs the driver's allocation and free callbacks,
    /// whether or not API calls are recorded; API recording keeps those it
    /// draws as slices.
    fn set_memory(&self, on: bool) {
        if on != self.shared.memory.is_on() {
            self.shared.memory.set_on(on);
        }
        let api_has = |id: u32| {
            self.shared.api_on.load(Ordering::Relaxed)
                && self.api_domains.contains(&ApiDomain::Driver)
                && TRACED_KINDS.contains(&cupti::cbid::classify(ApiDomain::Driver, id))
        };
        for id in cupti::callback::memory_call_ids() {
            let r = if on {
                self.subscriber.load().enable(Domain::Driver, id)
            } else if !api_has(id) {
                self.subscriber.load().disable(Domain::Driver, id)
            } else {
                Ok(())
            };
            if let Err(e) = r {
                gpu_trace_model::warn_once!("cannot switch allocation callbacks for memory: {e}");
            }
        }
    }

    /// Counters need the driver's launch callbacks (entry and exit of each
    /// kernel launch, and graph launches to say they are not profiled),
    /// whether or not API calls are recorded.
    fn set_counters(&self, wanted: Option<&[String]>, selection: Option<&SessionFilter>) {
        let Some(c) = self.shared.counting.get() else {
            if wanted.is_some() {
                gpu_trace_model::warn_once!("per-kernel counters are unavailable in this process");
            }
            return;
        };
        c.set(wanted, selection);
        // NVTX ranges reach CUPTI's callbacks when NVTX_INJECTION64_PATH
        // names libcupti (ours get them through our NVTX injection).
        if wanted.is_some()
            && c.needs_ranges()
            && let Err(e) = self.subscriber.load().enable_domain(Domain::Nvtx)
        {
            gpu_trace_model::warn_once!(
                "cannot switch NVTX callbacks for the counters filter: {e}"
            );
        }
        let api_has_them = self.shared.api_on.load(Ordering::Relaxed)
            && self.api_domains.contains(&ApiDomain::Driver);
        for k in [CallKind::KernelLaunch, CallKind::GraphLaunch] {
            let r = if wanted.is_some() {
                self.subscriber.load().enable_kind(ApiDomain::Driver, k)
            } else if !api_has_them {
                self.subscriber.load().disable_kind(ApiDomain::Driver, k)
            } else {
                Ok(())
            };
            if let Err(e) = r {
                gpu_trace_model::warn_once!("cannot switch launch callbacks for counters: {e}");
            }
        }
    }
}

impl Backend for CudaBackend {
    fn flush(&self, forced: bool) {
        crate::failpoint::maybe_panic("flush", true);
        let new = std::mem::take(
            &mut *self
                .shared
                .new_devices
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
        for ordinal in new {
            self.shared.records.describe_device(ordinal);
        }
        // Detached (or being detached): no CUPTI call, and nothing to flush.
        let Some(_gate) = self.detach.try_gate() else {
            return;
        };
        if let Some(a) = &self.activity
            && let Err(e) = a.flush_all(forced)
        {
            gpu_trace_model::verbose!("activity flush failed: {e}");
        }
        let contexts = !self
            .shared
            .contexts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty();
        // cuptiFinalize happens at the next API exit callsite. Not while the
        // sources change: a window opening undoes the request.
        if let Ok(_cur) = self.current.try_lock() {
            self.detach.poll(self.shared.api.correlator(), contexts);
        }
    }

    fn wants_flush_soon(&self) -> bool {
        self.detach.is_draining()
    }

    fn sources_changed(&self, s: &Sources) {
        let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
        // No detach may overlap our CUPTI calls; one under way finishes first.
        let _gate = self.detach.gate();
        let opening = *s != Sources::default() && *cur == Sources::default();
        if opening && self.detach.is_detached() {
            if !self.reattach() {
                return;
            }
            *cur = Sources::default();
        }
        if opening {
            // A detach asked for and not yet made: the driver calls'
            // callbacks it turned on go off again (the sources then turn on
            // those they record).
            if self.detach.is_ready()
                && let Err(e) = self.subscriber.load().disable_domain(Domain::Driver)
            {
                gpu_trace_model::verbose!("cannot turn the detach's callbacks off: {e}");
            }
            self.detach.opened();
        }
        let closing = *s == Sources::default() && *cur != Sources::default();
        let knew = cur.api || !cur.gpu;
        // A window closes while other threads launch: API callbacks go off
        // before GPU records, so that a launch whose slice is recorded
        // (its exit seen) was made while its kernel's record was on; one
        // opens the other way round. Otherwise a launch straddling the
        // switch leaves an arrow with no kernel (2 in 21,000 launches over
        // 100 windows switched from outside on the H200).
        let gpu_off = cur.gpu && !s.gpu;
        if s.gpu != cur.gpu && !gpu_off {
            self.set_gpu(s.gpu);
        }
        if s.api != cur.api {
            self.set_api(s.api);
        }
        if s.markers != cur.markers {
            self.set_markers(s.markers);
        }
        if gpu_off {
            self.set_gpu(false);
        }
        // After the API switch, which may have turned launch callbacks off.
        if s.counters != cur.counters || s.kernel_filter != cur.kernel_filter || s.api != cur.api {
            self.set_counters(s.counters.as_deref(), s.kernel_filter.as_ref());
        }
        // Likewise for allocation callbacks.
        if s.memory != cur.memory || s.api != cur.api {
            self.set_memory(s.memory);
        }
        if s.uvm != cur.uvm
            && let Some(u) = self.shared.uvm.get()
        {
            u.set(s.uvm);
        }
        // Unified memory needs managed memory, made by `cuMemAllocManaged`
        // (or a module's `__managed__` variables, at its load): at that
        // call's exit CUDA is ready, and a pending switch is retried there.
        // Allocation callbacks may have just been turned off.
        if s.uvm && (s.uvm != cur.uvm || s.memory != cur.memory || s.api != cur.api) {
            let id = cupti::callback::managed_alloc_call_id();
            if let Err(e) = self.subscriber.load().enable(Domain::Driver, id) {
                gpu_trace_model::verbose!("cannot enable the managed-allocation callback: {e}");
            }
        }
        gpu_trace_model::verbose!(
            "recording gpu={} api={} ({:?}) nvtx={} counters={:?} uvm={} memory={}",
            s.gpu,
            s.api,
            self.api_domains,
            s.markers,
            s.counters,
            s.uvm,
            s.memory
        );
        *cur = s.clone();
        if closing {
            self.detach.closed(knew);
        }
    }
}

impl CudaBackend {
    /// After a detach: subscribes again and registers activity, as at
    /// start-up; the caller then switches the sources on from nothing.
    fn reattach(&self) -> bool {
        let t0 = gpu_trace_model::clock::boottime_ns();
        let failed = |why: String| {
            gpu_trace_model::warn_once!(
                "cannot attach CUPTI again ({why}); recording windows from now on hold nothing"
            );
            false
        };
        let sub = match subscribe(&self.cupti, self.gate.clone()) {
            Ok(s) => Arc::new(s),
            Err(e) => return failed(e.to_string()),
        };
        if self.boottime
            && let Err(e) = activity::register_timestamp_callback(&self.cupti)
        {
            return failed(format!("its timestamp clock: {e}"));
        }
        if let Some(a) = &self.activity
            && let Err(e) = a.reattach()
        {
            return failed(format!("activity buffers: {e}"));
        }
        if let Err(e) = sub.enable_domain(Domain::Resource) {
            gpu_trace_model::verbose!("resource callbacks unavailable: {e}");
        }
        self.detach.set_subscriber(sub.clone());
        self.subscriber.store(sub);
        gpu_trace_model::verbose!(
            "CUPTI attached again ({:.1} ms)",
            (gpu_trace_model::clock::boottime_ns() - t0) as f64 / 1e6
        );
        true
    }
}
