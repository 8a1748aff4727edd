//! The one place where panics from user code are stopped before they reach C.

use std::{
    any::Any,
    panic::{AssertUnwindSafe, catch_unwind},
    sync::atomic::{AtomicBool, Ordering},
};

/// Runs `f`; if it panics, sets `disabled`, logs once to stderr and returns
/// `None`. Nothing unwinds past this function, so callers may be `extern "C"`.
pub(crate) fn call<R>(what: &str, disabled: &AtomicBool, f: impl FnOnce() -> R) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(payload) => {
            if !disabled.swap(true, Ordering::Relaxed) {
                // Printing may itself panic (closed stderr); swallow that too.
                let _ = catch_unwind(AssertUnwindSafe(|| {
                    eprintln!(
                        "gpu-trace: panic in {what}: {}; this handler is now disabled",
                        panic_message(&*payload)
                    );
                }));
            }
            // Dropping the payload can panic as well; never let that escape.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
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
        "non-string panic payload"
    }
}
