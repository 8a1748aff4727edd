//! The one panic guard, and the one policy after a panic.
//!
//! Our code runs inside someone else's process, called from CUDA, HIP and
//! Perfetto threads. The Perfetto SDK aborts the process when a callback
//! panics, and an unwind into C is undefined behaviour. So every closure
//! foreign code calls runs inside this guard, whichever crate hands it to
//! C: the tool's own entry points ([`catch`]), the trace's own machinery
//! ([`run`]), and the vendor wrappers' trampolines (`cupti`, `rocprofiler`:
//! [`contain`]).
//!
//! Whichever caught it, a panic has one outcome. It is reported once on
//! stderr, and the process-wide state trips ([`tripped`]):
//! - recording stops: the hooks the writer registered ([`on_trip`]) close
//!   its recorder, and the tool's entry points do nothing from then on;
//! - the writer switches every source off, so that the backend stops the
//!   vendor's tracing (CUPTI's callbacks and activity kinds, rocprofiler's
//!   contexts): the application stops paying for it;
//! - the trace still ends: the exit handler and the writer's own threads
//!   run after a trip ([`run`]), so the trace gets its summary and its
//!   loss counts, and the application runs on with its exit code untouched.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static TRIPPED: AtomicBool = AtomicBool::new(false);

type Hook = Box<dyn Fn() + Send + Sync>;
static HOOKS: Mutex<Vec<Hook>> = Mutex::new(Vec::new());

/// Runs an entry point of the tool (a vendor callback, a thread that
/// records): once a panic has tripped the guard it does nothing and yields
/// `None`; a panic inside it trips the guard and yields `None`.
pub fn catch<R>(what: &str, f: impl FnOnce() -> R) -> Option<R> {
    if tripped() {
        return None;
    }
    guarded(what, f)
}

/// Runs the trace's own machinery (the writer's threads and callbacks, the
/// exit handler), also after a trip, so that the trace still ends; a panic
/// inside it trips the guard and yields `None`.
pub fn run<R>(what: &str, f: impl FnOnce() -> R) -> Option<R> {
    guarded(what, f)
}

/// Runs a closure a vendor library calls through a wrapper's trampoline:
/// once `disabled` is set (by its own earlier panic) it is not run again;
/// a panic inside it sets `disabled` and trips the guard. For wrappers
/// whose closures must keep working for a tool that is not this one, a
/// panic of one closure leaves the others alone.
pub fn contain<R>(what: &str, disabled: &AtomicBool, f: impl FnOnce() -> R) -> Option<R> {
    if disabled.load(Ordering::Relaxed) {
        return None;
    }
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(payload) => {
            disabled.store(true, Ordering::Relaxed);
            trip(what, &*payload);
            drop_quietly(payload);
            None
        }
    }
}

fn guarded<R>(what: &str, f: impl FnOnce() -> R) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(payload) => {
            trip(what, &*payload);
            drop_quietly(payload);
            None
        }
    }
}

/// The panic `payload` caught in `what`: reported (the first time), the
/// guard tripped, the hooks run. Nothing here unwinds.
fn trip(what: &str, payload: &(dyn Any + Send)) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // The hooks' lock orders the trip with `on_trip`: a hook is run
        // either here or there, never in neither.
        let hooks = HOOKS.lock().unwrap_or_else(|e| e.into_inner());
        if TRIPPED.swap(true, Ordering::AcqRel) {
            return;
        }
        crate::log::once(
            "internal-error",
            format_args!(
                "internal error in {what} ({}); tracing stops, the application continues",
                message(payload)
            ),
        );
        for h in hooks.iter() {
            let _ = catch_unwind(AssertUnwindSafe(h));
        }
    }));
}

/// Drops a panic's payload; a payload whose drop panics too is let go.
fn drop_quietly(payload: Box<dyn Any + Send>) {
    let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
}

fn message(p: &(dyn Any + Send)) -> &str {
    if let Some(s) = p.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = p.downcast_ref::<String>() {
        s
    } else {
        "unknown panic"
    }
}

/// Whether a panic has tripped the guard.
pub fn tripped() -> bool {
    TRIPPED.load(Ordering::Relaxed)
}

/// Runs `hook` when the guard trips (at once, on the panicking thread,
/// if it already has): what stops recording. A hook must be quick and
/// must not wait for other threads.
pub fn on_trip(hook: impl Fn() + Send + Sync + 'static) {
    let mut hooks = HOOKS.lock().unwrap_or_else(|e| e.into_inner());
    if tripped() {
        drop(hooks);
        let _ = catch_unwind(AssertUnwindSafe(&hook));
        return;
    }
    hooks.push(Box::new(hook));
}

/// Keeps the standard library's panic message (several lines, none
/// starting with `gpu-trace:`) off the application's stderr: the guard
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    // One test: the guard's state is the process's.
    #[test]
    fn a_panic_anywhere_trips_once_runs_the_hooks_and_spares_the_machinery() {
        let hooked = Arc::new(AtomicUsize::new(0));
        let h = hooked.clone();
        on_trip(move || {
            h.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(catch("fine", || 7), Some(7));
        assert!(!tripped());

        // A wrapper's closure: off after its own panic, and the tool trips.
        let disabled = AtomicBool::new(false);
        assert_eq!(contain("first", &disabled, || panic!("boom")), None::<()>);
        assert!(disabled.load(Ordering::Relaxed) && tripped());
        assert_eq!(contain("again", &disabled, || 1), None, "stays off");
        assert_eq!(hooked.load(Ordering::SeqCst), 1);

        // Entries do nothing from now on; the machinery still runs, and a
        // second panic neither reports nor runs the hooks again.
        assert_eq!(catch("entry", || 1), None);
        assert_eq!(run("exit handler", || 2), Some(2));
        assert_eq!(run("writer", || panic!("twice")), None::<()>);
        assert_eq!(hooked.load(Ordering::SeqCst), 1);
        let other = AtomicBool::new(false);
        assert_eq!(contain("another closure", &other, || 3), Some(3));

        // A hook registered after the trip runs at once.
        let late = Arc::new(AtomicUsize::new(0));
        let l = late.clone();
        on_trip(move || {
            l.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(late.load(Ordering::SeqCst), 1);
    }
}
