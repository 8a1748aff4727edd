//! The telemetry sampler's round without its thread, for `benches/` only:
//! built with the `bench-hooks` feature, which only the benchmarks'
//! dev-dependency turns on, so no shipped build has it.

/// One round of the telemetry sampler on one GPU, as its thread runs it:
/// the probe's reading, then its values recorded as counter samples.
pub struct TelemetryRound {
    recorder: gpu_trace_model::Recorder,
    counters: std::sync::Arc<gpu_trace_model::registry::Counters>,
    ids: crate::telemetry::sampler::Ids,
    reading: crate::telemetry::Reading,
    rounds: u64,
}

impl Default for TelemetryRound {
    fn default() -> Self {
        Self {
            recorder: gpu_trace_model::Recorder::new(gpu_trace_model::Limits::default()),
            counters: Default::default(),
            ids: Default::default(),
            reading: Default::default(),
            rounds: 0,
        }
    }
}

impl TelemetryRound {
    /// Reads `probe` and records what it read; returns the values recorded.
    /// The recorded events are dropped every 1024 rounds (the emitter's
    /// part, measured by the `encode` benches).
    pub fn round(&mut self, probe: &mut dyn crate::telemetry::Probe) -> u64 {
        self.reading.clear(gpu_trace_model::clock::boottime_ns());
        probe.read(&mut self.reading);
        let n = crate::telemetry::sampler::record(
            &self.recorder,
            &self.counters,
            &mut self.ids,
            0,
            &self.reading,
        );
        self.rounds += 1;
        if self.rounds.is_multiple_of(1024) {
            let b = self.recorder.drain_some(usize::MAX);
            self.recorder.recycle(b);
        }
        n
    }
}
