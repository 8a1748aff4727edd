//! Where closures called by C run: behind gpu-trace's one panic guard
//! (`gpu_trace_model::guard`), which catches a panic, reports the first of
//! the process once on stderr and trips its process-wide state; the panic
//! turns the registration off. Nothing unwinds into the SDK.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::Runtime;

/// A boxed user closure registered with the SDK. Leaked on purpose (see [`Slot::leak`]).
pub(crate) struct Slot<F: ?Sized> {
    pub(crate) what: &'static str,
    pub(crate) enabled: AtomicBool,
    pub(crate) rt: Runtime,
    pub(crate) f: F,
}

impl<F> Slot<F> {
    /// Moves the closure to the heap for the rest of the process. rocprofiler-sdk has no call
    /// that removes a service from a context, contexts cannot be destroyed, and
    /// `rocprofiler_stop_context` does not wait for callbacks already running on other threads,
    /// so no moment exists at which freeing it would be sound. Registrations only happen inside
    /// the tool's `initialize`, so this is a handful of small boxes per process. (The `cupti`
    /// crate's `Subscriber` leaks its closure for the same reason: `cuptiUnsubscribe` does not
    /// say it waits for running callbacks either.)
    pub(crate) fn leak(what: &'static str, rt: &Runtime, f: F) -> &'static Slot<F> {
        Box::leak(Box::new(Slot {
            what,
            enabled: AtomicBool::new(true),
            rt: rt.clone(),
            f,
        }))
    }

    /// Address handed to C as `void*` user data.
    pub(crate) fn as_c(&'static self) -> *mut std::ffi::c_void {
        (self as *const Self).cast_mut().cast()
    }
}

impl<F: ?Sized> Slot<F> {
    /// Runs `body` unless disabled; a panic disables the slot and yields `None`.
    pub(crate) fn run<R>(&self, body: impl FnOnce() -> R) -> Option<R> {
        if !self.enabled.load(Ordering::Relaxed) {
            return None;
        }
        guard(self.what, &self.enabled, body)
    }
}

/// Runs `body`, catching a panic (see the module docs); on a panic `flag`
/// is cleared and `None` returned.
pub(crate) fn guard<R>(what: &str, flag: &AtomicBool, body: impl FnOnce() -> R) -> Option<R> {
    let r = gpu_trace_model::guard::run(what, body);
    if r.is_none() {
        flag.store(false, Ordering::Relaxed);
    }
    r
}
