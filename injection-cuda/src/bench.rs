//! The injection's per-call and per-record paths over a tracer, and its
//! NVML telemetry probes, for `benches/` only: built with the `bench-hooks`
//! feature, which only the benchmarks' dev-dependency turns on, so no
//! shipped build has it.

/// The NVML probes of one GPU, as the sampler opens them.
pub fn probes(
    nvml: &nvml::Nvml,
    gpu_id: u32,
    dev: nvml::Device,
) -> gpu_trace_agent::telemetry::DeviceProbes {
    crate::telemetry::probes(nvml, gpu_id, dev)
}

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
            false,
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
