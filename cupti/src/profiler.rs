//! Per-kernel GPU metrics with CUPTI's Range Profiling and Profiler Host APIs
//! (CUDA 12.6+; the older `NVPW_MetricsContext_*` path is gone in 13.0).
//!
//! Flow: [`Profiler::initialize`] once per process; per device a
//! [`MetricConfig`] (host object from the chip name, per-metric validation,
//! configuration image); per context a [`RangeProfiler`] in auto-range mode,
//! with kernel or user [`Replay`]; per session start, push a range, run one
//! or more kernels, pop, stop, decode, evaluate ([`RangeProfiler::profile`]
//! does it for one). Even in auto-range mode CUPTI
//! records nothing without a pushed range, so the scope is always pushed.
//!
//! Counters need permission (`NVreg_RestrictProfilingToAdminUsers=0` or
//! admin): without it calls fail with [`Error::InsufficientPrivileges`]
//! (`ERR_NVGPUCTRPERM`), see [`Error::is_permission_denied`]; tracing can go on.
//!
//! Kernel replay runs the kernel once per pass and serializes profiled
//! kernels; their activity timestamps are not representative.

use std::ffi::{CStr, CString, c_char};

use cupti_sys::{self as sys, struct_size};

use crate::{Context, Cupti, Error, Result};

/// Process-wide profiler initialisation (`cuptiProfilerInitialize`); dropping
/// it de-initialises. Keep exactly one for as long as any profiler object is
/// in use.
#[derive(Debug)]
pub struct Profiler {
    cupti: Cupti,
}

impl Profiler {
    /// Initialises the profiler in this process.
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiProfilerInitialize")]
    pub fn initialize(cupti: &Cupti) -> Result<Self> {
        let mut p = sys::CUpti_Profiler_Initialize_Params {
            structSize: struct_size!(sys::CUpti_Profiler_Initialize_Params, pPriv),
            ..Default::default()
        };
        // SAFETY: params initialised with their size.
        cupti.check(unsafe { cupti.api().cuptiProfilerInitialize(&mut p) })?;
        Ok(Self {
            cupti: cupti.clone(),
        })
    }

    /// The chip name (e.g. `GH100`) of a CUDA device ordinal.
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiDeviceGetChipName")]
    pub fn chip_name(&self, device_index: usize) -> Result<String> {
        let mut p = sys::CUpti_Device_GetChipName_Params {
            structSize: struct_size!(sys::CUpti_Device_GetChipName_Params, pChipName),
            deviceIndex: device_index,
            ..Default::default()
        };
        // SAFETY: params initialised with their size.
        let r = unsafe { self.cupti.api().cuptiDeviceGetChipName(&mut p) };
        self.cupti.check(r)?;
        if p.pChipName.is_null() {
            return Err(self.cupti.error(sys::CUptiResult::CUPTI_ERROR_UNKNOWN));
        }
        // SAFETY: CUPTI returns a NUL-terminated string it owns.
        Ok(unsafe { CStr::from_ptr(p.pChipName) }
            .to_string_lossy()
            .into_owned())
    }

    /// The counter-availability image of a context's device (filters counters
    /// another session or the hardware cannot provide).
    ///
    /// # Errors
    ///
    /// [`Error::InsufficientPrivileges`] without counter permission; the CUPTI
    /// error otherwise.
    #[doc(alias = "cuptiProfilerGetCounterAvailability")]
    pub fn counter_availability(&self, ctx: Context) -> Result<Vec<u8>> {
        let size = struct_size!(
            sys::CUpti_Profiler_GetCounterAvailability_Params,
            pCounterAvailabilityImage
        );
        let mut p = sys::CUpti_Profiler_GetCounterAvailability_Params {
            structSize: size,
            ctx: ctx.0,
            ..Default::default()
        };
        // SAFETY: size query (null image); context from CUPTI.
        let r = unsafe { self.cupti.api().cuptiProfilerGetCounterAvailability(&mut p) };
        self.cupti.check(r)?;
        let mut image = vec![0u8; p.counterAvailabilityImageSize];
        p.pCounterAvailabilityImage = image.as_mut_ptr();
        // SAFETY: buffer of the size CUPTI asked for.
        let r = unsafe { self.cupti.api().cuptiProfilerGetCounterAvailability(&mut p) };
        self.cupti.check(r)?;
        Ok(image)
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        let mut p = sys::CUpti_Profiler_DeInitialize_Params {
            structSize: struct_size!(sys::CUpti_Profiler_DeInitialize_Params, pPriv),
            ..Default::default()
        };
        // SAFETY: params initialised with their size; errors ignored in Drop.
        let _ = unsafe { self.cupti.api().cuptiProfilerDeInitialize(&mut p) };
    }
}

/// A profiler host object (`cuptiProfilerHostInitialize`), freed on drop.
struct Host {
    cupti: Cupti,
    obj: *mut sys::CUpti_Profiler_Host_Object,
}

// SAFETY: the host object is plain host-side state owned by this value; CUPTI
// does not tie it to a thread, and `&Host` only reaches read-only queries.
unsafe impl Send for Host {}
// SAFETY: as above.
unsafe impl Sync for Host {}

impl Host {
    fn new(cupti: &Cupti, chip: &CStr, availability: Option<&[u8]>) -> Result<Self> {
        let mut p = sys::CUpti_Profiler_Host_Initialize_Params {
            structSize: struct_size!(sys::CUpti_Profiler_Host_Initialize_Params, pHostObject),
            profilerType: sys::CUpti_ProfilerType::CUPTI_PROFILER_TYPE_RANGE_PROFILER,
            pChipName: chip.as_ptr(),
            pCounterAvailabilityImage: availability.map_or(std::ptr::null(), <[u8]>::as_ptr),
            ..Default::default()
        };
        // SAFETY: params initialised with their size; the strings and image
        // outlive the call.
        cupti.check(unsafe { cupti.api().cuptiProfilerHostInitialize(&mut p) })?;
        Ok(Self {
            cupti: cupti.clone(),
            obj: p.pHostObject,
        })
    }

    fn add_metrics(&self, names: &[*const c_char]) -> Result<()> {
        let mut p = sys::CUpti_Profiler_Host_ConfigAddMetrics_Params {
            structSize: struct_size!(sys::CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics),
            pHostObject: self.obj,
            ppMetricNames: names.as_ptr().cast_mut(),
            numMetrics: names.len(),
            ..Default::default()
        };
        // SAFETY: live host object; the name pointers outlive the call.
        self.cupti
            .check(unsafe { self.cupti.api().cuptiProfilerHostConfigAddMetrics(&mut p) })
    }

    fn config_image(&self) -> Result<Vec<u8>> {
        let mut s = sys::CUpti_Profiler_Host_GetConfigImageSize_Params {
            structSize: struct_size!(
                sys::CUpti_Profiler_Host_GetConfigImageSize_Params,
                configImageSize
            ),
            pHostObject: self.obj,
            ..Default::default()
        };
        // SAFETY: live host object.
        let r = unsafe { self.cupti.api().cuptiProfilerHostGetConfigImageSize(&mut s) };
        self.cupti.check(r)?;
        let mut image = vec![0u8; s.configImageSize];
        let mut p = sys::CUpti_Profiler_Host_GetConfigImage_Params {
            structSize: struct_size!(sys::CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage),
            pHostObject: self.obj,
            configImageSize: image.len(),
            pConfigImage: image.as_mut_ptr(),
            ..Default::default()
        };
        // SAFETY: buffer of the size CUPTI asked for.
        let r = unsafe { self.cupti.api().cuptiProfilerHostGetConfigImage(&mut p) };
        self.cupti.check(r)?;
        Ok(image)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let mut p = sys::CUpti_Profiler_Host_Deinitialize_Params {
            structSize: struct_size!(sys::CUpti_Profiler_Host_Deinitialize_Params, pHostObject),
            pHostObject: self.obj,
            ..Default::default()
        };
        // SAFETY: live host object, freed once; errors ignored in Drop.
        let _ = unsafe { self.cupti.api().cuptiProfilerHostDeinitialize(&mut p) };
    }
}

/// What kind of value a metric is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetricKind {
    /// A count (rolled up with `.sum`, `.avg`, `.min`, `.max`).
    Counter,
    /// A ratio (`.ratio`, `.pct`, `.max_rate`).
    Ratio,
    /// A throughput (`.pct_of_peak_sustained_elapsed` and others).
    Throughput,
    /// A kind this crate does not know.
    Other(u32),
}

/// A metric as CUPTI describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricInfo {
    /// The base name (without a rollup suffix), e.g. `dram__bytes_read`.
    pub name: String,
    /// CUPTI's description.
    pub description: String,
    /// The hardware unit it is counted in (e.g. `dram`, `sm`).
    pub hw_unit: String,
    /// The dimension of its values (e.g. `bytes`, `cycle`, `inst`).
    pub dim_unit: String,
    /// Counter, ratio or throughput.
    pub kind: MetricKind,
}

/// The metrics one chip offers, read from CUPTI's host-side metric database
/// (no GPU needed, only the chip's name).
pub struct MetricCatalog {
    host: Host,
}

impl std::fmt::Debug for MetricCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricCatalog").finish_non_exhaustive()
    }
}

impl MetricCatalog {
    /// Opens the metric database of `chip` (e.g. `GH100`).
    ///
    /// # Errors
    ///
    /// The CUPTI error (an unknown chip among them).
    #[doc(alias = "cuptiProfilerHostInitialize")]
    pub fn new(cupti: &Cupti, chip: &str) -> Result<Self> {
        let chip = CString::new(chip).map_err(|_| Error::BadMetricName(chip.to_owned()))?;
        Ok(Self {
            host: Host::new(cupti, &chip, None)?,
        })
    }

    /// Every base metric of every kind, with its properties, sorted by name.
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiProfilerHostGetBaseMetrics")]
    pub fn base_metrics(&self) -> Result<Vec<MetricInfo>> {
        let mut out = Vec::new();
        for kind in [
            sys::CUpti_MetricType::CUPTI_METRIC_TYPE_COUNTER,
            sys::CUpti_MetricType::CUPTI_METRIC_TYPE_RATIO,
            sys::CUpti_MetricType::CUPTI_METRIC_TYPE_THROUGHPUT,
        ] {
            for name in self.base_names(kind)? {
                // A name CUPTI lists but cannot describe is still a metric.
                out.push(self.properties(&name).unwrap_or(MetricInfo {
                    name,
                    description: String::new(),
                    hw_unit: String::new(),
                    dim_unit: String::new(),
                    kind: match kind {
                        sys::CUpti_MetricType::CUPTI_METRIC_TYPE_COUNTER => MetricKind::Counter,
                        sys::CUpti_MetricType::CUPTI_METRIC_TYPE_RATIO => MetricKind::Ratio,
                        _ => MetricKind::Throughput,
                    },
                }));
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out.dedup_by(|a, b| a.name == b.name);
        Ok(out)
    }

    fn base_names(&self, kind: sys::CUpti_MetricType) -> Result<Vec<String>> {
        let mut p = sys::CUpti_Profiler_Host_GetBaseMetrics_Params {
            structSize: struct_size!(sys::CUpti_Profiler_Host_GetBaseMetrics_Params, numMetrics),
            pHostObject: self.host.obj,
            metricType: kind,
            ..Default::default()
        };
        // SAFETY: live host object; CUPTI fills in a pointer to its own
        // array of names and its length.
        let r = unsafe {
            self.host
                .cupti
                .api()
                .cuptiProfilerHostGetBaseMetrics(&mut p)
        };
        self.host.cupti.check(r)?;
        if p.ppMetricNames.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: `numMetrics` valid pointers, owned by the host object,
        // which outlives this call.
        let names = unsafe { std::slice::from_raw_parts(p.ppMetricNames, p.numMetrics) };
        Ok(names
            .iter()
            .filter(|n| !n.is_null())
            // SAFETY: NUL-terminated strings owned by CUPTI.
            .map(|&n| unsafe { CStr::from_ptr(n) }.to_string_lossy().into_owned())
            .collect())
    }

    /// The properties of a metric: a base name, or a full name whose rollup
    /// suffix (after the first `.`) is ignored.
    ///
    /// # Errors
    ///
    /// The CUPTI error (an unknown metric among them).
    #[doc(alias = "cuptiProfilerHostGetMetricProperties")]
    pub fn properties(&self, name: &str) -> Result<MetricInfo> {
        let base = name.split('.').next().unwrap_or(name);
        let c = CString::new(base).map_err(|_| Error::BadMetricName(name.to_owned()))?;
        let mut p = sys::CUpti_Profiler_Host_GetMetricProperties_Params {
            structSize: struct_size!(
                sys::CUpti_Profiler_Host_GetMetricProperties_Params,
                metricType
            ),
            pHostObject: self.host.obj,
            pMetricName: c.as_ptr(),
            ..Default::default()
        };
        // SAFETY: live host object; the name outlives the call; CUPTI fills
        // in pointers to strings it owns.
        let r = unsafe {
            self.host
                .cupti
                .api()
                .cuptiProfilerHostGetMetricProperties(&mut p)
        };
        self.host.cupti.check(r)?;
        let text = |s: *const c_char| {
            if s.is_null() {
                String::new()
            } else {
                // SAFETY: NUL-terminated string owned by the host object.
                unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
            }
        };
        Ok(MetricInfo {
            name: base.to_owned(),
            description: text(p.pDescription),
            hw_unit: text(p.pHwUnit),
            dim_unit: text(p.pDimUnit),
            kind: match p.metricType {
                sys::CUpti_MetricType::CUPTI_METRIC_TYPE_COUNTER => MetricKind::Counter,
                sys::CUpti_MetricType::CUPTI_METRIC_TYPE_RATIO => MetricKind::Ratio,
                sys::CUpti_MetricType::CUPTI_METRIC_TYPE_THROUGHPUT => MetricKind::Throughput,
                other => MetricKind::Other(other.0),
            },
        })
    }
}

/// A validated metric set for one chip, with its configuration image.
pub struct MetricConfig {
    host: Host,
    names: Vec<CString>,
    rejected: Vec<(String, Error)>,
    image: Vec<u8>,
    passes: usize,
}

impl std::fmt::Debug for MetricConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricConfig")
            .field("accepted", &self.names)
            .field("rejected", &self.rejected)
            .field("passes", &self.passes)
            .finish()
    }
}

impl MetricConfig {
    /// Validates each of `metrics` on its own for `chip` (a bad name is
    /// reported alone, the good ones are kept), then builds the configuration
    /// image for the accepted ones.
    ///
    /// # Errors
    ///
    /// [`Error::NoValidMetrics`] (with every rejection) when none is accepted;
    /// [`Error::BadMetricName`] for names with NUL bytes; CUPTI errors of the
    /// host object.
    #[doc(alias = "cuptiProfilerHostInitialize")]
    #[doc(alias = "cuptiProfilerHostConfigAddMetrics")]
    #[doc(alias = "cuptiProfilerHostGetConfigImage")]
    pub fn new(
        cupti: &Cupti,
        chip: &str,
        availability: Option<&[u8]>,
        metrics: &[&str],
    ) -> Result<Self> {
        let chip = CString::new(chip).map_err(|_| Error::BadMetricName(chip.to_owned()))?;
        let mut names = Vec::new();
        let mut rejected = Vec::new();
        // A failed add may leave a host object half-configured: validate on
        // scratch objects, replaced after every failure.
        let mut scratch = Host::new(cupti, &chip, availability)?;
        for &m in metrics {
            let Ok(c) = CString::new(m) else {
                rejected.push((m.to_owned(), Error::BadMetricName(m.to_owned())));
                continue;
            };
            match scratch.add_metrics(&[c.as_ptr()]) {
                Ok(()) => names.push(c),
                Err(e) => {
                    rejected.push((m.to_owned(), e));
                    scratch = Host::new(cupti, &chip, availability)?;
                }
            }
        }
        drop(scratch);
        if names.is_empty() {
            return Err(Error::NoValidMetrics {
                rejected: rejected
                    .into_iter()
                    .map(|(n, e)| (n, e.to_string()))
                    .collect(),
            });
        }
        let host = Host::new(cupti, &chip, availability)?;
        let ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        host.add_metrics(&ptrs)?;
        let mut image = host.config_image()?;
        let mut np = sys::CUpti_Profiler_Host_GetNumOfPasses_Params {
            structSize: struct_size!(sys::CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses),
            configImageSize: image.len(),
            pConfigImage: image.as_mut_ptr(),
            ..Default::default()
        };
        // SAFETY: the image built above.
        cupti.check(unsafe { cupti.api().cuptiProfilerHostGetNumOfPasses(&mut np) })?;
        Ok(Self {
            host,
            names,
            rejected,
            image,
            passes: np.numOfPasses,
        })
    }

    /// The accepted metric names.
    pub fn accepted(&self) -> impl Iterator<Item = &str> {
        self.names.iter().filter_map(|n| n.to_str().ok())
    }

    /// Each rejected name with the error CUPTI gave for it.
    pub fn rejected(&self) -> &[(String, Error)] {
        &self.rejected
    }

    /// Replay passes one profiled kernel costs.
    pub fn num_passes(&self) -> usize {
        self.passes
    }

    /// The configuration image.
    pub fn config_image(&self) -> &[u8] {
        &self.image
    }

    fn name_ptrs(&self) -> Vec<*const c_char> {
        self.names.iter().map(|n| n.as_ptr()).collect()
    }
}

/// Metric values of one profiled range.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeValues {
    /// The range's name (the name pushed: the kernel's).
    pub name: String,
    /// `(metric, value)` in the order of [`MetricConfig::accepted`].
    pub values: Vec<(String, f64)>,
}

/// How the range profiler gets every pass of a profiled range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Replay {
    /// CUPTI saves the kernel's device memory, runs it once per pass and
    /// restores the memory in between, inside the launch; the replayed
    /// kernel's activity record has no timestamps.
    Kernel,
    /// The caller replays: with a one-pass metric set nothing is replayed,
    /// the kernel runs once as launched, and a session may hold many
    /// auto ranges (one per kernel) between [`RangeProfiler::start`] and
    /// [`RangeProfiler::stop`].
    User,
}

/// What one range of the range profiler covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ranges {
    /// Each kernel launched inside a pushed range is a range of its own.
    Auto,
    /// Each pushed range is one range, whatever ran between its push and
    /// its pop.
    User,
}

/// The range profiler of one context (one nesting level). Disabled on
/// drop.
pub struct RangeProfiler<'c> {
    cupti: Cupti,
    config: &'c MetricConfig,
    obj: *mut sys::CUpti_RangeProfiler_Object,
    counter_data: Vec<u8>,
}

impl std::fmt::Debug for RangeProfiler<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeProfiler")
            .field("counter_data_size", &self.counter_data.len())
            .finish_non_exhaustive()
    }
}

// SAFETY: the range profiler object is bound to a context, not to a thread
// (CUPTI's range profiler sample drives it from whichever thread launches);
// every call takes `&mut self`, so calls never overlap.
unsafe impl Send for RangeProfiler<'_> {}

impl<'c> RangeProfiler<'c> {
    /// Enables range profiling on `ctx` with `config`, for up to `max_ranges`
    /// kernels between two [`RangeProfiler::evaluate`] calls, replayed as
    /// `replay` says.
    ///
    /// `ctx` must stay alive while this value exists (drop it at
    /// `CONTEXT_DESTROY_STARTING`).
    ///
    /// # Errors
    ///
    /// [`Error::InsufficientPrivileges`] without counter permission;
    /// [`Error::NotSupported`] on unsupported devices; CUPTI errors.
    #[doc(alias = "cuptiRangeProfilerEnable")]
    #[doc(alias = "cuptiRangeProfilerSetConfig")]
    pub fn enable(
        cupti: &Cupti,
        ctx: Context,
        config: &'c MetricConfig,
        max_ranges: usize,
        replay: Replay,
        ranges: Ranges,
    ) -> Result<Self> {
        let mut p = sys::CUpti_RangeProfiler_Enable_Params {
            structSize: struct_size!(sys::CUpti_RangeProfiler_Enable_Params, pRangeProfilerObject),
            ctx: ctx.0,
            ..Default::default()
        };
        // SAFETY: params initialised with their size; context from CUPTI.
        cupti.check(unsafe { cupti.api().cuptiRangeProfilerEnable(&mut p) })?;
        let mut this = Self {
            cupti: cupti.clone(),
            config,
            obj: p.pRangeProfilerObject,
            counter_data: Vec::new(),
        };
        let max_ranges = max_ranges.max(1);
        let mut names = config.name_ptrs();
        let mut s = sys::CUpti_RangeProfiler_GetCounterDataSize_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_GetCounterDataSize_Params,
                counterDataSize
            ),
            pRangeProfilerObject: this.obj,
            pMetricNames: names.as_mut_ptr(),
            numMetrics: names.len(),
            maxNumOfRanges: max_ranges,
            maxNumRangeTreeNodes: u32::try_from(max_ranges).unwrap_or(u32::MAX),
            ..Default::default()
        };
        // SAFETY: live profiler object; names outlive the call.
        cupti.check(unsafe { cupti.api().cuptiRangeProfilerGetCounterDataSize(&mut s) })?;
        this.counter_data = vec![0u8; s.counterDataSize];
        this.init_counter_data()?;
        let mut c = sys::CUpti_RangeProfiler_SetConfig_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_SetConfig_Params,
                targetNestingLevel
            ),
            pRangeProfilerObject: this.obj,
            configSize: config.image.len(),
            pConfig: config.image.as_ptr(),
            counterDataImageSize: this.counter_data.len(),
            pCounterDataImage: this.counter_data.as_mut_ptr(),
            range: match ranges {
                Ranges::Auto => sys::CUpti_ProfilerRange::CUPTI_AutoRange,
                Ranges::User => sys::CUpti_ProfilerRange::CUPTI_UserRange,
            },
            replayMode: match replay {
                Replay::Kernel => sys::CUpti_ProfilerReplayMode::CUPTI_KernelReplay,
                Replay::User => sys::CUpti_ProfilerReplayMode::CUPTI_UserReplay,
            },
            maxRangesPerPass: max_ranges,
            numNestingLevels: 1,
            minNestingLevel: 1,
            passIndex: 0,
            targetNestingLevel: 1,
            ..Default::default()
        };
        // SAFETY: images owned by `config` and `this`, which outlive the
        // profiler object (freed in Drop before the Vec).
        cupti.check(unsafe { cupti.api().cuptiRangeProfilerSetConfig(&mut c) })?;
        Ok(this)
    }

    fn init_counter_data(&mut self) -> Result<()> {
        let mut p = sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params,
                pCounterData
            ),
            pRangeProfilerObject: self.obj,
            counterDataSize: self.counter_data.len(),
            pCounterData: self.counter_data.as_mut_ptr(),
            ..Default::default()
        };
        // SAFETY: live object; buffer of the size CUPTI asked for.
        self.cupti.check(unsafe {
            self.cupti
                .api()
                .cuptiRangeProfilerCounterDataImageInitialize(&mut p)
        })
    }

    /// Starts a profiling session.
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiRangeProfilerStart")]
    pub fn start(&mut self) -> Result<()> {
        let mut p = sys::CUpti_RangeProfiler_Start_Params {
            structSize: struct_size!(sys::CUpti_RangeProfiler_Start_Params, pRangeProfilerObject),
            pRangeProfilerObject: self.obj,
            ..Default::default()
        };
        // SAFETY: live object.
        self.cupti
            .check(unsafe { self.cupti.api().cuptiRangeProfilerStart(&mut p) })
    }

    /// Opens a named range (needed even in auto-range mode).
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiRangeProfilerPushRange")]
    pub fn push_range(&mut self, name: &CStr) -> Result<()> {
        let mut p = sys::CUpti_RangeProfiler_PushRange_Params {
            structSize: struct_size!(sys::CUpti_RangeProfiler_PushRange_Params, pRangeName),
            pRangeProfilerObject: self.obj,
            pRangeName: name.as_ptr(),
            ..Default::default()
        };
        // SAFETY: live object; name outlives the call.
        self.cupti
            .check(unsafe { self.cupti.api().cuptiRangeProfilerPushRange(&mut p) })
    }

    /// Closes the innermost range.
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiRangeProfilerPopRange")]
    pub fn pop_range(&mut self) -> Result<()> {
        let mut p = sys::CUpti_RangeProfiler_PopRange_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_PopRange_Params,
                pRangeProfilerObject
            ),
            pRangeProfilerObject: self.obj,
            ..Default::default()
        };
        // SAFETY: live object.
        self.cupti
            .check(unsafe { self.cupti.api().cuptiRangeProfilerPopRange(&mut p) })
    }

    /// Stops the session; `true` when every replay pass was submitted.
    ///
    /// # Errors
    ///
    /// The CUPTI error (`INVALID_OPERATION` when no session is active, which is
    /// normal at teardown).
    #[doc(alias = "cuptiRangeProfilerStop")]
    pub fn stop(&mut self) -> Result<bool> {
        let mut p = sys::CUpti_RangeProfiler_Stop_Params {
            structSize: struct_size!(sys::CUpti_RangeProfiler_Stop_Params, isAllPassSubmitted),
            pRangeProfilerObject: self.obj,
            ..Default::default()
        };
        // SAFETY: live object.
        let r = unsafe { self.cupti.api().cuptiRangeProfilerStop(&mut p) };
        self.cupti.check(r)?;
        Ok(p.isAllPassSubmitted != 0)
    }

    /// Decodes the collected counters into the counter-data image; returns
    /// the number of ranges dropped for lack of space.
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiRangeProfilerDecodeData")]
    pub fn decode(&mut self) -> Result<usize> {
        let mut p = sys::CUpti_RangeProfiler_DecodeData_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_DecodeData_Params,
                numOfRangeDropped
            ),
            pRangeProfilerObject: self.obj,
            ..Default::default()
        };
        // SAFETY: live object.
        let r = unsafe { self.cupti.api().cuptiRangeProfilerDecodeData(&mut p) };
        self.cupti.check(r)?;
        Ok(p.numOfRangeDropped)
    }

    /// Evaluates every decoded range to metric values, then clears the
    /// counter data for the session that follows.
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiRangeProfilerGetCounterDataInfo")]
    #[doc(alias = "cuptiRangeProfilerCounterDataGetRangeInfo")]
    #[doc(alias = "cuptiProfilerHostEvaluateToGpuValues")]
    pub fn evaluate(&mut self) -> Result<Vec<RangeValues>> {
        let mut info = sys::CUpti_RangeProfiler_GetCounterDataInfo_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_GetCounterDataInfo_Params,
                numTotalRanges
            ),
            pCounterDataImage: self.counter_data.as_ptr(),
            counterDataImageSize: self.counter_data.len(),
            ..Default::default()
        };
        // SAFETY: our decoded image.
        self.cupti.check(unsafe {
            self.cupti
                .api()
                .cuptiRangeProfilerGetCounterDataInfo(&mut info)
        })?;
        let mut names = self.config.name_ptrs();
        let mut out = Vec::with_capacity(info.numTotalRanges);
        for i in 0..info.numTotalRanges {
            let mut r = sys::CUpti_RangeProfiler_CounterData_GetRangeInfo_Params {
                structSize: struct_size!(
                    sys::CUpti_RangeProfiler_CounterData_GetRangeInfo_Params,
                    rangeName
                ),
                pCounterDataImage: self.counter_data.as_ptr(),
                counterDataImageSize: self.counter_data.len(),
                rangeIndex: i,
                rangeDelimiter: c"/".as_ptr(),
                ..Default::default()
            };
            // SAFETY: our image; index below the count CUPTI reported.
            self.cupti.check(unsafe {
                self.cupti
                    .api()
                    .cuptiRangeProfilerCounterDataGetRangeInfo(&mut r)
            })?;
            let name = if r.rangeName.is_null() {
                String::new()
            } else {
                // SAFETY: NUL-terminated string owned by CUPTI.
                unsafe { CStr::from_ptr(r.rangeName) }
                    .to_string_lossy()
                    .into_owned()
            };
            let mut values = vec![0f64; names.len()];
            let mut e = sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params {
                structSize: struct_size!(
                    sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params,
                    pMetricValues
                ),
                pHostObject: self.config.host.obj,
                pCounterDataImage: self.counter_data.as_ptr(),
                counterDataImageSize: self.counter_data.len(),
                rangeIndex: i,
                ppMetricNames: names.as_mut_ptr(),
                numMetrics: names.len(),
                pMetricValues: values.as_mut_ptr(),
                ..Default::default()
            };
            // SAFETY: host object of the config that built this image; output
            // array sized to the metric count.
            self.cupti.check(unsafe {
                self.cupti
                    .api()
                    .cuptiProfilerHostEvaluateToGpuValues(&mut e)
            })?;
            out.push(RangeValues {
                name,
                values: self
                    .config
                    .accepted()
                    .map(str::to_owned)
                    .zip(values)
                    .collect(),
            });
        }
        self.init_counter_data()?;
        Ok(out)
    }

    /// Profiles what `run` launches as one range named `name`: start, push,
    /// `run`, pop, stop, decode, evaluate.
    ///
    /// # Errors
    ///
    /// The first CUPTI error; the session is stopped on the way out.
    pub fn profile<R>(
        &mut self,
        name: &CStr,
        run: impl FnOnce() -> R,
    ) -> Result<(R, Vec<RangeValues>)> {
        self.start()?;
        if let Err(e) = self.push_range(name) {
            let _ = self.stop();
            return Err(e);
        }
        let r = run();
        let popped = self.pop_range();
        let stopped = self.stop();
        popped?;
        stopped?;
        self.decode()?;
        Ok((r, self.evaluate()?))
    }
}

impl RangeProfiler<'_> {
    fn disable(&mut self) -> Result<()> {
        if self.obj.is_null() {
            return Ok(());
        }
        let mut p = sys::CUpti_RangeProfiler_Disable_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_Disable_Params,
                pRangeProfilerObject
            ),
            pRangeProfilerObject: self.obj,
            ..Default::default()
        };
        self.obj = std::ptr::null_mut();
        // SAFETY: live object, disabled once (nulled above).
        let r = unsafe { self.cupti.api().cuptiRangeProfilerDisable(&mut p) };
        self.cupti.check(r)
    }

    /// Disables range profiling on the context, reporting CUPTI's error
    /// (dropping does the same and ignores it).
    ///
    /// # Errors
    ///
    /// The CUPTI error of `cuptiRangeProfilerDisable`.
    #[doc(alias = "cuptiRangeProfilerDisable")]
    pub fn close(mut self) -> Result<()> {
        self.disable()
    }
}

impl Drop for RangeProfiler<'_> {
    fn drop(&mut self) {
        let _ = self.disable();
    }
}
