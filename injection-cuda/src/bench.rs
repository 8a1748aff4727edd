//! The injection's per-call and per-record paths over a tracer, for
//! `benches/`. Not an API: nothing outside the benchmarks should use it.

use crate::tool::Shared;
use cupti::activity::Records;
use cupti::callback::Callback;
use gpu_trace_perfetto::Tracer;

/// What the injection runs for each CUPTI callback and activity buffer,
/// recording into `tracer`.
pub struct Paths(Shared);

impl Paths {
    /// The same state `InitializeInjection` builds.
    pub fn new(tracer: &Tracer) -> Self {
        Self(Shared::new(
            tracer,
            &crate::config::CudaConfig::default(),
            None,
        ))
    }

    /// Whether API calls are recorded (a session asks for them).
    pub fn set_api(&self, on: bool) {
        self.0.set_api_on(on);
    }

    /// One CUPTI callback.
    pub fn on_callback(&self, cb: &Callback<'_>) {
        self.0.on_callback(cb);
    }

    /// One activity buffer.
    pub fn on_records(&self, records: Records<'_>) {
        self.0.on_records(records);
    }
}
