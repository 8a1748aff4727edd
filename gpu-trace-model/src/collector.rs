//! Per-thread event buffers between the backends and the emitter thread.
//!
//! The application's threads (API callbacks) and the vendor's buffer threads
//! append to a batch owned by the calling thread: one uncontended lock, a
//! copy of the event, no allocation once the batch has grown. A full batch
//! is sealed (queued behind the thread's fresh one) and the emitter woken,
//! so a burst (CUPTI hands over tens of thousands of records at once) is
//! absorbed instead of dropped. The emitter swaps whole batches out, so
//! nothing on the recording side ever waits for Perfetto, except a vendor
//! thread that asks to ([`Recorder::wait_for_room`]). Memory is bounded:
//! past [`Limits::sealed`] queued batches, events are counted as dropped,
//! and the counts are written into the trace.
//!
//! The recording side is every backend's; the draining side
//! ([`Recorder::drain_some`], [`Recorder::recycle`], [`mark_drainer_thread`])
//! is the writer's (`gpu-trace-perfetto`'s emitter thread).

use crate::model::{
    ApiCall, CounterSample, DropKind, Event, KernelCounters, KernelExec, LogEvent, Marker,
    MarkerEvent, MemoryOp, MemoryUsage, TextRef, Timestamp, UnifiedMemoryEvent,
};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Events recorded by one thread since the last drain, plus the text their
/// markers refer to.
#[derive(Debug, Default)]
pub struct Batch {
    /// OS thread id of the recording thread.
    pub thread: u32,
    /// Events in recording order.
    pub events: Vec<Event>,
    /// Marker text arena; [`TextRef`]s index into it.
    pub text: Vec<u8>,
}

impl Batch {
    /// The text behind `r` (lossy for invalid UTF-8).
    pub fn text(&self, r: TextRef) -> std::borrow::Cow<'_, str> {
        let start = r.offset as usize;
        let end = start.saturating_add(r.len as usize).min(self.text.len());
        String::from_utf8_lossy(self.text.get(start..end).unwrap_or_default())
    }

    fn clear(&mut self) {
        self.events.clear();
        self.text.clear();
    }
}

/// One thread's batch being filled, and its full batches waiting for the
/// emitter (oldest first).
#[derive(Debug, Default)]
struct Slot {
    current: Batch,
    sealed: Vec<Batch>,
}

#[derive(Debug)]
struct ThreadBuffer {
    slot: Mutex<Slot>,
}

/// Limits of the per-thread buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Events per batch.
    pub events: usize,
    /// Marker text bytes per batch.
    pub text: usize,
    /// Full batches (all threads together) that may wait for the emitter.
    /// With the defaults, at most 32 × 8192 events of ≤128 bytes (32 MiB)
    /// are ever queued, and only while the emitter is behind.
    pub sealed: usize,
    /// How long one event may wait for room when the queue is full before
    /// it is dropped (`INJECTION_QUEUE_FULL`): zero drops at once.
    pub stall: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self::for_queue_kb(DEFAULT_QUEUE_KB)
    }
}

impl Limits {
    /// Batches sized so that the sealed ones hold at most `kb` KiB of
    /// events (`INJECTION_QUEUE_SIZE`).
    pub fn for_queue_kb(kb: u32) -> Self {
        let bytes = kb as usize * 1024;
        let per_event = std::mem::size_of::<Event>();
        let events = (bytes / per_event / 4).clamp(64, 1 << 13);
        Self {
            events,
            text: (events * 32).max(4096),
            sealed: (bytes / (events * per_event)).max(1),
            stall: STALL_LIMIT,
        }
    }
}

/// Thread names by tid, shared by the recorder (which fills it) and the
/// emitter.
#[derive(Debug, Clone, Default)]
pub struct ThreadNames(Arc<Mutex<std::collections::HashMap<u32, String>>>);

impl ThreadNames {
    fn set(&self, tid: u32, name: String) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tid, name);
    }

    /// The name recorded for `tid`.
    pub fn get(&self, tid: u32) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&tid)
            .cloned()
    }
}

/// What became of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fill {
    Recorded,
    /// Every sealed batch the queue may hold waits for the emitter.
    QueueFull,
    /// Larger than a whole batch (marker text past [`Limits::text`]).
    TooLarge,
}

/// Default memory for recorded events waiting to be written, KiB: 32 MiB
/// (`INJECTION_QUEUE_SIZE`).
pub const DEFAULT_QUEUE_KB: u32 = 32 * 1024;

/// The longest one event waits for room in a full queue, by default.
pub const STALL_LIMIT: Duration = Duration::from_millis(500);

/// Emptied batches kept for reuse.
const POOL_LIMIT: usize = 4;

static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    // The collector this thread last recorded into, and its buffer there.
    static LOCAL: RefCell<Option<(usize, Arc<ThreadBuffer>)>> = const { RefCell::new(None) };
    // Set on the emitter thread, which must never wait for itself (a
    // vendor flush it starts delivers records on this thread).
    static DRAINER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    // Set on a vendor's delivery thread (it calls `wait_for_room`): the
    // half of the queue that application threads may not fill is its own.
    static VENDOR: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The share of the sealed budget that application threads may fill, all
/// of them together: an eighth. The rest is the vendor's delivery thread's.
const APP_SHARE: usize = 8;

/// How many sealed batches the calling thread may leave queued: all for a
/// vendor's delivery thread, an eighth for application threads.
/// Application threads that record faster than the emitter writes then
/// wait (see `Recorder::stall`) long before the vendor's thread does,
/// which cannot wait for long: its library keeps producing records into a
/// bounded buffer pool, and drops them when the pool runs dry. The GPU
/// work launched before the application threads began to wait is still to
/// come out of the vendor's buffers, in bursts: the vendor's larger share
/// holds it. While the vendor's thread
/// waits for room, application threads may seal nothing: each call they
/// record launches more GPU work, whose records the vendor must then
/// deliver into a queue that is already full.
fn sealed_cap(shared: &Shared) -> usize {
    let limits = &shared.limits;
    if VENDOR.with(|v| v.get()) {
        limits.sealed
    } else if shared.vendor_waiting.load(Ordering::Acquire) > 0 {
        0
    } else {
        (limits.sealed / APP_SHARE).max(1).min(limits.sealed)
    }
}

/// Counts the calling vendor thread as waiting for room while it lives.
struct VendorWait<'a>(Option<&'a AtomicUsize>);

impl<'a> VendorWait<'a> {
    fn new(shared: &'a Shared) -> Self {
        if VENDOR.with(|v| v.get()) {
            shared.vendor_waiting.fetch_add(1, Ordering::AcqRel);
            Self(Some(&shared.vendor_waiting))
        } else {
            Self(None)
        }
    }
}

impl Drop for VendorWait<'_> {
    fn drop(&mut self) {
        if let Some(n) = self.0 {
            n.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Marks the calling thread as the one that drains (the writer's thread):
/// it never waits for room, since only it makes room.
pub fn mark_drainer_thread() {
    DRAINER.with(|d| d.set(true));
}

#[derive(Debug)]
pub(crate) struct Shared {
    id: usize,
    limits: Limits,
    threads: Mutex<Vec<(u32, Arc<ThreadBuffer>)>>,
    drops: [AtomicU64; DropKind::ALL.len()],
    enabled: AtomicBool,
    /// Set once, when the tracer starts: no lock on the overflow path.
    wake: OnceLock<Wake>,
    /// The emitter was woken for a full queue and has not drained since:
    /// one wake per overflow, not one per event that finds the queue full.
    overflow_woken: AtomicBool,
    /// Vendor delivery threads now waiting for room (see `sealed_cap`).
    vendor_waiting: AtomicUsize,
    /// Sealed batches not yet drained, all threads together.
    sealed: AtomicUsize,
    /// Emptied batches, reused so that steady-state recording does not
    /// allocate.
    pool: Mutex<Vec<Batch>>,
    /// Signalled after every drain, for [`Recorder::wait_for_room`].
    drained: Condvar,
    drained_lock: Mutex<()>,
    /// Time recording threads spent waiting for room, ns.
    stalled_ns: AtomicU64,
    /// Names of the threads that recorded, taken when each first did.
    names: ThreadNames,
    /// A wait for room ran out: the emitter is stuck. Until it drains
    /// again, nobody waits (each event would wait the whole limit).
    gave_up: AtomicBool,
}

struct Wake(Box<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for Wake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Wake")
    }
}

/// The recording side: cheap to clone, used from any thread.
#[derive(Debug, Clone)]
pub struct Recorder {
    shared: Arc<Shared>,
}

impl Recorder {
    /// A recorder with `limits`, for the writer that will drain it.
    pub fn new(limits: Limits) -> Self {
        Self {
            shared: Arc::new(Shared {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                limits,
                threads: Mutex::new(Vec::new()),
                drops: Default::default(),
                enabled: AtomicBool::new(true),
                wake: OnceLock::new(),
                overflow_woken: AtomicBool::new(false),
                vendor_waiting: AtomicUsize::new(0),
                sealed: AtomicUsize::new(0),
                pool: Mutex::new(Vec::new()),
                drained: Condvar::new(),
                drained_lock: Mutex::new(()),
                stalled_ns: AtomicU64::new(0),
                names: ThreadNames::default(),
                gave_up: AtomicBool::new(false),
            }),
        }
    }

    /// How the recorder wakes its writer (when a batch is half full, or
    /// the queue is full); set once.
    pub fn set_wake(&self, f: Box<dyn Fn() + Send + Sync>) {
        // A recorder serves one tracer; a second wake is never installed.
        let _ = self.shared.wake.set(Wake(f));
    }

    /// Stops accepting events (after shutdown). Later events are ignored,
    /// not counted as drops: the session is over.
    pub fn close(&self) {
        self.shared.enabled.store(false, Ordering::Release);
    }

    /// Records a kernel execution.
    pub fn kernel(&self, k: KernelExec) {
        self.push(Event::Kernel(k));
    }

    /// Records a copy or memset.
    pub fn memory(&self, m: MemoryOp) {
        self.push(Event::Memory(m));
    }

    /// Records an API call.
    pub fn api(&self, a: ApiCall) {
        self.push(Event::Api(a));
    }

    /// Records per-kernel counter values.
    pub fn kernel_counters(&self, c: KernelCounters) {
        self.push(Event::KernelCounters(c));
    }

    /// Records periodic counter values.
    pub fn counters(&self, c: CounterSample) {
        self.push(Event::Counters(c));
    }

    /// Records a unified-memory event.
    pub fn unified_memory(&self, u: UnifiedMemoryEvent) {
        self.push(Event::UnifiedMemory(u));
    }

    /// Records the device memory in use after an allocation or free.
    pub fn memory_usage(&self, m: MemoryUsage) {
        self.push(Event::MemoryUsage(m));
    }

    /// Records a marker whose text is `text` (ignored for `Pop` and `End`).
    /// `make` receives where the text was stored.
    pub fn marker(
        &self,
        thread: u32,
        ts: Timestamp,
        text: &str,
        make: impl FnOnce(TextRef) -> Marker,
    ) {
        if !self.shared.enabled.load(Ordering::Relaxed) {
            return;
        }
        let make = std::cell::Cell::new(Some(make));
        self.with_batch(|b, limits| {
            if b.events.len() >= limits.events || b.text.len() + text.len() > limits.text {
                return false;
            }
            let Some(make) = make.take() else {
                return false;
            };
            let r = TextRef {
                offset: b.text.len() as u32,
                len: text.len() as u32,
            };
            b.text.extend_from_slice(text.as_bytes());
            b.events
                .push(Event::Marker(MarkerEvent::new(thread, ts, make(r))));
            true
        });
    }

    /// Records a GPU log line at `ts`.
    pub fn log(&self, ts: Timestamp, warning: bool, text: &str) {
        if !self.shared.enabled.load(Ordering::Relaxed) {
            return;
        }
        self.with_batch(|b, limits| {
            if b.events.len() >= limits.events || b.text.len() + text.len() > limits.text {
                return false;
            }
            let r = TextRef {
                offset: b.text.len() as u32,
                len: text.len() as u32,
            };
            b.text.extend_from_slice(text.as_bytes());
            b.events.push(Event::Log(LogEvent::new(ts, warning, r)));
            true
        });
    }

    /// Records a recording window's opening or closing into the GPU log at
    /// `ts` (see [`crate::schema::RecordingWindow`]).
    pub fn window(&self, ts: Timestamp, w: &crate::schema::RecordingWindow) {
        self.log(ts, false, &w.to_string());
    }

    /// Counts `n` items of `kind` that a backend could not record (not
    /// once the recorder is closed: what comes after is not recorded at
    /// all).
    pub fn dropped(&self, kind: DropKind, n: u64) {
        if n > 0 && self.shared.enabled.load(Ordering::Relaxed) {
            self.shared.drops[kind as usize].fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Drop counts so far, by kind.
    pub fn drop_counts(&self) -> [(DropKind, u64); DropKind::ALL.len()] {
        DropKind::ALL.map(|k| (k, self.shared.drops[k as usize].load(Ordering::Relaxed)))
    }

    fn push(&self, ev: Event) {
        if !self.shared.enabled.load(Ordering::Relaxed) {
            return;
        }
        let ev = std::cell::Cell::new(Some(ev));
        self.with_batch(|b, limits| {
            if b.events.len() >= limits.events {
                return false;
            }
            b.events.extend(ev.take());
            true
        });
    }

    /// Runs `f` on this thread's batch. `f` returns false when the event did
    /// not fit; the batch is then sealed and `f` retried on a fresh one, and
    /// if that is not possible the event is counted as dropped.
    fn with_batch(&self, f: impl Fn(&mut Batch, &Limits) -> bool) {
        let shared = &self.shared;
        let outcome = LOCAL.try_with(|slot| {
            let mut slot = slot.borrow_mut();
            // The cached buffer is used in place: no reference count touched
            // per event. `fill` records nothing through this thread-local.
            match &*slot {
                Some((id, buf)) if *id == shared.id => self.fill(buf, &f),
                _ => {
                    let buf = self.register();
                    let r = self.fill(&buf, &f);
                    *slot = Some((shared.id, buf));
                    r
                }
            }
        });
        let (mut fill, wake) = match outcome {
            Ok(r) => r,
            // The thread is exiting and its thread-locals are gone: record
            // into a buffer that is not cached.
            Err(_) => self.fill(&self.register(), &f),
        };
        if wake {
            self.wake();
        }
        if fill == Fill::QueueFull {
            self.wake_for_overflow();
            fill = self.stall(|| {
                match LOCAL.try_with(|slot| match &*slot.borrow() {
                    Some((id, buf)) if *id == shared.id => Some(self.fill(buf, &f).0),
                    _ => None,
                }) {
                    Ok(Some(r)) => r,
                    _ => self.fill(&self.register(), &f).0,
                }
            });
        }
        if fill != Fill::Recorded {
            shared.drops[DropKind::ThreadBuffer as usize].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The queue is full: the emitter is behind. Waits for it to drain, at
    /// most [`Limits::stall`] for this event, then gives up (the event is
    /// dropped and counted). The thread's stall is the emitter's catch-up
    /// time; a program that records faster than events can be written runs
    /// at the writer's pace instead of losing them. Never on the emitter
    /// itself (a vendor flush runs on a helper thread meanwhile, see
    /// `Inner::backend_flush`).
    fn stall(&self, mut retry: impl FnMut() -> Fill) -> Fill {
        let shared = &self.shared;
        if shared.limits.stall.is_zero()
            || DRAINER.with(|d| d.get())
            || shared.gave_up.load(Ordering::Relaxed)
        {
            return Fill::QueueFull;
        }
        let started = Instant::now();
        let deadline = started + shared.limits.stall;
        let mut fill = Fill::QueueFull;
        let waiting = VendorWait::new(shared);
        while fill == Fill::QueueFull && shared.enabled.load(Ordering::Relaxed) {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                break;
            };
            self.wake_for_overflow();
            {
                let g = shared
                    .drained_lock
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                if shared.sealed.load(Ordering::Acquire) >= sealed_cap(shared) {
                    let _ = shared
                        .drained
                        .wait_timeout(g, left.min(Duration::from_millis(5)));
                }
            }
            fill = retry();
        }
        drop(waiting);
        if fill == Fill::QueueFull {
            shared.gave_up.store(true, Ordering::Relaxed);
        }
        shared
            .stalled_ns
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        fill
    }

    /// Total time recording threads waited for the emitter (see `stall`).
    pub fn stalled(&self) -> Duration {
        Duration::from_nanos(self.shared.stalled_ns.load(Ordering::Relaxed))
    }

    /// Returns (outcome, wake the emitter).
    fn fill(&self, buf: &ThreadBuffer, f: &impl Fn(&mut Batch, &Limits) -> bool) -> (Fill, bool) {
        let shared = &self.shared;
        let limits = &shared.limits;
        let mut slot = buf.slot.lock().unwrap_or_else(|e| e.into_inner());
        if f(&mut slot.current, limits) {
            return (
                Fill::Recorded,
                slot.current.events.len() == limits.events / 2,
            );
        }
        // An event that does not fit an empty batch never will.
        if slot.current.events.is_empty() {
            return (Fill::TooLarge, false);
        }
        // Full: seal it if the queue has room, and retry on a fresh batch.
        if shared.sealed.fetch_add(1, Ordering::AcqRel) >= sealed_cap(shared) {
            shared.sealed.fetch_sub(1, Ordering::AcqRel);
            return (Fill::QueueFull, false);
        }
        let fresh = self.fresh_batch(slot.current.thread);
        let full = std::mem::replace(&mut slot.current, fresh);
        slot.sealed.push(full);
        let fill = if f(&mut slot.current, limits) {
            Fill::Recorded
        } else {
            Fill::TooLarge
        };
        (fill, true)
    }

    fn fresh_batch(&self, thread: u32) -> Batch {
        let mut b = self
            .shared
            .pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default();
        b.thread = thread;
        b
    }

    /// For a vendor's buffer thread (never an application thread), before
    /// it records a buffer's worth: marks the thread as the vendor's (half
    /// the queue is reserved for it), and waits, at most `limit`, while the
    /// whole queue is in use, so that a burst slows the vendor's delivery
    /// (which has its own bounded, counted buffering) rather than being
    /// dropped here.
    pub fn wait_for_room(&self, limit: Duration) {
        VENDOR.with(|v| v.set(true));
        let shared = &self.shared;
        let busy = || shared.sealed.load(Ordering::Acquire) >= shared.limits.sealed;
        if !busy() || !shared.enabled.load(Ordering::Relaxed) || DRAINER.with(|d| d.get()) {
            return;
        }
        self.wake_for_overflow();
        let _waiting = VendorWait::new(shared);
        let deadline = Instant::now() + limit;
        let mut g = shared
            .drained_lock
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        while busy() && shared.enabled.load(Ordering::Relaxed) {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return;
            };
            g = shared
                .drained
                .wait_timeout(g, left.min(Duration::from_millis(10)))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn wake(&self) {
        if let Some(w) = self.shared.wake.get() {
            (w.0)();
        }
    }

    /// Wakes the emitter for a full queue, once until it next drains.
    fn wake_for_overflow(&self) {
        if !self.shared.overflow_woken.swap(true, Ordering::AcqRel) {
            self.wake();
        }
    }

    fn register(&self) -> Arc<ThreadBuffer> {
        let tid = crate::clock::thread_id();
        // Once per thread: its name now, in case it has exited by the time
        // its events are written.
        if let Ok(n) = std::fs::read_to_string("/proc/thread-self/comm") {
            self.shared.names.set(tid, n.trim_end().to_owned());
        }
        let buf = Arc::new(ThreadBuffer {
            slot: Mutex::new(Slot {
                current: self.fresh_batch(tid),
                sealed: Vec::new(),
            }),
        });
        let mut threads = self
            .shared
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        threads.push((tid, buf.clone()));
        buf
    }

    /// Takes every thread's events: per thread, its sealed batches in order,
    /// then the batch being filled. Give the batches back with
    /// [`Recorder::recycle`] once written.
    #[cfg(test)]
    pub(crate) fn drain(&self) -> Vec<Batch> {
        self.drain_some(usize::MAX)
    }

    /// Names of the threads that recorded, as they were when each first
    /// recorded.
    pub fn thread_names(&self) -> ThreadNames {
        self.shared.names.clone()
    }

    /// The limits this recorder was made with.
    pub fn limits(&self) -> Limits {
        self.shared.limits
    }

    /// Takes every thread's events up to `max_events` events (at least one
    /// batch when there is any): each thread's oldest
    /// sealed batches first, its batch being filled once none is left, the
    /// threads taken in turn. Room in the queue appears as soon as each
    /// part is taken, so that a thread waiting for room waits for one part
    /// to be written, not for everything queued.
    pub fn drain_some(&self, max_events: usize) -> Vec<Batch> {
        let shared = &self.shared;
        let mut out: Vec<Batch> = Vec::new();
        let mut budget = max_events;
        let mut threads = shared.threads.lock().unwrap_or_else(|e| e.into_inner());
        let fits =
            |out: &Vec<Batch>, budget: usize, b: &Batch| out.is_empty() || budget >= b.events.len();
        threads.retain(|(tid, buf)| {
            let alive = Arc::strong_count(buf) > 1;
            let mut slot = buf.slot.lock().unwrap_or_else(|e| e.into_inner());
            let mut taken = 0;
            while !slot.sealed.is_empty() && fits(&out, budget, &slot.sealed[0]) {
                let b = slot.sealed.remove(0);
                budget = budget.saturating_sub(b.events.len());
                out.push(b);
                taken += 1;
            }
            shared.sealed.fetch_sub(taken, Ordering::AcqRel);
            if slot.sealed.is_empty()
                && !slot.current.events.is_empty()
                && fits(&out, budget, &slot.current)
            {
                // A live thread goes on recording into a batch as big as
                // the one taken (grown from empty, when the pool is empty,
                // it would copy its events at every doubling). An exited
                // thread gets none from the pool: its buffer is dropped
                // below, and a pooled batch with it, so that the next new
                // thread found the pool empty and grew its batch from
                // nothing (seen once per thread that exits, in both the
                // writer through the SDK and the direct one).
                let fresh = if alive {
                    let mut fresh = self.fresh_batch(*tid);
                    fresh.events.reserve(slot.current.events.capacity());
                    fresh
                } else {
                    Batch::default()
                };
                let b = std::mem::replace(&mut slot.current, fresh);
                budget = budget.saturating_sub(b.events.len());
                out.push(b);
            }
            // Only the registry holds a buffer whose thread has exited;
            // it goes once nothing of it is left.
            alive || !slot.sealed.is_empty() || !slot.current.events.is_empty()
        });
        if !threads.is_empty() {
            // The next part starts with the next thread.
            threads.rotate_left(1);
        }
        shared.gave_up.store(false, Ordering::Relaxed);
        shared.overflow_woken.store(false, Ordering::Release);
        drop(threads);
        let _g = shared
            .drained_lock
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        shared.drained.notify_all();
        out
    }

    /// Returns written batches for reuse.
    pub fn recycle(&self, batches: impl IntoIterator<Item = Batch>) {
        let mut pool = self.shared.pool.lock().unwrap_or_else(|e| e.into_inner());
        for mut b in batches {
            if pool.len() >= POOL_LIMIT {
                break;
            }
            b.clear();
            pool.push(b);
        }
    }

    /// Number of thread buffers currently registered.
    pub fn thread_count(&self) -> usize {
        self.shared
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Dim3, KernelId, NameId};

    fn api(i: u64) -> ApiCall {
        let mut call = ApiCall::new(NameId(1), 1, i, i + 1, i);
        call.submits = true;
        call
    }

    #[test]
    fn draining_an_exited_thread_leaves_the_pool_to_the_living() {
        let r = Recorder::new(Limits::default());
        r.recycle([Batch::default(), Batch::default()]);
        let r2 = r.clone();
        // Takes one pooled batch for its buffer, and exits.
        std::thread::spawn(move || r2.api(api(1))).join().unwrap();
        let pooled = r.shared.pool.lock().unwrap().len();
        assert_eq!(pooled, 1);
        let got = r.drain_some(usize::MAX);
        assert_eq!(got.iter().map(|b| b.events.len()).sum::<usize>(), 1);
        assert_eq!(
            r.shared.pool.lock().unwrap().len(),
            pooled,
            "a batch left the pool for a thread that is gone"
        );
    }

    #[test]
    fn events_from_many_threads_are_drained_exactly_once() {
        let r = Recorder::new(Limits::default());
        // Plain join, not a scope: a scope returns before the threads'
        // thread-local destructors (which release the buffers) have run.
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let r = r.clone();
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        r.api(api(t * 1000 + i));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let batches = r.drain();
        let mut ids: Vec<u64> = batches
            .iter()
            .flat_map(|b| b.events.iter())
            .map(|e| match e {
                Event::Api(a) => a.correlation_id,
                _ => unreachable!(),
            })
            .collect();
        ids.sort();
        assert_eq!(ids, (0..4000).collect::<Vec<_>>());
        assert!(r.drain().is_empty(), "second drain is empty");
        // Exited threads' buffers are released once drained.
        assert_eq!(r.thread_count(), 0);
    }

    #[test]
    fn full_buffer_counts_drops_instead_of_growing() {
        let r = Recorder::new(Limits {
            events: 10,
            text: 16,
            sealed: 0,
            stall: Duration::ZERO,
        });
        for i in 0..15 {
            let mut exec = KernelExec::new(0, i, i, i + 1, KernelId(1));
            exec.context = 1;
            exec.stream = 7;
            exec.grid = Dim3::new(1, 1, 1);
            exec.block = Dim3::new(1, 1, 1);
            r.kernel(exec);
        }
        let drops = r.drop_counts();
        assert_eq!(drops[DropKind::ThreadBuffer as usize].1, 5);
        let b = r.drain();
        assert_eq!(b[0].events.len(), 10);
        // Text that does not fit is dropped too.
        r.marker(1, 0, "0123456789abcdefXYZ", |text| Marker::Mark {
            domain: None,
            text,
        });
        assert_eq!(r.drop_counts()[DropKind::ThreadBuffer as usize].1, 6);
    }

    #[test]
    fn full_batches_are_sealed_in_order_up_to_the_limit() {
        let r = Recorder::new(Limits {
            events: 10,
            text: 16,
            sealed: 2,
            stall: Duration::ZERO,
        });
        for i in 0..40 {
            r.api(api(i));
        }
        // An application thread may fill an eighth of the sealed budget, at
        // least one batch: 1 sealed batch + the current one hold 20; the
        // last 20 are dropped.
        assert_eq!(r.drop_counts()[DropKind::ThreadBuffer as usize].1, 20);
        let ids: Vec<u64> = r
            .drain()
            .iter()
            .flat_map(|b| b.events.iter())
            .map(|e| match e {
                Event::Api(a) => a.correlation_id,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(ids, (0..20).collect::<Vec<_>>());
        // The budget is free again after the drain.
        for i in 0..15 {
            r.api(api(i));
        }
        assert_eq!(r.drop_counts()[DropKind::ThreadBuffer as usize].1, 20);
        // A vendor's delivery thread (it waits for room first) may fill
        // the whole budget, where an application thread may not: beside
        // the one sealed batch above, it seals one more and holds 20.
        std::thread::scope(|s| {
            s.spawn(|| {
                r.wait_for_room(Duration::ZERO);
                for i in 0..40 {
                    r.api(api(100 + i));
                }
            });
        });
        assert_eq!(r.drop_counts()[DropKind::ThreadBuffer as usize].1, 20 + 20);
        for i in 0..10 {
            r.api(api(200 + i));
        }
        assert_eq!(
            r.drop_counts()[DropKind::ThreadBuffer as usize].1,
            20 + 20 + 5,
            "the application thread gets no room beyond its share"
        );
        // Marker text that would overflow a batch seals it too.
        let r = Recorder::new(Limits {
            events: 10,
            text: 16,
            sealed: 1,
            stall: Duration::ZERO,
        });
        r.marker(1, 0, "0123456789", |text| Marker::Mark {
            domain: None,
            text,
        });
        r.marker(1, 1, "abcdefghij", |text| Marker::Mark {
            domain: None,
            text,
        });
        assert_eq!(r.drop_counts()[DropKind::ThreadBuffer as usize].1, 0);
        let b = r.drain();
        assert_eq!(b.len(), 2);
        match b[1].events[0] {
            Event::Marker(MarkerEvent {
                marker: Marker::Mark { text, .. },
                ..
            }) => assert_eq!(b[1].text(text), "abcdefghij"),
            ref e => panic!("{e:?}"),
        }
    }

    #[test]
    fn wait_for_room_waits_until_drained() {
        let r = Recorder::new(Limits {
            events: 4,
            text: 16,
            sealed: 2,
            stall: Duration::ZERO,
        });
        // A vendor's thread fills the whole queue (2 sealed + its current
        // batch), then waits for room.
        let waiter = {
            let r = r.clone();
            std::thread::spawn(move || {
                r.wait_for_room(Duration::ZERO);
                for i in 0..12 {
                    r.api(api(i));
                }
                r.wait_for_room(Duration::from_secs(600));
            })
        };
        // It is inside the wait (it counts itself as waiting there)...
        let deadline = Instant::now() + Duration::from_secs(60);
        while r.shared.vendor_waiting.load(Ordering::Acquire) == 0 {
            assert!(Instant::now() < deadline, "wait_for_room never waited");
            assert!(!waiter.is_finished(), "wait_for_room returned while full");
            std::thread::yield_now();
        }
        // ...and meanwhile the application's threads may seal nothing.
        assert_eq!(sealed_cap(&r.shared), 0);
        assert!(!waiter.is_finished());
        // The drain lets it go.
        assert_eq!(r.drain().len(), 3);
        waiter.join().unwrap();
        assert_eq!(r.shared.vendor_waiting.load(Ordering::Acquire), 0);
        assert_eq!(r.drop_counts()[DropKind::ThreadBuffer as usize].1, 0);
        assert_eq!(sealed_cap(&r.shared), 1);
    }

    #[test]
    fn a_full_queue_wakes_the_emitter_once_until_it_drains() {
        let r = Recorder::new(Limits {
            events: 1,
            text: 16,
            sealed: 1,
            stall: Duration::ZERO,
        });
        let wakes = Arc::new(AtomicUsize::new(0));
        {
            let wakes = wakes.clone();
            r.set_wake(Box::new(move || {
                wakes.fetch_add(1, Ordering::Relaxed);
            }));
        }
        // 1 sealed + 1 current; the next 100 find the queue full.
        for i in 0..102 {
            r.api(api(i));
        }
        assert_eq!(r.drop_counts()[DropKind::ThreadBuffer as usize].1, 100);
        // One wake for the sealed batch, one for the overflow.
        assert_eq!(wakes.load(Ordering::Relaxed), 2);
        r.drain();
        for i in 0..102 {
            r.api(api(i));
        }
        assert_eq!(wakes.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn marker_text_is_stored_in_the_arena() {
        let r = Recorder::new(Limits::default());
        r.marker(5, 10, "step 1", |text| Marker::Push { domain: None, text });
        r.marker(5, 11, "", |_| Marker::Pop { domain: None });
        let b = &r.drain()[0];
        match b.events[0] {
            Event::Marker(MarkerEvent {
                marker: Marker::Push { text, .. },
                ..
            }) => assert_eq!(b.text(text), "step 1"),
            ref e => panic!("{e:?}"),
        }
    }

    #[test]
    fn closed_recorder_ignores_events() {
        let r = Recorder::new(Limits::default());
        r.close();
        r.api(api(1));
        assert!(r.drain().is_empty());
    }
}
