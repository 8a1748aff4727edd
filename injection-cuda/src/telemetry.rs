//! GPU telemetry from NVML: one [`Probe`] per GPU the process uses.
//!
//! A GPU is watched when it is described (its first context or record),
//! keyed by its UUID (else its PCI bus id) for the one-process-per-GPU
//! lock. NVML is loaded once per process, on the sampler's thread, the
//! first time a watched GPU is opened; without it, one line says so (see
//! `gpu_trace_agent::telemetry::Telemetry`) and tracing goes on.
//!
//! Fast readings: every period, the SM clock, power and clock-event
//! reasons (what moves within milliseconds when the GPU throttles); every
//! [`MEDIUM_PERIOD_NS`] (or every period, if that is longer), the memory
//! clock, GPU and memory utilisation, temperature, memory used and GPM
//! metrics where the GPU supports them (computed from this sample and the
//! previous one). The driver itself updates utilisation over 1/6 s to 1 s
//! and GPM's counters about every 100 ms, so reading them every 10 ms only
//! repeats values; and those reads cost most (on the H200, cold, once every
//! 10 ms: memory info 48 us, a GPM sample and its metrics about 200 us,
//! the others 8-13 us; benches/examples/nvml_cost.rs). A reading the GPU
//! lacks is dropped after its first permanent error. Slow readings (`INJECTION_TELEMETRY_SLOW_PERIOD`,
//! their own thread): PCIe throughput (blocks ~21 ms) and total energy
//! (~4 ms).

use gpu_trace_agent::telemetry::{DeviceProbes, Metric, Probe, Reading, Telemetry};
use gpu_trace_model::model::Device;
use nvml::gpm::{self, Metric as Gpm};
use nvml::{Clock, Nvml, Pcie};
use std::sync::OnceLock;

/// NVML for the process: loaded at the first GPU opened, kept.
fn nvml() -> Result<&'static Nvml, String> {
    static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();
    NVML.get_or_init(|| {
        Nvml::load().map_err(|e| {
            format!(
                "NVML is not usable ({}); no GPU telemetry (clocks, power, utilisation)",
                load_error(&e)
            )
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Why NVML could not be used, for one line: the paths tried (the first
/// may be `GPU_TRACE_NVML_PATH`'s value) and the loader's message, each
/// escaped and cut as values are ([`gpu_trace_model::log::plain`]).
fn load_error(e: &nvml::LoadError) -> String {
    use gpu_trace_model::log::plain;
    match e {
        nvml::LoadError::NotFound(n) => {
            let tried: Vec<String> = n.tried.iter().map(|t| plain(t).to_string()).collect();
            let mut line = format!("libnvidia-ml not found; tried: {}", tried.join(", "));
            if let Some(l) = &n.last_error {
                line.push_str(&format!(" (last error: {})", plain(l)));
            }
            line
        }
        nvml::LoadError::Init { path, error } => {
            format!("nvmlInit_v2 failed in {}: {error}", plain(path))
        }
        e => e.to_string(),
    }
}

/// Samples `d` while telemetry is recorded.
pub(crate) fn watch(telemetry: &Telemetry, d: &Device) {
    let (gpu_id, uuid, pci) = (d.id, d.uuid, d.pci_bdf.clone());
    let key = match (&uuid, &pci) {
        (Some(u), _) => nvml::uuid_text(u),
        (None, Some(p)) => p.clone(),
        (None, None) => format!("gpu-{gpu_id}"),
    };
    telemetry.watch(
        gpu_id,
        key,
        Box::new(move || {
            let nvml = nvml()?;
            let dev = find(nvml, gpu_id, uuid.as_ref(), pci.as_deref())?;
            Ok(probes(nvml, gpu_id, dev))
        }),
    );
}

/// The NVML device of CUDA device `gpu_id`, by UUID, else PCI bus id.
/// Never by index: NVML numbers every GPU of the host, CUDA only those
/// `CUDA_VISIBLE_DEVICES` shows, so an index could name another GPU.
fn find(
    nvml: &Nvml,
    gpu_id: u32,
    uuid: Option<&[u8; 16]>,
    pci: Option<&str>,
) -> Result<nvml::Device, String> {
    let no = |how: String, e: nvml::Error| {
        format!("NVML has no GPU with {how} ({e}); no telemetry for GPU {gpu_id}")
    };
    match (uuid, pci) {
        (Some(u), _) => nvml
            .device_by_cuda_uuid(u)
            .map_err(|e| no(format!("UUID {}", nvml::uuid_text(u)), e)),
        (None, Some(p)) => nvml
            .device_by_pci_bus_id(p)
            .map_err(|e| no(format!("PCI bus id {p}"), e)),
        (None, None) => Err(format!(
            "CUDA reported neither the UUID nor the PCI bus id of GPU {gpu_id}; no telemetry for it"
        )),
    }
}

/// The fast and slow probes of one GPU.
pub(crate) fn probes(nvml: &Nvml, gpu_id: u32, dev: nvml::Device) -> DeviceProbes {
    let name = dev.name().unwrap_or_else(|_| "an NVIDIA GPU".into());
    let (gpm, gpm_note) = match dev.gpm_supported() {
        Ok(true) => match GpmState::new(&dev) {
            Ok(g) => (Some(g), "GPM on".to_owned()),
            Err(e) => (None, format!("GPM off ({e})")),
        },
        Ok(false) => (None, "GPM not supported".to_owned()),
        Err(e) => (None, format!("GPM off ({e})")),
    };
    DeviceProbes {
        fast: Box::new(Fast {
            gpu_id,
            dev: dev.clone(),
            off: [false; Reads::COUNT],
            gpm,
            medium_at: None,
        }),
        slow: Some(Box::new(Slow {
            gpu_id,
            dev,
            off: [false; 2],
        })),
        detail: format!("NVML {}: {name}, {gpm_note}", nvml.path()),
    }
}

/// The fast readings, each switched off after a permanent error.
#[derive(Clone, Copy)]
enum Reads {
    SmClock,
    MemClock,
    Utilization,
    Power,
    Temperature,
    Memory,
    Reasons,
}

impl Reads {
    /// Read at the medium cadence, not every period.
    fn medium(self) -> bool {
        matches!(
            self,
            Reads::MemClock | Reads::Utilization | Reads::Temperature | Reads::Memory
        )
    }

    const COUNT: usize = 7;
    const ALL: [Reads; Reads::COUNT] = [
        Reads::SmClock,
        Reads::MemClock,
        Reads::Utilization,
        Reads::Power,
        Reads::Temperature,
        Reads::Memory,
        Reads::Reasons,
    ];

    fn name(self) -> &'static str {
        match self {
            Reads::SmClock => "SM clock",
            Reads::MemClock => "memory clock",
            Reads::Utilization => "utilisation",
            Reads::Power => "power",
            Reads::Temperature => "temperature",
            Reads::Memory => "memory in use",
            Reads::Reasons => "clock-event reasons",
        }
    }
}

/// Two GPM sample buffers, alternating: each period's sample and the one
/// before it give the metrics of the period between them.
struct GpmState {
    samples: [gpm::Sample; 2],
    /// Which buffer holds the latest sample, and when it was taken.
    latest: Option<(usize, u64)>,
    metrics: gpm::Metrics,
}

/// Shortest time between two GPM samples. GPM's counters advance about
/// every 100 ms: sampled every 10 ms on the H200, nine periods
/// in ten read 0 and the tenth the real 96.6% SM activity, and each sample
/// costs about 0.25 ms of CPU (2.6% of a core at 10 ms). So GPM is sampled
/// on its own 100 ms cadence, its values holding over the 100 ms between
/// two samples, while the other readings keep the telemetry period.
const GPM_PERIOD_NS: u64 = 100_000_000;

/// Shortest time between two reads of the medium readings (and GPM's).
pub(crate) const MEDIUM_PERIOD_NS: u64 = GPM_PERIOD_NS;

/// The GPM metrics read, and their scale to the track's unit.
const GPM_METRICS: [(Gpm, Metric, f64); 8] = [
    (Gpm::SmActive, Metric::SmActive, 1.0),
    (Gpm::SmOccupancy, Metric::SmOccupancy, 1.0),
    (Gpm::TensorActive, Metric::TensorActive, 1.0),
    (Gpm::DramBandwidth, Metric::DramBandwidth, 1.0),
    // MiB/s to B/s.
    (Gpm::PcieTx, Metric::PcieTx, 1_048_576.0),
    (Gpm::PcieRx, Metric::PcieRx, 1_048_576.0),
    (Gpm::NvlinkTx, Metric::NvlinkTx, 1_048_576.0),
    (Gpm::NvlinkRx, Metric::NvlinkRx, 1_048_576.0),
];

impl GpmState {
    fn new(dev: &nvml::Device) -> nvml::Result<Self> {
        let all: Vec<Gpm> = GPM_METRICS.iter().map(|m| m.0).collect();
        Ok(Self {
            samples: [gpm::Sample::alloc(dev)?, gpm::Sample::alloc(dev)?],
            latest: None,
            metrics: gpm::Metrics::new(&all),
        })
    }

    /// Takes this period's sample; on success from the second period on,
    /// sets the metrics since the previous one. `Err` when GPM failed for
    /// good.
    fn read(&mut self, gpu_id: u32, dev: &nvml::Device, r: &mut Reading) -> Result<(), ()> {
        if let Some((_, at)) = self.latest
            && r.now().saturating_sub(at) < GPM_PERIOD_NS
        {
            return Ok(());
        }
        let next = self.latest.map_or(0, |(i, _)| 1 - i);
        if let Err(e) = dev.gpm_sample(&mut self.samples[next]) {
            if e.is_permanent() {
                gpu_trace_model::verbose!(
                    "telemetry: GPU {gpu_id}: GPM sampling failed ({e}); GPM off"
                );
                return Err(());
            }
            self.latest = None;
            return Ok(());
        }
        if let Some((prev, since)) = self.latest {
            match self
                .metrics
                .compute(&self.samples[prev], &self.samples[next])
            {
                Ok(values) => {
                    let mut dead = Vec::new();
                    for (m, v) in values {
                        match v {
                            // NVML gives NaN for a metric it could not
                            // compute over the interval (seen for DRAM
                            // bandwidth on the H200): no value then.
                            Ok(v) if !v.is_finite() => {}
                            Ok(v) => {
                                if let Some((_, metric, scale)) =
                                    GPM_METRICS.iter().find(|x| x.0 == *m)
                                {
                                    r.set_since(since, *metric, v * scale);
                                }
                            }
                            Err(e) if e.is_permanent() => dead.push((*m, *e)),
                            Err(_) => {}
                        }
                    }
                    if !dead.is_empty() {
                        for (m, e) in &dead {
                            gpu_trace_model::verbose!(
                                "telemetry: GPU {gpu_id}: no GPM {m:?} ({e})"
                            );
                        }
                        let keep: Vec<Gpm> = self
                            .metrics
                            .metrics()
                            .iter()
                            .copied()
                            .filter(|m| !dead.iter().any(|d| d.0 == *m))
                            .collect();
                        self.metrics = gpm::Metrics::new(&keep);
                    }
                }
                Err(e) if e.is_permanent() => {
                    gpu_trace_model::verbose!(
                        "telemetry: GPU {gpu_id}: GPM metrics failed ({e}); GPM off"
                    );
                    return Err(());
                }
                Err(_) => {}
            }
        }
        self.latest = Some((next, r.now()));
        Ok(())
    }
}

/// Every period.
struct Fast {
    gpu_id: u32,
    dev: nvml::Device,
    off: [bool; Reads::COUNT],
    gpm: Option<GpmState>,
    /// When the medium readings were last read.
    medium_at: Option<u64>,
}

impl Fast {
    fn reading(&mut self, which: Reads, r: &mut Reading) -> nvml::Result<()> {
        let d = &self.dev;
        match which {
            Reads::SmClock => r.set(Metric::SmClock, d.clock(Clock::Sm)? as f64),
            Reads::MemClock => r.set(Metric::MemoryClock, d.clock(Clock::Memory)? as f64),
            Reads::Utilization => {
                let u = d.utilization()?;
                r.set(Metric::GpuUtilization, u.gpu as f64);
                r.set(Metric::MemoryUtilization, u.memory as f64);
            }
            Reads::Power => r.set(Metric::Power, d.power_mw()? as f64 / 1000.0),
            Reads::Temperature => r.set(Metric::Temperature, d.temperature_c()? as f64),
            Reads::Memory => r.set(Metric::MemoryUsed, d.memory()?.used as f64),
            Reads::Reasons => r.set(Metric::ClockEventReasons, d.clocks_event_reasons()? as f64),
        }
        Ok(())
    }
}

impl Probe for Fast {
    fn read(&mut self, r: &mut Reading) {
        // GPM first: its sample is then taken at the round's time.
        if let Some(g) = &mut self.gpm
            && g.read(self.gpu_id, &self.dev, r).is_err()
        {
            self.gpm = None;
        }
        let medium = self
            .medium_at
            .is_none_or(|at| r.now().saturating_sub(at) >= MEDIUM_PERIOD_NS);
        if medium {
            self.medium_at = Some(r.now());
        }
        for (i, which) in Reads::ALL.into_iter().enumerate() {
            if self.off[i] || (which.medium() && !medium) {
                continue;
            }
            if let Err(e) = self.reading(which, r)
                && e.is_permanent()
            {
                self.off[i] = true;
                gpu_trace_model::verbose!(
                    "telemetry: GPU {}: no {} reading ({e})",
                    self.gpu_id,
                    which.name()
                );
            }
        }
    }

    fn restart(&mut self) {
        if let Some(g) = &mut self.gpm {
            g.latest = None;
        }
        self.medium_at = None;
    }
}

/// At the slow period, on the slow thread.
struct Slow {
    gpu_id: u32,
    dev: nvml::Device,
    off: [bool; 2],
}

impl Probe for Slow {
    fn read(&mut self, r: &mut Reading) {
        let d = &self.dev;
        let note = |i: usize, what: &str, e: nvml::Error, off: &mut [bool; 2]| {
            if e.is_permanent() {
                off[i] = true;
                gpu_trace_model::verbose!(
                    "telemetry: GPU {}: no {what} reading ({e})",
                    self.gpu_id
                );
            }
        };
        if !self.off[0] {
            // KB/s (1 KB granularity) to B/s.
            match (
                d.pcie_throughput_kbps(Pcie::Tx),
                d.pcie_throughput_kbps(Pcie::Rx),
            ) {
                (Ok(tx), Ok(rx)) => {
                    r.set(Metric::PcieTxThroughput, tx as f64 * 1024.0);
                    r.set(Metric::PcieRxThroughput, rx as f64 * 1024.0);
                }
                (Err(e), _) | (_, Err(e)) => note(0, "PCIe throughput", e, &mut self.off),
            }
        }
        if !self.off[1] {
            match d.total_energy_mj() {
                Ok(mj) => r.set(Metric::Energy, mj as f64 / 1000.0),
                Err(e) => note(1, "energy", e, &mut self.off),
            }
        }
    }
}
