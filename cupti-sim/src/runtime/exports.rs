//! The exported C functions: the CUPTI and driver symbols the cupti-sys loader resolves, and
//! the host's entry point. Each body runs inside [`guard`]: no panic crosses the boundary.
#![allow(unreachable_pub, non_snake_case)] // exported to C under CUPTI's names

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::atomic::Ordering;

use cupti_sys as sys;

use super::{FAKE, Subscriber, flush_all, guard, lock, violation};

type R = sys::CUptiResult;
const OK: R = R::CUPTI_SUCCESS;
const INVALID: R = R::CUPTI_ERROR_INVALID_PARAMETER;

/// The CUPTI version the fake reports: 13.0 Update 1.
pub const VERSION: u32 = 130001;

/// Writes `v` through `p` unless it is null.
///
/// # Safety
/// `p` is null or valid for a write of `T`.
unsafe fn out<T>(p: *mut T, v: T) -> bool {
    if p.is_null() {
        return false;
    }
    // SAFETY: caller contract; non-null checked.
    unsafe { p.write(v) };
    true
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiGetVersion(v: *mut u32) -> R {
    // SAFETY: the caller's out-pointer, as CUPTI's contract.
    guard("cuptiGetVersion", INVALID, || unsafe {
        if out(v, FAKE.version.load(Ordering::Relaxed)) {
            OK
        } else {
            INVALID
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiGetResultString(r: R, s: *mut *const c_char) -> R {
    guard("cuptiGetResultString", INVALID, || {
        let msg = match crate::counters::RESULTS.iter().find(|(c, _)| *c == r) {
            Some((_, name)) => super::static_cstr(name),
            None => c"CUPTI_ERROR_UNKNOWN (cupti-sim)",
        };
        // SAFETY: the caller's out-pointer.
        if unsafe { out(s, msg.as_ptr()) } {
            OK
        } else {
            INVALID
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiGetTimestamp(t: *mut u64) -> R {
    // SAFETY: the caller's out-pointer.
    guard("cuptiGetTimestamp", INVALID, || unsafe {
        if out(t, super::activity_ts()) {
            OK
        } else {
            INVALID
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiSubscribe(
    h: *mut sys::CUpti_SubscriberHandle,
    cb: sys::CUpti_CallbackFunc,
    userdata: *mut c_void,
) -> R {
    guard("cuptiSubscribe", INVALID, || {
        subscribe(h, cb, userdata, None)
    })
}

/// `cuptiSubscribe_v2`: as `cuptiSubscribe`, with the subscriber's name; when CUPTI is taken,
/// the holder's name goes back through `oldSubscriberName`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiSubscribe_v2(
    h: *mut sys::CUpti_SubscriberHandle,
    cb: sys::CUpti_CallbackFunc,
    userdata: *mut c_void,
    p: *mut sys::CUpti_SubscriberParams,
) -> R {
    guard("cuptiSubscribe_v2", INVALID, || {
        // SAFETY: CUPTI's contract: a parameter block the caller owns for the call.
        let Some(p) = (unsafe { p.as_mut() }) else {
            return INVALID;
        };
        if p.structSize == 0 || p.subscriberName.is_null() {
            return INVALID;
        }
        // SAFETY: a NUL-terminated name (checked non-null), the caller's for the call.
        let name = unsafe { CStr::from_ptr(p.subscriberName) };
        if name.to_bytes().len() >= sys::CUPTI_SUBSCRIBER_NAME_MAX_LEN as usize {
            return INVALID;
        }
        let name = name.to_string_lossy().into_owned();
        let r = subscribe(h, cb, userdata, Some(name));
        if r == R::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
            && !p.oldSubscriberName.is_null()
            && p.oldSubscriberSize > 0
        {
            let holder = lock(&FAKE.holder).clone().unwrap_or_default();
            let n = holder.len().min(p.oldSubscriberSize - 1);
            // SAFETY: `oldSubscriberName` has `oldSubscriberSize` bytes (the caller's
            // contract); `n + 1` fit.
            unsafe {
                std::ptr::copy_nonoverlapping(holder.as_ptr().cast(), p.oldSubscriberName, n);
                *p.oldSubscriberName.add(n) = 0;
            }
        }
        r
    })
}

fn subscribe(
    h: *mut sys::CUpti_SubscriberHandle,
    cb: sys::CUpti_CallbackFunc,
    userdata: *mut c_void,
    name: Option<String>,
) -> R {
    let Some(cb) = cb else { return INVALID };
    let mut s = lock(&FAKE.sub);
    if s.is_some() {
        return R::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    let sub = Subscriber {
        cb,
        userdata: userdata as usize,
    };
    *s = Some(sub);
    *lock(&FAKE.last_sub) = Some(sub);
    let mut report = lock(&FAKE.report);
    report.subscribes += 1;
    report
        .subscriber_names
        .push(name.clone().unwrap_or_default());
    *lock(&FAKE.holder) = name;
    // SAFETY: the caller's out-pointer; any non-null token will do.
    if unsafe { out(h, 0x5b_usize as sys::CUpti_SubscriberHandle) } {
        OK
    } else {
        INVALID
    }
}

/// Another profiler, named `name`, subscribes before the injection loads
/// ([`crate::host::HELD_BY_ENV`]); its callbacks do nothing.
pub(crate) fn hold_for(name: String) {
    unsafe extern "C" fn ignore(
        _: *mut c_void,
        _: sys::CUpti_CallbackDomain,
        _: u32,
        _: *const c_void,
    ) {
    }
    *lock(&FAKE.sub) = Some(Subscriber {
        cb: ignore,
        userdata: 0,
    });
    *lock(&FAKE.holder) = Some(name);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiUnsubscribe(_h: sys::CUpti_SubscriberHandle) -> R {
    guard("cuptiUnsubscribe", INVALID, || {
        *lock(&FAKE.sub) = None;
        *lock(&FAKE.holder) = None;
        lock(&FAKE.report).unsubscribes += 1;
        OK
    })
}

/// Runs an enable call, noting a violation when another is under way: CUPTI requires enable
/// calls to be serialized.
fn serialized(what: &str, f: impl FnOnce() -> R) -> R {
    if FAKE.enabling.swap(true, Ordering::SeqCst) {
        violation(format!("{what} overlapped another enable call"));
    }
    if FAKE.slow_enable.load(Ordering::Relaxed) {
        // Long enough for an unserialized caller on another thread to overlap.
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    let r = f();
    FAKE.enabling.store(false, Ordering::SeqCst);
    r
}

fn known(domain: sys::CUpti_CallbackDomain, cbid: u32) -> bool {
    type D = sys::CUpti_CallbackDomain;
    let table = match domain {
        D::CUPTI_CB_DOMAIN_RUNTIME_API => sys::cbid_names::RUNTIME_CBID_NAMES,
        D::CUPTI_CB_DOMAIN_DRIVER_API => sys::cbid_names::DRIVER_CBID_NAMES,
        _ => return true,
    };
    table.iter().any(|(i, _)| *i == cbid)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiEnableCallback(
    enable: u32,
    _h: sys::CUpti_SubscriberHandle,
    domain: sys::CUpti_CallbackDomain,
    cbid: sys::CUpti_CallbackId,
) -> R {
    guard("cuptiEnableCallback", INVALID, || {
        serialized("cuptiEnableCallback", || {
            if !known(domain, cbid) {
                return INVALID;
            }
            let mut e = lock(&FAKE.enabled);
            if enable != 0 {
                e.ids.insert((domain.0, cbid));
            } else {
                e.ids.remove(&(domain.0, cbid));
            }
            OK
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiEnableDomain(
    enable: u32,
    _h: sys::CUpti_SubscriberHandle,
    domain: sys::CUpti_CallbackDomain,
) -> R {
    guard("cuptiEnableDomain", INVALID, || {
        serialized("cuptiEnableDomain", || {
            let mut e = lock(&FAKE.enabled);
            if enable != 0 {
                e.domains.insert(domain.0);
            } else {
                e.domains.remove(&domain.0);
            }
            OK
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiActivityEnable(k: sys::CUpti_ActivityKind) -> R {
    guard("cuptiActivityEnable", INVALID, || {
        // As on the H200 (driver 580, CUPTI 13.0): unified-memory records
        // cannot be enabled until the first context is made, not even from
        // inside its creation callback.
        if k == sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER
            && !super::exec::context_ready()
        {
            return sys::CUptiResult::CUPTI_ERROR_NOT_READY;
        }
        lock(&FAKE.kinds).insert(k.0);
        OK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiActivityDisable(k: sys::CUpti_ActivityKind) -> R {
    guard("cuptiActivityDisable", INVALID, || {
        lock(&FAKE.kinds).remove(&k.0);
        OK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiActivityRegisterCallbacks(
    req: sys::CUpti_BuffersCallbackRequestFunc,
    done: sys::CUpti_BuffersCallbackCompleteFunc,
) -> R {
    guard("cuptiActivityRegisterCallbacks", INVALID, || {
        let (Some(req), Some(done)) = (req, done) else {
            return INVALID;
        };
        *lock(&FAKE.buffer_cbs) = Some((req, done));
        OK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiActivityRegisterTimestampCallback(
    f: sys::CUpti_TimestampCallbackFunc,
) -> R {
    guard("cuptiActivityRegisterTimestampCallback", INVALID, || {
        if !lock(&FAKE.kinds).is_empty() {
            violation("timestamp callback registered after an activity kind was enabled".into());
        }
        *lock(&FAKE.timestamp) = f;
        OK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiActivityFlushAll(_flag: u32) -> R {
    guard("cuptiActivityFlushAll", INVALID, || {
        flush_all();
        OK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiActivityFlushPeriod(_ms: u32) -> R {
    OK
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiActivityGetNumDroppedRecords(
    _c: sys::CUcontext,
    _s: u32,
    n: *mut usize,
) -> R {
    // Buffers report what was dropped since the last one.
    let d = FAKE.dropped.swap(0, Ordering::Relaxed) as usize;
    // SAFETY: the caller's out-pointer.
    guard("cuptiActivityGetNumDroppedRecords", INVALID, || unsafe {
        if out(n, d) { OK } else { INVALID }
    })
}

/// Runs once per record, so without [`guard`]: nothing here can panic (no
/// indexing, no unwrap), and the unwinding frame a guard adds cost about 10%
/// of the injection's whole decode path in the `paths` benchmark. It attaches
/// nothing either: it only walks a buffer the tool holds.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiActivityGetNextRecord(
    buf: *mut u8,
    valid: usize,
    rec: *mut *mut sys::CUpti_Activity,
) -> R {
    if buf.is_null() || rec.is_null() {
        return INVALID;
    }
    // SAFETY: `buf[..valid]` is a buffer this fake filled and completed, and `*rec` null
    // or a record inside it that this function returned (CUPTI's iteration contract).
    unsafe {
        let cur = *rec;
        let off = if cur.is_null() {
            0
        } else {
            let kind = std::ptr::read_unaligned(cur.cast::<u32>());
            cur.cast::<u8>().offset_from(buf) as usize + super::record_size(kind)
        };
        if off + 4 > valid {
            return R::CUPTI_ERROR_MAX_LIMIT_REACHED;
        }
        let next = buf.add(off);
        if std::ptr::read_unaligned(next.cast::<u32>()) == super::POISON_KIND {
            return R::CUPTI_ERROR_INVALID_KIND;
        }
        *rec = next.cast();
    }
    OK
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiFinalize() -> R {
    guard("cuptiFinalize", INVALID, || {
        super::detach::finalize();
        OK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuptiGetDeviceId(ctx: sys::CUcontext, id: *mut u32) -> R {
    guard("cuptiGetDeviceId", INVALID, || {
        if ctx as u64 != crate::scenario::CONTEXT_HANDLE {
            return R::CUPTI_ERROR_INVALID_CONTEXT;
        }
        // SAFETY: the caller's out-pointer.
        if unsafe { out(id, 0) } { OK } else { INVALID }
    })
}

/// Exports a profiler function: counted in the report, its parameter block checked (present,
/// `structSize` set and no larger than the CUDA 13.0 struct) and handed to the fake's profiler.
macro_rules! profiler_fn {
    ($($name:ident($params:ty) => $method:ident;)*) => {
        $(
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name(p: *mut $params) -> R {
                guard(stringify!($name), INVALID, || {
                    *lock(&FAKE.report)
                        .profiler_calls
                        .entry(stringify!($name).to_owned())
                        .or_default() += 1;
                    // SAFETY: CUPTI's contract: a parameter block the caller owns for the call.
                    let Some(p) = (unsafe { p.as_mut() }) else {
                        violation(format!("{} without parameters", stringify!($name)));
                        return INVALID;
                    };
                    if p.structSize == 0 || p.structSize > size_of::<$params>() {
                        violation(format!(
                            "{}: structSize {} (the struct has {} bytes)",
                            stringify!($name),
                            p.structSize,
                            size_of::<$params>()
                        ));
                        return INVALID;
                    }
                    // SAFETY: the block's pointers are the caller's, valid as CUPTI documents
                    // for this function (the method's contract).
                    unsafe { super::range_profiler::PROFILER.$method(p) }
                })
            }
        )*
        /// Compile-time check of the profiler exports' prototypes.
        #[allow(dead_code)]
        fn profiler_prototypes(c: &mut sys::CuptiApi) {
            $(c.$name = Some($name);)*
        }
    };
}

profiler_fn! {
    cuptiProfilerInitialize(sys::CUpti_Profiler_Initialize_Params) => initialize;
    cuptiProfilerDeInitialize(sys::CUpti_Profiler_DeInitialize_Params) => deinitialize;
    cuptiDeviceGetChipName(sys::CUpti_Device_GetChipName_Params) => chip_name;
    cuptiProfilerGetCounterAvailability(sys::CUpti_Profiler_GetCounterAvailability_Params)
        => counter_availability;
    cuptiProfilerHostInitialize(sys::CUpti_Profiler_Host_Initialize_Params) => host_initialize;
    cuptiProfilerHostDeinitialize(sys::CUpti_Profiler_Host_Deinitialize_Params)
        => host_deinitialize;
    cuptiProfilerHostConfigAddMetrics(sys::CUpti_Profiler_Host_ConfigAddMetrics_Params)
        => add_metrics;
    cuptiProfilerHostGetConfigImageSize(sys::CUpti_Profiler_Host_GetConfigImageSize_Params)
        => config_image_size;
    cuptiProfilerHostGetConfigImage(sys::CUpti_Profiler_Host_GetConfigImage_Params)
        => config_image;
    cuptiProfilerHostGetNumOfPasses(sys::CUpti_Profiler_Host_GetNumOfPasses_Params)
        => num_passes;
    cuptiProfilerHostGetBaseMetrics(sys::CUpti_Profiler_Host_GetBaseMetrics_Params)
        => base_metrics;
    cuptiProfilerHostGetMetricProperties(sys::CUpti_Profiler_Host_GetMetricProperties_Params)
        => metric_properties;
    cuptiProfilerHostEvaluateToGpuValues(sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params)
        => evaluate;
    cuptiRangeProfilerEnable(sys::CUpti_RangeProfiler_Enable_Params) => enable;
    cuptiRangeProfilerDisable(sys::CUpti_RangeProfiler_Disable_Params) => disable;
    cuptiRangeProfilerGetCounterDataSize(sys::CUpti_RangeProfiler_GetCounterDataSize_Params)
        => counter_data_size;
    cuptiRangeProfilerCounterDataImageInitialize(
        sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params
    ) => counter_data_initialize;
    cuptiRangeProfilerSetConfig(sys::CUpti_RangeProfiler_SetConfig_Params) => set_config;
    cuptiRangeProfilerStart(sys::CUpti_RangeProfiler_Start_Params) => start;
    cuptiRangeProfilerPushRange(sys::CUpti_RangeProfiler_PushRange_Params) => push_range;
    cuptiRangeProfilerPopRange(sys::CUpti_RangeProfiler_PopRange_Params) => pop_range;
    cuptiRangeProfilerStop(sys::CUpti_RangeProfiler_Stop_Params) => stop;
    cuptiRangeProfilerDecodeData(sys::CUpti_RangeProfiler_DecodeData_Params) => decode;
    cuptiRangeProfilerGetCounterDataInfo(sys::CUpti_RangeProfiler_GetCounterDataInfo_Params)
        => counter_data_info;
    cuptiRangeProfilerCounterDataGetRangeInfo(
        sys::CUpti_RangeProfiler_CounterData_GetRangeInfo_Params
    ) => range_info;
}

// ------------------------------------------------------------------ the driver (libcuda.so.1)

type CuR = sys::CUresult;
const CU_OK: CuR = CuR::CUDA_SUCCESS;
const CU_INVALID: CuR = CuR::CUDA_ERROR_INVALID_VALUE;

/// The device the fake pretends to be.
pub const DEVICE_NAME: &CStr = c"NVIDIA H200 (cupti-sim)";

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDriverGetVersion(v: *mut c_int) -> CuR {
    // SAFETY: the caller's out-pointer.
    guard("cuDriverGetVersion", CU_INVALID, || unsafe {
        if out(v, 13000) { CU_OK } else { CU_INVALID }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorString(_r: CuR, s: *mut *const c_char) -> CuR {
    // SAFETY: the caller's out-pointer.
    guard("cuGetErrorString", CU_INVALID, || unsafe {
        if out(s, c"cupti-sim driver error".as_ptr()) {
            CU_OK
        } else {
            CU_INVALID
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetCount(n: *mut c_int) -> CuR {
    // SAFETY: the caller's out-pointer.
    guard("cuDeviceGetCount", CU_INVALID, || unsafe {
        if out(n, 1) { CU_OK } else { CU_INVALID }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGet(d: *mut sys::CUdevice, ordinal: c_int) -> CuR {
    if ordinal != 0 {
        return CuR::CUDA_ERROR_INVALID_DEVICE;
    }
    // SAFETY: the caller's out-pointer.
    guard("cuDeviceGet", CU_INVALID, || unsafe {
        if out(d, 0) { CU_OK } else { CU_INVALID }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    v: *mut c_int,
    attr: sys::CUdevice_attribute,
    _dev: sys::CUdevice,
) -> CuR {
    use sys::CUdevice_attribute_enum as A;
    // An H200: 132 SMs, compute capability 9.0.
    let value = match attr {
        A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT => 132,
        A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR => 2048,
        A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR => 32,
        A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR => 65536,
        A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK => 65536,
        A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR => 233472,
        A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK => 1024,
        A::CU_DEVICE_ATTRIBUTE_WARP_SIZE => 32,
        A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR => 9,
        A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR => 0,
        _ => 0,
    };
    // SAFETY: the caller's out-pointer.
    guard("cuDeviceGetAttribute", CU_INVALID, || unsafe {
        if out(v, value) { CU_OK } else { CU_INVALID }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetName(
    name: *mut c_char,
    len: c_int,
    _dev: sys::CUdevice,
) -> CuR {
    guard("cuDeviceGetName", CU_INVALID, || {
        let bytes = DEVICE_NAME.to_bytes_with_nul();
        if name.is_null() || (len as usize) < bytes.len() {
            return CU_INVALID;
        }
        // SAFETY: the caller's buffer holds `len` bytes, at least the name's.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr().cast(), name, bytes.len()) };
        CU_OK
    })
}

/// The device's UUID (`nvidia-smi -L`: GPU-5a1b2c3d-0000-4000-8000-00000000c0de, the
/// default device of `nvml-sim`).
pub const DEVICE_UUID: [u8; 16] = [
    0x5a, 0x1b, 0x2c, 0x3d, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0xc0, 0xde,
];

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(u: *mut sys::CUuuid, _dev: sys::CUdevice) -> CuR {
    let uuid = sys::CUuuid {
        bytes: DEVICE_UUID.map(|b| b as c_char),
    };
    // SAFETY: the caller's out-pointer.
    guard("cuDeviceGetUuid_v2", CU_INVALID, || unsafe {
        if out(u, uuid) { CU_OK } else { CU_INVALID }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetPCIBusId(
    b: *mut c_char,
    len: c_int,
    _dev: sys::CUdevice,
) -> CuR {
    guard("cuDeviceGetPCIBusId", CU_INVALID, || {
        let id = c"0000:06:00.0".to_bytes_with_nul();
        if b.is_null() || (len as usize) < id.len() {
            return CU_INVALID;
        }
        // SAFETY: the caller's buffer holds `len` bytes, at least the id's.
        unsafe { std::ptr::copy_nonoverlapping(id.as_ptr().cast(), b, id.len()) };
        CU_OK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(b: *mut usize, _dev: sys::CUdevice) -> CuR {
    // SAFETY: the caller's out-pointer.
    guard("cuDeviceTotalMem_v2", CU_INVALID, || unsafe {
        if out(b, 141 << 30) { CU_OK } else { CU_INVALID }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPushCurrent_v2(_c: sys::CUcontext) -> CuR {
    CU_OK
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(c: *mut sys::CUcontext) -> CuR {
    // SAFETY: the caller's out-pointer.
    guard("cuCtxPopCurrent_v2", CU_INVALID, || unsafe {
        out(c, crate::scenario::CONTEXT_HANDLE as sys::CUcontext);
        CU_OK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSynchronize() -> CuR {
    guard("cuCtxSynchronize", CU_INVALID, || {
        super::exec::wait_all();
        CU_OK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamIsCapturing(
    s: sys::CUstream,
    status: *mut sys::CUstreamCaptureStatus,
) -> CuR {
    guard("cuStreamIsCapturing", CU_INVALID, || {
        let on = super::exec::is_capturing(s as u64);
        let v = if on {
            sys::CUstreamCaptureStatus_enum::CU_STREAM_CAPTURE_STATUS_ACTIVE
        } else {
            sys::CUstreamCaptureStatus_enum::CU_STREAM_CAPTURE_STATUS_NONE
        };
        // SAFETY: the caller's out-pointer.
        if unsafe { out(status, v) } {
            CU_OK
        } else {
            CU_INVALID
        }
    })
}

/// Compile-time check that every export has the prototype the cupti-sys tables expect.
#[allow(dead_code)]
fn prototypes(c: &mut sys::CuptiApi, d: &mut sys::DriverApi) {
    c.cuptiGetVersion = Some(cuptiGetVersion);
    c.cuptiGetResultString = Some(cuptiGetResultString);
    c.cuptiGetTimestamp = Some(cuptiGetTimestamp);
    c.cuptiSubscribe = Some(cuptiSubscribe);
    c.cuptiUnsubscribe = Some(cuptiUnsubscribe);
    c.cuptiEnableCallback = Some(cuptiEnableCallback);
    c.cuptiEnableDomain = Some(cuptiEnableDomain);
    c.cuptiActivityEnable = Some(cuptiActivityEnable);
    c.cuptiActivityDisable = Some(cuptiActivityDisable);
    c.cuptiActivityRegisterCallbacks = Some(cuptiActivityRegisterCallbacks);
    c.cuptiActivityRegisterTimestampCallback = Some(cuptiActivityRegisterTimestampCallback);
    c.cuptiActivityFlushAll = Some(cuptiActivityFlushAll);
    c.cuptiActivityFlushPeriod = Some(cuptiActivityFlushPeriod);
    c.cuptiActivityGetNumDroppedRecords = Some(cuptiActivityGetNumDroppedRecords);
    c.cuptiActivityGetNextRecord = Some(cuptiActivityGetNextRecord);
    c.cuptiFinalize = Some(cuptiFinalize);
    c.cuptiGetDeviceId = Some(cuptiGetDeviceId);
    profiler_prototypes(c);
    d.cuDriverGetVersion = Some(cuDriverGetVersion);
    d.cuGetErrorString = Some(cuGetErrorString);
    d.cuDeviceGetCount = Some(cuDeviceGetCount);
    d.cuDeviceGet = Some(cuDeviceGet);
    d.cuDeviceGetAttribute = Some(cuDeviceGetAttribute);
    d.cuDeviceGetName = Some(cuDeviceGetName);
    d.cuDeviceTotalMem_v2 = Some(cuDeviceTotalMem_v2);
    d.cuDeviceGetUuid_v2 = Some(cuDeviceGetUuid_v2);
    d.cuDeviceGetPCIBusId = Some(cuDeviceGetPCIBusId);
    d.cuCtxPushCurrent_v2 = Some(cuCtxPushCurrent_v2);
    d.cuCtxPopCurrent_v2 = Some(cuCtxPopCurrent_v2);
    d.cuCtxSynchronize = Some(cuCtxSynchronize);
    d.cuStreamIsCapturing = Some(cuStreamIsCapturing);
}

// ----------------------------------------------------------------------------- the host's

/// Runs the program of the JSON [`crate::RunSpec`] at `spec`: loads the injection as `cuInit`
/// would, then runs the scenario. Returns 0, or non-zero (after a line on stderr) when the
/// program could not run. The report is written at exit.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cupti_sim_run(spec: *const c_char) -> c_int {
    guard("cupti_sim_run", 2, || {
        if spec.is_null() {
            return 1;
        }
        // SAFETY: the host passes a NUL-terminated string valid for the call.
        let text = unsafe { CStr::from_ptr(spec) }
            .to_string_lossy()
            .into_owned();
        let spec: crate::RunSpec = match serde_json::from_str(&text) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("cupti-sim: bad spec: {e}");
                return 1;
            }
        };
        match super::exec::run(&spec.scenario) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("cupti-sim: {e}");
                1
            }
        }
    })
}

/// Starts a program that its host drives op by op: what `cuInit` does with
/// `CUDA_INJECTION64_PATH` (load, `InitializeInjection`) and the program's context, for the
/// JSON [`crate::Scenario`] at `scenario` (its kernels; its threads are not run). Then
/// [`cupti_sim_ops`] runs ops on the caller's threads, as a Python program driving CUDA
/// through `ctypes` would. Returns 0, or non-zero after a line on stderr. Once per process;
/// the report is written at exit.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cupti_sim_start(scenario: *const c_char) -> c_int {
    guard("cupti_sim_start", 2, || {
        // SAFETY: the host passes null or a NUL-terminated string valid for the call.
        let Some(text) = (unsafe { json_arg(scenario) }) else {
            return 1;
        };
        let s = match crate::Scenario::from_json(&text) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("cupti-sim: bad scenario: {e}");
                return 1;
            }
        };
        match super::exec::start_stepped(s) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("cupti-sim: {e}");
                1
            }
        }
    })
}

/// Runs the JSON array of [`crate::scenario::Op`]s at `ops` on the calling thread, in the
/// program [`cupti_sim_start`] started; returns when they are done (0), or non-zero after a
/// line on stderr. The ops of each call are checked on their own: an allocation or a range
/// is ended, or a graph launched, by the call that made it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cupti_sim_ops(ops: *const c_char) -> c_int {
    guard("cupti_sim_ops", 2, || {
        // SAFETY: the host passes null or a NUL-terminated string valid for the call.
        let Some(text) = (unsafe { json_arg(ops) }) else {
            return 1;
        };
        let ops: Vec<crate::scenario::Op> = match serde_json::from_str(&text) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("cupti-sim: bad ops: {e}");
                return 1;
            }
        };
        match super::exec::run_here(&ops) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("cupti-sim: {e}");
                1
            }
        }
    })
}

/// The text at `p`, or `None` (after a line on stderr) when it is null.
///
/// # Safety
/// `p` is null or a NUL-terminated string valid for the call.
unsafe fn json_arg(p: *const c_char) -> Option<String> {
    if p.is_null() {
        eprintln!("cupti-sim: null argument");
        return None;
    }
    // SAFETY: as this function's contract says.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}
