//! The simulated GPU's counters: what the fake's CUPTI profiler (range profiler and profiler
//! host) offers, and the faults a scenario scripts into it.
//!
//! Values are derived from the profiled work only, so that a test can compute them from its
//! script: a metric is a [`Measure`] of the kernels of a range (GPU time, threads, blocks,
//! warps, launches) times a scale. Every rollup of a metric (`.sum`, `.avg`, `.max`,
//! `.pct_of_peak_sustained_elapsed`, ...) has the same value: the fake computes no averages or
//! rates.

use serde::{Deserialize, Serialize};

use crate::scenario::KernelSpec;
use cupti_sys::CUptiResult;

/// What the fake's profiler answers. The default is an H200 (`GH100`) whose process may read
/// the counters, with [`default_catalog`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProfilerSpec {
    /// `cuptiDeviceGetChipName` of device 0; the profiler host accepts this chip only.
    pub chip: String,
    /// The chip's metrics, by base name.
    pub metrics: Vec<MetricSpec>,
    /// Calls made to fail.
    pub faults: Vec<Fault>,
}

impl Default for ProfilerSpec {
    fn default() -> Self {
        Self {
            chip: "GH100".into(),
            metrics: default_catalog(),
            faults: Vec::new(),
        }
    }
}

/// A metric's type, as `CUpti_MetricType` has it; it decides the rollups a name may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    /// Counters take `.sum`, `.avg`, `.min` or `.max`, optionally followed by a rate or
    /// percentage (`.per_second`, `.pct_of_peak_sustained_active`, ...).
    Counter,
    /// Ratios take `.ratio`, `.pct` or `.max_rate`.
    Ratio,
    /// Throughputs take `.avg`, `.min`, `.max` or `.sum` followed by
    /// `.pct_of_peak_sustained_elapsed` or `.pct_of_peak_sustained_active`.
    Throughput,
}

/// What a metric counts in a range (the kernels the range profiled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// The kernels' scripted GPU time ([`KernelSpec::duration_us`]), ns.
    GpuTimeNs,
    /// Threads launched: grid × block, all three dimensions.
    Threads,
    /// Blocks launched (the grid).
    Blocks,
    /// Warps launched: blocks × the block's threads rounded up to 32.
    Warps,
    /// Kernel launches.
    Launches,
    /// Nothing: the value is the scale itself (when the range ran a kernel; 0 otherwise).
    Constant,
}

/// One metric of the chip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricSpec {
    /// Base name (no rollup), e.g. `smsp__inst_executed`.
    pub name: String,
    /// Counter, ratio or throughput.
    pub kind: MetricKind,
    /// `cuptiProfilerHostGetMetricProperties`' description.
    pub description: String,
    /// Its hardware unit (`sm`, `dram`, ...).
    pub hw_unit: String,
    /// The dimension of its values (`byte`, `nsecond`, `inst`, ...).
    pub dim_unit: String,
    /// What it counts.
    pub measure: Measure,
    /// The value per unit of `measure`.
    pub scale: f64,
    /// Replay passes a configuration with this metric needs; a configuration needs the most
    /// any of its metrics does.
    #[serde(default = "one")]
    pub passes: u32,
}

fn one() -> u32 {
    1
}

/// The profiled work of one range: what [`Measure`]s count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Work {
    /// Kernel launches.
    pub launches: u64,
    /// GPU time, ns.
    pub gpu_time_ns: u64,
    /// Threads.
    pub threads: u64,
    /// Blocks.
    pub blocks: u64,
    /// Warps.
    pub warps: u64,
}

impl Work {
    /// The work of one launch of `kernel`.
    pub fn of(kernel: &KernelSpec, grid: [u32; 3], block: [u32; 3]) -> Work {
        let blocks: u64 = grid.iter().map(|&v| u64::from(v)).product();
        let per_block: u64 = block.iter().map(|&v| u64::from(v)).product();
        Work {
            launches: 1,
            gpu_time_ns: kernel.duration_us * 1_000,
            threads: blocks * per_block,
            blocks,
            warps: blocks * per_block.div_ceil(32),
        }
    }

    /// Adds another launch's work (a range over several kernels).
    pub fn add(&mut self, o: &Work) {
        self.launches += o.launches;
        self.gpu_time_ns += o.gpu_time_ns;
        self.threads += o.threads;
        self.blocks += o.blocks;
        self.warps += o.warps;
    }
}

impl MetricSpec {
    /// The metric's value for a range that did `w`.
    pub fn value(&self, w: &Work) -> f64 {
        let n = match self.measure {
            Measure::GpuTimeNs => w.gpu_time_ns,
            Measure::Threads => w.threads,
            Measure::Blocks => w.blocks,
            Measure::Warps => w.warps,
            Measure::Launches => w.launches,
            Measure::Constant => u64::from(w.launches > 0),
        };
        n as f64 * self.scale
    }

    /// Whether `rollup` (what follows the base name's first `.`) suits this metric's kind.
    pub fn takes_rollup(&self, rollup: &str) -> bool {
        const STATS: [&str; 4] = ["sum", "avg", "min", "max"];
        const PCT: [&str; 2] = [
            "pct_of_peak_sustained_elapsed",
            "pct_of_peak_sustained_active",
        ];
        const RATES: [&str; 4] = [
            "per_second",
            "per_cycle_elapsed",
            "per_cycle_active",
            "peak_sustained",
        ];
        let mut parts = rollup.split('.');
        let (first, second, rest) = (parts.next(), parts.next(), parts.next());
        if rest.is_some() {
            return false;
        }
        match (self.kind, first, second) {
            (MetricKind::Counter, Some(f), None) => STATS.contains(&f),
            (MetricKind::Counter, Some(f), Some(s)) => {
                STATS.contains(&f) && (PCT.contains(&s) || RATES.contains(&s))
            }
            (MetricKind::Ratio, Some(f), None) => ["ratio", "pct", "max_rate"].contains(&f),
            (MetricKind::Throughput, Some(f), Some(s)) => STATS.contains(&f) && PCT.contains(&s),
            _ => false,
        }
    }
}

impl ProfilerSpec {
    /// The metric a full name (`base.rollup`) asks for, if the chip has the base and the base
    /// takes the rollup; a name without a rollup is not a metric, as in CUPTI.
    pub fn metric(&self, full: &str) -> Option<&MetricSpec> {
        let (base, rollup) = full.split_once('.')?;
        self.base(base).filter(|m| m.takes_rollup(rollup))
    }

    /// The metric of a base name (a rollup, if any, is ignored).
    pub fn base(&self, name: &str) -> Option<&MetricSpec> {
        let base = name.split('.').next().unwrap_or(name);
        self.metrics.iter().find(|m| m.name == base)
    }

    /// The metric of base name `name`, to change it (panics if the chip has none).
    pub fn metric_mut(&mut self, name: &str) -> &mut MetricSpec {
        self.metrics
            .iter_mut()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no metric {name} in the catalog"))
    }

    /// Adds a fault.
    pub fn fault(mut self, f: Fault) -> Self {
        self.faults.push(f);
        self
    }

    /// Checks the catalog and the faults.
    pub fn validate(&self) -> Result<(), String> {
        for m in &self.metrics {
            if m.name.is_empty() || m.name.contains(['.', '\0']) {
                return Err(format!("metric base name {:?}", m.name));
            }
            if m.passes == 0 {
                return Err(format!("metric {} needs 0 passes", m.name));
            }
        }
        for f in &self.faults {
            if result_code(&f.error).is_none() {
                return Err(format!(
                    "fault {:?}: unknown CUPTI result {}",
                    f.call, f.error
                ));
            }
        }
        Ok(())
    }
}

/// A profiler call scripted to fail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// Which call.
    pub call: ProfilerCall,
    /// The `CUptiResult` it returns, by CUPTI's name (`CUPTI_ERROR_NOT_SUPPORTED`). A
    /// [`ProfilerCall::Stop`] fault of `CUPTI_SUCCESS` succeeds but says not every replay
    /// pass ran (`isAllPassSubmitted` 0).
    pub error: String,
    /// Calls of it that succeed first.
    #[serde(default)]
    pub after: u32,
    /// How many calls fail from then on (`None`: all).
    #[serde(default)]
    pub times: Option<u32>,
}

impl Fault {
    /// Every call of `call` fails with `error`.
    pub fn always(call: ProfilerCall, error: &str) -> Self {
        Self {
            call,
            error: error.into(),
            after: 0,
            times: None,
        }
    }

    /// Only call number `n` (0-based) of `call` fails with `error`.
    pub fn nth(call: ProfilerCall, n: u32, error: &str) -> Self {
        Self {
            call,
            error: error.into(),
            after: n,
            times: Some(1),
        }
    }
}

/// The profiler calls a fault can hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfilerCall {
    /// `cuptiProfilerInitialize`.
    Initialize,
    /// `cuptiDeviceGetChipName`.
    ChipName,
    /// `cuptiProfilerGetCounterAvailability`.
    CounterAvailability,
    /// `cuptiProfilerHostInitialize`.
    HostInitialize,
    /// `cuptiRangeProfilerEnable`.
    Enable,
    /// `cuptiRangeProfilerSetConfig`.
    SetConfig,
    /// `cuptiRangeProfilerStart`.
    Start,
    /// `cuptiRangeProfilerPushRange`.
    PushRange,
    /// `cuptiRangeProfilerStop`: the session ends, its data is lost.
    Stop,
    /// `cuptiRangeProfilerDecodeData`: the stopped session's data is lost.
    Decode,
}

/// The `CUptiResult`s the fake knows by name (its `cuptiGetResultString`).
pub const RESULTS: &[(CUptiResult, &str)] = &[
    (CUptiResult::CUPTI_SUCCESS, "CUPTI_SUCCESS"),
    (
        CUptiResult::CUPTI_ERROR_INVALID_PARAMETER,
        "CUPTI_ERROR_INVALID_PARAMETER",
    ),
    (
        CUptiResult::CUPTI_ERROR_INVALID_DEVICE,
        "CUPTI_ERROR_INVALID_DEVICE",
    ),
    (
        CUptiResult::CUPTI_ERROR_INVALID_CONTEXT,
        "CUPTI_ERROR_INVALID_CONTEXT",
    ),
    (
        CUptiResult::CUPTI_ERROR_INVALID_OPERATION,
        "CUPTI_ERROR_INVALID_OPERATION",
    ),
    (CUptiResult::CUPTI_ERROR_HARDWARE, "CUPTI_ERROR_HARDWARE"),
    (
        CUptiResult::CUPTI_ERROR_MAX_LIMIT_REACHED,
        "CUPTI_ERROR_MAX_LIMIT_REACHED",
    ),
    (
        CUptiResult::CUPTI_ERROR_NOT_COMPATIBLE,
        "CUPTI_ERROR_NOT_COMPATIBLE",
    ),
    (
        CUptiResult::CUPTI_ERROR_NOT_INITIALIZED,
        "CUPTI_ERROR_NOT_INITIALIZED",
    ),
    (
        CUptiResult::CUPTI_ERROR_INVALID_METRIC_NAME,
        "CUPTI_ERROR_INVALID_METRIC_NAME",
    ),
    (
        CUptiResult::CUPTI_ERROR_HARDWARE_BUSY,
        "CUPTI_ERROR_HARDWARE_BUSY",
    ),
    (
        CUptiResult::CUPTI_ERROR_NOT_SUPPORTED,
        "CUPTI_ERROR_NOT_SUPPORTED",
    ),
    (
        CUptiResult::CUPTI_ERROR_INSUFFICIENT_PRIVILEGES,
        "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
    ),
    (
        CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
        "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
    ),
    (
        CUptiResult::CUPTI_ERROR_INVALID_CHIP_NAME,
        "CUPTI_ERROR_INVALID_CHIP_NAME",
    ),
    (
        CUptiResult::CUPTI_ERROR_INVALID_KIND,
        "CUPTI_ERROR_INVALID_KIND",
    ),
    (CUptiResult::CUPTI_ERROR_NOT_READY, "CUPTI_ERROR_NOT_READY"),
    (
        CUptiResult::CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED,
        "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED",
    ),
    (
        CUptiResult::CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES,
        "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES",
    ),
    (
        CUptiResult::CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS,
        "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS",
    ),
    (CUptiResult::CUPTI_ERROR_UNKNOWN, "CUPTI_ERROR_UNKNOWN"),
];

/// The `CUptiResult` of a name of [`RESULTS`].
pub fn result_code(name: &str) -> Option<CUptiResult> {
    RESULTS.iter().find(|(_, n)| *n == name).map(|(c, _)| *c)
}

/// The metrics of the default chip: those the injection collects by default and a few more,
/// with names, kinds and dimensions as CUPTI gives them on an H200, and values from
/// [`Measure`]s:
///
/// | metric | value per range |
/// |---|---|
/// | `gpu__time_duration` | GPU time, ns |
/// | `gpc__cycles_elapsed`, `sm__cycles_elapsed` | 2 × GPU time (a 2 GHz clock) |
/// | `sm__cycles_active` | 1.5 × GPU time |
/// | `dram__bytes_read` | 8 × threads |
/// | `dram__bytes_write` | 4 × threads |
/// | `lts__t_sectors` | threads / 4 |
/// | `smsp__inst_executed` | 10 × warps |
/// | `smsp__warps_launched` | warps |
/// | `sm__throughput` | 62.5 |
/// | `gpu__compute_memory_throughput` | 41.25 |
/// | `sm__warps_active` | 75 |
/// | `l1tex__t_sector_hit_rate` | 50 |
/// | `lts__t_sector_hit_rate` | 87.5 |
///
/// Each needs one pass.
pub fn default_catalog() -> Vec<MetricSpec> {
    let m =
        |name: &str, kind, hw: &str, dim: &str, measure, scale, description: &str| -> MetricSpec {
            MetricSpec {
                name: name.into(),
                kind,
                description: description.into(),
                hw_unit: hw.into(),
                dim_unit: dim.into(),
                measure,
                scale,
                passes: 1,
            }
        };
    use Measure::{Constant, GpuTimeNs, Threads, Warps};
    use MetricKind::{Counter, Ratio, Throughput};
    vec![
        m(
            "gpu__time_duration",
            Counter,
            "gpu",
            "nsecond",
            GpuTimeNs,
            1.0,
            "total duration in nanoseconds",
        ),
        m(
            "gpc__cycles_elapsed",
            Counter,
            "gpc",
            "cycle",
            GpuTimeNs,
            2.0,
            "# of cycles elapsed on GPC",
        ),
        m(
            "sm__cycles_elapsed",
            Counter,
            "sm",
            "cycle",
            GpuTimeNs,
            2.0,
            "# of cycles elapsed on SM",
        ),
        m(
            "sm__cycles_active",
            Counter,
            "sm",
            "cycle",
            GpuTimeNs,
            1.5,
            "# of cycles with at least one warp in flight",
        ),
        m(
            "sm__throughput",
            Throughput,
            "sm",
            "",
            Constant,
            62.5,
            "SM throughput assuming ideal load balancing across SMSPs",
        ),
        m(
            "gpu__compute_memory_throughput",
            Throughput,
            "gpu",
            "",
            Constant,
            41.25,
            "compute memory pipeline throughput",
        ),
        m(
            "dram__bytes_read",
            Counter,
            "dram",
            "byte",
            Threads,
            8.0,
            "# of bytes read from DRAM",
        ),
        m(
            "dram__bytes_write",
            Counter,
            "dram",
            "byte",
            Threads,
            4.0,
            "# of bytes written to DRAM",
        ),
        m(
            "lts__t_sectors",
            Counter,
            "lts",
            "sector",
            Threads,
            0.25,
            "# of LTS sectors",
        ),
        m(
            "sm__warps_active",
            Counter,
            "sm",
            "warp",
            Constant,
            75.0,
            "cumulative # of warps in flight",
        ),
        m(
            "l1tex__t_sector_hit_rate",
            Ratio,
            "l1tex",
            "",
            Constant,
            50.0,
            "# of sector hits per sector",
        ),
        m(
            "lts__t_sector_hit_rate",
            Ratio,
            "lts",
            "",
            Constant,
            87.5,
            "proportion of L2 sector lookups that hit",
        ),
        m(
            "smsp__inst_executed",
            Counter,
            "smsp",
            "inst",
            Warps,
            10.0,
            "# of warp instructions executed",
        ),
        m(
            "smsp__warps_launched",
            Counter,
            "smsp",
            "warp",
            Warps,
            1.0,
            "# of warps launched",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollups_follow_the_kind_and_a_base_name_alone_is_no_metric() {
        let p = ProfilerSpec::default();
        for ok in [
            "gpu__time_duration.sum",
            "dram__bytes_read.sum.per_second",
            "sm__throughput.avg.pct_of_peak_sustained_elapsed",
            "sm__warps_active.avg.pct_of_peak_sustained_active",
            "lts__t_sector_hit_rate.pct",
        ] {
            assert!(p.metric(ok).is_some(), "{ok}");
        }
        for bad in [
            "gpu__time_duration",
            "dram__bytes_readd.sum",
            "sm__throughput.avg",
            "lts__t_sector_hit_rate.sum",
            "gpu__time_duration.sum.per_second.x",
            "gpu__time_duration.total",
        ] {
            assert!(p.metric(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn values_come_from_the_launch() {
        let k = KernelSpec {
            name: "k".into(),
            symbol: "_Z1kv".into(),
            registers: 0,
            static_smem: 0,
            duration_us: 20,
        };
        // 64×2 blocks of 100 threads: 4 warps each (the last one partial).
        let mut w = Work::of(&k, [64, 2, 1], [100, 1, 1]);
        assert_eq!((w.blocks, w.threads, w.warps), (128, 12_800, 512));
        let p = ProfilerSpec::default();
        let v = |n: &str, w: &Work| p.metric(n).unwrap().value(w);
        assert_eq!(v("gpu__time_duration.sum", &w), 20_000.0);
        assert_eq!(v("smsp__inst_executed.sum", &w), 5_120.0);
        assert_eq!(v("lts__t_sector_hit_rate.pct", &w), 87.5);
        w.add(&Work::of(&k, [1, 1, 1], [32, 1, 1]));
        assert_eq!(v("gpu__time_duration.sum", &w), 40_000.0);
        assert_eq!(v("lts__t_sector_hit_rate.pct", &w), 87.5);
        assert_eq!(v("lts__t_sector_hit_rate.pct", &Work::default()), 0.0);
    }

    #[test]
    fn faults_name_known_results() {
        let p = ProfilerSpec::default().fault(Fault::always(ProfilerCall::Enable, "CUPTI_NOPE"));
        assert!(p.validate().unwrap_err().contains("CUPTI_NOPE"));
        let p = ProfilerSpec::default().fault(Fault::nth(
            ProfilerCall::Stop,
            1,
            "CUPTI_ERROR_HARDWARE",
        ));
        assert!(p.validate().is_ok());
    }
}
