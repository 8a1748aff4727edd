//! The one place where closures called by C run: panics are caught, reported once and turn the
//! registration off. Nothing unwinds into the SDK.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Reports a panic caught at the C boundary: `what` names the closure (e.g.
/// "buffer callback"), `message` is the panic's text. It is disabled from
/// then on.
pub type PanicReporter = fn(what: &str, message: &str);

static REPORTER: OnceLock<PanicReporter> = OnceLock::new();

/// Sets how this crate reports a panic it caught in a closure called by
/// rocprofiler-sdk, for the rest of the process: a tool sends it to its own
/// log (as the `cupti` crate's `set_panic_reporter` does). Without one,
/// the crate writes `rocprofiler: panic in <what>: <message>; it is
/// disabled from now on` to stderr.
///
/// Returns `false`, changing nothing, when a reporter was already set.
pub fn set_panic_reporter(reporter: PanicReporter) -> bool {
    REPORTER.set(reporter).is_ok()
}

fn default_reporter(what: &str, message: &str) {
    eprintln!("rocprofiler: panic in {what}: {message}; it is disabled from now on");
}

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

/// Runs `body`, catching a panic; on panic `flag` is cleared and the panic reported once.
pub(crate) fn guard<R>(what: &str, flag: &AtomicBool, body: impl FnOnce() -> R) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => Some(r),
        Err(p) => {
            // A profiler must not take the application down: report once,
            // switch this part off.
            if flag.swap(false, Ordering::Relaxed) {
                let report = REPORTER.get().copied().unwrap_or(default_reporter);
                // Reporting may itself panic (closed stderr, the caller's
                // reporter); swallow that too.
                let _ = catch_unwind(AssertUnwindSafe(|| report(what, panic_message(&*p))));
            }
            // Dropping the payload can panic as well; never let that escape.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(p)));
            None
        }
    }
}

fn panic_message(p: &(dyn Any + Send)) -> &str {
    if let Some(s) = p.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = p.downcast_ref::<String>() {
        s
    } else {
        "<non-string panic>"
    }
}
