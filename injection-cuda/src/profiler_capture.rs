//! `INJECTION_CAPTURE_RANGE=cudaProfilerApi`: recording only between the
//! application's profiler start and stop calls. After
//! `INJECTION_CAPTURE_COUNT` windows nothing more is recorded.

use crate::nvtx_capture::RangeCount;
use cupti::cbid::ApiDomain;
use gpu_trace_perfetto::CaptureSwitch;

/// The application's profiler start/stop calls (runtime and driver alike:
/// opening an open range changes nothing).
pub(crate) struct Capture {
    pub(crate) switch: CaptureSwitch,
    recorder: gpu_trace_model::Recorder,
    pub(crate) start: Vec<(ApiDomain, u32)>,
    pub(crate) stop: Vec<(ApiDomain, u32)>,
    /// Windows opened so far, against `INJECTION_CAPTURE_COUNT`.
    ranges: RangeCount,
}

impl Capture {
    pub(crate) fn new(
        switch: CaptureSwitch,
        recorder: gpu_trace_model::Recorder,
        count: Option<u32>,
    ) -> Option<Self> {
        let start = crate::api::ids_named(&["cudaProfilerStart", "cuProfilerStart"]);
        let stop = crate::api::ids_named(&["cudaProfilerStop", "cuProfilerStop"]);
        (!start.is_empty() && !stop.is_empty()).then_some(Capture {
            switch,
            recorder,
            start,
            stop,
            ranges: RangeCount::new(count),
        })
    }

    /// Whether `cb` is a profiler start/stop; flips the switch at its exit,
    /// with a window marker in the trace when it changes (the runtime's
    /// call and the driver's under it flip it once).
    pub(crate) fn on_api(&self, cb: &cupti::callback::ApiCallback<'_>) -> bool {
        let id = (cb.domain(), cb.cbid());
        let open = if self.start.contains(&id) {
            true
        } else if self.stop.contains(&id) {
            false
        } else {
            return false;
        };
        if cb.site() == cupti::callback::Site::Exit && self.switch.is_open() != open {
            use gpu_trace_agent::windows::log_window;
            let now = gpu_trace_model::clock::boottime_ns();
            if open {
                let Some(n) = self.ranges.take() else {
                    return true;
                };
                self.switch.set(true);
                log_window(&self.recorder, now, n, true, "cudaProfilerStart");
            } else {
                let n = self.ranges.taken();
                log_window(&self.recorder, now, n, false, "cudaProfilerStop");
                self.switch.set(false);
                if self.ranges.used_up() {
                    gpu_trace_model::verbose!(
                        "{n} cudaProfilerStart range(s) recorded; recording stays off"
                    );
                }
            }
        }
        true
    }
}
