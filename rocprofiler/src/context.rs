//! Contexts and the services attached to them.

use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rocprofiler_sys as sys;

use crate::counting::{DispatchCountingRequest, DispatchCounts};
use crate::guard::Slot;
use crate::{Buffer, CallbackEvent, ContextId, Result, Runtime};

/// A rocprofiler context: services are attached during the tool's `initialize` and switched on
/// and off together with [`Context::start`]/[`Context::stop`] at any time.
///
/// Dropping it stops it (if this value started it) and switches its callbacks off; the SDK has
/// no call that destroys a context. [`Context::close`] does the same and reports errors.
pub struct Context {
    rt: Runtime,
    id: sys::rocprofiler_context_id_t,
    started: AtomicBool,
    slots: Mutex<Vec<&'static AtomicBool>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("id", &self.id.handle)
            .finish()
    }
}

// SAFETY: a context is an integer handle; the SDK documents start/stop/configure as callable
// from any thread, and the remaining state is atomics and a Mutex.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

impl Context {
    /// Creates a context (only inside the tool's `initialize`; later the SDK answers
    /// `ConfigurationLocked`).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_create_context` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it; outside the tool's `initialize`
    /// the status is `ConfigurationLocked`.
    #[doc(alias = "rocprofiler_create_context")]
    pub fn new(rt: &Runtime) -> Result<Context> {
        // The handle must be zero on input.
        let mut id = sys::rocprofiler_context_id_t { handle: 0 };
        // SAFETY: valid out-pointer.
        let r = unsafe { rt.api().rocprofiler_create_context(&mut id) };
        rt.check("rocprofiler_create_context", r)?;
        Ok(Context {
            rt: rt.clone(),
            id,
            started: AtomicBool::new(false),
            slots: Mutex::new(Vec::new()),
        })
    }

    /// Id.
    pub fn id(&self) -> ContextId {
        ContextId(self.id.handle)
    }

    /// The raw id.
    pub fn raw(&self) -> sys::rocprofiler_context_id_t {
        self.id
    }

    /// The runtime.
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }

    /// Starts the context's services.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_start_context` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_start_context")]
    pub fn start(&self) -> Result<()> {
        // SAFETY: plain value argument.
        let r = unsafe { self.rt.api().rocprofiler_start_context(self.id) };
        self.rt.check("rocprofiler_start_context", r)?;
        self.started.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Stops the context's services (callbacks already running on other threads may finish).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_stop_context` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_stop_context")]
    pub fn stop(&self) -> Result<()> {
        // SAFETY: plain value argument.
        let r = unsafe { self.rt.api().rocprofiler_stop_context(self.id) };
        self.rt.check("rocprofiler_stop_context", r)?;
        self.started.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Whether the context is started.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_context_is_active` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_context_is_active")]
    pub fn is_active(&self) -> Result<bool> {
        let mut s = 0;
        // SAFETY: valid out-pointer.
        let r = unsafe { self.rt.api().rocprofiler_context_is_active(self.id, &mut s) };
        self.rt.check("rocprofiler_context_is_active", r)?;
        Ok(s != 0)
    }

    /// Whether the SDK considers the context valid.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_context_is_valid` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_context_is_valid")]
    pub fn is_valid(&self) -> Result<bool> {
        let mut s = 0;
        // SAFETY: valid out-pointer.
        let r = unsafe { self.rt.api().rocprofiler_context_is_valid(self.id, &mut s) };
        self.rt.check("rocprofiler_context_is_valid", r)?;
        Ok(s != 0)
    }

    /// Stops the context (if this value started it) and switches its callbacks off.
    ///
    /// # Errors
    ///
    /// [`Context::stop`]'s error, when this value had started the context; its callbacks are
    /// switched off either way.
    pub fn close(self) -> Result<()> {
        let r = if self.started.load(Ordering::Relaxed) {
            self.stop()
        } else {
            Ok(())
        };
        self.disable_slots();
        std::mem::forget(self);
        r
    }

    fn disable_slots(&self) {
        if let Ok(slots) = self.slots.lock() {
            for s in slots.iter() {
                s.store(false, Ordering::Relaxed);
            }
        }
    }

    fn remember(&self, flag: &'static AtomicBool) {
        if let Ok(mut slots) = self.slots.lock() {
            slots.push(flag);
        }
    }

    /// Buffer tracing of `kind` into `buffer` (`operations` empty = all).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when
    /// `rocprofiler_configure_buffer_tracing_service` fails, and [`crate::Error::MissingSymbol`] when
    /// the running SDK lacks it; outside the tool's `initialize` the status is
    /// `ConfigurationLocked`.
    #[doc(alias = "rocprofiler_configure_buffer_tracing_service")]
    pub fn configure_buffer_tracing(
        &self,
        buffer: &Buffer,
        kind: sys::rocprofiler_buffer_tracing_kind_t,
        operations: &[i32],
    ) -> Result<()> {
        let (ops, n) = if operations.is_empty() {
            (std::ptr::null(), 0)
        } else {
            (operations.as_ptr(), operations.len())
        };
        // SAFETY: `ops` is null or `n` valid ids the SDK copies.
        let r = unsafe {
            self.rt.api().rocprofiler_configure_buffer_tracing_service(
                self.id,
                kind,
                ops,
                n,
                buffer.raw(),
            )
        };
        self.rt
            .check("rocprofiler_configure_buffer_tracing_service", r)
    }

    /// Callback tracing of `kind` (`operations` empty = all). `f` runs synchronously on the
    /// thread making the call, concurrently from many threads; a panic in it is caught, reported
    /// once and switches this callback off.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when
    /// `rocprofiler_configure_callback_tracing_service` fails, and [`crate::Error::MissingSymbol`]
    /// when the running SDK lacks it; outside the tool's `initialize` the status is
    /// `ConfigurationLocked`.
    #[doc(alias = "rocprofiler_configure_callback_tracing_service")]
    pub fn configure_callback_tracing<F>(
        &self,
        kind: sys::rocprofiler_callback_tracing_kind_t,
        operations: &[i32],
        f: F,
    ) -> Result<()>
    where
        F: Fn(&mut CallbackEvent<'_>) + Send + Sync + 'static,
    {
        let slot = Slot::leak("callback-tracing callback", &self.rt, f);
        let (ops, n) = if operations.is_empty() {
            (std::ptr::null(), 0)
        } else {
            (operations.as_ptr(), operations.len())
        };
        // SAFETY: `ops` is null or `n` ids; the trampoline matches the C prototype and `slot`
        // lives for the rest of the process.
        let r = unsafe {
            self.rt
                .api()
                .rocprofiler_configure_callback_tracing_service(
                    self.id,
                    kind,
                    ops,
                    n,
                    Some(callback_trampoline::<F>),
                    slot.as_c(),
                )
        };
        self.rt
            .check("rocprofiler_configure_callback_tracing_service", r)?;
        self.remember(&slot.enabled);
        Ok(())
    }

    /// Dispatch counting with callbacks: `dispatch` runs on the launching thread and picks a
    /// counter configuration (or none) per dispatch; `record` receives the counter records of a
    /// completed dispatch. Panics are caught as for callback tracing.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when
    /// `rocprofiler_configure_callback_dispatch_counting_service` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it; outside the tool's `initialize`
    /// the status is `ConfigurationLocked`.
    #[doc(alias = "rocprofiler_configure_callback_dispatch_counting_service")]
    pub fn configure_dispatch_counting<D, R>(&self, dispatch: D, record: R) -> Result<()>
    where
        D: Fn(&mut DispatchCountingRequest<'_>) + Send + Sync + 'static,
        R: Fn(&DispatchCounts<'_>) + Send + Sync + 'static,
    {
        let d = Slot::leak("dispatch-counting dispatch callback", &self.rt, dispatch);
        let rec = Slot::leak("dispatch-counting record callback", &self.rt, record);
        // SAFETY: trampolines match the C prototypes; both slots live for the process.
        let r = unsafe {
            self.rt
                .api()
                .rocprofiler_configure_callback_dispatch_counting_service(
                    self.id,
                    Some(crate::counting::dispatch_trampoline::<D>),
                    d.as_c(),
                    Some(crate::counting::record_trampoline::<R>),
                    rec.as_c(),
                )
        };
        self.rt.check(
            "rocprofiler_configure_callback_dispatch_counting_service",
            r,
        )?;
        self.remember(&d.enabled);
        self.remember(&rec.enabled);
        Ok(())
    }

    /// Dispatch counting into `buffer` (records arrive as `CountingDispatch` + `Counter`).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when
    /// `rocprofiler_configure_buffer_dispatch_counting_service` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it; outside the tool's `initialize`
    /// the status is `ConfigurationLocked`.
    #[doc(alias = "rocprofiler_configure_buffer_dispatch_counting_service")]
    pub fn configure_buffer_dispatch_counting<D>(&self, buffer: &Buffer, dispatch: D) -> Result<()>
    where
        D: Fn(&mut DispatchCountingRequest<'_>) + Send + Sync + 'static,
    {
        let d = Slot::leak("dispatch-counting dispatch callback", &self.rt, dispatch);
        // SAFETY: trampoline matches the C prototype; the slot lives for the process.
        let r = unsafe {
            self.rt
                .api()
                .rocprofiler_configure_buffer_dispatch_counting_service(
                    self.id,
                    buffer.raw(),
                    Some(crate::counting::dispatch_trampoline::<D>),
                    d.as_c(),
                )
        };
        self.rt
            .check("rocprofiler_configure_buffer_dispatch_counting_service", r)?;
        self.remember(&d.enabled);
        Ok(())
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if self.started.load(Ordering::Relaxed) {
            // SAFETY: plain value argument; errors are ignored in Drop (use `close`).
            let _ = unsafe { self.rt.api().rocprofiler_stop_context(self.id) };
        }
        self.disable_slots();
    }
}

unsafe extern "C" fn callback_trampoline<F>(
    record: sys::rocprofiler_callback_tracing_record_t,
    user_data: *mut sys::rocprofiler_user_data_t,
    data: *mut c_void,
) where
    F: Fn(&mut CallbackEvent<'_>) + Send + Sync + 'static,
{
    // SAFETY: `data` is the `Slot<F>` registered with this trampoline; it is never freed.
    let slot = unsafe { &*data.cast::<Slot<F>>() };
    slot.run(|| {
        let mut ev = CallbackEvent {
            record: &record,
            user_data,
            rt: &slot.rt,
        };
        (slot.f)(&mut ev)
    });
}
