//! The one place where panics from user code are stopped before they reach C.

use std::{
    any::Any,
    panic::{AssertUnwindSafe, catch_unwind},
    sync::{
        OnceLock,
        atomic::{AtomicBool, Ordering},
    },
};

/// Reports a panic caught at the C boundary: `what` names the handler (e.g.
/// "CUPTI callback"), `message` is the panic's text. The handler is disabled
/// from then on.
pub type PanicReporter = fn(what: &str, message: &str);

static REPORTER: OnceLock<PanicReporter> = OnceLock::new();

/// Sets how this crate reports a panic it caught in a closure called from
/// CUPTI, NVTX or the activity API, for the rest of the process: a tool
/// sends it to its own log. Without one, the crate writes
/// `cupti: panic in <what>: <message>; this handler is now disabled` to
/// stderr.
///
/// Returns `false`, changing nothing, when a reporter was already set.
pub fn set_panic_reporter(reporter: PanicReporter) -> bool {
    REPORTER.set(reporter).is_ok()
}

fn default_reporter(what: &str, message: &str) {
    eprintln!("cupti: panic in {what}: {message}; this handler is now disabled");
}

/// Runs `f`; if it panics, sets `disabled`, reports it once (see
/// [`set_panic_reporter`]) and returns `None`. Nothing unwinds past this
/// function, so callers may be `extern "C"`.
pub(crate) fn call<R>(what: &str, disabled: &AtomicBool, f: impl FnOnce() -> R) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(payload) => {
            if !disabled.swap(true, Ordering::Relaxed) {
                // Reporting may itself panic (closed stderr, the caller's
                // reporter); swallow that too.
                let report = REPORTER.get().copied().unwrap_or(default_reporter);
                let _ = catch_unwind(AssertUnwindSafe(|| {
                    report(what, panic_message(&*payload));
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

    fn record(what: &str, message: &str) {
        SEEN.lock().unwrap().push(format!("{what}: {message}"));
    }

    fn panicking_reporter(_: &str, _: &str) {
        panic!("reporter panics too");
    }

    #[test]
    fn panics_go_to_the_callers_reporter_once() {
        // The only test here that sets the process-wide reporter.
        assert!(set_panic_reporter(record));
        assert!(!set_panic_reporter(panicking_reporter), "set twice");
        let disabled = AtomicBool::new(false);
        assert_eq!(call("first", &disabled, || panic!("boom")), None::<()>);
        assert_eq!(call("second", &disabled, || panic!("again")), None::<()>);
        assert!(disabled.load(Ordering::Relaxed));
        assert_eq!(call("fine", &disabled, || 7), Some(7));
        assert_eq!(*SEEN.lock().unwrap(), ["first: boom"]);
    }
}
