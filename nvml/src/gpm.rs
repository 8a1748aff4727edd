//! GPU Performance Monitoring (Hopper and newer): sample buffers, and
//! metrics computed from two samples of one device.
//!
//! ```no_run
//! use nvml::gpm::{Metric, Metrics, Sample};
//! let nvml = nvml::Nvml::load()?;
//! let gpu = nvml.device_by_index(0)?;
//! let (mut a, mut b) = (Sample::alloc(&gpu)?, Sample::alloc(&gpu)?);
//! let mut m = Metrics::new(&[Metric::SmActive, Metric::TensorActive]);
//! gpu.gpm_sample(&mut a)?;
//! std::thread::sleep(std::time::Duration::from_millis(10));
//! gpu.gpm_sample(&mut b)?;
//! for (metric, value) in m.compute(&a, &b)? {
//!     println!("{metric:?}: {value:?}");
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::{Code, Device, Error, Inner, Result};
use nvml_sys as sys;
use std::sync::Arc;

/// A GPM metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Metric {
    /// Percent of time any compute or graphics work was active.
    GraphicsActive,
    /// Percent of SMs busy (`NVML_GPM_METRIC_SM_UTIL`).
    SmActive,
    /// Warps active against the theoretical maximum, percent.
    SmOccupancy,
    /// Percent of time the SMs ran any tensor operation.
    TensorActive,
    /// DRAM bandwidth used against the theoretical maximum, percent.
    DramBandwidth,
    /// PCIe traffic from the GPU, MiB/s.
    PcieTx,
    /// PCIe traffic to the GPU, MiB/s.
    PcieRx,
    /// NVLink traffic written, all links, MiB/s.
    NvlinkTx,
    /// NVLink traffic read, all links, MiB/s.
    NvlinkRx,
    /// Any other `NVML_GPM_METRIC_*` id.
    Other(u32),
}

impl Metric {
    /// NVML's id.
    pub fn id(self) -> u32 {
        use sys::nvmlGpmMetricId_t as M;
        match self {
            Metric::GraphicsActive => M::GRAPHICS_UTIL.0,
            Metric::SmActive => M::SM_UTIL.0,
            Metric::SmOccupancy => M::SM_OCCUPANCY.0,
            Metric::TensorActive => M::ANY_TENSOR_UTIL.0,
            Metric::DramBandwidth => M::DRAM_BW_UTIL.0,
            Metric::PcieTx => M::PCIE_TX_PER_SEC.0,
            Metric::PcieRx => M::PCIE_RX_PER_SEC.0,
            Metric::NvlinkTx => M::NVLINK_TOTAL_TX_PER_SEC.0,
            Metric::NvlinkRx => M::NVLINK_TOTAL_RX_PER_SEC.0,
            Metric::Other(id) => id,
        }
    }
}

/// A GPM sample buffer; freed on drop.
pub struct Sample {
    nvml: Arc<Inner>,
    raw: sys::nvmlGpmSample_t,
    /// The device last sampled into it.
    pub(crate) device: Option<usize>,
}

// SAFETY: the buffer is NVML's memory, touched only through NVML calls,
// which are thread-safe (NVML API Reference, introduction); `&mut` access
// keeps one thread on it at a time.
unsafe impl Send for Sample {}

impl std::fmt::Debug for Sample {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Sample").field(&self.raw).finish()
    }
}

impl Sample {
    /// Allocates a buffer for samples of `device` (or any device of its NVML).
    ///
    /// # Errors
    /// As NVML reports (`MissingSymbol` on drivers before GPM).
    #[doc(alias = "nvmlGpmSampleAlloc")]
    pub fn alloc(device: &Device) -> Result<Sample> {
        let nvml = device.inner().clone();
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let r = unsafe { nvml.api.nvmlGpmSampleAlloc(&mut raw) };
        nvml.check(r)?;
        Ok(Sample {
            nvml,
            raw,
            device: None,
        })
    }

    pub(crate) fn raw(&self) -> sys::nvmlGpmSample_t {
        self.raw
    }

    /// Frees the buffer, reporting NVML's answer (`Drop` ignores it).
    ///
    /// # Errors
    /// As NVML reports.
    #[doc(alias = "nvmlGpmSampleFree")]
    pub fn close(mut self) -> Result<()> {
        let raw = std::mem::replace(&mut self.raw, std::ptr::null_mut());
        // SAFETY: our buffer, freed once (Drop skips a null one).
        let r = unsafe { self.nvml.api.nvmlGpmSampleFree(raw) };
        self.nvml.check(r)
    }
}

impl Drop for Sample {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        // SAFETY: our buffer, freed once.
        let _ = unsafe { self.nvml.api.nvmlGpmSampleFree(self.raw) };
    }
}

/// A reusable request for a set of metrics (the C struct is 13 KiB: made
/// once, reused every period).
pub struct Metrics {
    metrics: Vec<Metric>,
    buf: Box<sys::nvmlGpmMetricsGet_t>,
    out: Vec<(Metric, Result<f64>)>,
}

// SAFETY: the request's pointers are sample handles (NVML memory touched
// only through NVML's thread-safe calls, NVML API Reference introduction)
// and NVML's static metric names; `compute` takes `&mut self`, so one
// thread uses the request at a time.
unsafe impl Send for Metrics {}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Metrics").field(&self.metrics).finish()
    }
}

impl Metrics {
    /// A request for `metrics` (at most `NVML_GPM_METRIC_MAX`; the rest are
    /// left out).
    pub fn new(metrics: &[Metric]) -> Self {
        let metrics: Vec<Metric> = metrics
            .iter()
            .copied()
            .take(sys::NVML_GPM_METRIC_MAX)
            .collect();
        Self {
            out: Vec::with_capacity(metrics.len()),
            metrics,
            buf: Box::default(),
        }
    }

    /// The metrics asked for.
    pub fn metrics(&self) -> &[Metric] {
        &self.metrics
    }

    /// Computes the metrics over the time between `earlier` and `later`,
    /// two samples of one device. Each metric has its own result: a device
    /// may lack one (NVLink on a GPU without links).
    ///
    /// # Errors
    /// When NVML refuses the whole request (samples of different devices,
    /// in the wrong order, or never taken).
    #[doc(alias = "nvmlGpmMetricsGet")]
    pub fn compute(
        &mut self,
        earlier: &Sample,
        later: &Sample,
    ) -> Result<&[(Metric, Result<f64>)]> {
        if earlier.device.is_none() || earlier.device != later.device {
            return Err(Error::Nvml {
                code: Code::InvalidArgument,
                raw: sys::nvmlReturn_t::ERROR_INVALID_ARGUMENT,
                message: "GPM metrics need two samples of one device",
            });
        }
        let b = &mut *self.buf;
        b.version = sys::NVML_GPM_METRICS_GET_VERSION;
        b.numMetrics = self.metrics.len() as u32;
        b.sample1 = earlier.raw;
        b.sample2 = later.raw;
        for (slot, m) in b.metrics.iter_mut().zip(&self.metrics) {
            *slot = sys::nvmlGpmMetric_t {
                metricId: m.id(),
                ..Default::default()
            };
        }
        // SAFETY: a versioned request whose first `numMetrics` entries are
        // set, over two live sample buffers.
        let r = unsafe { earlier.nvml.api.nvmlGpmMetricsGet(b) };
        earlier.nvml.check(r)?;
        self.out.clear();
        for (slot, m) in b.metrics.iter().zip(&self.metrics) {
            let v = if slot.nvmlReturn == sys::nvmlReturn_t::SUCCESS {
                Ok(slot.value)
            } else {
                Err(Error::Nvml {
                    code: Code::from_raw(slot.nvmlReturn),
                    raw: slot.nvmlReturn,
                    message: earlier.nvml.error_string(slot.nvmlReturn),
                })
            };
            self.out.push((*m, v));
        }
        Ok(&self.out)
    }
}
