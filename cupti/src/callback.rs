//! The CUPTI callback API: one [`Subscriber`] owning one closure, and typed,
//! borrowed views of what CUPTI passes to it.
//!
//! Only one subscriber can exist per process (a CUPTI rule): a second one, or
//! one while Nsight Systems / Nsight Compute / torch.profiler holds CUPTI,
//! fails with [`Error::MultipleSubscribers`].

use std::{
    ffi::{CStr, c_void},
    marker::PhantomData,
    sync::{
        Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use cupti_sys as sys;

pub use crate::params::{LaunchConfig, MemoryCall};

/// The driver callback ids whose calls allocate or free device memory
/// ([`ApiCallback::memory_call`] reads them): what to enable for memory
/// accounting.
pub fn memory_call_ids() -> impl Iterator<Item = u32> {
    params::MEMORY_CALL_IDS.iter().map(|d| d.0)
}

/// The driver callback id of `cuMemAllocManaged`, which every unified-memory
/// allocation of a program goes through.
pub fn managed_alloc_call_id() -> u32 {
    params::MANAGED_ALLOC_CALL_ID.0
}

use crate::{
    Context, Cupti, Error, Result, Status, Stream,
    cbid::{self, ApiDomain, CallKind},
    nvtx::NvtxCallback,
    params,
};

/// A callback domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Domain {
    /// Driver API (`cu*`).
    Driver,
    /// Runtime API (`cuda*`).
    Runtime,
    /// Resource creation/destruction (contexts, streams, modules, graphs).
    Resource,
    /// Synchronization completed (stream/context).
    Synchronize,
    /// NVTX calls.
    Nvtx,
    /// CUPTI state notifications (fatal errors).
    State,
    /// A domain this crate does not know.
    Other(u32),
}

impl Domain {
    /// The raw `CUpti_CallbackDomain`.
    pub fn to_raw(self) -> sys::CUpti_CallbackDomain {
        type D = sys::CUpti_CallbackDomain;
        match self {
            Self::Driver => D::CUPTI_CB_DOMAIN_DRIVER_API,
            Self::Runtime => D::CUPTI_CB_DOMAIN_RUNTIME_API,
            Self::Resource => D::CUPTI_CB_DOMAIN_RESOURCE,
            Self::Synchronize => D::CUPTI_CB_DOMAIN_SYNCHRONIZE,
            Self::Nvtx => D::CUPTI_CB_DOMAIN_NVTX,
            Self::State => D::CUPTI_CB_DOMAIN_STATE,
            Self::Other(x) => sys::CUpti_CallbackDomain(x),
        }
    }

    /// From the raw `CUpti_CallbackDomain`.
    pub fn from_raw(raw: sys::CUpti_CallbackDomain) -> Self {
        type D = sys::CUpti_CallbackDomain;
        match raw {
            D::CUPTI_CB_DOMAIN_DRIVER_API => Self::Driver,
            D::CUPTI_CB_DOMAIN_RUNTIME_API => Self::Runtime,
            D::CUPTI_CB_DOMAIN_RESOURCE => Self::Resource,
            D::CUPTI_CB_DOMAIN_SYNCHRONIZE => Self::Synchronize,
            D::CUPTI_CB_DOMAIN_NVTX => Self::Nvtx,
            D::CUPTI_CB_DOMAIN_STATE => Self::State,
            other => Self::Other(other.0),
        }
    }
}

impl From<ApiDomain> for Domain {
    fn from(d: ApiDomain) -> Self {
        match d {
            ApiDomain::Runtime => Self::Runtime,
            ApiDomain::Driver => Self::Driver,
        }
    }
}

/// One CUPTI callback, borrowed from CUPTI's data: valid only inside the
/// closure call. Copy out what must outlive it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Callback<'a> {
    /// Entry to or exit from a runtime or driver API call.
    Api(ApiCallback<'a>),
    /// A resource was created or is about to be destroyed.
    Resource(ResourceCallback<'a>),
    /// A stream or context synchronization completed.
    Synchronize(SyncCallback<'a>),
    /// An NVTX call.
    Nvtx(NvtxCallback<'a>),
    /// Any other domain or a callback without data.
    Other {
        /// The domain.
        domain: Domain,
        /// The callback id.
        cbid: u32,
    },
}

/// Entry or exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    /// Before the call runs.
    Enter,
    /// After it returned.
    Exit,
}

/// A runtime or driver API callback.
pub struct ApiCallback<'a> {
    cupti: &'a Cupti,
    domain: ApiDomain,
    cbid: u32,
    data: &'a sys::CUpti_CallbackData,
}

impl std::fmt::Debug for ApiCallback<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiCallback")
            .field("domain", &self.domain)
            .field("cbid", &self.cbid)
            .field("function", &self.function_name())
            .field("site", &self.site())
            .field("correlation_id", &self.correlation_id())
            .finish()
    }
}

impl<'a> ApiCallback<'a> {
    /// Runtime or driver.
    pub fn domain(&self) -> ApiDomain {
        self.domain
    }

    /// The callback id (`CUpti_runtime_api_trace_cbid` / `CUpti_driver_api_trace_cbid`).
    pub fn cbid(&self) -> u32 {
        self.cbid
    }

    /// What kind of call this is (see [`cbid::classify`]).
    pub fn kind(&self) -> CallKind {
        cbid::classify(self.domain, self.cbid)
    }

    /// The API function's name (a constant string inside CUPTI).
    pub fn function_name(&self) -> &'a CStr {
        cstr_or_empty(self.data.functionName)
    }

    /// Entry or exit.
    pub fn site(&self) -> Site {
        if self.data.callbackSite == sys::CUpti_ApiCallbackSite::CUPTI_API_EXIT {
            Site::Exit
        } else {
            Site::Enter
        }
    }

    /// The correlation id shared with this call's activity records.
    pub fn correlation_id(&self) -> u32 {
        self.data.correlationId
    }

    /// The context current on the calling thread, if any.
    pub fn context(&self) -> Option<Context> {
        (!self.data.context.is_null()).then_some(Context(self.data.context))
    }

    /// The context handle as an opaque integer (0 when none is current).
    pub fn context_handle(&self) -> u64 {
        self.data.context as u64
    }

    /// CUPTI's unique id of that context.
    pub fn context_uid(&self) -> u32 {
        self.data.contextUid
    }

    /// For launches, the kernel's (mangled) name.
    pub fn symbol_name(&self) -> Option<&'a CStr> {
        cstr_opt(self.data.symbolName)
    }

    /// At exit, the call's return value (`cudaError_t` or `CUresult`).
    pub fn return_value(&self) -> Option<u32> {
        if self.site() != Site::Exit || self.data.functionReturnValue.is_null() {
            return None;
        }
        // SAFETY: at exit CUPTI points this at the call's `cudaError_t` /
        // `CUresult`, both 32-bit enums (cupti_callbacks.h, CUpti_CallbackData).
        Some(unsafe { *self.data.functionReturnValue.cast::<u32>() })
    }

    /// The 64-bit slot CUPTI keeps for this call between entry and exit.
    pub fn correlation_data(&self) -> u64 {
        // SAFETY: CUPTI provides a valid slot for the call's duration (or null).
        unsafe { self.data.correlationData.as_ref() }
            .copied()
            .unwrap_or(0)
    }

    /// Stores a value for the matching exit callback to read.
    pub fn set_correlation_data(&self, value: u64) {
        if !self.data.correlationData.is_null() {
            // SAFETY: the slot belongs to this call and is only touched by the
            // thread making it, between its entry and exit callbacks.
            unsafe { *self.data.correlationData = value };
        }
    }

    /// The stream argument ([`Stream::DEFAULT`] for handle 0) for launches of
    /// every path, graph launches, async copies and sets, stream synchronize,
    /// stream-wait-event and event record.
    pub fn stream(&self) -> Option<Stream<'a>> {
        let p = self.data.functionParams;
        // SAFETY: `p` is this callback's functionParams for (domain, cbid).
        let raw = unsafe {
            match self.domain {
                ApiDomain::Runtime => params::runtime_stream(self.cbid, p),
                ApiDomain::Driver => params::driver_stream(self.cbid, p),
            }
        };
        // The application passes the stream to the call this callback is
        // part of, so it is live while the callback runs.
        raw.map(Stream::from_callback)
    }

    /// The size argument of a 1-D asynchronous copy (bytes) or set
    /// (elements); `None` for other calls.
    pub fn size(&self) -> Option<u64> {
        let p = self.data.functionParams;
        // SAFETY: as in `stream`.
        unsafe {
            match self.domain {
                ApiDomain::Runtime => params::runtime_size(self.cbid, p),
                ApiDomain::Driver => params::driver_size(self.cbid, p),
            }
        }
    }

    /// The event argument (opaque handle) of event record, event synchronize
    /// and stream-wait-event.
    pub fn event(&self) -> Option<u64> {
        let p = self.data.functionParams;
        // SAFETY: as in `stream`.
        unsafe {
            match self.domain {
                ApiDomain::Runtime => params::runtime_event(self.cbid, p),
                ApiDomain::Driver => params::driver_event(self.cbid, p),
            }
        }
    }

    /// What a driver allocation or free did (see [`MemoryCall`]), at the
    /// call's exit; `None` at entry, for other calls and in the runtime
    /// domain (runtime allocations reach the driver's).
    pub fn memory_call(&self) -> Option<MemoryCall> {
        if self.domain != ApiDomain::Driver || self.site() != Site::Exit {
            return None;
        }
        // SAFETY: as in `stream`; at exit the call's out-parameters are
        // written.
        unsafe { params::driver_memory(self.cbid, self.data.functionParams) }
    }

    /// Grid, block and dynamic shared memory of a kernel launch.
    pub fn launch_config(&self) -> Option<LaunchConfig> {
        let p = self.data.functionParams;
        // SAFETY: as in `stream`.
        unsafe {
            match self.domain {
                ApiDomain::Runtime => params::runtime_launch(self.cbid, p),
                ApiDomain::Driver => params::driver_launch(self.cbid, p).map(|x| x.0),
            }
        }
    }

    /// The launched `CUfunction` of a driver-API kernel launch, for occupancy
    /// and attribute queries ([`crate::driver::Driver`]).
    pub fn kernel_function(&self) -> Option<KernelFunction<'a>> {
        if self.domain != ApiDomain::Driver {
            return None;
        }
        // SAFETY: as in `stream`.
        let (_, f) = unsafe { params::driver_launch(self.cbid, self.data.functionParams) }?;
        (!f.is_null()).then_some(KernelFunction {
            raw: f,
            _callback: PhantomData,
        })
    }

    /// The library handle this callback belongs to.
    pub fn cupti(&self) -> &'a Cupti {
        self.cupti
    }
}

/// A kernel function handle, valid while the callback that produced it runs.
#[derive(Clone, Copy, Debug)]
pub struct KernelFunction<'a> {
    pub(crate) raw: sys::CUfunction,
    _callback: PhantomData<&'a ()>,
}

impl KernelFunction<'_> {
    /// The handle as an integer (for caches keyed by function).
    pub fn as_u64(&self) -> u64 {
        self.raw as u64
    }
}

/// A resource-domain callback.
pub struct ResourceCallback<'a> {
    cupti: &'a Cupti,
    cbid: sys::CUpti_CallbackIdResource,
    data: &'a sys::CUpti_ResourceData,
}

impl std::fmt::Debug for ResourceCallback<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceCallback")
            .field("event", &self.event())
            .field("context", &self.context_handle())
            .finish()
    }
}

/// What happened to a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceEvent {
    /// `CONTEXT_CREATED`.
    ContextCreated,
    /// `CONTEXT_DESTROY_STARTING`.
    ContextDestroyStarting,
    /// `STREAM_CREATED`.
    StreamCreated,
    /// `STREAM_DESTROY_STARTING`.
    StreamDestroyStarting,
    /// `MODULE_LOADED`.
    ModuleLoaded,
    /// `MODULE_UNLOAD_STARTING`.
    ModuleUnloadStarting,
    /// Another resource callback id.
    Other(u32),
}

impl<'a> ResourceCallback<'a> {
    /// The CUPTI that delivered the callback.
    pub fn cupti(&self) -> &'a Cupti {
        self.cupti
    }

    /// What happened.
    pub fn event(&self) -> ResourceEvent {
        type R = sys::CUpti_CallbackIdResource;
        match self.cbid {
            R::CUPTI_CBID_RESOURCE_CONTEXT_CREATED => ResourceEvent::ContextCreated,
            R::CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING => {
                ResourceEvent::ContextDestroyStarting
            }
            R::CUPTI_CBID_RESOURCE_STREAM_CREATED => ResourceEvent::StreamCreated,
            R::CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING => ResourceEvent::StreamDestroyStarting,
            R::CUPTI_CBID_RESOURCE_MODULE_LOADED => ResourceEvent::ModuleLoaded,
            R::CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING => ResourceEvent::ModuleUnloadStarting,
            other => ResourceEvent::Other(other.0),
        }
    }

    /// The context created/destroyed, or containing the stream or module.
    pub fn context(&self) -> Option<Context> {
        (!self.data.context.is_null()).then_some(Context(self.data.context))
    }

    /// The context as an opaque integer.
    pub fn context_handle(&self) -> u64 {
        self.data.context as u64
    }

    /// For stream events, the stream created or about to be destroyed (still
    /// live during this callback).
    pub fn stream(&self) -> Option<Stream<'a>> {
        match self.event() {
            ResourceEvent::StreamCreated | ResourceEvent::StreamDestroyStarting => {
                // SAFETY: for stream callbacks the union holds the stream
                // (cupti_callbacks.h, CUpti_ResourceData::resourceHandle).
                let raw = unsafe { self.data.resourceHandle.stream };
                Some(Stream::from_callback(raw as u64))
            }
            _ => None,
        }
    }

    /// For stream events, CUPTI's stream id (the `streamId` of activity records).
    ///
    /// # Errors
    ///
    /// The CUPTI error; `None` inside means "not a stream event".
    #[doc(alias = "cuptiGetStreamIdEx")]
    pub fn stream_id(&self) -> Result<Option<u32>> {
        if self.stream().is_none() {
            return Ok(None);
        }
        let mut id = 0;
        // SAFETY: context and stream are the live handles CUPTI passed to this
        // callback; 0 = not a per-thread stream; valid out-pointer.
        self.cupti.check(unsafe {
            self.cupti.api().cuptiGetStreamIdEx(
                self.data.context,
                self.data.resourceHandle.stream,
                0,
                &mut id,
            )
        })?;
        Ok(Some(id))
    }

    /// For `MODULE_LOADED` / `MODULE_UNLOAD_STARTING`: CUPTI's module id and the
    /// cubin size.
    pub fn module(&self) -> Option<ModuleInfo<'a>> {
        match self.event() {
            ResourceEvent::ModuleLoaded | ResourceEvent::ModuleUnloadStarting => {}
            _ => return None,
        }
        // SAFETY: for module callbacks resourceDescriptor points to a
        // CUpti_ModuleResourceData valid during the callback (cupti_callbacks.h).
        let m = unsafe {
            self.data
                .resourceDescriptor
                .cast::<sys::CUpti_ModuleResourceData>()
                .as_ref()
        }?;
        Some(ModuleInfo {
            id: m.moduleId,
            cubin_size: m.cubinSize,
            _callback: PhantomData,
        })
    }
}

/// A loaded module.
#[derive(Clone, Copy, Debug)]
pub struct ModuleInfo<'a> {
    /// CUPTI's module id.
    pub id: u32,
    /// Size of the cubin in bytes.
    pub cubin_size: usize,
    _callback: PhantomData<&'a ()>,
}

/// A synchronize-domain callback: a stream or context synchronization completed.
#[derive(Debug)]
pub struct SyncCallback<'a> {
    cbid: sys::CUpti_CallbackIdSync,
    data: &'a sys::CUpti_SynchronizeData,
}

impl<'a> SyncCallback<'a> {
    /// Whether a stream (else a context) was synchronized.
    pub fn is_stream(&self) -> bool {
        self.cbid == sys::CUpti_CallbackIdSync::CUPTI_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED
    }

    /// The context as an opaque integer.
    pub fn context_handle(&self) -> u64 {
        self.data.context as u64
    }

    /// The stream, for stream synchronization.
    pub fn stream(&self) -> Option<Stream<'a>> {
        self.is_stream()
            .then(|| Stream::from_callback(self.data.stream as u64))
    }
}

fn cstr_opt<'a>(p: *const std::ffi::c_char) -> Option<&'a CStr> {
    // SAFETY: CUPTI strings are NUL-terminated and valid at least for the callback.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
}

fn cstr_or_empty<'a>(p: *const std::ffi::c_char) -> &'a CStr {
    cstr_opt(p).unwrap_or(c"")
}

impl<'a> Callback<'a> {
    /// Builds the view.
    ///
    /// # Safety
    ///
    /// `data` must be CUPTI's `cbdata` for `(domain, cbid)`, valid for `'a`.
    unsafe fn from_raw(
        cupti: &'a Cupti,
        domain: sys::CUpti_CallbackDomain,
        cbid: u32,
        data: *const c_void,
    ) -> Self {
        let domain = Domain::from_raw(domain);
        if data.is_null() {
            return Self::Other { domain, cbid };
        }
        // SAFETY: (all arms) CUPTI documents the type of cbdata per domain
        // (cupti_callbacks.h, CUpti_CallbackFunc): CallbackData for API
        // domains, ResourceData, SynchronizeData, NvtxData.
        unsafe {
            match domain {
                Domain::Runtime | Domain::Driver => Self::Api(ApiCallback {
                    cupti,
                    domain: if domain == Domain::Runtime {
                        ApiDomain::Runtime
                    } else {
                        ApiDomain::Driver
                    },
                    cbid,
                    data: &*data.cast(),
                }),
                Domain::Resource => Self::Resource(ResourceCallback {
                    cupti,
                    cbid: sys::CUpti_CallbackIdResource(cbid),
                    data: &*data.cast(),
                }),
                Domain::Synchronize => Self::Synchronize(SyncCallback {
                    cbid: sys::CUpti_CallbackIdSync(cbid),
                    data: &*data.cast(),
                }),
                Domain::Nvtx => Self::Nvtx(NvtxCallback::new(cbid, &*data.cast())),
                _ => Self::Other { domain, cbid },
            }
        }
    }
}

struct State<F> {
    cupti: Cupti,
    disabled: AtomicBool,
    closure: F,
}

trait Erased: Send + Sync {
    fn disabled(&self) -> &AtomicBool;
}

impl<F: Send + Sync> Erased for State<F> {
    fn disabled(&self) -> &AtomicBool {
        &self.disabled
    }
}

/// The single trampoline CUPTI calls; `userdata` is the subscriber's `State<F>`.
unsafe extern "C" fn trampoline<F>(
    userdata: *mut c_void,
    domain: sys::CUpti_CallbackDomain,
    cbid: sys::CUpti_CallbackId,
    cbdata: *const c_void,
) where
    F: Fn(&Callback<'_>) + Send + Sync + 'static,
{
    if userdata.is_null() {
        return;
    }
    // SAFETY: userdata is the `State<F>` boxed by `Subscriber::subscribe`; it
    // is never freed once CUPTI has it (see `Subscriber::unsubscribe`).
    let state = unsafe { &*userdata.cast::<State<F>>() };
    if state.disabled.load(Ordering::Relaxed) {
        return;
    }
    gpu_trace_model::guard::contain("CUPTI callback", &state.disabled, || {
        // SAFETY: CUPTI's arguments for this callback, valid during it.
        let cb = unsafe { Callback::from_raw(&state.cupti, domain, cbid, cbdata) };
        (state.closure)(&cb);
    });
}

/// A registered CUPTI subscriber owning its closure.
///
/// Dropping it unsubscribes (ignoring errors); [`Subscriber::close`] does the
/// same and reports the error. Either way the closure, and everything it
/// captured, is then leaked rather than dropped: CUPTI documents only that
/// after `cuptiUnsubscribe` "no future callbacks will be issued to that
/// subscriber", not that it waits for callbacks already running on other
/// threads, so no moment is known at which freeing it would be sound (the
/// `rocprofiler` crate leaks its closures for the same reason). CUPTI allows
/// one subscriber at a time, so this is one small box per subscription. A
/// callback that still arrives after unsubscribing returns at once.
///
/// A panic inside the closure is caught (by `gpu_trace_model::guard`, which
/// reports it once) and disables the subscriber: later callbacks return at
/// once.
pub struct Subscriber {
    cupti: Cupti,
    handle: sys::CUpti_SubscriberHandle,
    state: Option<Box<dyn Erased>>,
    /// CUPTI: "a subscriber must serialize access to cuptiGetCallbackState,
    /// cuptiEnableCallback, cuptiEnableDomain, and cuptiEnableAllDomains".
    enabling: Mutex<()>,
    /// `cuptiFinalize` ended the subscription: dropping it calls nothing
    /// (any CUPTI call would attach CUPTI again).
    finalized: AtomicBool,
}

// SAFETY: the handle is an opaque CUPTI token; cuptiSubscribe and
// cuptiUnsubscribe are documented "Thread-safety: this function is thread
// safe", and the enable calls, which CUPTI requires a subscriber to
// serialize, all run under `enabling`; the state is Send + Sync.
unsafe impl Send for Subscriber {}
// SAFETY: as above; `&Subscriber` only allows those calls.
unsafe impl Sync for Subscriber {}

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber")
            .field("disabled", &self.is_disabled())
            .finish()
    }
}

impl Subscriber {
    /// Subscribes `closure` to the callback API under `name`. No callback is
    /// enabled yet: call [`Subscriber::enable`] for the ids you need.
    ///
    /// `name` is what CUPTI reports to a tool that tries to subscribe while
    /// this one holds CUPTI (`cuptiSubscribe_v2`; older CUPTI ignores it). It
    /// may be at most [`MAX_NAME_LEN`] bytes long.
    ///
    /// # Errors
    ///
    /// [`Error::MultipleSubscribers`] when another subscriber (ours or another
    /// tool's) holds CUPTI, with its name when CUPTI reports it;
    /// [`Error::InvalidParameter`] for a name longer than [`MAX_NAME_LEN`];
    /// [`Error::NotInitialized`]; [`Error::MissingSymbol`].
    #[doc(alias = "cuptiSubscribe")]
    #[doc(alias = "cuptiSubscribe_v2")]
    pub fn subscribe<F>(cupti: &Cupti, name: &CStr, closure: F) -> Result<Self>
    where
        F: Fn(&Callback<'_>) + Send + Sync + 'static,
    {
        if name.to_bytes().len() > MAX_NAME_LEN {
            let code = sys::CUptiResult::CUPTI_ERROR_INVALID_PARAMETER;
            return Err(Error::from_status(Status::new(
                code,
                Some("subscriber name longer than CUPTI_SUBSCRIBER_NAME_MAX_LEN"),
            )));
        }
        let state = Box::new(State {
            cupti: cupti.clone(),
            disabled: AtomicBool::new(false),
            closure,
        });
        let userdata = (&*state as *const State<F>).cast_mut().cast::<c_void>();
        let mut handle: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
        let api = cupti.api();
        let mut old_name = [0 as std::ffi::c_char; sys::CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN as usize];
        let r = if api.cuptiSubscribe_v2.is_some() {
            let mut p = sys::CUpti_SubscriberParams {
                structSize: sys::struct_size!(sys::CUpti_SubscriberParams, oldSubscriberSize),
                subscriberName: name.as_ptr(),
                oldSubscriberName: old_name.as_mut_ptr(),
                oldSubscriberSize: old_name.len(),
            };
            // SAFETY: out-pointer and params valid for the call; the trampoline
            // matches CUpti_CallbackFunc; `userdata` outlives the subscription.
            unsafe { api.cuptiSubscribe_v2(&mut handle, Some(trampoline::<F>), userdata, &mut p) }
        } else {
            // SAFETY: as above.
            unsafe { api.cuptiSubscribe(&mut handle, Some(trampoline::<F>), userdata) }
        };
        match cupti.check(r) {
            Ok(()) => Ok(Self {
                cupti: cupti.clone(),
                handle,
                state: Some(state),
                enabling: Mutex::new(()),
                finalized: AtomicBool::new(false),
            }),
            Err(Error::MultipleSubscribers { status, .. }) => {
                let holder = CStr::from_bytes_until_nul(bytemuck_chars(&old_name))
                    .ok()
                    .and_then(|s| s.to_str().ok())
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned);
                Err(Error::MultipleSubscribers { status, holder })
            }
            Err(e) => Err(e),
        }
    }

    /// Enables one callback id of one domain.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for an unknown id; the CUPTI error otherwise.
    #[doc(alias = "cuptiEnableCallback")]
    pub fn enable(&self, domain: Domain, cbid: u32) -> Result<()> {
        self.set(domain, cbid, true)
    }

    /// Disables one callback id of one domain.
    ///
    /// # Errors
    ///
    /// As [`Subscriber::enable`].
    #[doc(alias = "cuptiEnableCallback")]
    pub fn disable(&self, domain: Domain, cbid: u32) -> Result<()> {
        self.set(domain, cbid, false)
    }

    /// Holds the lock CUPTI's enable calls must run under.
    fn serialized(&self) -> std::sync::MutexGuard<'_, ()> {
        // Nothing panics while it is held; a poisoned lock is still a lock.
        self.enabling.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, domain: Domain, cbid: u32, on: bool) -> Result<()> {
        let _serial = self.serialized();
        // SAFETY: live subscriber handle; plain values; serialized.
        self.cupti.check(unsafe {
            self.cupti
                .api()
                .cuptiEnableCallback(u32::from(on), self.handle, domain.to_raw(), cbid)
        })
    }

    /// Enables every id of every call of `kind` in `domain` (see [`cbid::ids_of`]).
    ///
    /// # Errors
    ///
    /// The first failing [`Subscriber::enable`]; ids CUPTI does not know are
    /// skipped.
    pub fn enable_kind(&self, domain: ApiDomain, kind: CallKind) -> Result<()> {
        for id in cbid::ids_of(domain, kind) {
            match self.enable(domain.into(), id) {
                Ok(()) | Err(Error::InvalidParameter(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Enables a whole domain.
    ///
    /// Costly for the runtime and driver domains: every API call then pays for
    /// a callback (measured 20–45% slowdown on a PyTorch loop). Prefer
    /// [`Subscriber::enable`] with the ids you need. Fine for the resource,
    /// synchronize and NVTX domains.
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiEnableDomain")]
    pub fn enable_domain(&self, domain: Domain) -> Result<()> {
        let _serial = self.serialized();
        // SAFETY: live subscriber handle; plain values; serialized.
        self.cupti.check(unsafe {
            self.cupti
                .api()
                .cuptiEnableDomain(1, self.handle, domain.to_raw())
        })
    }

    /// Disables every id of every call of `kind` in `domain`.
    ///
    /// # Errors
    ///
    /// As [`Subscriber::enable_kind`].
    pub fn disable_kind(&self, domain: ApiDomain, kind: CallKind) -> Result<()> {
        for id in cbid::ids_of(domain, kind) {
            match self.disable(domain.into(), id) {
                Ok(()) | Err(Error::InvalidParameter(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Disables a whole domain.
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiEnableDomain")]
    pub fn disable_domain(&self, domain: Domain) -> Result<()> {
        let _serial = self.serialized();
        // SAFETY: live subscriber handle; plain values; serialized.
        self.cupti.check(unsafe {
            self.cupti
                .api()
                .cuptiEnableDomain(0, self.handle, domain.to_raw())
        })
    }

    /// Whether a panic in the closure disabled this subscriber.
    pub fn is_disabled(&self) -> bool {
        self.state
            .as_ref()
            .is_some_and(|s| s.disabled().load(Ordering::Relaxed))
    }

    /// Unsubscribes, reporting CUPTI's error. The closure is leaked, not
    /// dropped (see the type's documentation).
    ///
    /// # Errors
    ///
    /// The CUPTI error of `cuptiUnsubscribe`.
    #[doc(alias = "cuptiUnsubscribe")]
    pub fn close(mut self) -> Result<()> {
        self.unsubscribe()
    }

    /// `cuptiFinalize` ended this subscription ([`crate::Cupti::finalize`]):
    /// its closure gets no more callbacks, and dropping it calls no CUPTI
    /// function (one would attach CUPTI again). Its enable calls must not
    /// be used any more.
    pub fn forget_after_finalize(&self) {
        self.finalized.store(true, Ordering::Relaxed);
        if let Some(s) = &self.state {
            s.disabled().store(true, Ordering::Relaxed);
        }
    }

    fn unsubscribe(&mut self) -> Result<()> {
        let Some(state) = self.state.take() else {
            return Ok(());
        };
        // Callbacks CUPTI issues from here on return at once.
        state.disabled().store(true, Ordering::Relaxed);
        if self.finalized.load(Ordering::Relaxed) {
            let _: &'static dyn Erased = Box::leak(state);
            return Ok(());
        }
        // SAFETY: live handle, unsubscribed exactly once (state taken above).
        let r = self
            .cupti
            .check(unsafe { self.cupti.api().cuptiUnsubscribe(self.handle) });
        // cuptiUnsubscribe only promises that "no future callbacks will be
        // issued to that subscriber"; one already running on another thread
        // may still be reading the state, so it is never freed.
        let _: &'static dyn Erased = Box::leak(state);
        r
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        let _ = self.unsubscribe();
    }
}

/// The longest subscriber name CUPTI takes, in bytes
/// (`CUPTI_SUBSCRIBER_NAME_MAX_LEN`, counted here with the terminating NUL).
pub const MAX_NAME_LEN: usize = sys::CUPTI_SUBSCRIBER_NAME_MAX_LEN as usize - 1;

fn bytemuck_chars(s: &[std::ffi::c_char]) -> &[u8] {
    // SAFETY: c_char and u8 have the same size and alignment; same length.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), s.len()) }
}
