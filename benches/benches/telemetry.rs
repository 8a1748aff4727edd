#![allow(missing_docs)] // criterion_group! generates undocumented items
//! One telemetry sampling round of one GPU, in ns: the NVML probe's
//! readings (clocks, utilisation, power, temperature, memory, clock-event
//! reasons, and GPM where supported) and their recording as counter
//! samples, as the sampler's thread does every period.
//!
//! NVML is `nvml-sim`, resolved in-process: this measures our side of each
//! call (the safe layer, the probe, the recorder), not the driver's. On an
//! H200 the driver adds about 1–2 µs per reading and 48 µs per GPM sample
//! (`benches/examples/nvml_cost.rs`, see docs/src/measurements/telemetry.md);
//! the sampler's own CPU time in a real run is in the trace's
//! `gpu-trace telemetry:` log line and in `--verbose`.

use criterion::{Criterion, criterion_group, criterion_main};
use gpu_trace_agent::bench::TelemetryRound;
use nvml_sim::{DeviceSpec, Spec};
use std::hint::black_box;

fn probe(gpm: bool) -> Box<dyn gpu_trace_agent::telemetry::Probe> {
    nvml_sim::configure(Spec {
        devices: vec![DeviceSpec {
            gpm,
            ..DeviceSpec::default()
        }],
        ..Spec::default()
    });
    // SAFETY: the fake's exports have NVML's prototypes and live for the
    // whole process.
    let api = unsafe { nvml_sys::Api::load_with(nvml_sim::resolve) };
    // SAFETY: as above.
    let nvml = unsafe { nvml::Nvml::from_api(Box::leak(Box::new(api)), "nvml-sim") }
        .expect("the fake initialises");
    let dev = nvml.device_by_index(0).expect("device 0");
    gpu_trace_cuda::bench::probes(&nvml, 0, dev).fast
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("telemetry");
    for (name, gpm) in [("nvml_round", false), ("nvml_round_gpm", true)] {
        let mut p = probe(gpm);
        let mut r = TelemetryRound::default();
        // A round that records nothing would be worthless to time. The
        // first round reads everything; then the SM clock, power and
        // reasons come every round, the medium readings and GPM every
        // 100 ms (injection-cuda's MEDIUM_PERIOD_NS): the GPM warm-up round
        // waits for that, and the timed rounds are mostly rounds of the
        // three fast readings, as at the default 10 ms period.
        let first = r.round(p.as_mut());
        assert!(first >= 8, "{name}: {first} values in the first round");
        if gpm {
            std::thread::sleep(std::time::Duration::from_millis(110));
        }
        let n = r.round(p.as_mut());
        assert!(n >= if gpm { 16 } else { 3 }, "{name}: {n} values");
        g.bench_function(name, |b| b.iter(|| black_box(r.round(p.as_mut()))));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
