//! A GPU: one worker thread executing kernels and copies in submission order, with stream and
//! device synchronisation for the host threads.

use std::collections::HashMap;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::{lock, now_ns};

/// Work for the device; `run` is called on the device thread with (start, end) timestamps
/// after the simulated execution time.
pub(crate) struct Work {
    pub(crate) stream: u32,
    pub(crate) duration_us: u64,
    pub(crate) on_complete: Box<dyn FnOnce(u64, u64) + Send>,
}

#[derive(Default)]
struct State {
    outstanding: u64,
    per_stream: HashMap<u32, u64>,
    submitted: u64,
    completed: u64,
}

pub(crate) struct Device {
    tx: Mutex<Option<Sender<(u64, Work)>>>,
    state: Arc<(Mutex<State>, Condvar)>,
    join: Mutex<Option<JoinHandle<()>>>,
}

impl Device {
    pub(crate) fn new(ordinal: usize) -> Device {
        let state: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let (tx, rx) = channel::<(u64, Work)>();
        let st = state.clone();
        let join = std::thread::Builder::new()
            .name(format!("sim-gpu{ordinal}"))
            .spawn(move || {
                for (seq, w) in rx {
                    let start = now_ns();
                    std::thread::sleep(Duration::from_micros(w.duration_us));
                    let end = now_ns().max(start + 1);
                    (w.on_complete)(start, end);
                    let (m, cv) = &*st;
                    let mut s = lock(m);
                    s.outstanding -= 1;
                    *s.per_stream.entry(w.stream).or_default() -= 1;
                    s.completed = seq;
                    cv.notify_all();
                }
            })
            .expect("spawn device thread");
        Device {
            tx: Mutex::new(Some(tx)),
            state,
            join: Mutex::new(Some(join)),
        }
    }

    /// Queues work; returns its sequence number.
    pub(crate) fn submit(&self, w: Work) -> u64 {
        let (m, _) = &*self.state;
        // Numbered and queued under one lock: the device runs work in sequence order, so
        // `completed` only grows (two threads submitting at once could otherwise queue 8
        // before 7, and a wait for 8 would never end).
        let mut s = lock(m);
        s.submitted += 1;
        s.outstanding += 1;
        *s.per_stream.entry(w.stream).or_default() += 1;
        let seq = s.submitted;
        if let Some(tx) = lock(&self.tx).as_ref() {
            let _ = tx.send((seq, w));
        }
        seq
    }

    fn wait_until(&self, done: impl Fn(&State) -> bool) {
        let (m, cv) = &*self.state;
        let mut s = lock(m);
        while !done(&s) {
            s = cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Work submitted so far (the sequence number of the latest).
    pub(crate) fn submitted(&self) -> u64 {
        lock(&self.state.0).submitted
    }

    pub(crate) fn wait_seq(&self, seq: u64) {
        self.wait_until(|s| s.completed >= seq);
    }

    pub(crate) fn wait_stream(&self, stream: u32) {
        self.wait_until(|s| s.per_stream.get(&stream).copied().unwrap_or(0) == 0);
    }

    pub(crate) fn wait_idle(&self) {
        self.wait_until(|s| s.outstanding == 0);
    }

    pub(crate) fn shutdown(&self) {
        lock(&self.tx).take();
        if let Some(j) = lock(&self.join).take() {
            let _ = j.join();
        }
    }
}
