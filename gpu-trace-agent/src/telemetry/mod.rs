//! Device telemetry: clocks, utilisation, power, temperature, memory and
//! the vendor's performance-monitoring metrics, sampled on one background
//! thread per process and recorded as [`CounterSample`]s.
//!
//! The agent keeps no vendor here either. A backend describes each GPU it uses
//! with [`Telemetry::watch`]: the trace's `gpu_id`, a key naming the GPU
//! across processes (its UUID or PCI bus id), and an [`Opener`] that makes
//! the GPU's [`Probe`]s. The opener runs on the sampler's thread, once
//! telemetry is recorded and this process holds the GPU's lock, so that a
//! vendor library is loaded neither on an application thread nor when
//! nothing is traced.
//!
//! Every period the sampler asks each probe for a [`Reading`]; the
//! readings become counter tracks described by [`Metric::spec`], the same
//! names and units whatever the vendor. Slow readings (a probe's `slow`
//! half: NVML's PCIe throughput blocks ~21 ms) run on a second thread at
//! their own period, so they never delay the fast ones.
//!
//! One process per GPU samples it: the first to take the lock file
//! `telemetry-<key>.lock` (see [`lock_dir`]) keeps it until it exits; the
//! others retry every second, silently unless verbose.
//!
//! [`CounterSample`]: gpu_trace_model::model::CounterSample

mod lock;
pub(crate) mod sampler;

pub use lock::lock_dir;
pub use sampler::{Report, Stats, Telemetry};

use gpu_trace_model::model::Timestamp;
pub use gpu_trace_model::telemetry::Metric;

/// What one probe read in one round.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    now: Timestamp,
    instant: Vec<(Metric, f64)>,
    interval: Vec<(Metric, f64)>,
    since: Option<Timestamp>,
}

impl Reading {
    /// An empty reading at `now`.
    pub fn new(now: Timestamp) -> Self {
        Self {
            now,
            ..Self::default()
        }
    }

    /// When this round began (CLOCK_BOOTTIME ns): the time the values are
    /// written at.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// A value as it is now (a clock, a temperature, a driver's own
    /// average).
    pub fn set(&mut self, m: Metric, value: f64) {
        // A vendor's NaN or infinity is no reading.
        if value.is_finite() {
            self.instant.push((m, value));
        }
    }

    /// A value averaged over `[since, now]` (two GPM samples): written at
    /// `since`, where it begins to hold. All interval values of one reading
    /// share one `since`; a later one replaces it.
    pub fn set_since(&mut self, since: Timestamp, m: Metric, value: f64) {
        if value.is_finite() {
            self.since = Some(since);
            self.interval.push((m, value));
        }
    }

    /// The values set with [`Reading::set`].
    pub fn values(&self) -> &[(Metric, f64)] {
        &self.instant
    }

    /// The values set with [`Reading::set_since`], and their start.
    pub fn interval_values(&self) -> (Option<Timestamp>, &[(Metric, f64)]) {
        (self.since, &self.interval)
    }

    pub(crate) fn clear(&mut self, now: Timestamp) {
        self.now = now;
        self.instant.clear();
        self.interval.clear();
        self.since = None;
    }
}

/// Reads one GPU. Runs on the sampler's thread only.
pub trait Probe: Send {
    /// Adds this round's values to `r`. A reading the GPU lacks is left
    /// out (a probe should stop asking for it).
    fn read(&mut self, r: &mut Reading);

    /// Sampling resumes after a pause: forget state that spans rounds (a
    /// GPM sample), so that no value covers the pause.
    fn restart(&mut self) {}
}

/// What an [`Opener`] makes for one GPU.
pub struct DeviceProbes {
    /// Read every period.
    pub fast: Box<dyn Probe>,
    /// Read at the slow period on the slow thread, if slow readings are on.
    pub slow: Option<Box<dyn Probe>>,
    /// What was found, for the verbose log ("NVML: NVIDIA H200, GPM on").
    pub detail: String,
}

impl std::fmt::Debug for DeviceProbes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceProbes")
            .field("slow", &self.slow.is_some())
            .field("detail", &self.detail)
            .finish_non_exhaustive()
    }
}

/// Makes a GPU's probes, on the sampler's thread; `Err` with one line
/// saying why there is no telemetry for it (said once per distinct line).
pub type Opener = Box<dyn FnOnce() -> Result<DeviceProbes, String> + Send>;
