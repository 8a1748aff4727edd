//! Safe wrapper over NVIDIA CUPTI (CUDA 13.0+) for a tracer injected into
//! unmodified CUDA applications.
//!
//! - [`Cupti`]: the loaded library (found at run time, never linked), with its
//!   version checked against [`CUPTI_VERSION_FLOOR`].
//! - [`callback`]: [`callback::Subscriber`], an RAII registration of one closure
//!   for the callback API, with typed views of API, resource, synchronize and
//!   NVTX callbacks; [`cbid`] classifies runtime/driver callback ids.
//! - [`activity`]: activity kinds, a bounded buffer pool, one process-wide
//!   handler receiving typed [`activity::Record`]s, the CLOCK_BOOTTIME
//!   timestamp callback.
//! - [`profiler`]: the Range Profiler + Profiler Host APIs (per-kernel metrics).
//! - [`driver`]: the few CUDA driver calls a tracer needs (device info,
//!   occupancy), through the `libcuda` the application already loaded.
//!
//! Panics inside user closures never unwind into CUDA: they are caught by
//! gpu-trace's one panic guard (`gpu_trace_model::guard::contain`), which
//! reports the first panic of the process on stderr and trips its
//! process-wide state, and the closure is disabled.
//!
//! # Record versions
//!
//! CUPTI has no per-record version field: each activity kind is written as the
//! newest struct version the running CUPTI knows (e.g. `CONCURRENT_KERNEL` is
//! `CUpti_ActivityKernel10` in 13.0 and `CUpti_ActivityKernel11` in 13.1). A
//! new version keeps the previous one as its prefix and appends fields (checked
//! in the 13.0 and 13.1 headers: `Kernel11` is `Kernel10` plus `priority` and
//! padding), so this crate decodes the 13.0 layout as a prefix of whatever a
//! newer CUPTI writes, and refuses CUPTI older than 13.0.

#![deny(missing_docs)]

use std::{ffi::CStr, marker::PhantomData, path::Path, sync::Arc};

use cupti_sys as sys;

pub mod activity;
pub mod callback;
pub mod cbid;
pub mod driver;
mod error;
pub mod nvtx;
pub mod nvtx_injection;
mod params;
pub mod profiler;

pub use error::{Error, Result, Status};
pub use sys::loader::CUPTI_PATH_ENV;

/// Lowest `cuptiGetVersion` accepted: the CUPTI API version of CUDA 13.0.
pub const CUPTI_VERSION_FLOOR: u32 = sys::CUPTI_API_VERSION_13_0;

/// The loaded CUPTI library. Cheap to clone (an `Arc` inside).
///
/// The library is never unloaded: the CUDA driver keeps pointers into it once
/// callbacks or activity buffers are registered, and the strings it hands out
/// (`cuptiGetResultString`, kernel names) stay valid for the process lifetime.
#[derive(Clone)]
pub struct Cupti {
    inner: Arc<Inner>,
}

struct Inner {
    api: sys::CuptiApi,
    version: u32,
    path: String,
}

impl std::fmt::Debug for Cupti {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cupti")
            .field("path", &self.inner.path)
            .field("version", &self.inner.version)
            .finish()
    }
}

impl Cupti {
    /// Finds and opens the first `libcupti` whose version is at least
    /// [`CUPTI_VERSION_FLOOR`]; older ones found on the way are skipped.
    ///
    /// Search order: `$GPU_TRACE_CUPTI_PATH` (file or folder); a `libcupti`
    /// already loaded in the process; next to the `libcudart.so*` and then
    /// the `libcuda.so*` already loaded (the same folder, `../extras/CUPTI/lib64`,
    /// a wheel's `nvidia/cuda_cupti/lib` beside `nvidia/cuda_runtime/lib`); the
    /// sonames `libcupti.so.13`, `.so.12`, `.so` through the loader's path,
    /// `$CUDA_HOME/{extras/CUPTI/lib64,targets/<arch>/lib}`, the same under
    /// `/usr/local/cuda` and `/usr/local/cuda-13.0`, then the `nvidia/cu13/lib`
    /// and `nvidia/cuda_cupti/lib` folders of pip wheels in the `site-packages`
    /// found from `VIRTUAL_ENV`, `CONDA_PREFIX`, `PYTHONPATH` and the libraries
    /// already mapped into this process.
    ///
    /// # Errors
    ///
    /// [`Error::LibraryNotFound`] listing every place tried, and the version
    /// of each library found below [`CUPTI_VERSION_FLOOR`];
    /// [`Error::MissingSymbol`] if `cuptiGetVersion` is absent.
    #[doc(alias = "cuptiGetVersion")]
    pub fn load() -> Result<Self> {
        let (lib, path) = sys::loader::open_cupti(CUPTI_VERSION_FLOOR)?;
        Self::from_library(lib, path)
    }

    /// Opens `libcupti` from an explicit path, then checks its version.
    ///
    /// # Errors
    ///
    /// [`Error::LibraryOpen`] if the file cannot be opened; otherwise as
    /// [`Cupti::load`].
    pub fn load_from_path(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_string_lossy().into_owned();
        let lib = sys::loader::open_path(&path).map_err(|source| Error::LibraryOpen {
            path: path.clone(),
            source,
        })?;
        Self::from_library(lib, path)
    }

    fn from_library(lib: libloading::Library, path: String) -> Result<Self> {
        // SAFETY: `lib` is a CUPTI library (found by name); it is leaked below,
        // so every pointer in the table stays valid for the process lifetime.
        let api = unsafe { sys::CuptiApi::load_from(&lib) };
        std::mem::forget(lib);
        // SAFETY: the table was just filled from that CUPTI library, which is
        // never unloaded.
        unsafe { Self::from_table(api, path) }
    }

    /// Builds a handle from an already-filled symbol table (custom resolvers,
    /// tests with fake tables), then checks the version.
    ///
    /// # Safety
    ///
    /// Every call through the returned handle trusts the table. Each non-null
    /// entry of `api` must be a function with the C signature and behaviour of
    /// the CUPTI function it is named after, as the CUPTI headers document it
    /// (e.g. `cuptiGetResultString` hands out strings that stay valid for the
    /// process lifetime), and must stay callable, from any thread, for as long
    /// as the handle or anything made from it lives (in practice: the library
    /// it came from is never unloaded).
    ///
    /// # Errors
    ///
    /// [`Error::VersionTooOld`], [`Error::MissingSymbol`] for
    /// `cuptiGetVersion`, or the CUPTI error it returned.
    pub unsafe fn from_table(api: sys::CuptiApi, origin: impl Into<String>) -> Result<Self> {
        let mut version = 0u32;
        // SAFETY: the table's entries are the CUPTI functions (the caller's
        // contract); `version` is a valid out-pointer.
        let r = unsafe { api.cuptiGetVersion(&mut version) };
        let inner = Inner {
            api,
            version,
            path: origin.into(),
        };
        let this = Self {
            inner: Arc::new(inner),
        };
        this.check(r)?;
        if version < CUPTI_VERSION_FLOOR {
            return Err(Error::VersionTooOld {
                found: version,
                floor: CUPTI_VERSION_FLOOR,
            });
        }
        Ok(this)
    }

    /// `cuptiGetVersion` of the loaded library.
    #[doc(alias = "cuptiGetVersion")]
    pub fn version(&self) -> u32 {
        self.inner.version
    }

    /// Where the library was loaded from.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    pub(crate) fn api(&self) -> &sys::CuptiApi {
        &self.inner.api
    }

    /// CUPTI's description of a result code.
    #[doc(alias = "cuptiGetResultString")]
    pub fn result_string(&self, code: sys::CUptiResult) -> Option<&'static str> {
        let mut s: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: valid out-pointer; the returned string is a constant inside
        // libcupti, which is never unloaded (see the type's docs).
        let r = unsafe { self.api().cuptiGetResultString(code, &mut s) };
        if r != Ok(sys::CUptiResult::CUPTI_SUCCESS) || s.is_null() {
            return None;
        }
        // SAFETY: non-null, NUL-terminated constant string for the process lifetime.
        unsafe { CStr::from_ptr(s) }.to_str().ok()
    }

    /// Turns a CUPTI call's outcome into a `Result`.
    pub(crate) fn check(
        &self,
        r: std::result::Result<sys::CUptiResult, sys::MissingSymbol>,
    ) -> Result<()> {
        let code = r?;
        if code == sys::CUptiResult::CUPTI_SUCCESS {
            Ok(())
        } else {
            Err(self.error(code))
        }
    }

    pub(crate) fn error(&self, code: sys::CUptiResult) -> Error {
        Error::from_status(Status::new(code, self.result_string(code)))
    }

    /// CUPTI's current timestamp in ns (the registered timestamp callback's
    /// clock, if one is registered).
    ///
    /// # Errors
    ///
    /// The CUPTI error, or [`Error::MissingSymbol`].
    #[doc(alias = "cuptiGetTimestamp")]
    pub fn timestamp(&self) -> Result<u64> {
        let mut t = 0;
        // SAFETY: valid out-pointer.
        self.check(unsafe { self.api().cuptiGetTimestamp(&mut t) })?;
        Ok(t)
    }

    /// Detaches CUPTI from the process: its subscriber, enabled callbacks
    /// and activity kinds, registered buffer and timestamp callbacks are
    /// gone, and the process runs as if CUPTI were not loaded.
    ///
    /// CUPTI recommends calling it at the exit callsite of a driver or
    /// runtime API callback; elsewhere the caller must first synchronise
    /// the GPU work whose records it wants and flush them. Records still
    /// in CUPTI's buffers are discarded (flush first), and on the H200
    /// (CUDA 13.0) a kernel still running is lost. No other CUPTI call may
    /// overlap it. The next CUPTI call attaches CUPTI again: subscribe anew
    /// ([`crate::callback::Subscriber::subscribe`], after
    /// [`crate::callback::Subscriber::forget_after_finalize`] on the old
    /// one) and re-register activity ([`crate::activity::Activity::reattach`]).
    ///
    /// # Errors
    ///
    /// The CUPTI error, or [`Error::MissingSymbol`].
    #[doc(alias = "cuptiFinalize")]
    pub fn finalize(&self) -> Result<()> {
        // SAFETY: no arguments; the caller keeps other CUPTI calls from
        // overlapping it (see above).
        let r = self.check(unsafe { self.api().cuptiFinalize() });
        if r.is_ok() {
            crate::activity::forget_enabled_kinds();
        }
        r
    }
}

/// A CUDA context handle that CUPTI handed us, as an opaque value.
///
/// Only CUPTI callbacks produce these (or [`Context::from_raw`]), so they name
/// a context that existed when the callback ran. Destroying the context
/// invalidates it: drop profilers at `CONTEXT_DESTROY_STARTING`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Context(pub(crate) sys::CUcontext);

// SAFETY: a CUcontext is a process-wide handle the driver accepts from any
// thread (CUDA driver API, "Context management": contexts may be made
// current on, and passed to, any host thread).
unsafe impl Send for Context {}
// SAFETY: as above; the handle is never dereferenced on our side.
unsafe impl Sync for Context {}

impl Context {
    /// The handle as an integer (for maps and trace ids).
    pub fn as_u64(self) -> u64 {
        self.0 as u64
    }

    /// Wraps a raw `CUcontext` value.
    ///
    /// # Safety
    ///
    /// `raw` must be a live CUDA context of this process for as long as the
    /// value is passed to CUPTI.
    pub unsafe fn from_raw(raw: u64) -> Self {
        Self(raw as sys::CUcontext)
    }

    /// CUPTI's process-unique id of this context.
    ///
    /// # Errors
    ///
    /// The CUPTI error (e.g. the context was destroyed).
    #[doc(alias = "cuptiGetContextId")]
    pub fn id(self, cupti: &Cupti) -> Result<u32> {
        let mut id = 0;
        // SAFETY: the handle came from CUPTI (type invariant); out-pointer valid.
        cupti.check(unsafe { cupti.api().cuptiGetContextId(self.0, &mut id) })?;
        Ok(id)
    }

    /// The CUPTI device id (CUDA ordinal) of this context.
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiGetDeviceId")]
    pub fn device_id(self, cupti: &Cupti) -> Result<u32> {
        let mut id = 0;
        // SAFETY: as in `id`.
        cupti.check(unsafe { cupti.api().cuptiGetDeviceId(self.0, &mut id) })?;
        Ok(id)
    }
}

/// A CUDA stream handle (`CUstream`) from a callback's arguments, valid while
/// that callback runs (the lifetime).
///
/// Only callbacks produce these, besides [`Stream::DEFAULT`] and the `unsafe`
/// [`Stream::from_raw`], so the driver calls that take one
/// ([`driver::Driver::stream_is_capturing`]) are only ever given a stream the
/// application itself was using. Copy out [`Stream::as_u64`] to use it as a key
/// after the callback; the handle itself cannot outlive it:
///
/// ```compile_fail,E0521
/// use cupti::{Stream, callback::{Callback, Subscriber}};
/// fn keep(cupti: &cupti::Cupti, kept: &'static std::sync::Mutex<Option<Stream<'static>>>) {
///     let _ = Subscriber::subscribe(cupti, c"example", move |cb: &Callback<'_>| {
///         if let Callback::Api(api) = cb {
///             *kept.lock().unwrap() = api.stream();
///         }
///     });
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stream<'a> {
    raw: sys::CUstream,
    _callback: PhantomData<&'a ()>,
}

// SAFETY: a CUstream is a process-wide handle the driver accepts from any
// host thread (CUDA driver API, "Stream Management": streams are not tied to
// the thread that created them); it is never dereferenced on our side.
unsafe impl Send for Stream<'_> {}
// SAFETY: as above.
unsafe impl Sync for Stream<'_> {}

impl Stream<'static> {
    /// Handle 0, the default stream (the legacy one, or the per-thread one
    /// for code built with `--default-stream per-thread`). Always valid.
    pub const DEFAULT: Self = Self {
        raw: std::ptr::null_mut(),
        _callback: PhantomData,
    };
}

impl<'a> Stream<'a> {
    /// A handle CUPTI passed to a callback that lives for `'a`.
    pub(crate) fn from_callback(raw: u64) -> Self {
        Self {
            raw: raw as sys::CUstream,
            _callback: PhantomData,
        }
    }

    /// Wraps a raw `CUstream` value.
    ///
    /// # Safety
    ///
    /// `raw` must be 0, `CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD`, or a
    /// stream of this process that is not destroyed during `'a`.
    pub unsafe fn from_raw(raw: u64) -> Self {
        Self::from_callback(raw)
    }

    /// The handle as an integer (for maps and trace ids); 0 is the default
    /// stream.
    pub fn as_u64(self) -> u64 {
        self.raw as u64
    }

    pub(crate) fn raw(self) -> sys::CUstream {
        self.raw
    }
}

// Handles are shared with CUPTI's callback threads; what a callback is
// handed borrows CUPTI's memory for the call and stays on its thread.
static_assertions::assert_impl_all!(Cupti: Send, Sync);
static_assertions::assert_impl_all!(Context: Send, Sync);
static_assertions::assert_impl_all!(Stream<'static>: Send, Sync);
static_assertions::assert_impl_all!(callback::Subscriber: Send, Sync);
static_assertions::assert_impl_all!(activity::Activity: Send, Sync);
static_assertions::assert_impl_all!(driver::Driver: Send, Sync);
static_assertions::assert_impl_all!(profiler::MetricConfig: Send, Sync);
static_assertions::assert_impl_all!(profiler::RangeProfiler<'static>: Send);
static_assertions::assert_not_impl_any!(profiler::RangeProfiler<'static>: Sync);
static_assertions::assert_not_impl_any!(activity::Records<'static>: Send, Sync);
static_assertions::assert_not_impl_any!(callback::ApiCallback<'static>: Send, Sync);

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
struct ReadmeDoctests;
