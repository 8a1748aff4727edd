//! `Op::Signals`: what the program's signals meet with the tool loaded.
//! Every thread's blocked-signal mask is read from `/proc` (a process-
//! directed signal goes to any thread not blocking it), and a SIGUSR1
//! handler the op installs is run by signals sent to the process.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, kill, sigaction};
use nix::unistd::Pid;

use super::{FAKE, lock};
use crate::report::ThreadMask;

/// How long one signal may take to arrive.
const LIMIT: Duration = Duration::from_secs(5);

static HANDLED: AtomicU32 = AtomicU32::new(0);
static HANDLER_TIDS: [AtomicU32; 64] = [const { AtomicU32::new(0) }; 64];
static NEXT: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_usr1(_: nix::libc::c_int) {
    // Async-signal-safe: a syscall and atomics.
    let tid = gpu_trace_model::clock::thread_id();
    let i = NEXT.fetch_add(1, Ordering::Relaxed);
    if let Some(slot) = HANDLER_TIDS.get(i) {
        slot.store(tid, Ordering::Relaxed);
    }
    HANDLED.fetch_add(1, Ordering::Release);
}

fn thread_name(tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| format!("tid {tid} (gone)"))
}

/// The signals thread `tid` blocks, once it has started. glibc's
/// `pthread_create` makes a thread with every signal blocked and sets its
/// creator's mask only as the thread starts; a thread caught in between
/// (seen under load) is read again, for up to 100 ms.
fn settled_mask(tid: u32) -> Option<u64> {
    // SIGKILL and SIGSTOP cannot be blocked: the kernel never shows them.
    const UNBLOCKABLE: u64 = 1 << (9 - 1) | 1 << (19 - 1);
    let read = || {
        let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).ok()?;
        let blk = status.lines().find_map(|l| l.strip_prefix("SigBlk:"))?;
        u64::from_str_radix(blk.trim(), 16).ok()
    };
    let mut mask = read()?;
    for _ in 0..100 {
        if mask | UNBLOCKABLE != u64::MAX {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
        mask = read()?;
    }
    Some(mask)
}

/// Every thread of the process and the signals it blocks.
fn masks() -> Vec<ThreadMask> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut out: Vec<ThreadMask> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|tid| {
            Some(ThreadMask {
                tid: u64::from(tid),
                name: thread_name(tid),
                blocked: settled_mask(tid)?,
            })
        })
        .collect();
    out.sort_by_key(|t| t.tid);
    out
}

pub(crate) fn run(count: u32) {
    let threads = masks();
    let action = SigAction::new(
        SigHandler::Handler(on_usr1),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler only makes a syscall and touches atomics.
    let installed = unsafe { sigaction(Signal::SIGUSR1, &action) }.is_ok();
    let before = HANDLED.load(Ordering::Acquire);
    if installed {
        // One at a time: pending signals of one kind merge.
        for i in 0..count {
            let _ = kill(Pid::this(), Signal::SIGUSR1);
            let t0 = Instant::now();
            while HANDLED.load(Ordering::Acquire) < before + i + 1 && t0.elapsed() < LIMIT {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
    let handled = HANDLED.load(Ordering::Acquire) - before;
    let n = NEXT.load(Ordering::Relaxed).min(HANDLER_TIDS.len());
    let handler_threads = HANDLER_TIDS[..n]
        .iter()
        .map(|t| thread_name(t.load(Ordering::Relaxed)))
        .collect();
    let mut r = lock(&FAKE.report);
    r.signals_handled += handled;
    r.signal_handler_threads = handler_threads;
    r.thread_masks = threads;
}
