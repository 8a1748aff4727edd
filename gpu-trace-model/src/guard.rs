//! Panic containment.
//!
//! Our code runs inside someone else's process, called from CUDA, HIP and
//! Perfetto threads. The Perfetto SDK aborts the process when a callback
//! panics, and an unwind into C is undefined behaviour. Every entry from
//! foreign code therefore runs inside [`catch`]: a panic is reported once,
//! tracing is switched off for good, and the caller gets a neutral value.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};

static BROKEN: AtomicBool = AtomicBool::new(false);

/// Runs `f`; a panic inside it disables tracing and yields `None`.
pub fn catch<R>(what: &'static str, f: impl FnOnce() -> R) -> Option<R> {
    if BROKEN.load(Ordering::Relaxed) {
        return None;
    }
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(p) => {
            BROKEN.store(true, Ordering::Relaxed);
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            crate::log::once(
                "internal-error",
                format_args!(
                    "internal error in {what} ({msg}); tracing is off for the rest of this run, the application continues"
                ),
            );
            None
        }
    }
}

/// Keeps the standard library's panic message (several lines, none
/// starting with `gpu-trace:`) off the application's stderr: [`catch`]
/// reports each panic in one line. In verbose mode one more line says
/// where it happened. An injection library carries its own copy of the
/// standard library, so the hook is the library's alone, not the
/// application's.
pub fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        if crate::log::verbose() {
            let at = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            crate::log::line(format_args!("panic at {at}"));
        }
    }));
}

/// Whether a panic has switched tracing off.
pub fn broken() -> bool {
    BROKEN.load(Ordering::Relaxed)
}
