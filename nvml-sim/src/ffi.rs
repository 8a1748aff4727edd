//! The exported NVML functions. Every body runs inside `guard`: a panic
//! becomes `NVML_ERROR_UNKNOWN`, never an unwind into C.

use super::{DeviceSpec, State, state};
use core::ffi::{CStr, c_char, c_uint, c_ulonglong, c_void};
use nvml_sys::{self as sys, nvmlReturn_t as R, pfn};
use std::time::Duration;

const OK: R = R::SUCCESS;

struct SimSample {
    seq: u64,
    device: Option<usize>,
}

fn guard(name: &'static str, f: impl FnOnce(&mut State) -> R) -> R {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut g = state();
        let Some(s) = g.as_mut() else {
            return R::ERROR_UNKNOWN;
        };
        *s.calls.entry(name.to_owned()).or_default() += 1;
        if s.spec.missing.iter().any(|m| m == name) {
            return R::ERROR_FUNCTION_NOT_FOUND;
        }
        f(s)
    }))
    .unwrap_or(R::ERROR_UNKNOWN)
}

/// Like [`guard`] for calls on an initialised device: `f` gets its spec.
fn on_device(
    name: &'static str,
    d: sys::nvmlDevice_t,
    reading: &str,
    f: impl FnOnce(&DeviceSpec) -> R,
) -> R {
    guard(name, |s| {
        if s.inits <= 0 {
            return R::ERROR_UNINITIALIZED;
        }
        let Some(dev) = device_index(s, d).map(|i| &s.spec.devices[i]) else {
            return R::ERROR_INVALID_ARGUMENT;
        };
        if dev.unsupported.iter().any(|u| u == reading) {
            return R::ERROR_NOT_SUPPORTED;
        }
        f(dev)
    })
}

fn device_index(s: &State, d: sys::nvmlDevice_t) -> Option<usize> {
    let i = (d as usize).checked_sub(1)?;
    (i < s.spec.devices.len()).then_some(i)
}

fn handle(i: usize) -> sys::nvmlDevice_t {
    (i + 1) as sys::nvmlDevice_t
}

/// Writes `s` with its NUL into `buf` of `len` bytes.
///
/// # Safety
/// `buf` points at `len` writable bytes.
unsafe fn write_text(buf: *mut c_char, len: c_uint, s: &str) -> R {
    if buf.is_null() || (len as usize) < s.len() + 1 {
        return R::ERROR_INSUFFICIENT_SIZE;
    }
    // SAFETY: checked room for the text and its NUL.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast::<c_char>(), buf, s.len());
        *buf.add(s.len()) = 0;
    }
    OK
}

/// # Safety
/// `p` is NULL or NUL-terminated text.
unsafe fn read_text(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller's promise.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Writes `v` through `out`, or answers `INVALID_ARGUMENT` for NULL.
///
/// # Safety
/// `out` is NULL or valid for a write.
unsafe fn put<T>(out: *mut T, v: T) -> R {
    if out.is_null() {
        return R::ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: non-null, and the caller's promise.
    unsafe { out.write(v) };
    OK
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlInit_v2() -> R {
    guard("nvmlInit_v2", |s| {
        if let Some(e) = s.spec.init_error {
            return R(e);
        }
        s.inits += 1;
        OK
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlShutdown() -> R {
    guard("nvmlShutdown", |s| {
        if s.inits <= 0 {
            return R::ERROR_UNINITIALIZED;
        }
        s.inits -= 1;
        OK
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlErrorString(r: R) -> *const c_char {
    let s: &'static CStr = match r {
        R::SUCCESS => c"Success",
        R::ERROR_NOT_SUPPORTED => c"Not Supported",
        R::ERROR_INVALID_ARGUMENT => c"Invalid Argument",
        R::ERROR_NOT_FOUND => c"Not Found",
        R::ERROR_UNINITIALIZED => c"Uninitialized",
        R::ERROR_DRIVER_NOT_LOADED => c"Driver Not Loaded",
        R::ERROR_FUNCTION_NOT_FOUND => c"Function Not Found",
        R::ERROR_ARGUMENT_VERSION_MISMATCH => c"Argument version mismatch",
        _ => c"Unknown Error",
    };
    s.as_ptr()
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(buf: *mut c_char, len: c_uint) -> R {
    // SAFETY: NVML's contract: `len` writable bytes.
    guard("nvmlSystemGetDriverVersion", |_| unsafe {
        write_text(buf, len, "580.65.06-sim")
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(n: *mut c_uint) -> R {
    // SAFETY: NVML's contract.
    guard("nvmlDeviceGetCount_v2", |s| unsafe {
        put(n, s.spec.devices.len() as c_uint)
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(i: c_uint, d: *mut sys::nvmlDevice_t) -> R {
    guard("nvmlDeviceGetHandleByIndex_v2", |s| {
        if s.inits <= 0 {
            return R::ERROR_UNINITIALIZED;
        }
        if i as usize >= s.spec.devices.len() {
            return R::ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: NVML's contract.
        unsafe { put(d, handle(i as usize)) }
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByUUID(
    u: *const c_char,
    d: *mut sys::nvmlDevice_t,
) -> R {
    guard("nvmlDeviceGetHandleByUUID", |s| {
        if s.inits <= 0 {
            return R::ERROR_UNINITIALIZED;
        }
        // SAFETY: NVML's contract: NUL-terminated text.
        let Some(u) = (unsafe { read_text(u) }) else {
            return R::ERROR_INVALID_ARGUMENT;
        };
        match s
            .spec
            .devices
            .iter()
            .position(|x| x.uuid.eq_ignore_ascii_case(&u))
        {
            // SAFETY: NVML's contract.
            Some(i) => unsafe { put(d, handle(i)) },
            None => R::ERROR_NOT_FOUND,
        }
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByPciBusId_v2(
    p: *const c_char,
    d: *mut sys::nvmlDevice_t,
) -> R {
    guard("nvmlDeviceGetHandleByPciBusId_v2", |s| {
        if s.inits <= 0 {
            return R::ERROR_UNINITIALIZED;
        }
        // SAFETY: NVML's contract: NUL-terminated text.
        let Some(p) = (unsafe { read_text(p) }) else {
            return R::ERROR_INVALID_ARGUMENT;
        };
        let want = gpu_trace_model::pci::normalize_bdf(&p);
        match s
            .spec
            .devices
            .iter()
            .position(|x| gpu_trace_model::pci::normalize_bdf(&x.pci) == want)
        {
            // SAFETY: NVML's contract.
            Some(i) => unsafe { put(d, handle(i)) },
            None => R::ERROR_NOT_FOUND,
        }
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(
    d: sys::nvmlDevice_t,
    buf: *mut c_char,
    len: c_uint,
) -> R {
    // SAFETY: NVML's contract.
    on_device("nvmlDeviceGetName", d, "name", |x| unsafe {
        write_text(buf, len, &x.name)
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    d: sys::nvmlDevice_t,
    buf: *mut c_char,
    len: c_uint,
) -> R {
    // SAFETY: NVML's contract.
    on_device("nvmlDeviceGetUUID", d, "uuid", |x| unsafe {
        write_text(buf, len, &x.uuid)
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetClockInfo(
    d: sys::nvmlDevice_t,
    t: sys::nvmlClockType_t,
    out: *mut c_uint,
) -> R {
    on_device("nvmlDeviceGetClockInfo", d, "clock", |x| {
        let v = match t {
            sys::nvmlClockType_t::CLOCK_SM | sys::nvmlClockType_t::CLOCK_GRAPHICS => {
                x.values.sm_clock
            }
            sys::nvmlClockType_t::CLOCK_MEM => x.values.mem_clock,
            sys::nvmlClockType_t::CLOCK_VIDEO => 1_755,
            _ => return R::ERROR_INVALID_ARGUMENT,
        };
        // SAFETY: NVML's contract.
        unsafe { put(out, v) }
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUtilizationRates(
    d: sys::nvmlDevice_t,
    out: *mut sys::nvmlUtilization_t,
) -> R {
    on_device("nvmlDeviceGetUtilizationRates", d, "utilization", |x| {
        let u = sys::nvmlUtilization_t {
            gpu: x.values.gpu_util,
            memory: x.values.mem_util,
        };
        // SAFETY: NVML's contract.
        unsafe { put(out, u) }
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPowerUsage(d: sys::nvmlDevice_t, out: *mut c_uint) -> R {
    // SAFETY: NVML's contract.
    on_device("nvmlDeviceGetPowerUsage", d, "power", |x| unsafe {
        put(out, x.values.power_mw)
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(
    d: sys::nvmlDevice_t,
    sensor: sys::nvmlTemperatureSensors_t,
    out: *mut c_uint,
) -> R {
    on_device("nvmlDeviceGetTemperature", d, "temperature", |x| {
        if sensor != sys::nvmlTemperatureSensors_t::TEMPERATURE_GPU {
            return R::ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: NVML's contract.
        unsafe { put(out, x.values.temperature as c_uint) }
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTemperatureV(
    d: sys::nvmlDevice_t,
    t: *mut sys::nvmlTemperature_v1_t,
) -> R {
    on_device("nvmlDeviceGetTemperatureV", d, "temperature", |x| {
        if t.is_null() {
            return R::ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: non-null, NVML's contract.
        let t = unsafe { &mut *t };
        if t.version != sys::nvmlTemperature_v1 {
            return R::ERROR_ARGUMENT_VERSION_MISMATCH;
        }
        if t.sensorType != sys::nvmlTemperatureSensors_t::TEMPERATURE_GPU {
            return R::ERROR_INVALID_ARGUMENT;
        }
        t.temperature = x.values.temperature;
        OK
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo(
    d: sys::nvmlDevice_t,
    out: *mut sys::nvmlMemory_t,
) -> R {
    on_device("nvmlDeviceGetMemoryInfo", d, "memory", |x| {
        let v = &x.values;
        let used = v.mem_used + v.mem_reserved;
        let m = sys::nvmlMemory_t {
            total: v.mem_total,
            free: v.mem_total.saturating_sub(used),
            used,
        };
        // SAFETY: NVML's contract.
        unsafe { put(out, m) }
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(
    d: sys::nvmlDevice_t,
    out: *mut sys::nvmlMemory_v2_t,
) -> R {
    on_device("nvmlDeviceGetMemoryInfo_v2", d, "memory", |x| {
        if out.is_null() {
            return R::ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: non-null, NVML's contract.
        let m = unsafe { &mut *out };
        if m.version != sys::nvmlMemory_v2 {
            return R::ERROR_ARGUMENT_VERSION_MISMATCH;
        }
        let v = &x.values;
        m.total = v.mem_total;
        m.reserved = v.mem_reserved;
        m.used = v.mem_used;
        m.free = v.mem_total.saturating_sub(v.mem_used + v.mem_reserved);
        OK
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksEventReasons(
    d: sys::nvmlDevice_t,
    out: *mut c_ulonglong,
) -> R {
    // SAFETY: NVML's contract.
    on_device(
        "nvmlDeviceGetCurrentClocksEventReasons",
        d,
        "reasons",
        |x| unsafe { put(out, x.values.reasons) },
    )
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksThrottleReasons(
    d: sys::nvmlDevice_t,
    out: *mut c_ulonglong,
) -> R {
    // SAFETY: NVML's contract.
    on_device(
        "nvmlDeviceGetCurrentClocksThrottleReasons",
        d,
        "reasons",
        |x| unsafe { put(out, x.values.reasons) },
    )
}

fn delay_of(f: impl FnOnce(&super::Spec) -> u64) -> Duration {
    Duration::from_micros(state().as_ref().map_or(0, |s| f(&s.spec)))
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPcieThroughput(
    d: sys::nvmlDevice_t,
    c: sys::nvmlPcieUtilCounter_t,
    out: *mut c_uint,
) -> R {
    // Blocks outside the lock, as the real call blocks only its caller.
    std::thread::sleep(delay_of(|s| s.pcie_delay_us));
    on_device("nvmlDeviceGetPcieThroughput", d, "pcie", |x| {
        let v = match c {
            sys::nvmlPcieUtilCounter_t::PCIE_UTIL_TX_BYTES => x.values.pcie_tx_kbps,
            sys::nvmlPcieUtilCounter_t::PCIE_UTIL_RX_BYTES => x.values.pcie_rx_kbps,
            _ => return R::ERROR_INVALID_ARGUMENT,
        };
        // SAFETY: NVML's contract.
        unsafe { put(out, v) }
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTotalEnergyConsumption(
    d: sys::nvmlDevice_t,
    out: *mut c_ulonglong,
) -> R {
    std::thread::sleep(delay_of(|s| s.energy_delay_us));
    guard("nvmlDeviceGetTotalEnergyConsumption", |s| {
        if s.inits <= 0 {
            return R::ERROR_UNINITIALIZED;
        }
        let Some(i) = device_index(s, d) else {
            return R::ERROR_INVALID_ARGUMENT;
        };
        let dev = &s.spec.devices[i];
        if dev.unsupported.iter().any(|u| u == "energy") {
            return R::ERROR_NOT_SUPPORTED;
        }
        let n = s.energy_calls[i];
        s.energy_calls[i] += 1;
        let v = dev.values.energy_mj + n * dev.values.energy_step_mj;
        // SAFETY: NVML's contract.
        unsafe { put(out, v) }
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmQueryDeviceSupport(
    d: sys::nvmlDevice_t,
    out: *mut sys::nvmlGpmSupport_t,
) -> R {
    on_device("nvmlGpmQueryDeviceSupport", d, "gpm_query", |x| {
        if out.is_null() {
            return R::ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: non-null, NVML's contract.
        let g = unsafe { &mut *out };
        if g.version != sys::NVML_GPM_SUPPORT_VERSION {
            return R::ERROR_ARGUMENT_VERSION_MISMATCH;
        }
        g.isSupportedDevice = x.gpm as c_uint;
        OK
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmSampleAlloc(out: *mut sys::nvmlGpmSample_t) -> R {
    guard("nvmlGpmSampleAlloc", |s| {
        if out.is_null() {
            return R::ERROR_INVALID_ARGUMENT;
        }
        s.live_samples += 1;
        let b = Box::into_raw(Box::new(SimSample {
            seq: 0,
            device: None,
        }));
        // SAFETY: non-null, NVML's contract.
        unsafe { out.write(b.cast()) };
        OK
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmSampleFree(p: sys::nvmlGpmSample_t) -> R {
    guard("nvmlGpmSampleFree", |s| {
        if p.is_null() {
            return R::ERROR_INVALID_ARGUMENT;
        }
        s.live_samples -= 1;
        // SAFETY: a buffer from nvmlGpmSampleAlloc, freed once (NVML's contract).
        drop(unsafe { Box::from_raw(p.cast::<SimSample>()) });
        OK
    })
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmSampleGet(d: sys::nvmlDevice_t, p: sys::nvmlGpmSample_t) -> R {
    guard("nvmlGpmSampleGet", |s| {
        if s.inits <= 0 {
            return R::ERROR_UNINITIALIZED;
        }
        let Some(i) = device_index(s, d) else {
            return R::ERROR_INVALID_ARGUMENT;
        };
        if !s.spec.devices[i].gpm {
            return R::ERROR_NOT_SUPPORTED;
        }
        if p.is_null() {
            return R::ERROR_INVALID_ARGUMENT;
        }
        s.seq += 1;
        // SAFETY: a live buffer from nvmlGpmSampleAlloc (NVML's contract).
        let b = unsafe { &mut *p.cast::<SimSample>() };
        b.seq = s.seq;
        b.device = Some(i);
        OK
    })
}

fn metric_name(id: c_uint) -> &'static CStr {
    match id {
        1 => c"gract",
        2 => c"smutil",
        3 => c"smocc",
        5 => c"anytensor",
        10 => c"dramutil",
        20 => c"pcietx",
        21 => c"pcierx",
        60 => c"nvlinkrx",
        61 => c"nvlinktx",
        _ => c"unknown",
    }
}

/// # Safety
/// NVML's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmMetricsGet(m: *mut sys::nvmlGpmMetricsGet_t) -> R {
    guard("nvmlGpmMetricsGet", |s| {
        if m.is_null() {
            return R::ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: non-null, NVML's contract.
        let m = unsafe { &mut *m };
        if m.version != sys::NVML_GPM_METRICS_GET_VERSION {
            return R::ERROR_ARGUMENT_VERSION_MISMATCH;
        }
        if m.numMetrics as usize > sys::NVML_GPM_METRIC_MAX
            || m.sample1.is_null()
            || m.sample2.is_null()
        {
            return R::ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: live buffers from nvmlGpmSampleAlloc (NVML's contract).
        let (a, b) = unsafe {
            (
                &*m.sample1.cast::<SimSample>(),
                &*m.sample2.cast::<SimSample>(),
            )
        };
        let (Some(da), Some(db)) = (a.device, b.device) else {
            return R::ERROR_INVALID_ARGUMENT;
        };
        if da != db || b.seq <= a.seq {
            return R::ERROR_INVALID_ARGUMENT;
        }
        let dev = &s.spec.devices[da];
        for x in m.metrics.iter_mut().take(m.numMetrics as usize) {
            let v = dev.values.gpm.iter().find(|(id, _)| *id == x.metricId);
            match v {
                Some((_, v)) if !dev.gpm_unsupported.contains(&x.metricId) => {
                    x.nvmlReturn = OK;
                    x.value = *v;
                }
                _ => x.nvmlReturn = R::ERROR_NOT_SUPPORTED,
            }
            let n = metric_name(x.metricId).as_ptr() as *mut c_char;
            x.metricInfo = sys::nvmlGpmMetricInfo {
                shortName: n,
                longName: n,
                unit: c"%".as_ptr() as *mut c_char,
            };
        }
        OK
    })
}

// Every export has NVML's prototype.
const _: () = {
    let _: pfn::nvmlInit_v2 = nvmlInit_v2;
    let _: pfn::nvmlShutdown = nvmlShutdown;
    let _: pfn::nvmlErrorString = nvmlErrorString;
    let _: pfn::nvmlSystemGetDriverVersion = nvmlSystemGetDriverVersion;
    let _: pfn::nvmlDeviceGetCount_v2 = nvmlDeviceGetCount_v2;
    let _: pfn::nvmlDeviceGetHandleByIndex_v2 = nvmlDeviceGetHandleByIndex_v2;
    let _: pfn::nvmlDeviceGetHandleByUUID = nvmlDeviceGetHandleByUUID;
    let _: pfn::nvmlDeviceGetHandleByPciBusId_v2 = nvmlDeviceGetHandleByPciBusId_v2;
    let _: pfn::nvmlDeviceGetName = nvmlDeviceGetName;
    let _: pfn::nvmlDeviceGetUUID = nvmlDeviceGetUUID;
    let _: pfn::nvmlDeviceGetClockInfo = nvmlDeviceGetClockInfo;
    let _: pfn::nvmlDeviceGetUtilizationRates = nvmlDeviceGetUtilizationRates;
    let _: pfn::nvmlDeviceGetPowerUsage = nvmlDeviceGetPowerUsage;
    let _: pfn::nvmlDeviceGetTemperature = nvmlDeviceGetTemperature;
    let _: pfn::nvmlDeviceGetTemperatureV = nvmlDeviceGetTemperatureV;
    let _: pfn::nvmlDeviceGetMemoryInfo = nvmlDeviceGetMemoryInfo;
    let _: pfn::nvmlDeviceGetMemoryInfo_v2 = nvmlDeviceGetMemoryInfo_v2;
    let _: pfn::nvmlDeviceGetCurrentClocksEventReasons = nvmlDeviceGetCurrentClocksEventReasons;
    let _: pfn::nvmlDeviceGetCurrentClocksThrottleReasons =
        nvmlDeviceGetCurrentClocksThrottleReasons;
    let _: pfn::nvmlDeviceGetPcieThroughput = nvmlDeviceGetPcieThroughput;
    let _: pfn::nvmlDeviceGetTotalEnergyConsumption = nvmlDeviceGetTotalEnergyConsumption;
    let _: pfn::nvmlGpmQueryDeviceSupport = nvmlGpmQueryDeviceSupport;
    let _: pfn::nvmlGpmSampleAlloc = nvmlGpmSampleAlloc;
    let _: pfn::nvmlGpmSampleFree = nvmlGpmSampleFree;
    let _: pfn::nvmlGpmSampleGet = nvmlGpmSampleGet;
    let _: pfn::nvmlGpmMetricsGet = nvmlGpmMetricsGet;
};

/// The in-process resolver for `nvml_sys::Api::load_with`: each name to its
/// export here, NULL for names the spec lists as `missing` or the fake
/// lacks.
pub fn resolve(name: &CStr) -> *const c_void {
    let n = name.to_str().unwrap_or("");
    if state()
        .as_ref()
        .is_some_and(|s| s.spec.missing.iter().any(|m| m == n))
    {
        return std::ptr::null();
    }
    macro_rules! table {
        ($($f:ident),* $(,)?) => {
            match n {
                $( stringify!($f) => $f as *const c_void, )*
                _ => std::ptr::null(),
            }
        };
    }
    table!(
        nvmlInit_v2,
        nvmlShutdown,
        nvmlErrorString,
        nvmlSystemGetDriverVersion,
        nvmlDeviceGetCount_v2,
        nvmlDeviceGetHandleByIndex_v2,
        nvmlDeviceGetHandleByUUID,
        nvmlDeviceGetHandleByPciBusId_v2,
        nvmlDeviceGetName,
        nvmlDeviceGetUUID,
        nvmlDeviceGetClockInfo,
        nvmlDeviceGetUtilizationRates,
        nvmlDeviceGetPowerUsage,
        nvmlDeviceGetTemperature,
        nvmlDeviceGetTemperatureV,
        nvmlDeviceGetMemoryInfo,
        nvmlDeviceGetMemoryInfo_v2,
        nvmlDeviceGetCurrentClocksEventReasons,
        nvmlDeviceGetCurrentClocksThrottleReasons,
        nvmlDeviceGetPcieThroughput,
        nvmlDeviceGetTotalEnergyConsumption,
        nvmlGpmQueryDeviceSupport,
        nvmlGpmSampleAlloc,
        nvmlGpmSampleFree,
        nvmlGpmSampleGet,
        nvmlGpmMetricsGet,
    )
}
