//! Runtime/driver API calls and NVTX, from CUPTI callbacks on the
//! application's threads.
//!
//! This is the per-launch hot path. Entry stores a timestamp in CUPTI's
//! per-call slot; exit builds an [`ApiCall`] from ids and copies it into the
//! thread's buffer. Names are interned once per callback id; which GPU work
//! a synchronisation waited for comes from the model's [`Correlator`].

use arc_swap::ArcSwap;
use cupti::Stream;
use cupti::callback::{ApiCallback, Site};
use cupti::cbid::{ApiDomain, CallKind, SyncKind};
use cupti::driver::Driver;
use cupti::nvtx::{NvtxEvent, NvtxMessage};
use gpu_trace_agent::callsites::CallSites;
use gpu_trace_model::Recorder;
use gpu_trace_model::clock::boottime_ns;
use gpu_trace_model::correlate::{Correlator, StreamKey, Wait};
use gpu_trace_model::model::{ApiCall, Marker, NameId};
use gpu_trace_model::names::Names;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};

thread_local! {
    // Set on threads doing the tool's own CUDA calls: those never appear.
    static INTERNAL: Cell<bool> = const { Cell::new(false) };
    static TID: Cell<u32> = const { Cell::new(0) };
    // Runtime calls in progress on this thread: driver calls inside them are
    // the runtime's implementation, not the application's. Counted in
    // the [`API_EPOCH`] it was set in.
    static RUNTIME_DEPTH: Cell<(u32, u32)> = const { Cell::new((0, 0)) };
}

/// Bumped each time API callbacks are switched on: a runtime call that was
/// in progress when they went off never saw its exit, and its count must not
/// hide the thread's driver calls in the next recording.
static API_EPOCH: AtomicU32 = AtomicU32::new(0);

/// API callbacks are (re)enabled: start every thread's nesting afresh.
pub(crate) fn new_api_epoch() {
    API_EPOCH.fetch_add(1, Ordering::Relaxed);
}

/// Adds `delta` to this thread's runtime nesting; returns the new depth.
fn runtime_depth(delta: i32) -> u32 {
    let epoch = API_EPOCH.load(Ordering::Relaxed);
    RUNTIME_DEPTH
        .try_with(|c| {
            let (e, d) = c.get();
            let d = if e == epoch { d } else { 0 };
            let d = d.saturating_add_signed(delta);
            c.set((epoch, d));
            d
        })
        .unwrap_or(0)
}

/// The application's CUDA driver, taken once it is loaded (records, capture
/// checks and counters share it). `None` until the application has loaded
/// `libcuda.so.1`; that is asked again on each call, never remembered: a
/// tool started by an NVTX call before the program's first CUDA call would
/// otherwise name its GPUs "CUDA device N" for the whole run (seen on the
/// H200 with a program whose first NVTX mark precedes `cuInit`).
pub(crate) fn driver() -> Option<&'static Driver> {
    static DRIVER: OnceLock<Driver> = OnceLock::new();
    if let Some(d) = DRIVER.get() {
        return Some(d);
    }
    let d = Driver::from_process().ok()?;
    Some(DRIVER.get_or_init(|| d))
}

/// Whether `stream` is capturing into a graph (work launched there runs
/// nothing now); asked of the driver as our own call.
pub(crate) fn is_capturing(stream: Stream<'_>) -> bool {
    driver().is_some_and(|d| internal(|| d.stream_is_capturing(stream)).unwrap_or(false))
}

/// Whether the calling thread is inside [`internal`].
pub(crate) fn is_internal() -> bool {
    INTERNAL.try_with(Cell::get).unwrap_or(true)
}

/// Runs `f` with API recording suppressed on this thread, for the tool's
/// own CUDA calls.
pub(crate) fn internal<R>(f: impl FnOnce() -> R) -> R {
    let prev = INTERNAL.try_with(|i| i.replace(true)).unwrap_or(false);
    let r = f();
    let _ = INTERNAL.try_with(|i| i.set(prev));
    r
}

/// The calling thread's OS id, cached.
pub(crate) fn tid() -> u32 {
    TID.try_with(|t| {
        let v = t.get();
        if v != 0 {
            return v;
        }
        let v = gpu_trace_model::clock::thread_id();
        t.set(v);
        v
    })
    .unwrap_or_else(|_| gpu_trace_model::clock::thread_id())
}

/// Everything the API and NVTX callbacks share.
pub(crate) struct ApiState {
    recorder: Recorder,
    names: Arc<Names>,
    /// Callback id → name id + 1 (0: not interned yet), per domain.
    runtime_names: Vec<AtomicU32>,
    driver_names: Vec<AtomicU32>,
    /// Which work each synchronisation waited for.
    correlate: Correlator,
    /// NVTX domains by handle: created rarely, read on every marker.
    nvtx_domains: ArcSwap<FxHashMap<u64, NameId>>,
    /// Registered NVTX strings by handle: registered rarely, read on every
    /// marker that uses one, so readers take no lock and copy no string.
    nvtx_strings: ArcSwap<FxHashMap<u64, Arc<str>>>,
    /// Stream-capture begin/end callback ids: launches into a capture
    /// submit nothing until the graph runs.
    capture_begin: Vec<(ApiDomain, u32)>,
    capture_end: Vec<(ApiDomain, u32)>,
    captures_active: AtomicI64,
    /// The Python stacks of the calls that run or wait for GPU work, when
    /// the process runs Python and they are asked for.
    callsites: Option<CallSites>,
}

/// The runtime and driver callback ids of the functions named (base names,
/// without `_vNNNN` / `_ptsz` decorations).
pub(crate) fn ids_named(prefixes: &[&str]) -> Vec<(ApiDomain, u32)> {
    let mut out = Vec::new();
    for d in [ApiDomain::Runtime, ApiDomain::Driver] {
        for id in cupti::cbid::ids_of(d, CallKind::Other) {
            if let Some(n) = cupti::cbid::name(d, id)
                && prefixes.contains(&cupti::cbid::base_name(n))
            {
                out.push((d, id));
            }
        }
    }
    out
}

impl ApiState {
    pub(crate) fn new(recorder: Recorder, names: Arc<Names>, callsites: Option<CallSites>) -> Self {
        let len = |d| {
            cupti::cbid::ids_of(d, CallKind::Other)
                .chain(cupti::cbid::ids_of(d, CallKind::KernelLaunch))
                .max()
                .unwrap_or(0) as usize
                + 64
        };
        let table = |n: usize| (0..n).map(|_| AtomicU32::new(0)).collect::<Vec<_>>();
        Self {
            runtime_names: table(len(ApiDomain::Runtime)),
            driver_names: table(len(ApiDomain::Driver)),
            recorder,
            names,
            correlate: Correlator::default(),
            nvtx_domains: ArcSwap::from_pointee(FxHashMap::default()),
            nvtx_strings: ArcSwap::from_pointee(FxHashMap::default()),
            capture_begin: ids_named(&[
                "cudaStreamBeginCapture",
                "cudaStreamBeginCaptureToGraph",
                "cuStreamBeginCapture",
                "cuStreamBeginCaptureToGraph",
            ]),
            capture_end: ids_named(&["cudaStreamEndCapture", "cuStreamEndCapture"]),
            captures_active: AtomicI64::new(0),
            callsites,
        }
    }

    /// Callback ids to enable besides the traced kinds.
    pub(crate) fn extra_ids(&self) -> impl Iterator<Item = (ApiDomain, u32)> + '_ {
        self.capture_begin.iter().chain(&self.capture_end).copied()
    }

    fn api_name(&self, cb: &ApiCallback<'_>) -> NameId {
        let table = match cb.domain() {
            ApiDomain::Runtime => &self.runtime_names,
            ApiDomain::Driver => &self.driver_names,
        };
        let slot = table.get(cb.cbid() as usize);
        if let Some(v) = slot.map(|s| s.load(Ordering::Relaxed))
            && v != 0
        {
            return NameId(v - 1);
        }
        let raw = cb.function_name().to_string_lossy();
        // `__cudaLaunchKernel` is what `<<<>>>` compiles to; show what the
        // user wrote.
        let id = self.names.intern(raw.trim_start_matches('_'));
        if let Some(s) = slot {
            s.store(id.0 + 1, Ordering::Relaxed);
        }
        id
    }

    /// An API entry or exit.
    pub(crate) fn on_api(&self, cb: &ApiCallback<'_>) {
        if INTERNAL.try_with(Cell::get).unwrap_or(true) {
            return;
        }
        // Calls enabled for another reason (memory accounting's
        // `cuMemCreate`) are no API slices, unless they are ours.
        if cb.kind() == CallKind::Other
            && !self.extra_ids().any(|id| id == (cb.domain(), cb.cbid()))
        {
            return;
        }
        let domain = cb.domain();
        match cb.site() {
            Site::Enter => {
                if domain == ApiDomain::Runtime {
                    runtime_depth(1);
                } else if runtime_depth(0) > 0 {
                    return;
                }
                cb.set_correlation_data(boottime_ns());
            }
            Site::Exit => {
                let end = boottime_ns();
                if domain == ApiDomain::Runtime {
                    runtime_depth(-1);
                } else if runtime_depth(0) > 0 {
                    return;
                }
                // Our entry callback leaves the call's start here. None:
                // the call began before API recording was switched on (a
                // window opened during it), so its start is unknown, and
                // its GPU work may predate the GPU records being on (which
                // go on first): recorded, it could point at a kernel the
                // trace lacks.
                let start = match cb.correlation_data() {
                    0 => {
                        // Stream captures still count: later launches in
                        // the capture submit nothing.
                        self.track_captures(cb);
                        return;
                    }
                    s => s,
                };
                self.record(cb, start, end);
            }
        }
    }

    /// Counts the stream captures begun and ended by the call `cb`.
    fn track_captures(&self, cb: &ApiCallback<'_>) {
        let id = (cb.domain(), cb.cbid());
        if cb.return_value().unwrap_or(0) == 0 && self.capture_begin.contains(&id) {
            self.captures_active.fetch_add(1, Ordering::Relaxed);
        } else if self.capture_end.contains(&id) {
            let _ = self
                .captures_active
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                    Some((v - 1).max(0))
                });
        }
    }

    fn record(&self, cb: &ApiCallback<'_>, start: u64, end: u64) {
        let kind = cb.kind();
        crate::failpoint::maybe_panic("api", kind == CallKind::KernelLaunch);
        let rv = cb.return_value().unwrap_or(0);
        let ok = rv == 0;
        let corr = crate::detach::corr(cb.correlation_id());
        let ctx = cb.context_handle();
        self.track_captures(cb);
        let mut submits = ok
            && matches!(
                kind,
                CallKind::KernelLaunch
                    | CallKind::GraphLaunch
                    | CallKind::Memcpy
                    | CallKind::Memset
            );
        // A zero-sized copy or set succeeds and runs nothing: no GPU work
        // to point at.
        if submits && matches!(kind, CallKind::Memcpy | CallKind::Memset) && cb.size() == Some(0) {
            submits = false;
        }
        // Only while some stream captures does a launch need the (driver)
        // question whether it ran at all.
        if submits
            && self.captures_active.load(Ordering::Relaxed) > 0
            && is_capturing(cb.stream().unwrap_or(Stream::DEFAULT))
        {
            submits = false;
        }
        // Streams are keyed within their context, whose synchronisation
        // covers them all.
        let stream = || StreamKey::new(ctx, stream_key(cb));
        let waits = match kind {
            _ if submits => {
                self.correlate.submitted(stream(), ctx, corr, end);
                SmallVec::new()
            }
            CallKind::Sync(SyncKind::Stream) => self.correlate.waits(Wait::Stream(stream()), start),
            CallKind::Sync(SyncKind::Device | SyncKind::Context) => {
                self.correlate.waits(Wait::Scope(ctx), start)
            }
            CallKind::EventRecord if ok => {
                if let Some(e) = cb.event() {
                    self.correlate.event_recorded(e, stream(), start);
                }
                SmallVec::new()
            }
            CallKind::Sync(SyncKind::Event) => cb
                .event()
                .map(|e| self.correlate.waits(Wait::Event(e), start))
                .unwrap_or_default(),
            _ => SmallVec::new(),
        };
        let mut call = ApiCall::new(self.api_name(cb), tid(), start, end, corr);
        call.submits = submits;
        call.waits = waits;
        call.status = rv as i32;
        if let Some(c) = &self.callsites
            && matches!(
                kind,
                CallKind::KernelLaunch
                    | CallKind::GraphLaunch
                    | CallKind::Memcpy
                    | CallKind::Memset
                    | CallKind::Sync(_)
            )
        {
            call.callstack = c.capture();
        } else if let Some(c) = &self.callsites {
            // Other calls only feed the layout self-check, should they be
            // the only ones made with the GIL (a library's start-up).
            c.check_layout();
        }
        self.recorder.api(call);
    }

    /// Each stream's last submission, for the detach's drain.
    pub(crate) fn correlator(&self) -> &Correlator {
        &self.correlate
    }

    /// A context is going away: its streams and events are no longer valid
    /// keys (handles may be reused).
    pub(crate) fn forget_context(&self, ctx: u64) {
        self.correlate.forget_scope(ctx);
    }

    /// An NVTX call (from our NVTX injection, or CUPTI's NVTX callbacks
    /// when NVTX was pointed at libcupti). `markers`: record it as a
    /// marker; push/pop ranges also go to the counters filter's range
    /// tracking ([`gpu_trace_model::filter::tx`]), and domains and
    /// registered strings are always kept.
    pub(crate) fn on_nvtx(&self, ev: &NvtxEvent<'_>, markers: bool) {
        use gpu_trace_model::filter::tx;
        match *ev {
            NvtxEvent::Push {
                domain, message, ..
            } => {
                let text = self.text(&message);
                tx::push(domain.unwrap_or(0), &text);
                if markers {
                    let domain = self.domain_name(domain);
                    self.recorder
                        .marker(tid(), boottime_ns(), &text, |text| Marker::Push {
                            domain,
                            text,
                        });
                }
                return;
            }
            NvtxEvent::Pop { domain } => {
                tx::pop(domain.unwrap_or(0));
                if markers {
                    let domain = self.domain_name(domain);
                    self.recorder
                        .marker(tid(), boottime_ns(), "", |_| Marker::Pop { domain });
                }
                return;
            }
            NvtxEvent::DomainCreate { .. } | NvtxEvent::RegisterString { .. } => {}
            _ if !markers => return,
            _ => {}
        }
        let ts = boottime_ns();
        let thread = tid();
        match *ev {
            NvtxEvent::Mark {
                domain, message, ..
            } => {
                let domain = self.domain_name(domain);
                let text = self.text(&message);
                self.recorder
                    .marker(thread, ts, &text, |text| Marker::Mark { domain, text });
            }
            NvtxEvent::RangeStart {
                domain,
                message,
                id: Some(id),
                ..
            } => {
                let domain = self.domain_name(domain);
                let text = self.text(&message);
                self.recorder
                    .marker(thread, ts, &text, |text| Marker::Start { id, domain, text });
            }
            NvtxEvent::RangeEnd { id, .. } => {
                self.recorder.marker(thread, ts, "", |_| Marker::End { id });
            }
            NvtxEvent::DomainCreate {
                name,
                handle: Some(h),
            } => {
                let n = self.names.intern(&message_text(&name));
                self.nvtx_domains.rcu(|m| {
                    let mut m = FxHashMap::clone(m);
                    m.insert(h, n);
                    m
                });
            }
            NvtxEvent::RegisterString {
                string,
                handle: Some(h),
                ..
            } => {
                let text: Arc<str> = message_text(&string).into();
                self.nvtx_strings.rcu(|m| {
                    let mut m = FxHashMap::clone(m);
                    m.insert(h, text.clone());
                    m
                });
            }
            _ => {}
        }
    }

    fn domain_name(&self, domain: Option<u64>) -> Option<NameId> {
        let h = domain.filter(|&h| h != 0)?;
        self.nvtx_domains.load().get(&h).copied()
    }

    /// Whether an NVTX message says `name`.
    pub(crate) fn message_is(&self, m: &NvtxMessage<'_>, name: &str) -> bool {
        match m {
            NvtxMessage::Ascii(c) => c.to_bytes() == name.as_bytes(),
            NvtxMessage::Registered(h) => self
                .nvtx_strings
                .load()
                .get(h)
                .is_some_and(|t| &**t == name),
            other => message_cow(other) == name,
        }
    }

    fn text<'m>(&self, m: &NvtxMessage<'m>) -> MarkerText<'m> {
        match m {
            NvtxMessage::Registered(h) => match self.nvtx_strings.load().get(h) {
                Some(t) => MarkerText::Shared(t.clone()),
                None => MarkerText::Text(std::borrow::Cow::Owned(format!(
                    "<registered string {h:#x}>"
                ))),
            },
            other => MarkerText::Text(message_cow(other)),
        }
    }
}

/// A marker's text: from the call, or a registered string (shared).
enum MarkerText<'m> {
    Text(std::borrow::Cow<'m, str>),
    Shared(Arc<str>),
}

impl std::ops::Deref for MarkerText<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Self::Text(t) => t,
            Self::Shared(t) => t,
        }
    }
}

fn message_cow<'m>(m: &NvtxMessage<'m>) -> std::borrow::Cow<'m, str> {
    match m {
        NvtxMessage::Ascii(s) => s.to_string_lossy(),
        NvtxMessage::Unicode(w) => std::borrow::Cow::Owned(w.to_string_lossy()),
        _ => std::borrow::Cow::Borrowed(""),
    }
}

fn message_text(m: &NvtxMessage<'_>) -> String {
    message_cow(m).into_owned()
}

/// The API kinds whose calls become slices.
pub(crate) const TRACED_KINDS: [CallKind; 12] = [
    CallKind::KernelLaunch,
    CallKind::GraphLaunch,
    CallKind::Memcpy,
    CallKind::Memset,
    CallKind::Alloc,
    CallKind::Free,
    CallKind::Sync(SyncKind::Stream),
    CallKind::Sync(SyncKind::Device),
    CallKind::Sync(SyncKind::Context),
    CallKind::Sync(SyncKind::Event),
    CallKind::EventRecord,
    CallKind::StreamWaitEvent,
];

/// The stream of a call as a map key (0, the default stream, when it has none).
fn stream_key(cb: &ApiCallback<'_>) -> u64 {
    cb.stream().map_or(0, Stream::as_u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiler_start_and_stop_are_found_in_both_layers() {
        let id = |d, n| (d, cupti::cbid::by_name(d, n).unwrap());
        assert_eq!(
            ids_named(&["cudaProfilerStart", "cuProfilerStart"]),
            [
                id(ApiDomain::Runtime, "cudaProfilerStart_v4000"),
                id(ApiDomain::Driver, "cuProfilerStart")
            ]
        );
        assert_eq!(
            ids_named(&["cudaProfilerStop", "cuProfilerStop"]),
            [
                id(ApiDomain::Runtime, "cudaProfilerStop_v4000"),
                id(ApiDomain::Driver, "cuProfilerStop")
            ]
        );
    }
}
