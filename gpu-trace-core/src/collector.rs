//! Per-thread event buffers between the backends and the emitter thread.
//!
//! The application's threads (API callbacks) and the vendor's buffer threads
//! append to a buffer owned by the calling thread: one uncontended lock, a
//! copy of the event, no allocation once the buffer has grown. The emitter
//! swaps whole buffers out, so nothing on the recording side ever waits for
//! Perfetto. Buffers are bounded; what does not fit is counted, and the
//! counts are written into the trace.

use crate::model::{
    ApiCall, CounterSample, DropKind, Event, KernelCounters, KernelExec, Marker, MarkerEvent,
    MemoryOp, TextRef, Timestamp,
};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

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

#[derive(Debug)]
struct ThreadBuffer {
    batch: Mutex<Batch>,
}

/// Limits of the per-thread buffers.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Events per thread between two drains.
    pub events: usize,
    /// Marker text bytes per thread between two drains.
    pub text: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            events: 1 << 16,
            text: 1 << 20,
        }
    }
}

static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    // The collector this thread last recorded into, and its buffer there.
    static LOCAL: RefCell<Option<(usize, Arc<ThreadBuffer>)>> = const { RefCell::new(None) };
}

#[derive(Debug)]
pub(crate) struct Shared {
    id: usize,
    limits: Limits,
    threads: Mutex<Vec<(u32, Arc<ThreadBuffer>)>>,
    drops: [AtomicU64; DropKind::ALL.len()],
    enabled: AtomicBool,
    wake: Mutex<Option<Wake>>,
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
    pub(crate) fn new(limits: Limits) -> Self {
        Self {
            shared: Arc::new(Shared {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                limits,
                threads: Mutex::new(Vec::new()),
                drops: Default::default(),
                enabled: AtomicBool::new(true),
                wake: Mutex::new(None),
            }),
        }
    }

    pub(crate) fn set_wake(&self, f: Box<dyn Fn() + Send + Sync>) {
        *self.shared.wake.lock().unwrap_or_else(|e| e.into_inner()) = Some(Wake(f));
    }

    /// Stops accepting events (after shutdown). Later events are ignored,
    /// not counted as drops: the session is over.
    pub(crate) fn close(&self) {
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
        self.with_batch(|b, limits| {
            if b.events.len() >= limits.events || b.text.len() + text.len() > limits.text {
                return false;
            }
            let r = TextRef {
                offset: b.text.len() as u32,
                len: text.len() as u32,
            };
            b.text.extend_from_slice(text.as_bytes());
            b.events.push(Event::Marker(MarkerEvent {
                thread,
                ts,
                marker: make(r),
            }));
            true
        });
    }

    /// Counts `n` items of `kind` that a backend could not record.
    pub fn dropped(&self, kind: DropKind, n: u64) {
        if n > 0 {
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
        self.with_batch(|b, limits| {
            if b.events.len() >= limits.events {
                return false;
            }
            b.events.push(ev);
            true
        });
    }

    /// Runs `f` on this thread's batch. `f` returns false when the event did
    /// not fit; it is then counted as dropped.
    fn with_batch(&self, f: impl FnOnce(&mut Batch, &Limits) -> bool) {
        let shared = &self.shared;
        let mut f = Some(f);
        let outcome = LOCAL.try_with(|slot| {
            let mut slot = slot.borrow_mut();
            let buf = match &*slot {
                Some((id, buf)) if *id == shared.id => buf.clone(),
                _ => {
                    let buf = self.register();
                    *slot = Some((shared.id, buf.clone()));
                    buf
                }
            };
            drop(slot);
            let mut b = buf.batch.lock().unwrap_or_else(|e| e.into_inner());
            let ok = (f.take().unwrap())(&mut b, &shared.limits);
            (ok, b.events.len())
        });
        let (ok, len) = match outcome {
            Ok(r) => r,
            // The thread is exiting and its thread-locals are gone: record
            // into a buffer that is not cached.
            Err(_) => {
                let buf = self.register();
                let mut b = buf.batch.lock().unwrap_or_else(|e| e.into_inner());
                let ok = (f.take().unwrap())(&mut b, &shared.limits);
                (ok, b.events.len())
            }
        };
        if ok {
            if len == shared.limits.events / 2 {
                self.wake();
            }
        } else {
            shared.drops[DropKind::ThreadBuffer as usize].fetch_add(1, Ordering::Relaxed);
        }
    }

    fn wake(&self) {
        if let Some(w) = &*self.shared.wake.lock().unwrap_or_else(|e| e.into_inner()) {
            (w.0)();
        }
    }

    fn register(&self) -> Arc<ThreadBuffer> {
        let tid = crate::clock::thread_id();
        let buf = Arc::new(ThreadBuffer {
            batch: Mutex::new(Batch {
                thread: tid,
                ..Batch::default()
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

    /// Takes every thread's events. `spare` batches (emptied) are swapped
    /// in so that steady-state recording does not allocate.
    pub(crate) fn drain(&self, spare: &mut Vec<Batch>) -> Vec<Batch> {
        let mut out = Vec::new();
        let mut threads = self
            .shared
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        threads.retain(|(tid, buf)| {
            let mut b = buf.batch.lock().unwrap_or_else(|e| e.into_inner());
            if !b.events.is_empty() {
                let mut fresh = spare.pop().unwrap_or_default();
                fresh.clear();
                fresh.thread = *tid;
                out.push(std::mem::replace(&mut *b, fresh));
            }
            // Only the registry holds a buffer whose thread has exited.
            let alive = Arc::strong_count(buf) > 1;
            alive || !b.events.is_empty()
        });
        out
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
    use smallvec::smallvec;

    fn api(i: u64) -> ApiCall {
        ApiCall {
            name: NameId(1),
            thread: 1,
            start: i,
            end: i + 1,
            correlation_id: i,
            submits: true,
            waits: smallvec![],
            status: 0,
        }
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
        let mut spare = Vec::new();
        let batches = r.drain(&mut spare);
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
        assert!(r.drain(&mut spare).is_empty(), "second drain is empty");
        // Exited threads' buffers are released once drained.
        assert_eq!(r.thread_count(), 0);
    }

    #[test]
    fn full_buffer_counts_drops_instead_of_growing() {
        let r = Recorder::new(Limits {
            events: 10,
            text: 16,
        });
        for i in 0..15 {
            r.kernel(KernelExec {
                device: 0,
                context: 1,
                stream: 7,
                correlation_id: i,
                start: i,
                end: i + 1,
                kernel: KernelId(1),
                grid: Dim3::new(1, 1, 1),
                block: Dim3::new(1, 1, 1),
                waves_per_sm: None,
                graph_node: 0,
            });
        }
        let drops = r.drop_counts();
        assert_eq!(drops[DropKind::ThreadBuffer as usize].1, 5);
        let b = r.drain(&mut Vec::new());
        assert_eq!(b[0].events.len(), 10);
        // Text that does not fit is dropped too.
        r.marker(1, 0, "0123456789abcdefXYZ", |text| Marker::Mark {
            domain: None,
            text,
        });
        assert_eq!(r.drop_counts()[DropKind::ThreadBuffer as usize].1, 6);
    }

    #[test]
    fn marker_text_is_stored_in_the_arena() {
        let r = Recorder::new(Limits::default());
        r.marker(5, 10, "step 1", |text| Marker::Push { domain: None, text });
        r.marker(5, 11, "", |_| Marker::Pop { domain: None });
        let b = &r.drain(&mut Vec::new())[0];
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
        assert!(r.drain(&mut Vec::new()).is_empty());
    }
}
