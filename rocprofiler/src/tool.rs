//! Tool registration: the safe half of `rocprofiler_configure`.
//!
//! A tool library implements [`Tool`], declares one `static` [`ToolCell`] and exports a
//! `rocprofiler_configure` that forwards to [`ToolCell::configure`]:
//!
//! ```ignore
//! static TOOL: rocprofiler::ToolCell<MyTool> = rocprofiler::ToolCell::new();
//!
//! #[unsafe(no_mangle)]
//! pub unsafe extern "C" fn rocprofiler_configure(
//!     version: u32,
//!     runtime_version: *const std::ffi::c_char,
//!     priority: u32,
//!     client_id: *mut rocprofiler::sys::rocprofiler_client_id_t,
//! ) -> *mut rocprofiler::sys::rocprofiler_tool_configure_result_t {
//!     // SAFETY: the arguments are the SDK's, unchanged.
//!     unsafe { TOOL.configure(version, runtime_version, priority, client_id) }
//! }
//! ```

use std::cell::UnsafeCell;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use rocprofiler_sys as sys;

use crate::guard::guard;
use crate::{Error, Result, Runtime, Version};

/// What `rocprofiler_configure` was told.
#[derive(Debug, Clone)]
pub struct ConfigureInfo {
    /// SDK version.
    pub version: Version,
    /// The SDK's version string.
    pub runtime_version: String,
    /// How many tools were configured before this one.
    pub priority: u32,
    /// The SDK's id for this tool.
    pub client_handle: u32,
}

/// A rocprofiler-sdk tool. All methods run inside panic guards.
pub trait Tool: Sized + Send + Sync + 'static {
    /// Client name shown by the SDK.
    const NAME: &'static CStr;

    /// What `initialize` creates and `finalize` gets back: contexts, buffers, counter configs.
    type Session: Send + 'static;

    /// In `rocprofiler_configure`, after the version check: `None` declines (the SDK then never
    /// calls this tool again).
    fn configure(info: &ConfigureInfo) -> Option<Self>;

    /// The only window for creating contexts, buffers and services. Must not call HIP/HSA.
    ///
    /// # Errors
    ///
    /// An error declines the SDK's services for this tool: [`ToolCell`] says why on stderr,
    /// tells the SDK the tool failed to initialise, and the tool stays inactive.
    fn initialize(&self, rt: &Runtime) -> Result<Self::Session>;

    /// At SDK finalisation (process exit) or after [`ToolCell::finalize_early`]. The SDK has
    /// already stopped this tool's contexts; buffers are **not** flushed for it: flush here.
    fn finalize(&self, rt: &Runtime, session: Self::Session);

    /// Resolves the SDK's functions; override to test against a fake table.
    ///
    /// # Errors
    ///
    /// [`Runtime::from_process`]'s errors.
    fn load_runtime() -> Result<Runtime> {
        Runtime::from_process()
    }
}

struct Configured<T> {
    tool: T,
    rt: Runtime,
    client_handle: u32,
}

struct ResultSlot(UnsafeCell<sys::rocprofiler_tool_configure_result_t>);

// SAFETY: written once (inside `OnceLock::get_or_init`) before its address is handed out; after
// that only the SDK reads it.
unsafe impl Sync for ResultSlot {}
// SAFETY: plain data (function pointers and a pointer to a static).
unsafe impl Send for ResultSlot {}

/// The per-process root of a tool library: holds the tool, its session and the configure
/// result the SDK keeps a pointer to. Declare exactly one as a `static`.
pub struct ToolCell<T: Tool> {
    configured: OnceLock<Configured<T>>,
    result: OnceLock<ResultSlot>,
    session: Mutex<Option<T::Session>>,
    client_finalize: OnceLock<sys::rocprofiler_client_finalize_t>,
    enabled: AtomicBool,
    refused_version: AtomicU32,
}

impl<T: Tool> Default for ToolCell<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Tool> ToolCell<T> {
    /// An empty cell, for a `static`.
    pub const fn new() -> Self {
        Self {
            configured: OnceLock::new(),
            result: OnceLock::new(),
            session: Mutex::new(None),
            client_finalize: OnceLock::new(),
            enabled: AtomicBool::new(true),
            refused_version: AtomicU32::new(0),
        }
    }

    /// The body of the library's exported `rocprofiler_configure`.
    ///
    /// Refuses (returns null, touching nothing) SDKs whose ABI is not 1.x — `client_id` has
    /// another layout there — and SDKs without the functions this crate needs. Never panics.
    ///
    /// # Safety
    /// The arguments must be those the SDK passed to `rocprofiler_configure`.
    pub unsafe fn configure(
        &'static self,
        version: u32,
        runtime_version: *const c_char,
        priority: u32,
        client_id: *mut sys::rocprofiler_client_id_t,
    ) -> *mut sys::rocprofiler_tool_configure_result_t {
        let body = || -> Result<Option<*mut sys::rocprofiler_tool_configure_result_t>> {
            let found = Version::from_encoded(version);
            if !sys::abi_supported(version) {
                self.refused_version.store(version, Ordering::Relaxed);
                return Err(Error::UnsupportedVersion { found });
            }
            if self.configured.get().is_some() {
                return Ok(None); // configured twice: keep the first
            }
            let runtime_version = if runtime_version.is_null() {
                String::new()
            } else {
                // SAFETY: the SDK's NUL-terminated version string.
                unsafe { CStr::from_ptr(runtime_version) }
                    .to_string_lossy()
                    .into_owned()
            };
            // SAFETY: 1.x layout confirmed above; the SDK passes a valid in/out struct.
            let client = unsafe { client_id.as_mut() };
            let client_handle = client.as_ref().map_or(0, |c| c.handle);
            let info = ConfigureInfo {
                version: found,
                runtime_version,
                priority,
                client_handle,
            };
            let Some(tool) = T::configure(&info) else {
                return Ok(None);
            };
            let rt = T::load_runtime()?;
            if let Some(c) = client {
                c.name = T::NAME.as_ptr();
            }
            if self
                .configured
                .set(Configured {
                    tool,
                    rt,
                    client_handle,
                })
                .is_err()
            {
                return Ok(None);
            }
            let data = (self as *const Self).cast_mut().cast::<c_void>();
            let slot = self.result.get_or_init(|| {
                ResultSlot(UnsafeCell::new(sys::rocprofiler_tool_configure_result_t {
                    size: std::mem::size_of::<sys::rocprofiler_tool_configure_result_t>(),
                    initialize: Some(initialize_trampoline::<T>),
                    finalize: Some(finalize_trampoline::<T>),
                    tool_data: data,
                }))
            });
            Ok(Some(slot.0.get()))
        };
        match guard("rocprofiler_configure", &self.enabled, body) {
            Some(Ok(Some(p))) => p,
            Some(Ok(None)) | None => std::ptr::null_mut(),
            Some(Err(e)) => {
                eprintln!(
                    "{}: {e}; the tool stays inactive",
                    T::NAME.to_string_lossy()
                );
                self.enabled.store(false, Ordering::Relaxed);
                std::ptr::null_mut()
            }
        }
    }

    /// The tool, once configured.
    pub fn tool(&self) -> Option<&T> {
        self.configured.get().map(|c| &c.tool)
    }

    /// The runtime, once configured.
    pub fn runtime(&self) -> Option<&Runtime> {
        self.configured.get().map(|c| &c.rt)
    }

    /// False after a refusal, a failed `initialize` or a caught panic.
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// The encoded SDK version refused by `configure`, if any.
    pub fn refused_version(&self) -> Option<u32> {
        match self.refused_version.load(Ordering::Relaxed) {
            0 => None,
            v => Some(v),
        }
    }

    /// Runs `f` on the session (e.g. to flush from a signal-handling thread).
    pub fn with_session<R>(&self, f: impl FnOnce(&mut T::Session) -> R) -> Option<R> {
        let mut s = self.session.lock().ok()?;
        s.as_mut().map(f)
    }

    /// Asks the SDK to finalise this tool now (it stops the contexts and calls `finalize`).
    pub fn finalize_early(&self) -> bool {
        let (Some(c), Some(Some(fini))) = (self.configured.get(), self.client_finalize.get())
        else {
            return false;
        };
        let id = sys::rocprofiler_client_id_t {
            size: std::mem::size_of::<sys::rocprofiler_client_id_t>(),
            name: T::NAME.as_ptr(),
            handle: c.client_handle,
        };
        // SAFETY: the SDK's own client-finalize function with the id it gave this tool.
        unsafe { fini(id) };
        true
    }
}

unsafe extern "C" fn initialize_trampoline<T: Tool>(
    finalize_func: sys::rocprofiler_client_finalize_t,
    tool_data: *mut c_void,
) -> c_int {
    // SAFETY: `tool_data` is the `&'static ToolCell<T>` set in `configure`.
    let Some(cell) = (unsafe { tool_data.cast::<ToolCell<T>>().as_ref() }) else {
        return 1;
    };
    let _ = cell.client_finalize.set(finalize_func);
    let body = || -> Result<()> {
        let Some(c) = cell.configured.get() else {
            return Ok(());
        };
        let session = c.tool.initialize(&c.rt)?;
        if let Ok(mut s) = cell.session.lock() {
            *s = Some(session);
        }
        Ok(())
    };
    match guard("tool initialize", &cell.enabled, body) {
        Some(Ok(())) => 0,
        Some(Err(e)) => {
            eprintln!(
                "{}: initialize failed: {e}; the tool stays inactive",
                T::NAME.to_string_lossy()
            );
            cell.enabled.store(false, Ordering::Relaxed);
            1
        }
        None => 1,
    }
}

unsafe extern "C" fn finalize_trampoline<T: Tool>(tool_data: *mut c_void) {
    // SAFETY: `tool_data` is the `&'static ToolCell<T>` set in `configure`.
    let Some(cell) = (unsafe { tool_data.cast::<ToolCell<T>>().as_ref() }) else {
        return;
    };
    let Some(c) = cell.configured.get() else {
        return;
    };
    let session = cell.session.lock().ok().and_then(|mut s| s.take());
    if let Some(session) = session {
        // Finalize runs even after a caught panic elsewhere: it is where data gets written.
        let flag = AtomicBool::new(true);
        guard("tool finalize", &flag, || c.tool.finalize(&c.rt, session));
    }
}
