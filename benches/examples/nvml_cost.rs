//! What each NVML reading of the telemetry sampler costs on a real GPU, and
//! what one fast round of the injection's probe costs: run on the GPU host,
//! `nvml_cost [ROUNDS]`. Each call is timed over many iterations (wall and
//! this thread's CPU); the probe's rounds are run at the default 10 ms
//! period, so GPM samples at its own 100 ms cadence as in a traced run.

use gpu_trace_agent::telemetry::Reading;
use gpu_trace_model::clock::thread_cpu_ns;
use nvml::{Clock, Nvml, Pcie};
use std::time::{Duration, Instant};

/// Each call once every 10 ms, as the sampler makes it: caches and the
/// core's clock are cold then, unlike in a tight loop.
fn cold<R: IsOk>(name: &str, n: u32, mut f: impl FnMut() -> R) {
    let mut cpu = 0u64;
    for _ in 0..n {
        std::thread::sleep(Duration::from_millis(10));
        let c0 = thread_cpu_ns();
        let _ = std::hint::black_box(f()).is_some_ok();
        cpu += thread_cpu_ns() - c0;
    }
    println!(
        "{name:<28} {:>9.2} us cpu, one call every 10 ms",
        cpu as f64 / 1e3 / f64::from(n)
    );
}

fn time<R: IsOk>(name: &str, n: u32, mut f: impl FnMut() -> R) {
    let (w0, c0) = (Instant::now(), thread_cpu_ns());
    let mut ok = 0u32;
    for _ in 0..n {
        if std::hint::black_box(f()).is_some_ok() {
            ok += 1;
        }
    }
    let wall = w0.elapsed().as_secs_f64() * 1e6 / f64::from(n);
    let cpu = (thread_cpu_ns() - c0) as f64 / 1e3 / f64::from(n);
    println!("{name:<28} {wall:>9.2} us wall {cpu:>9.2} us cpu  ({ok}/{n} ok)");
}

trait IsOk {
    fn is_some_ok(&self) -> bool;
}

impl<T> IsOk for nvml::Result<T> {
    fn is_some_ok(&self) -> bool {
        self.is_ok()
    }
}

fn main() {
    let rounds: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let c0 = thread_cpu_ns();
    let nvml = match Nvml::load() {
        Ok(n) => n,
        Err(e) => {
            println!("NVML is not usable: {e}");
            return;
        }
    };
    let dev = match nvml.device_by_index(0) {
        Ok(d) => d,
        Err(e) => {
            println!("no GPU 0: {e}");
            return;
        }
    };
    println!(
        "opening NVML and GPU 0: {:.2} ms cpu ({})",
        (thread_cpu_ns() - c0) as f64 / 1e6,
        dev.name().unwrap_or_default()
    );
    let n = 2000;
    time("clock(SM)", n, || dev.clock(Clock::Sm));
    time("clock(memory)", n, || dev.clock(Clock::Memory));
    time("utilization", n, || dev.utilization());
    time("power", n, || dev.power_mw());
    time("temperature", n, || dev.temperature_c());
    time("memory", n, || dev.memory());
    time("clocks_event_reasons", n, || dev.clocks_event_reasons());
    for (name, f) in [
        (
            "cold clock(SM)",
            &(|| dev.clock(Clock::Sm).map(|_| ())) as &dyn Fn() -> nvml::Result<()>,
        ),
        ("cold clock(memory)", &|| {
            dev.clock(Clock::Memory).map(|_| ())
        }),
        ("cold utilization", &|| dev.utilization().map(|_| ())),
        ("cold power", &|| dev.power_mw().map(|_| ())),
        ("cold temperature", &|| dev.temperature_c().map(|_| ())),
        ("cold memory", &|| dev.memory().map(|_| ())),
        ("cold clocks_event_reasons", &|| {
            dev.clocks_event_reasons().map(|_| ())
        }),
    ] {
        cold(name, 100, f);
    }
    time("pcie_throughput(tx)", 5, || {
        dev.pcie_throughput_kbps(Pcie::Tx)
    });
    time("total_energy", 20, || dev.total_energy_mj());
    if dev.gpm_supported().unwrap_or(false) {
        match (
            nvml::gpm::Sample::alloc(&dev),
            nvml::gpm::Sample::alloc(&dev),
        ) {
            (Ok(mut a), Ok(mut b)) => {
                time("gpm_sample", 50, || dev.gpm_sample(&mut a));
                std::thread::sleep(Duration::from_millis(110));
                let _ = dev.gpm_sample(&mut b);
                use nvml::gpm::{Metric as G, Metrics};
                let all = [
                    G::SmActive,
                    G::SmOccupancy,
                    G::TensorActive,
                    G::DramBandwidth,
                    G::PcieTx,
                    G::PcieRx,
                    G::NvlinkTx,
                    G::NvlinkRx,
                ];
                for n in [8, 6, 4, 1] {
                    let mut m = Metrics::new(&all[..n]);
                    time(&format!("gpm_metrics_get({n} metrics)"), 200, || {
                        m.compute(&a, &b).map(|_| ())
                    });
                }
            }
            (Err(e), _) | (_, Err(e)) => println!("GPM sample buffer: {e}"),
        }
    }
    // The injection's fast probe, at the default period.
    let c1 = thread_cpu_ns();
    let mut probes = gpu_trace_cuda::bench::probes(&nvml, 0, dev);
    let open = (thread_cpu_ns() - c1) as f64 / 1e6;
    let (mut cpu, mut values, mut slowest) = (0u64, 0usize, 0u64);
    // Rounds that computed GPM metrics, apart.
    let (mut gpm_cpu, mut gpm_rounds) = (0u64, 0u32);
    let start = Instant::now();
    for i in 0..rounds {
        let t = thread_cpu_ns();
        let mut r = Reading::new(gpu_trace_model::clock::boottime_ns());
        probes.fast.read(&mut r);
        let dt = thread_cpu_ns() - t;
        cpu += dt;
        slowest = slowest.max(dt);
        values += r.values().len() + r.interval_values().1.len();
        if !r.interval_values().1.is_empty() {
            gpm_cpu += dt;
            gpm_rounds += 1;
        }
        let next = start + Duration::from_millis(10) * (i + 1);
        if let Some(d) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
    }
    let active = start.elapsed().as_secs_f64();
    println!(
        "probe ({}): opening {open:.2} ms cpu; {rounds} rounds over {active:.1} s, {values} values, {:.1} us cpu a round (slowest {:.0} us), {:.3}% of one core",
        probes.detail,
        cpu as f64 / 1e3 / f64::from(rounds),
        slowest as f64 / 1e3,
        100.0 * cpu as f64 / 1e9 / active
    );
    let other = rounds.saturating_sub(gpm_rounds).max(1);
    println!(
        "  of which {gpm_rounds} rounds with GPM metrics at {:.1} us cpu each, the other {other} at {:.1} us",
        gpm_cpu as f64 / 1e3 / f64::from(gpm_rounds.max(1)),
        (cpu - gpm_cpu) as f64 / 1e3 / f64::from(other)
    );
}
