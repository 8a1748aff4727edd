//! `INJECTION_CAPTURE_RANGE=nvtx:NAME`: recording only inside NVTX ranges
//! of that name, as `nsys --capture-range=nvtx`. A pushed range opens a
//! window on the thread that pushed it and closes it at its matching pop;
//! a start/end range closes at the end with its id. Ranges of that name
//! that begin while a window is open nest inside it. After
//! `INJECTION_CAPTURE_COUNT` windows nothing more is recorded.

use cupti::nvtx::NvtxEvent;
use gpu_trace_model::Recorder;
use gpu_trace_perfetto::CaptureSwitch;
use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

thread_local! {
    // Push depth of this thread, and the depth whose pop closes the window
    // this thread opened (0: none).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static OPENED_AT: Cell<u32> = const { Cell::new(0) };
}

/// The capture ranges that have opened a window, against
/// `INJECTION_CAPTURE_COUNT`: NVTX ranges here, `cudaProfilerStart` ranges
/// in the tool.
pub(crate) struct RangeCount {
    most: Option<u32>,
    taken: AtomicU32,
}

impl RangeCount {
    pub(crate) fn new(most: Option<u32>) -> Self {
        Self {
            most,
            taken: AtomicU32::new(0),
        }
    }

    /// Takes the next range: its number, from 1, or `None` once the count
    /// is used up.
    pub(crate) fn take(&self) -> Option<u32> {
        self.taken
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                self.most.is_none_or(|c| n < c).then_some(n + 1)
            })
            .ok()
            .map(|n| n + 1)
    }

    /// Ranges taken.
    pub(crate) fn taken(&self) -> u32 {
        self.taken.load(Ordering::Relaxed)
    }

    /// Whether no more ranges will be taken.
    pub(crate) fn used_up(&self) -> bool {
        self.most.is_some_and(|c| self.taken() >= c)
    }
}

/// The NVTX capture range of a process.
pub(crate) struct NvtxCapture {
    name: String,
    switch: CaptureSwitch,
    recorder: Recorder,
    /// Windows opened so far.
    ranges: RangeCount,
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
            switch,
            recorder,
            ranges: RangeCount::new(count),
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
        let Some(n) = self.ranges.take() else {
            return false;
        };
        self.switch.set(true);
        gpu_trace_agent::windows::log_window(
            &self.recorder,
            gpu_trace_model::clock::boottime_ns(),
            n,
            true,
            &format!("NVTX range {:?}", self.name),
        );
        true
    }

    /// Closes the open window (its range ended).
    pub(crate) fn close(&self) {
        let n = self.ranges.taken();
        gpu_trace_agent::windows::log_window(
            &self.recorder,
            gpu_trace_model::clock::boottime_ns(),
            n,
            false,
            &format!("NVTX range {:?} ended", self.name),
        );
        self.switch.set(false);
        if self.ranges.used_up() {
            gpu_trace_model::verbose!("{n} NVTX capture range(s) recorded; recording stays off");
        }
    }

    /// Windows opened.
    pub(crate) fn taken(&self) -> u32 {
        self.ranges.taken()
    }

    /// The range name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}
