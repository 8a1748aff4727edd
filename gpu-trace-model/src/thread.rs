//! Our threads inside the application, kept out of its signals.
//!
//! A signal sent to a process (`kill`, a terminal's Ctrl-C, a job
//! scheduler's warning) goes to any one of its threads that does not block
//! it. Were that one of ours, the application's handler would run on a
//! thread it does not know, and a program that waits for its signals in
//! one thread (`sigwait` with the signal blocked everywhere else) would
//! never see them. So every thread we start blocks the asynchronous
//! signals first, and code that makes threads of others (Perfetto's) runs
//! with them blocked, since a new thread inherits its creator's mask. The
//! synchronous signals (faults, traps) are left alone: they belong to the
//! thread that caused them. We never install a handler.

use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
use std::io;
use std::thread::JoinHandle;

/// Signals a thread raises itself by faulting; never blocked.
const SYNCHRONOUS: [Signal; 6] = [
    Signal::SIGSEGV,
    Signal::SIGBUS,
    Signal::SIGFPE,
    Signal::SIGILL,
    Signal::SIGTRAP,
    Signal::SIGSYS,
];

fn asynchronous() -> SigSet {
    let mut set = SigSet::all();
    for s in SYNCHRONOUS {
        set.remove(s);
    }
    set
}

/// Blocks the asynchronous signals in the calling thread, for good. For
/// threads of ours only.
pub fn block_signals() {
    if let Err(e) = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&asynchronous()), None) {
        crate::verbose!("cannot block signals in a gpu-trace thread: {e}");
    }
}

/// Runs `f` with the asynchronous signals blocked in the calling thread,
/// then restores its mask: threads `f` starts inherit the blocked mask.
/// A signal that arrives meanwhile stays pending and is delivered when
/// the mask is restored.
pub fn with_signals_blocked<R>(f: impl FnOnce() -> R) -> R {
    let mut old = SigSet::empty();
    let blocked = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&asynchronous()), Some(&mut old));
    let r = f();
    if blocked.is_ok() {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
    }
    r
}

/// Starts a named thread of ours, its signals blocked before `f` runs.
///
/// # Errors
///
/// When the thread cannot be made.
pub fn spawn<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> io::Result<JoinHandle<T>> {
    // Blocked from its first instruction: made with the mask blocked here.
    with_signals_blocked(|| {
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                block_signals();
                f()
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocked_here() -> SigSet {
        let mut cur = SigSet::empty();
        pthread_sigmask(SigmaskHow::SIG_BLOCK, None, Some(&mut cur)).unwrap();
        cur
    }

    #[test]
    fn our_threads_block_asynchronous_signals_and_not_faults() {
        let set = spawn("gpu-trace-test", blocked_here)
            .unwrap()
            .join()
            .unwrap();
        for s in [
            Signal::SIGINT,
            Signal::SIGTERM,
            Signal::SIGUSR1,
            Signal::SIGUSR2,
            Signal::SIGCHLD,
            Signal::SIGALRM,
            Signal::SIGPROF,
        ] {
            assert!(set.contains(s), "{s:?} blocked in our thread");
        }
        for s in SYNCHRONOUS {
            assert!(!set.contains(s), "{s:?} left to the thread that faults");
        }
    }

    #[test]
    fn the_callers_mask_is_restored() {
        std::thread::spawn(|| {
            let before = blocked_here();
            assert!(!before.contains(Signal::SIGUSR2));
            let inner = with_signals_blocked(blocked_here);
            assert!(inner.contains(Signal::SIGUSR2));
            let after = blocked_here();
            assert_eq!(
                after.contains(Signal::SIGUSR2),
                before.contains(Signal::SIGUSR2)
            );
            assert!(!after.contains(Signal::SIGTERM));
        })
        .join()
        .unwrap();
    }
}
