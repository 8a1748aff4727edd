//! The bounded pool of activity buffers CUPTI asks for and hands back.

use std::{
    alloc::Layout,
    ptr::NonNull,
    sync::{
        Condvar, Mutex,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

/// Buffer pool sizing.
#[derive(Clone, Copy, Debug)]
pub struct ActivityConfig {
    /// Bytes per buffer (CUPTI recommends 1–10 MiB). Default 8 MiB.
    pub buffer_size: usize,
    /// Buffers allocated up front. Default 4.
    pub initial_buffers: usize,
    /// Hard cap on buffers ever allocated; past it CUPTI gets an empty buffer
    /// and drops (and counts) records. Default 32.
    pub max_buffers: usize,
    /// How long a request made past the cap waits for a completed buffer
    /// to come back before it is refused. Only threads that never delivered
    /// a completed buffer wait (the application's, launching work): the
    /// thread that delivers them must not wait for itself. Default zero:
    /// refuse at once.
    pub request_wait: Duration,
}

impl Default for ActivityConfig {
    fn default() -> Self {
        Self {
            buffer_size: 8 << 20,
            initial_buffers: 4,
            max_buffers: 32,
            request_wait: Duration::ZERO,
        }
    }
}

/// Counters of the buffer pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes per buffer.
    pub buffer_size: usize,
    /// Buffers allocated so far (never more than the cap).
    pub allocated: usize,
    /// Buffers waiting in the pool.
    pub free: usize,
    /// Requests answered with an empty buffer because the cap was reached.
    pub refused_requests: u64,
    /// Requests that found the cap reached and waited for a buffer to come
    /// back (see [`ActivityConfig::request_wait`]), refused or not.
    pub waited_requests: u64,
    /// Completed buffers handed to the handler.
    pub completed_buffers: u64,
    /// Records CUPTI reported dropped, summed over completed buffers.
    pub dropped_records: u64,
}

const RECORD_ALIGN: usize = 8; // ACTIVITY_RECORD_ALIGNMENT in cupti_common.h

pub(super) struct Buf(pub(super) NonNull<u8>);
// SAFETY: a Buf is an owned heap allocation; moving it between threads is fine.
unsafe impl Send for Buf {}

pub(super) struct Pool {
    pub(super) layout: Layout,
    max: usize,
    wait: Duration,
    free: Mutex<Vec<Buf>>,
    /// Signalled when a buffer comes back.
    returned: Condvar,
    /// A wait ran out: nothing comes back (the delivery thread itself may
    /// be stuck). Until a buffer does, requests are refused at once.
    gave_up: AtomicBool,
    pub(super) allocated: AtomicUsize,
    pub(super) refused: AtomicU64,
    waited: AtomicU64,
    pub(super) completed: AtomicU64,
    pub(super) dropped: AtomicU64,
}

impl Pool {
    pub(super) fn new(c: &ActivityConfig) -> Self {
        let size = c.buffer_size.max(RECORD_ALIGN);
        let layout = Layout::from_size_align(size, RECORD_ALIGN).expect("buffer size overflows");
        let pool = Self {
            layout,
            max: c.max_buffers.max(1),
            wait: c.request_wait,
            free: Mutex::new(Vec::with_capacity(c.max_buffers)),
            returned: Condvar::new(),
            gave_up: AtomicBool::new(false),
            allocated: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            waited: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        };
        for _ in 0..c.initial_buffers.min(pool.max) {
            if let Some(b) = pool.alloc() {
                pool.free_list().push(b);
            }
        }
        pool
    }

    pub(super) fn free_list(&self) -> std::sync::MutexGuard<'_, Vec<Buf>> {
        // A panic while holding this lock cannot leave the Vec inconsistent.
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn alloc(&self) -> Option<Buf> {
        let n = self.allocated.fetch_add(1, Ordering::Relaxed);
        if n >= self.max {
            self.allocated.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        // SAFETY: non-zero size (at least RECORD_ALIGN).
        NonNull::new(unsafe { std::alloc::alloc(self.layout) }).map(Buf)
    }

    pub(super) fn take(&self) -> Option<Buf> {
        let reused = self.free_list().pop();
        if let Some(b) = reused.or_else(|| self.alloc()) {
            return Some(b);
        }
        if self.wait.is_zero() || DELIVERS.with(|d| d.get()) || self.gave_up.load(Ordering::Relaxed)
        {
            return None;
        }
        // Past the cap, on a thread that launches work: wait for CUPTI's
        // delivery thread to hand a buffer back. The launch waits instead
        // of its records being dropped.
        self.waited.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + self.wait;
        let mut free = self.free_list();
        loop {
            if let Some(b) = free.pop() {
                return Some(b);
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                self.gave_up.store(true, Ordering::Relaxed);
                return None;
            };
            free = self
                .returned
                .wait_timeout(free, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    pub(super) fn give_back(&self, b: Buf) {
        self.free_list().push(b);
        self.gave_up.store(false, Ordering::Relaxed);
        self.returned.notify_one();
    }

    pub(super) fn stats(&self) -> PoolStats {
        PoolStats {
            buffer_size: self.layout.size(),
            allocated: self.allocated.load(Ordering::Relaxed),
            free: self.free_list().len(),
            refused_requests: self.refused.load(Ordering::Relaxed),
            waited_requests: self.waited.load(Ordering::Relaxed),
            completed_buffers: self.completed.load(Ordering::Relaxed),
            dropped_records: self.dropped.load(Ordering::Relaxed),
        }
    }
}

thread_local! {
    // Set on a thread once it has delivered a completed buffer (CUPTI's
    // worker, or a thread inside `flush_all`): it never waits for a buffer
    // to come back, since it may be the one that would bring it.
    pub(super) static DELIVERS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
