//! CUPTI's profiler as the fake answers it: `cuptiProfilerInitialize`, the chip name and
//! counter availability, the profiler host (metric catalog, per-metric validation,
//! configuration images, passes, evaluation) and the range profiler of the context (enable,
//! counter data image, configuration, sessions of pushed ranges, stop, decode).
//!
//! The GPU side is [`Sim::kernel`]: a kernel that runs while a session is started with a range
//! pushed is profiled. In auto range it becomes a range of its own (named by its index in the
//! session, as CUPTI numbers auto ranges); in user range its work goes to every open range.
//! Under kernel replay the launch runs the kernel once per pass and its activity record has no
//! timestamps, as CUPTI's has; under user replay the kernel runs once, followed by CUPTI's own
//! `WaitNs` kernel on a stream of its own (as on an H200), and the tool replays the session:
//! each `cuptiRangeProfilerStop` ends a pass, the last one says every pass was submitted.
//!
//! The images are the fake's own formats, written into the tool's buffers: a configuration
//! image holds its metric names and passes, a counter data image the decoded ranges (name and
//! work), which the host evaluates to metric values ([`crate::counters::MetricSpec::value`]).

use std::collections::HashMap;
use std::ffi::{CStr, c_char};
use std::sync::{LazyLock, Mutex};

use cupti_sys as sys;

use super::{FAKE, lock, static_cstr, violation};
use crate::counters::{Fault, MetricKind, ProfilerCall, ProfilerSpec, Work, result_code};
use crate::scenario::CONTEXT_HANDLE;

type R = sys::CUptiResult;
const OK: R = R::CUPTI_SUCCESS;
const INVALID: R = R::CUPTI_ERROR_INVALID_PARAMETER;
const BAD_OP: R = R::CUPTI_ERROR_INVALID_OPERATION;

const CONFIG_MAGIC: &[u8; 8] = b"SIMCFG01";
const DATA_MAGIC: &[u8; 8] = b"SIMCDI01";
const AVAILABILITY_MAGIC: &[u8; 8] = b"SIMAVL01";
const AVAILABILITY_SIZE: usize = 64;
/// Counter data image: magic, slots, ranges decoded, reserved.
const DATA_HEADER: usize = 32;
/// A range's name (NUL-terminated, levels joined by [`LEVELS`]), then its [`Work`].
const NAME_BYTES: usize = 256;
const SLOT: usize = NAME_BYTES + 5 * 8;
/// Joins the levels of a user range's name in the image (the delimiter comes at read time).
const LEVELS: char = '\u{1f}';

const HOST_TOKEN: usize = 0x6800_0000;
const PROFILER_TOKEN: usize = 0x6900_0000;

/// How a kernel that ran was profiled ([`Sim::kernel`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Profiled {
    /// Not: no session with a pushed range on its context, or its range was dropped.
    No,
    /// Under kernel replay: the launch runs it this many times (once per pass) and its record
    /// has no timestamps.
    Replayed(u32),
    /// Under user replay: it runs once, as launched, and CUPTI follows it with a `WaitNs`
    /// kernel of its own.
    Once,
}

/// The profiler of the process.
pub(crate) static PROFILER: LazyLock<Sim> = LazyLock::new(Sim::default);

/// The fake's profiler state (one per process, like CUPTI's; tests make their own).
#[derive(Default)]
pub(crate) struct Sim {
    st: Mutex<State>,
}

#[derive(Default)]
struct State {
    spec: ProfilerSpec,
    /// `cuptiProfilerInitialize` calls not yet undone.
    initialized: u32,
    hosts: HashMap<usize, Host>,
    profilers: HashMap<usize, Rp>,
    next: usize,
    /// Calls seen per fault site.
    seen: HashMap<ProfilerCall, u32>,
}

#[derive(Default)]
struct Host {
    /// Configured metrics (full names), in the order added.
    metrics: Vec<String>,
    /// Base-name lists handed out, by metric type (pointers to static strings).
    lists: HashMap<u32, Box<[usize]>>,
}

/// A range profiler object: enabled on a context.
struct Rp {
    ctx: u64,
    config: Option<Config>,
    session: Option<Session>,
    /// What the passes so far collected, until decoded.
    collected: Option<Collected>,
    /// The next pass of a user-replay session.
    pass: u32,
}

#[derive(Clone)]
struct Config {
    passes: u32,
    user_range: bool,
    kernel_replay: bool,
    max_ranges: usize,
    min_level: usize,
    levels: usize,
    image: usize,
    image_size: usize,
}

#[derive(Default)]
struct Session {
    /// Pushed ranges: name and the work done inside.
    stack: Vec<(String, Work)>,
    ranges: Vec<(String, Work)>,
    dropped: usize,
    next_auto: usize,
}

struct Collected {
    ranges: Vec<(String, Work)>,
    dropped: usize,
    complete: bool,
}

impl State {
    /// Whether a scripted fault fails this call of `call`, and with what.
    fn fault(&mut self, call: ProfilerCall) -> Option<R> {
        let n = self.seen.entry(call).or_default();
        let i = *n;
        *n += 1;
        self.spec
            .faults
            .iter()
            .find(|f: &&Fault| {
                f.call == call && i >= f.after && f.times.is_none_or(|t| i - f.after < t)
            })
            .map(|f| result_code(&f.error).unwrap_or(R::CUPTI_ERROR_UNKNOWN))
    }

    fn token(&mut self, base: usize) -> usize {
        self.next += 1;
        base + self.next
    }

    fn capacity(image: usize, image_size: usize) -> Option<usize> {
        if image == 0 || image_size < DATA_HEADER {
            return None;
        }
        // SAFETY: the tool's counter data image of `image_size` bytes (CUPTI's contract for
        // the images it is given), at least a header long.
        let head = unsafe { std::slice::from_raw_parts(image as *const u8, DATA_HEADER) };
        (&head[..8] == DATA_MAGIC).then(|| read_u64(head, 8) as usize)
    }
}

fn read_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn write_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// A C string of the caller's, or `None` for null.
///
/// # Safety
/// `p` is null or a NUL-terminated string valid for the call.
unsafe fn text(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: caller contract.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// The caller's array of `n` metric names.
///
/// # Safety
/// `names` is null or points to `n` NUL-terminated strings valid for the call.
unsafe fn names(names: *const *const c_char, n: usize) -> Option<Vec<String>> {
    if names.is_null() {
        return None;
    }
    // SAFETY: caller contract.
    let ptrs = unsafe { std::slice::from_raw_parts(names, n) };
    // SAFETY: each is a string of the caller's (caller contract).
    ptrs.iter().map(|&p| unsafe { text(p) }).collect()
}

/// The counter data image's bytes.
///
/// # Safety
/// `p` is a buffer of `size` bytes the caller owns, not otherwise referenced during the call.
unsafe fn image<'a>(p: *const u8, size: usize) -> Option<&'a mut [u8]> {
    if p.is_null() || size < DATA_HEADER {
        return None;
    }
    // SAFETY: caller contract.
    Some(unsafe { std::slice::from_raw_parts_mut(p.cast_mut(), size) })
}

fn metric_type(k: MetricKind) -> sys::CUpti_MetricType {
    match k {
        MetricKind::Counter => sys::CUpti_MetricType::CUPTI_METRIC_TYPE_COUNTER,
        MetricKind::Ratio => sys::CUpti_MetricType::CUPTI_METRIC_TYPE_RATIO,
        MetricKind::Throughput => sys::CUpti_MetricType::CUPTI_METRIC_TYPE_THROUGHPUT,
    }
}

fn count_range(dropped: bool) {
    let mut r = lock(&FAKE.report);
    if dropped {
        r.ranges_dropped += 1;
    } else {
        r.ranges_profiled += 1;
    }
}

/// The range profiler calls take the caller's parameter block; its pointers are valid as CUPTI
/// documents for each function (the `# Safety` of every method).
impl Sim {
    fn st(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.st)
    }

    /// Takes the scenario's profiler description (before the tool loads).
    pub(crate) fn configure(&self, spec: ProfilerSpec) {
        self.st().spec = spec;
    }

    /// A kernel of `work` runs on context `ctx`: profiled if a session is open there, and how.
    pub(crate) fn kernel(&self, ctx: u64, work: Work) -> Profiled {
        let mut st = self.st();
        let mut profiled = Profiled::No;
        for rp in st.profilers.values_mut().filter(|rp| rp.ctx == ctx) {
            let (Some(c), Some(s)) = (&rp.config, &mut rp.session) else {
                continue;
            };
            if s.stack.is_empty() {
                // CUPTI profiles nothing outside a pushed range, auto range included.
                continue;
            }
            let cap = State::capacity(c.image, c.image_size)
                .unwrap_or(0)
                .min(c.max_ranges);
            if c.user_range {
                for (_, w) in &mut s.stack {
                    w.add(&work);
                }
            } else if s.ranges.len() < cap {
                s.ranges.push((s.next_auto.to_string(), work));
                s.next_auto += 1;
                count_range(false);
            } else {
                s.dropped += 1;
                s.next_auto += 1;
                count_range(true);
                continue;
            }
            profiled = if c.kernel_replay {
                Profiled::Replayed(c.passes)
            } else {
                Profiled::Once
            };
        }
        drop(st);
        if let Profiled::Replayed(p) = profiled {
            lock(&FAKE.report).kernel_replays += u64::from(p);
        }
        profiled
    }

    /// # Safety
    /// CUPTI's contract for `cuptiProfilerInitialize`.
    pub(crate) unsafe fn initialize(&self, _p: &mut sys::CUpti_Profiler_Initialize_Params) -> R {
        let mut st = self.st();
        if let Some(e) = st.fault(ProfilerCall::Initialize) {
            return e;
        }
        st.initialized += 1;
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiProfilerDeInitialize`.
    pub(crate) unsafe fn deinitialize(
        &self,
        _p: &mut sys::CUpti_Profiler_DeInitialize_Params,
    ) -> R {
        let mut st = self.st();
        if st.initialized == 0 {
            return R::CUPTI_ERROR_NOT_INITIALIZED;
        }
        st.initialized -= 1;
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiDeviceGetChipName`.
    pub(crate) unsafe fn chip_name(&self, p: &mut sys::CUpti_Device_GetChipName_Params) -> R {
        let mut st = self.st();
        if st.initialized == 0 {
            return R::CUPTI_ERROR_NOT_INITIALIZED;
        }
        if let Some(e) = st.fault(ProfilerCall::ChipName) {
            return e;
        }
        if p.deviceIndex != 0 {
            return R::CUPTI_ERROR_INVALID_DEVICE;
        }
        p.pChipName = static_cstr(&st.spec.chip).as_ptr();
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiProfilerGetCounterAvailability`: a null image, or one of
    /// `counterAvailabilityImageSize` bytes.
    pub(crate) unsafe fn counter_availability(
        &self,
        p: &mut sys::CUpti_Profiler_GetCounterAvailability_Params,
    ) -> R {
        let mut st = self.st();
        if st.initialized == 0 {
            return R::CUPTI_ERROR_NOT_INITIALIZED;
        }
        if p.ctx as u64 != CONTEXT_HANDLE {
            return R::CUPTI_ERROR_INVALID_CONTEXT;
        }
        if let Some(e) = st.fault(ProfilerCall::CounterAvailability) {
            return e;
        }
        if p.pCounterAvailabilityImage.is_null() {
            p.counterAvailabilityImageSize = AVAILABILITY_SIZE;
            return OK;
        }
        if p.counterAvailabilityImageSize < AVAILABILITY_SIZE {
            return R::CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
        }
        // SAFETY: the caller's image of at least AVAILABILITY_SIZE bytes (checked).
        let img = unsafe {
            std::slice::from_raw_parts_mut(p.pCounterAvailabilityImage, AVAILABILITY_SIZE)
        };
        img.fill(0);
        img[..8].copy_from_slice(AVAILABILITY_MAGIC);
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiProfilerHostInitialize`: the chip name a string, the
    /// availability image null or one CUPTI made.
    pub(crate) unsafe fn host_initialize(
        &self,
        p: &mut sys::CUpti_Profiler_Host_Initialize_Params,
    ) -> R {
        let mut st = self.st();
        if let Some(e) = st.fault(ProfilerCall::HostInitialize) {
            return e;
        }
        if p.profilerType != sys::CUpti_ProfilerType::CUPTI_PROFILER_TYPE_RANGE_PROFILER {
            return R::CUPTI_ERROR_NOT_SUPPORTED;
        }
        // SAFETY: caller contract.
        let Some(chip) = (unsafe { text(p.pChipName) }) else {
            return INVALID;
        };
        if chip != st.spec.chip {
            return R::CUPTI_ERROR_INVALID_CHIP_NAME;
        }
        if !p.pCounterAvailabilityImage.is_null() {
            // SAFETY: an availability image (caller contract), at least the magic long.
            let head = unsafe { std::slice::from_raw_parts(p.pCounterAvailabilityImage, 8) };
            if head != AVAILABILITY_MAGIC {
                violation("cuptiProfilerHostInitialize: not a counter availability image".into());
                return INVALID;
            }
        }
        let t = st.token(HOST_TOKEN);
        st.hosts.insert(t, Host::default());
        p.pHostObject = t as *mut sys::CUpti_Profiler_Host_Object;
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiProfilerHostDeinitialize`.
    pub(crate) unsafe fn host_deinitialize(
        &self,
        p: &mut sys::CUpti_Profiler_Host_Deinitialize_Params,
    ) -> R {
        if self.st().hosts.remove(&(p.pHostObject as usize)).is_none() {
            violation(format!(
                "cuptiProfilerHostDeinitialize of {:p}, not a live host object",
                p.pHostObject
            ));
            return INVALID;
        }
        OK
    }

    /// Adds the names in order; the first unknown one fails the call, the ones before it
    /// stay added (a half-configured host, as CUPTI may leave it).
    ///
    /// # Safety
    /// CUPTI's contract for `cuptiProfilerHostConfigAddMetrics`.
    pub(crate) unsafe fn add_metrics(
        &self,
        p: &mut sys::CUpti_Profiler_Host_ConfigAddMetrics_Params,
    ) -> R {
        let mut st = self.st();
        // SAFETY: caller contract.
        let Some(list) = (unsafe { names(p.ppMetricNames, p.numMetrics) }) else {
            return INVALID;
        };
        let st = &mut *st;
        let Some(h) = st.hosts.get_mut(&(p.pHostObject as usize)) else {
            return INVALID;
        };
        for n in list {
            if st.spec.metric(&n).is_none() {
                return R::CUPTI_ERROR_INVALID_METRIC_NAME;
            }
            if !h.metrics.contains(&n) {
                h.metrics.push(n);
            }
        }
        OK
    }

    fn config_bytes(&self, host: usize) -> Result<Vec<u8>, R> {
        let st = self.st();
        let h = st.hosts.get(&host).ok_or(INVALID)?;
        if h.metrics.is_empty() {
            return Err(BAD_OP);
        }
        let passes = h
            .metrics
            .iter()
            .filter_map(|m| st.spec.metric(m))
            .map(|m| m.passes)
            .max()
            .unwrap_or(1);
        let mut b = CONFIG_MAGIC.to_vec();
        b.extend_from_slice(&u64::from(passes).to_le_bytes());
        b.extend_from_slice(&(h.metrics.len() as u64).to_le_bytes());
        for m in &h.metrics {
            b.extend_from_slice(m.as_bytes());
            b.push(0);
        }
        Ok(b)
    }

    /// # Safety
    /// CUPTI's contract for `cuptiProfilerHostGetConfigImageSize`.
    pub(crate) unsafe fn config_image_size(
        &self,
        p: &mut sys::CUpti_Profiler_Host_GetConfigImageSize_Params,
    ) -> R {
        match self.config_bytes(p.pHostObject as usize) {
            Ok(b) => {
                p.configImageSize = b.len();
                OK
            }
            Err(e) => e,
        }
    }

    /// # Safety
    /// CUPTI's contract for `cuptiProfilerHostGetConfigImage`: an image of
    /// `configImageSize` bytes.
    pub(crate) unsafe fn config_image(
        &self,
        p: &mut sys::CUpti_Profiler_Host_GetConfigImage_Params,
    ) -> R {
        let b = match self.config_bytes(p.pHostObject as usize) {
            Ok(b) => b,
            Err(e) => return e,
        };
        if p.pConfigImage.is_null() || p.configImageSize < b.len() {
            return R::CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
        }
        // SAFETY: the caller's buffer of at least `b.len()` bytes (checked).
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), p.pConfigImage, b.len()) };
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiProfilerHostGetNumOfPasses`.
    pub(crate) unsafe fn num_passes(
        &self,
        p: &mut sys::CUpti_Profiler_Host_GetNumOfPasses_Params,
    ) -> R {
        // SAFETY: caller contract.
        match unsafe { parse_config(p.pConfigImage, p.configImageSize) } {
            Some((passes, _)) => {
                p.numOfPasses = passes as usize;
                OK
            }
            None => INVALID,
        }
    }

    /// # Safety
    /// CUPTI's contract for `cuptiProfilerHostGetBaseMetrics`.
    pub(crate) unsafe fn base_metrics(
        &self,
        p: &mut sys::CUpti_Profiler_Host_GetBaseMetrics_Params,
    ) -> R {
        let mut st = self.st();
        let st = &mut *st;
        let Some(h) = st.hosts.get_mut(&(p.pHostObject as usize)) else {
            return INVALID;
        };
        let list: Box<[usize]> = st
            .spec
            .metrics
            .iter()
            .filter(|m| metric_type(m.kind) == p.metricType)
            .map(|m| static_cstr(&m.name).as_ptr() as usize)
            .collect();
        let list = h.lists.entry(p.metricType.0).or_insert(list);
        p.numMetrics = list.len();
        // `usize` and `*const c_char` have the same layout; the list lives with the host.
        p.ppMetricNames = list.as_ptr() as *mut *const c_char;
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiProfilerHostGetMetricProperties`.
    pub(crate) unsafe fn metric_properties(
        &self,
        p: &mut sys::CUpti_Profiler_Host_GetMetricProperties_Params,
    ) -> R {
        let st = self.st();
        if !st.hosts.contains_key(&(p.pHostObject as usize)) {
            return INVALID;
        }
        // SAFETY: caller contract.
        let Some(name) = (unsafe { text(p.pMetricName) }) else {
            return INVALID;
        };
        let Some(m) = st.spec.base(&name) else {
            return R::CUPTI_ERROR_INVALID_METRIC_NAME;
        };
        p.pDescription = static_cstr(&m.description).as_ptr();
        p.pHwUnit = static_cstr(&m.hw_unit).as_ptr();
        p.pDimUnit = static_cstr(&m.dim_unit).as_ptr();
        p.metricType = metric_type(m.kind);
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiProfilerHostEvaluateToGpuValues`: a decoded image, names,
    /// and room for `numMetrics` values.
    pub(crate) unsafe fn evaluate(
        &self,
        p: &mut sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params,
    ) -> R {
        let st = self.st();
        let Some(h) = st.hosts.get(&(p.pHostObject as usize)) else {
            return INVALID;
        };
        // SAFETY: caller contract.
        let Some(list) = (unsafe { names(p.ppMetricNames, p.numMetrics) }) else {
            return INVALID;
        };
        // SAFETY: caller contract (read only here).
        let Some(img) = (unsafe { image(p.pCounterDataImage, p.counterDataImageSize) }) else {
            return INVALID;
        };
        let Some((_, work)) = read_range(img, p.rangeIndex) else {
            return INVALID;
        };
        if p.pMetricValues.is_null() {
            return INVALID;
        }
        for (i, n) in list.iter().enumerate() {
            let Some(m) = st.spec.metric(n).filter(|_| h.metrics.contains(n)) else {
                return R::CUPTI_ERROR_INVALID_METRIC_NAME;
            };
            // SAFETY: the caller's array of `numMetrics` doubles.
            unsafe { p.pMetricValues.add(i).write(m.value(&work)) };
        }
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiRangeProfilerEnable`.
    pub(crate) unsafe fn enable(&self, p: &mut sys::CUpti_RangeProfiler_Enable_Params) -> R {
        let mut st = self.st();
        if st.initialized == 0 {
            return R::CUPTI_ERROR_NOT_INITIALIZED;
        }
        let ctx = p.ctx as u64;
        if ctx != CONTEXT_HANDLE {
            return R::CUPTI_ERROR_INVALID_CONTEXT;
        }
        if let Some(e) = st.fault(ProfilerCall::Enable) {
            return e;
        }
        if st.profilers.values().any(|rp| rp.ctx == ctx) {
            return BAD_OP;
        }
        let t = st.token(PROFILER_TOKEN);
        st.profilers.insert(
            t,
            Rp {
                ctx,
                config: None,
                session: None,
                collected: None,
                pass: 0,
            },
        );
        p.pRangeProfilerObject = t as *mut sys::CUpti_RangeProfiler_Object;
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiRangeProfilerDisable`.
    pub(crate) unsafe fn disable(&self, p: &mut sys::CUpti_RangeProfiler_Disable_Params) -> R {
        if self
            .st()
            .profilers
            .remove(&(p.pRangeProfilerObject as usize))
            .is_none()
        {
            violation(format!(
                "cuptiRangeProfilerDisable of {:p}, not an enabled range profiler",
                p.pRangeProfilerObject
            ));
            return INVALID;
        }
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiRangeProfilerGetCounterDataSize`.
    pub(crate) unsafe fn counter_data_size(
        &self,
        p: &mut sys::CUpti_RangeProfiler_GetCounterDataSize_Params,
    ) -> R {
        if !self
            .st()
            .profilers
            .contains_key(&(p.pRangeProfilerObject as usize))
        {
            return INVALID;
        }
        // SAFETY: caller contract.
        match unsafe { names(p.pMetricNames, p.numMetrics) } {
            Some(n) if !n.is_empty() && p.maxNumOfRanges > 0 => {
                p.counterDataSize = DATA_HEADER + p.maxNumOfRanges * SLOT;
                OK
            }
            _ => INVALID,
        }
    }

    /// # Safety
    /// CUPTI's contract for `cuptiRangeProfilerCounterDataImageInitialize`: a buffer of
    /// `counterDataSize` bytes.
    pub(crate) unsafe fn counter_data_initialize(
        &self,
        p: &mut sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params,
    ) -> R {
        if !self
            .st()
            .profilers
            .contains_key(&(p.pRangeProfilerObject as usize))
        {
            return INVALID;
        }
        // SAFETY: caller contract.
        let Some(img) = (unsafe { image(p.pCounterData, p.counterDataSize) }) else {
            return INVALID;
        };
        img.fill(0);
        img[..8].copy_from_slice(DATA_MAGIC);
        write_u64(img, 8, ((img.len() - DATA_HEADER) / SLOT) as u64);
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiRangeProfilerSetConfig`: the configuration image and the
    /// counter data image outlive the range profiler object.
    pub(crate) unsafe fn set_config(&self, p: &mut sys::CUpti_RangeProfiler_SetConfig_Params) -> R {
        let mut st = self.st();
        if let Some(e) = st.fault(ProfilerCall::SetConfig) {
            return e;
        }
        // SAFETY: caller contract.
        let Some((passes, _)) = (unsafe { parse_config(p.pConfig, p.configSize) }) else {
            return INVALID;
        };
        if State::capacity(p.pCounterDataImage as usize, p.counterDataImageSize).is_none() {
            violation(
                "cuptiRangeProfilerSetConfig: the counter data image is not initialised".into(),
            );
            return INVALID;
        }
        type Rg = sys::CUpti_ProfilerRange;
        type Rm = sys::CUpti_ProfilerReplayMode;
        let user_range = match p.range {
            Rg::CUPTI_AutoRange => false,
            Rg::CUPTI_UserRange => true,
            _ => return INVALID,
        };
        let kernel_replay = match p.replayMode {
            Rm::CUPTI_KernelReplay => true,
            Rm::CUPTI_UserReplay => false,
            _ => return R::CUPTI_ERROR_NOT_SUPPORTED,
        };
        if p.maxRangesPerPass == 0 || p.numNestingLevels == 0 || p.minNestingLevel == 0 {
            return INVALID;
        }
        if !user_range && p.numNestingLevels != 1 {
            return INVALID;
        }
        let Some(rp) = st.profilers.get_mut(&(p.pRangeProfilerObject as usize)) else {
            return INVALID;
        };
        if rp.session.is_some() {
            return BAD_OP;
        }
        rp.config = Some(Config {
            passes,
            user_range,
            kernel_replay,
            max_ranges: p.maxRangesPerPass,
            min_level: usize::from(p.minNestingLevel),
            levels: usize::from(p.numNestingLevels),
            image: p.pCounterDataImage as usize,
            image_size: p.counterDataImageSize,
        });
        rp.collected = None;
        rp.pass = 0;
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiRangeProfilerStart`.
    pub(crate) unsafe fn start(&self, p: &mut sys::CUpti_RangeProfiler_Start_Params) -> R {
        let mut st = self.st();
        if let Some(e) = st.fault(ProfilerCall::Start) {
            return e;
        }
        let Some(rp) = st.profilers.get_mut(&(p.pRangeProfilerObject as usize)) else {
            return INVALID;
        };
        if rp.config.is_none() || rp.session.is_some() {
            return BAD_OP;
        }
        if rp.collected.as_ref().is_some_and(|c| c.complete) {
            // Collected but never decoded: a new session starts over.
            rp.collected = None;
            rp.pass = 0;
        }
        rp.session = Some(Session::default());
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiRangeProfilerPushRange`.
    pub(crate) unsafe fn push_range(&self, p: &mut sys::CUpti_RangeProfiler_PushRange_Params) -> R {
        let mut st = self.st();
        if let Some(e) = st.fault(ProfilerCall::PushRange) {
            return e;
        }
        let Some(rp) = st.profilers.get_mut(&(p.pRangeProfilerObject as usize)) else {
            return INVALID;
        };
        let Some(s) = &mut rp.session else {
            return BAD_OP;
        };
        // SAFETY: caller contract.
        let name = unsafe { text(p.pRangeName) }.unwrap_or_default();
        s.stack.push((name, Work::default()));
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiRangeProfilerPopRange`.
    pub(crate) unsafe fn pop_range(&self, p: &mut sys::CUpti_RangeProfiler_PopRange_Params) -> R {
        let mut st = self.st();
        let Some(rp) = st.profilers.get_mut(&(p.pRangeProfilerObject as usize)) else {
            return INVALID;
        };
        let (Some(c), Some(s)) = (&rp.config, &mut rp.session) else {
            return BAD_OP;
        };
        let level = s.stack.len();
        let Some((_, work)) = s.stack.last().cloned() else {
            return BAD_OP;
        };
        if c.user_range && level >= c.min_level && level < c.min_level + c.levels {
            let name: Vec<&str> = s.stack.iter().map(|(n, _)| n.as_str()).collect();
            let name = name.join(&LEVELS.to_string());
            let cap = State::capacity(c.image, c.image_size)
                .unwrap_or(0)
                .min(c.max_ranges);
            let dropped = s.ranges.len() >= cap;
            if dropped {
                s.dropped += 1;
            } else {
                s.ranges.push((name, work));
            }
            count_range(dropped);
        }
        s.stack.pop();
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiRangeProfilerStop`.
    pub(crate) unsafe fn stop(&self, p: &mut sys::CUpti_RangeProfiler_Stop_Params) -> R {
        let mut st = self.st();
        let fault = st.fault(ProfilerCall::Stop);
        let Some(rp) = st.profilers.get_mut(&(p.pRangeProfilerObject as usize)) else {
            return INVALID;
        };
        let Some(c) = rp.config.clone() else {
            return BAD_OP;
        };
        if rp.session.as_ref().is_some_and(|s| !s.stack.is_empty()) {
            return BAD_OP;
        }
        let Some(s) = rp.session.take() else {
            return BAD_OP;
        };
        p.targetNestingLevel = c.min_level;
        if let Some(e) = fault {
            // The replay failed: the session is over and its data lost.
            rp.collected = None;
            rp.pass = 0;
            p.passIndex = 0;
            p.isAllPassSubmitted = 0;
            return e;
        }
        if c.kernel_replay {
            p.passIndex = 0;
            rp.collected = Some(Collected {
                ranges: s.ranges,
                dropped: s.dropped,
                complete: true,
            });
        } else {
            p.passIndex = rp.pass as usize;
            match &mut rp.collected {
                Some(prev) if rp.pass > 0 => {
                    if prev.ranges.len() + prev.dropped != s.ranges.len() + s.dropped {
                        violation(format!(
                            "user replay pass {} profiled {} ranges, pass 0 {}",
                            rp.pass,
                            s.ranges.len() + s.dropped,
                            prev.ranges.len() + prev.dropped
                        ));
                    }
                }
                _ => {
                    rp.collected = Some(Collected {
                        ranges: s.ranges,
                        dropped: s.dropped,
                        complete: false,
                    });
                }
            }
            rp.pass += 1;
            if rp.pass >= c.passes {
                rp.pass = 0;
                if let Some(col) = &mut rp.collected {
                    col.complete = true;
                }
            }
        }
        p.isAllPassSubmitted = u8::from(rp.collected.as_ref().is_some_and(|c| c.complete));
        OK
    }

    /// Appends the collected ranges to the counter data image.
    ///
    /// # Safety
    /// CUPTI's contract for `cuptiRangeProfilerDecodeData`: the counter data image given at
    /// configuration is alive.
    pub(crate) unsafe fn decode(&self, p: &mut sys::CUpti_RangeProfiler_DecodeData_Params) -> R {
        let mut st = self.st();
        let fault = st.fault(ProfilerCall::Decode);
        let Some(rp) = st.profilers.get_mut(&(p.pRangeProfilerObject as usize)) else {
            return INVALID;
        };
        let Some(c) = &rp.config else {
            return BAD_OP;
        };
        if rp.session.is_some() || !rp.collected.as_ref().is_some_and(|c| c.complete) {
            return BAD_OP;
        }
        let col = rp.collected.take().expect("checked");
        if let Some(e) = fault {
            return e;
        }
        // SAFETY: caller contract: the image of the configuration, alive, not otherwise
        // referenced during the call.
        let Some(img) = (unsafe { image(c.image as *const u8, c.image_size) }) else {
            return INVALID;
        };
        let slots = read_u64(img, 8) as usize;
        let mut n = read_u64(img, 16) as usize;
        let mut dropped = col.dropped;
        for (name, w) in &col.ranges {
            if n >= slots {
                dropped += 1;
                continue;
            }
            let at = DATA_HEADER + n * SLOT;
            let slot = &mut img[at..at + SLOT];
            let bytes = name.as_bytes();
            let len = bytes.len().min(NAME_BYTES - 1);
            slot[..NAME_BYTES].fill(0);
            slot[..len].copy_from_slice(&bytes[..len]);
            for (i, v) in [w.launches, w.gpu_time_ns, w.threads, w.blocks, w.warps]
                .into_iter()
                .enumerate()
            {
                write_u64(slot, NAME_BYTES + 8 * i, v);
            }
            n += 1;
        }
        write_u64(img, 16, n as u64);
        p.numOfRangeDropped = dropped;
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiRangeProfilerGetCounterDataInfo`.
    pub(crate) unsafe fn counter_data_info(
        &self,
        p: &mut sys::CUpti_RangeProfiler_GetCounterDataInfo_Params,
    ) -> R {
        // SAFETY: caller contract (read only here).
        let Some(img) = (unsafe { image(p.pCounterDataImage, p.counterDataImageSize) }) else {
            return INVALID;
        };
        if &img[..8] != DATA_MAGIC {
            return INVALID;
        }
        p.numTotalRanges = read_u64(img, 16) as usize;
        OK
    }

    /// # Safety
    /// CUPTI's contract for `cuptiRangeProfilerCounterDataGetRangeInfo`.
    pub(crate) unsafe fn range_info(
        &self,
        p: &mut sys::CUpti_RangeProfiler_CounterData_GetRangeInfo_Params,
    ) -> R {
        // SAFETY: caller contract (read only here).
        let Some(img) = (unsafe { image(p.pCounterDataImage, p.counterDataImageSize) }) else {
            return INVALID;
        };
        let Some((name, _)) = read_range(img, p.rangeIndex) else {
            return INVALID;
        };
        // SAFETY: caller contract.
        let delimiter = unsafe { text(p.rangeDelimiter) }.unwrap_or_else(|| "/".into());
        p.rangeName = static_cstr(&name.replace(LEVELS, &delimiter)).as_ptr();
        OK
    }
}

/// A configuration image's passes and metric names.
///
/// # Safety
/// `p` is null or an image of `size` bytes.
unsafe fn parse_config(p: *const u8, size: usize) -> Option<(u32, Vec<String>)> {
    if p.is_null() || size < 24 {
        return None;
    }
    // SAFETY: caller contract.
    let b = unsafe { std::slice::from_raw_parts(p, size) };
    if &b[..8] != CONFIG_MAGIC {
        return None;
    }
    let passes = u32::try_from(read_u64(b, 8)).ok()?;
    let n = read_u64(b, 16) as usize;
    let names: Vec<String> = b[24..]
        .split(|&c| c == 0)
        .take(n)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    (n > 0 && names.len() == n).then_some((passes, names))
}

/// Range `i` of a decoded counter data image: its name and work.
fn read_range(img: &[u8], i: usize) -> Option<(String, Work)> {
    if &img[..8] != DATA_MAGIC || i >= read_u64(img, 16) as usize {
        return None;
    }
    let at = DATA_HEADER + i * SLOT;
    let slot = img.get(at..at + SLOT)?;
    let end = slot[..NAME_BYTES].iter().position(|&c| c == 0)?;
    let name = String::from_utf8_lossy(&slot[..end]).into_owned();
    let v = |k: usize| read_u64(slot, NAME_BYTES + 8 * k);
    Some((
        name,
        Work {
            launches: v(0),
            gpu_time_ns: v(1),
            threads: v(2),
            blocks: v(3),
            warps: v(4),
        },
    ))
}

#[cfg(test)]
mod tests {
    //! The profiler driven through its parameter blocks as a tool drives it: user replay,
    //! several ranges per pass, user ranges, drops, faults. (The injection only asks for
    //! kernel replay so far; its end-to-end tests are in injection-cuda.)
    use super::*;
    use crate::counters::ProfilerSpec;
    use crate::scenario::KernelSpec;
    use std::ffi::CString;

    type Rg = sys::CUpti_ProfilerRange;
    type Rm = sys::CUpti_ProfilerReplayMode;

    fn work(us: u64, blocks: u32) -> Work {
        let k = KernelSpec {
            name: "k".into(),
            symbol: "_Z1kv".into(),
            registers: 0,
            static_smem: 0,
            duration_us: us,
        };
        Work::of(&k, [blocks, 1, 1], [64, 1, 1])
    }

    /// A tool's side of one context: the host with `metrics`, the range profiler configured.
    struct Tool {
        sim: Sim,
        host: *mut sys::CUpti_Profiler_Host_Object,
        rp: *mut sys::CUpti_RangeProfiler_Object,
        names: Vec<CString>,
        counter_data: Vec<u8>,
        config: Vec<u8>,
    }

    impl Tool {
        fn new(spec: ProfilerSpec, metrics: &[&str], range: Rg, replay: Rm, max: usize) -> Tool {
            let sim = Sim::default();
            sim.configure(spec);
            let names: Vec<CString> = metrics.iter().map(|m| CString::new(*m).unwrap()).collect();
            let mut t = Tool {
                sim,
                host: std::ptr::null_mut(),
                rp: std::ptr::null_mut(),
                names,
                counter_data: Vec::new(),
                config: Vec::new(),
            };
            // SAFETY: every block below is filled as CUPTI documents, with buffers that outlive
            // the calls (and the images the profiler object).
            unsafe {
                assert_eq!(t.sim.initialize(&mut Default::default()), OK);
                let mut h = sys::CUpti_Profiler_Host_Initialize_Params {
                    structSize: 1,
                    profilerType: sys::CUpti_ProfilerType::CUPTI_PROFILER_TYPE_RANGE_PROFILER,
                    pChipName: c"GH100".as_ptr(),
                    ..Default::default()
                };
                assert_eq!(t.sim.host_initialize(&mut h), OK);
                t.host = h.pHostObject;
                let mut ptrs = t.ptrs();
                let mut a = sys::CUpti_Profiler_Host_ConfigAddMetrics_Params {
                    pHostObject: t.host,
                    ppMetricNames: ptrs.as_mut_ptr(),
                    numMetrics: ptrs.len(),
                    ..Default::default()
                };
                assert_eq!(t.sim.add_metrics(&mut a), OK);
                let mut s = sys::CUpti_Profiler_Host_GetConfigImageSize_Params {
                    pHostObject: t.host,
                    ..Default::default()
                };
                assert_eq!(t.sim.config_image_size(&mut s), OK);
                t.config = vec![0; s.configImageSize];
                let mut c = sys::CUpti_Profiler_Host_GetConfigImage_Params {
                    pHostObject: t.host,
                    configImageSize: t.config.len(),
                    pConfigImage: t.config.as_mut_ptr(),
                    ..Default::default()
                };
                assert_eq!(t.sim.config_image(&mut c), OK);
                let mut e = sys::CUpti_RangeProfiler_Enable_Params {
                    ctx: CONTEXT_HANDLE as sys::CUcontext,
                    ..Default::default()
                };
                assert_eq!(t.sim.enable(&mut e), OK);
                t.rp = e.pRangeProfilerObject;
                let mut d = sys::CUpti_RangeProfiler_GetCounterDataSize_Params {
                    pRangeProfilerObject: t.rp,
                    pMetricNames: ptrs.as_mut_ptr(),
                    numMetrics: ptrs.len(),
                    maxNumOfRanges: max,
                    ..Default::default()
                };
                assert_eq!(t.sim.counter_data_size(&mut d), OK);
                t.counter_data = vec![0; d.counterDataSize];
                t.init_data();
                let mut sc = sys::CUpti_RangeProfiler_SetConfig_Params {
                    pRangeProfilerObject: t.rp,
                    configSize: t.config.len(),
                    pConfig: t.config.as_ptr(),
                    counterDataImageSize: t.counter_data.len(),
                    pCounterDataImage: t.counter_data.as_mut_ptr(),
                    range,
                    replayMode: replay,
                    maxRangesPerPass: max,
                    numNestingLevels: 1,
                    minNestingLevel: 1,
                    ..Default::default()
                };
                assert_eq!(t.sim.set_config(&mut sc), OK);
            }
            t
        }

        fn ptrs(&self) -> Vec<*const c_char> {
            self.names.iter().map(|n| n.as_ptr()).collect()
        }

        fn init_data(&mut self) {
            let mut i = sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params {
                pRangeProfilerObject: self.rp,
                counterDataSize: self.counter_data.len(),
                pCounterData: self.counter_data.as_mut_ptr(),
                ..Default::default()
            };
            // SAFETY: our image, of the size asked for.
            assert_eq!(unsafe { self.sim.counter_data_initialize(&mut i) }, OK);
        }

        fn start(&self) -> R {
            let mut p = sys::CUpti_RangeProfiler_Start_Params {
                pRangeProfilerObject: self.rp,
                ..Default::default()
            };
            // SAFETY: a live object.
            unsafe { self.sim.start(&mut p) }
        }

        fn push(&self, name: &CStr) -> R {
            let mut p = sys::CUpti_RangeProfiler_PushRange_Params {
                pRangeProfilerObject: self.rp,
                pRangeName: name.as_ptr(),
                ..Default::default()
            };
            // SAFETY: a live object; the name outlives the call.
            unsafe { self.sim.push_range(&mut p) }
        }

        fn pop(&self) -> R {
            let mut p = sys::CUpti_RangeProfiler_PopRange_Params {
                pRangeProfilerObject: self.rp,
                ..Default::default()
            };
            // SAFETY: a live object.
            unsafe { self.sim.pop_range(&mut p) }
        }

        /// Stop: (result, every pass submitted).
        fn stop(&self) -> (R, bool) {
            let mut p = sys::CUpti_RangeProfiler_Stop_Params {
                pRangeProfilerObject: self.rp,
                ..Default::default()
            };
            // SAFETY: a live object.
            let r = unsafe { self.sim.stop(&mut p) };
            (r, p.isAllPassSubmitted != 0)
        }

        /// Decode: (result, ranges dropped).
        fn decode(&self) -> (R, usize) {
            let mut p = sys::CUpti_RangeProfiler_DecodeData_Params {
                pRangeProfilerObject: self.rp,
                ..Default::default()
            };
            // SAFETY: a live object whose image is alive.
            let r = unsafe { self.sim.decode(&mut p) };
            (r, p.numOfRangeDropped)
        }

        /// Every decoded range: its name (levels joined by `/`) and metric values.
        fn ranges(&self) -> Vec<(String, Vec<f64>)> {
            let mut info = sys::CUpti_RangeProfiler_GetCounterDataInfo_Params {
                pCounterDataImage: self.counter_data.as_ptr(),
                counterDataImageSize: self.counter_data.len(),
                ..Default::default()
            };
            // SAFETY: our image, valid for reads.
            assert_eq!(unsafe { self.sim.counter_data_info(&mut info) }, OK);
            (0..info.numTotalRanges)
                .map(|i| {
                    let mut r = sys::CUpti_RangeProfiler_CounterData_GetRangeInfo_Params {
                        pCounterDataImage: self.counter_data.as_ptr(),
                        counterDataImageSize: self.counter_data.len(),
                        rangeIndex: i,
                        rangeDelimiter: c"/".as_ptr(),
                        ..Default::default()
                    };
                    let mut ptrs = self.ptrs();
                    let mut values = vec![f64::NAN; ptrs.len()];
                    let mut e = sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params {
                        pHostObject: self.host,
                        pCounterDataImage: self.counter_data.as_ptr(),
                        counterDataImageSize: self.counter_data.len(),
                        rangeIndex: i,
                        ppMetricNames: ptrs.as_mut_ptr(),
                        numMetrics: ptrs.len(),
                        pMetricValues: values.as_mut_ptr(),
                        ..Default::default()
                    };
                    // SAFETY: our image and host; room for every value.
                    unsafe {
                        assert_eq!(self.sim.range_info(&mut r), OK);
                        assert_eq!(self.sim.evaluate(&mut e), OK);
                        (
                            CStr::from_ptr(r.rangeName).to_str().unwrap().to_owned(),
                            values,
                        )
                    }
                })
                .collect()
        }
    }

    const METRICS: [&str; 2] = ["gpu__time_duration.sum", "smsp__inst_executed.sum"];

    #[test]
    fn user_replay_collects_several_auto_ranges_over_every_pass() {
        let mut spec = ProfilerSpec::default();
        spec.metric_mut("smsp__inst_executed").passes = 2;
        let t = Tool::new(spec, &METRICS, Rg::CUPTI_AutoRange, Rm::CUPTI_UserReplay, 4);
        let kernels = [work(20, 2), work(50, 1), work(5, 4)];
        for pass in 0..2 {
            assert_eq!(t.start(), OK);
            assert_eq!(
                t.sim.kernel(CONTEXT_HANDLE, work(1, 1)),
                Profiled::No,
                "outside a range"
            );
            assert_eq!(t.push(c"batch"), OK);
            for w in kernels {
                // User replay: the kernel runs once, with its timestamps.
                assert_eq!(t.sim.kernel(CONTEXT_HANDLE, w), Profiled::Once);
            }
            assert_eq!(t.pop(), OK);
            let (r, all) = t.stop();
            assert_eq!((r, all), (OK, pass == 1), "pass {pass}");
            if pass == 0 {
                assert_eq!(t.decode().0, BAD_OP, "not every pass ran yet");
            }
        }
        assert_eq!(t.decode(), (OK, 0));
        // 64 threads a block: 2 warps a block, 10 instructions a warp.
        assert_eq!(
            t.ranges(),
            [
                ("0".to_owned(), vec![20_000.0, 40.0]),
                ("1".to_owned(), vec![50_000.0, 20.0]),
                ("2".to_owned(), vec![5_000.0, 80.0]),
            ]
        );
    }

    #[test]
    fn kernel_replay_replays_each_kernel_of_a_range_once_per_pass_and_drops_what_does_not_fit() {
        let mut spec = ProfilerSpec::default();
        spec.metric_mut("gpu__time_duration").passes = 3;
        let mut t = Tool::new(
            spec,
            &METRICS,
            Rg::CUPTI_AutoRange,
            Rm::CUPTI_KernelReplay,
            2,
        );
        assert_eq!(t.start(), OK);
        assert_eq!(t.push(c"kernel"), OK);
        assert_eq!(
            t.sim.kernel(CONTEXT_HANDLE, work(20, 1)),
            Profiled::Replayed(3)
        );
        assert_eq!(
            t.sim.kernel(CONTEXT_HANDLE, work(30, 1)),
            Profiled::Replayed(3)
        );
        // The pass holds two ranges: the third kernel is not profiled, not replayed.
        assert_eq!(t.sim.kernel(CONTEXT_HANDLE, work(40, 1)), Profiled::No);
        assert_eq!(t.pop(), OK);
        assert_eq!(t.stop(), (OK, true));
        assert_eq!(t.decode(), (OK, 1));
        let r = t.ranges();
        assert_eq!(r.len(), 2);
        assert_eq!((r[1].0.as_str(), r[1].1[0]), ("1", 30_000.0));
        // Decoded data stays until the image is initialised again.
        t.init_data();
        assert!(t.ranges().is_empty());
    }

    #[test]
    fn user_ranges_hold_the_work_of_their_kernels_and_are_named_by_their_levels() {
        let t = Tool::new(
            ProfilerSpec::default(),
            &METRICS,
            Rg::CUPTI_UserRange,
            Rm::CUPTI_UserReplay,
            4,
        );
        assert_eq!(t.start(), OK);
        assert_eq!(t.push(c"step"), OK);
        assert_eq!(t.sim.kernel(CONTEXT_HANDLE, work(20, 1)), Profiled::Once);
        assert_eq!(t.sim.kernel(CONTEXT_HANDLE, work(30, 1)), Profiled::Once);
        assert_eq!(t.pop(), OK);
        assert_eq!(t.pop(), BAD_OP, "nothing pushed");
        assert_eq!(t.stop(), (OK, true));
        assert_eq!(t.decode().0, OK);
        assert_eq!(t.ranges(), [("step".to_owned(), vec![50_000.0, 40.0])]);
    }

    #[test]
    fn the_session_protocol_is_checked() {
        let t = Tool::new(
            ProfilerSpec::default(),
            &METRICS,
            Rg::CUPTI_AutoRange,
            Rm::CUPTI_KernelReplay,
            1,
        );
        assert_eq!(t.push(c"x"), BAD_OP, "push before start");
        assert_eq!(t.stop().0, BAD_OP, "stop before start");
        assert_eq!(t.start(), OK);
        assert_eq!(t.start(), BAD_OP, "started twice");
        assert_eq!(t.push(c"x"), OK);
        assert_eq!(t.stop().0, BAD_OP, "a range is still pushed");
        assert_eq!(t.pop(), OK);
        assert_eq!(t.decode().0, BAD_OP, "decode before stop");
        assert_eq!(t.stop(), (OK, true));
        assert_eq!(t.decode(), (OK, 0));
        assert!(t.ranges().is_empty(), "no kernel ran");
        // A second range profiler on the context is refused.
        let mut e = sys::CUpti_RangeProfiler_Enable_Params {
            ctx: CONTEXT_HANDLE as sys::CUcontext,
            ..Default::default()
        };
        // SAFETY: a filled block.
        assert_eq!(unsafe { t.sim.enable(&mut e) }, BAD_OP);
    }

    #[test]
    fn a_bad_name_fails_its_add_and_leaves_the_ones_before_it() {
        let sim = Sim::default();
        let mut h = sys::CUpti_Profiler_Host_Initialize_Params {
            profilerType: sys::CUpti_ProfilerType::CUPTI_PROFILER_TYPE_RANGE_PROFILER,
            pChipName: c"GH100".as_ptr(),
            ..Default::default()
        };
        // SAFETY: filled blocks with strings that outlive the calls.
        unsafe {
            assert_eq!(sim.host_initialize(&mut h), OK);
            let mut names = [
                c"gpu__time_duration.sum".as_ptr(),
                c"dram__bytes_readd.sum".as_ptr(),
                c"smsp__inst_executed.sum".as_ptr(),
            ];
            let mut a = sys::CUpti_Profiler_Host_ConfigAddMetrics_Params {
                pHostObject: h.pHostObject,
                ppMetricNames: names.as_mut_ptr(),
                numMetrics: 3,
                ..Default::default()
            };
            assert_eq!(sim.add_metrics(&mut a), R::CUPTI_ERROR_INVALID_METRIC_NAME);
            let st = sim.st();
            assert_eq!(
                st.hosts[&(h.pHostObject as usize)].metrics,
                ["gpu__time_duration.sum"]
            );
            drop(st);
            let mut other = sys::CUpti_Profiler_Host_Initialize_Params {
                pChipName: c"GB200".as_ptr(),
                ..h
            };
            assert_eq!(
                sim.host_initialize(&mut other),
                R::CUPTI_ERROR_INVALID_CHIP_NAME
            );
        }
    }

    #[test]
    fn a_fault_fails_the_calls_it_names() {
        let spec = ProfilerSpec::default().fault(Fault::nth(
            ProfilerCall::Stop,
            1,
            "CUPTI_ERROR_HARDWARE",
        ));
        let mut t = Tool::new(
            spec,
            &METRICS,
            Rg::CUPTI_AutoRange,
            Rm::CUPTI_KernelReplay,
            1,
        );
        for (i, want) in [OK, R::CUPTI_ERROR_HARDWARE, OK].into_iter().enumerate() {
            assert_eq!(t.start(), OK, "session {i} starts (a failed one is over)");
            assert_eq!(t.push(c"kernel"), OK);
            t.sim.kernel(CONTEXT_HANDLE, work(20, 1));
            assert_eq!(t.pop(), OK);
            assert_eq!(t.stop().0, want, "session {i}");
            if want == OK {
                assert_eq!(t.decode(), (OK, 0));
                assert_eq!(t.ranges().len(), 1);
                t.init_data();
            } else {
                assert_eq!(t.decode().0, BAD_OP, "its data is lost");
            }
        }
    }
}
