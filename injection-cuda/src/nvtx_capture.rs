//! `INJECTION_CAPTURE_RANGE=nvtx:NAME`: recording only inside NVTX ranges
//! of that name, as `nsys --capture-range=nvtx`. A pushed range opens a
//! window on the thread that pushed it and closes it at its matching pop;
//! a start/end range closes at the end with its id. Ranges of that name
//! that begin while a window is open nest inside it. After
//! `INJECTION_CAPTURE_COUNT` windows nothing more is recorded.

use cupti::nvtx::NvtxEvent;
use gpu_trace_core::{CaptureSwitch, Recorder};
use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

thread_local! {
    // Push depth of this thread, and the depth whose pop closes the window
    // this thread opened (0: none).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static OPENED_AT: Cell<u32> = const { Cell::new(0) };
}

/// The NVTX capture range of a process.
pub(crate) struct NvtxCapture {
    name: String,
    count: Option<u32>,
    switch: CaptureSwitch,
    recorder: Recorder,
    /// Windows opened so far.
    taken: AtomicU32,
    /// The id of the start/end range holding the window open, if one does.
    range: Mutex<Option<u64>>,
}

impl NvtxCapture {
    pub(crate) fn new(
        name: String,
        count: Option<u32>,
        switch: CaptureSwitch,
        recorder: Recorder,
    ) -> Self {
        Self {
            name,
            count,
            switch,
            recorder,
            taken: AtomicU32::new(0),
            range: Mutex::new(None),
        }
    }

    /// Sees every NVTX event (whether or not markers are recorded), before
    /// it is recorded. A range that opens a window opens it now; `true`
    /// when `ev` ends the window's range: the caller records `ev`, then
    /// calls [`NvtxCapture::close`].
    pub(crate) fn on_nvtx(
        &self,
        ev: &NvtxEvent<'_>,
        is_name: impl Fn(&cupti::nvtx::NvtxMessage<'_>, &str) -> bool,
    ) -> bool {
        match ev {
            NvtxEvent::Push { message, .. } => {
                let d = DEPTH.with(|c| {
                    c.set(c.get() + 1);
                    c.get()
                });
                if is_name(message, &self.name) && self.open() {
                    OPENED_AT.with(|c| c.set(d));
                }
            }
            NvtxEvent::Pop { .. } => {
                let d = DEPTH.with(Cell::get);
                DEPTH.with(|c| c.set(d.saturating_sub(1)));
                if d > 0 && OPENED_AT.with(Cell::get) == d {
                    OPENED_AT.with(|c| c.set(0));
                    return true;
                }
            }
            NvtxEvent::RangeStart {
                message,
                id: Some(id),
                ..
            } if is_name(message, &self.name) && self.open() => {
                *self.range.lock().unwrap_or_else(|e| e.into_inner()) = Some(*id);
            }
            NvtxEvent::RangeEnd { id, .. } => {
                let mut r = self.range.lock().unwrap_or_else(|e| e.into_inner());
                if *r == Some(*id) {
                    *r = None;
                    return true;
                }
            }
            _ => {}
        }
        false
    }

    /// Opens a window unless one is open or the count is used up.
    fn open(&self) -> bool {
        if self.switch.is_open() {
            return false;
        }
        let n = self.taken.load(Ordering::Relaxed);
        if self.count.is_some_and(|c| n >= c) {
            return false;
        }
        let n = n + 1;
        self.taken.store(n, Ordering::Relaxed);
        self.switch.set(true);
        gpu_trace_core::windows::log_window(
            &self.recorder,
            gpu_trace_core::clock::boottime_ns(),
            n,
            true,
            &format!("NVTX range {:?}", self.name),
        );
        true
    }

    /// Closes the open window (its range ended).
    pub(crate) fn close(&self) {
        let n = self.taken.load(Ordering::Relaxed);
        gpu_trace_core::windows::log_window(
            &self.recorder,
            gpu_trace_core::clock::boottime_ns(),
            n,
            false,
            &format!("NVTX range {:?} ended", self.name),
        );
        self.switch.set(false);
        if self.count.is_some_and(|c| n >= c) {
            gpu_trace_core::verbose!("{n} NVTX capture range(s) recorded; recording stays off");
        }
    }

    /// Windows opened.
    pub(crate) fn taken(&self) -> u32 {
        self.taken.load(Ordering::Relaxed)
    }

    /// The range name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}
