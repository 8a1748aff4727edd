//! A fake CUPTI: `extern "C"` functions with the real signatures, wired into a
//! `CuptiApi` through the resolver, so tests drive the real safe layer.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::{
    ffi::{CStr, c_char, c_void},
    sync::{
        Mutex, MutexGuard,
        atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering},
    },
};

use cupti::Cupti;
use cupti_sys as sys;

/// Tests in one binary share the fake's statics: take this first.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

pub static VERSION: AtomicU32 = AtomicU32::new(130001);
pub static UNSUBSCRIBES: AtomicUsize = AtomicUsize::new(0);
pub static DROPPED: AtomicUsize = AtomicUsize::new(0);
pub static TIMESTAMP_CB: Mutex<Option<unsafe extern "C" fn() -> u64>> = Mutex::new(None);
pub static ENABLED_KINDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());
pub static ENABLED_CBIDS: Mutex<Vec<(u32, u32, u32)>> = Mutex::new(Vec::new());
/// Set by a test's closure-owned guard when the closure is freed.
pub static CLOSURE_FREED: AtomicBool = AtomicBool::new(false);
/// Whether the closure was still alive when CUPTI's unsubscribe ran.
pub static ALIVE_AT_UNSUBSCRIBE: AtomicBool = AtomicBool::new(false);

#[derive(Clone, Copy)]
struct Sub {
    cb: sys::CUpti_CallbackFunc,
    userdata: usize,
}
static SUBSCRIBER: Mutex<Option<Sub>> = Mutex::new(None);
/// The last registration, kept after unsubscribe: what a callback already
/// under way on another thread still holds.
static LAST_SUBSCRIBER: Mutex<Option<Sub>> = Mutex::new(None);
/// The `subscriberName` of the last `cuptiSubscribe_v2`.
pub static SUBSCRIBER_NAME: Mutex<Option<String>> = Mutex::new(None);
/// Set when two enable calls overlapped (CUPTI requires them serialized).
pub static ENABLE_OVERLAP: AtomicBool = AtomicBool::new(false);
static ENABLE_IN_FLIGHT: AtomicBool = AtomicBool::new(false);

type Req = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
type Done = unsafe extern "C" fn(sys::CUcontext, u32, *mut u8, usize, usize);
static BUFFER_CBS: Mutex<Option<(Req, Done)>> = Mutex::new(None);

/// Kind value the fake iterator treats as a corrupt record.
pub const POISON_KIND: u32 = 0x7fff_0001;

const OK: sys::CUptiResult = sys::CUptiResult::CUPTI_SUCCESS;

unsafe extern "C" fn get_version(v: *mut u32) -> sys::CUptiResult {
    // SAFETY: test fake; the safe layer passes a valid pointer.
    unsafe { *v = VERSION.load(Ordering::Relaxed) };
    OK
}

unsafe extern "C" fn get_result_string(
    r: sys::CUptiResult,
    s: *mut *const c_char,
) -> sys::CUptiResult {
    let msg: &'static CStr = match r {
        sys::CUptiResult::CUPTI_ERROR_INVALID_PARAMETER => c"CUPTI_ERROR_INVALID_PARAMETER",
        sys::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED => {
            c"CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
        }
        sys::CUptiResult::CUPTI_ERROR_INSUFFICIENT_PRIVILEGES => {
            c"CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"
        }
        sys::CUptiResult::CUPTI_ERROR_INVALID_KIND => c"CUPTI_ERROR_INVALID_KIND",
        _ => return sys::CUptiResult::CUPTI_ERROR_INVALID_PARAMETER,
    };
    // SAFETY: valid out-pointer from the safe layer.
    unsafe { *s = msg.as_ptr() };
    OK
}

unsafe extern "C" fn subscribe(
    h: *mut sys::CUpti_SubscriberHandle,
    cb: sys::CUpti_CallbackFunc,
    userdata: *mut c_void,
) -> sys::CUptiResult {
    let mut s = SUBSCRIBER.lock().unwrap();
    if s.is_some() {
        return sys::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    *s = Some(Sub {
        cb,
        userdata: userdata as usize,
    });
    *LAST_SUBSCRIBER.lock().unwrap() = *s;
    // SAFETY: valid out-pointer; any non-null token will do.
    unsafe { *h = 0x50usize as sys::CUpti_SubscriberHandle };
    OK
}

unsafe extern "C" fn subscribe_v2(
    h: *mut sys::CUpti_SubscriberHandle,
    cb: sys::CUpti_CallbackFunc,
    userdata: *mut c_void,
    p: *mut sys::CUpti_SubscriberParams,
) -> sys::CUptiResult {
    // SAFETY: the safe layer passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr((*p).subscriberName) };
    *SUBSCRIBER_NAME.lock().unwrap() = Some(name.to_str().unwrap().to_owned());
    // SAFETY: as in `subscribe`.
    let r = unsafe { subscribe(h, cb, userdata) };
    if r == sys::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED {
        // SAFETY: the safe layer passes its params with a buffer of oldSubscriberSize.
        unsafe {
            let p = &*p;
            let name = b"nsys-fake\0";
            assert!(p.oldSubscriberSize >= name.len());
            std::ptr::copy_nonoverlapping(name.as_ptr().cast(), p.oldSubscriberName, name.len());
        }
    }
    r
}

unsafe extern "C" fn unsubscribe(_h: sys::CUpti_SubscriberHandle) -> sys::CUptiResult {
    ALIVE_AT_UNSUBSCRIBE.store(!CLOSURE_FREED.load(Ordering::SeqCst), Ordering::SeqCst);
    UNSUBSCRIBES.fetch_add(1, Ordering::SeqCst);
    *SUBSCRIBER.lock().unwrap() = None;
    OK
}

unsafe extern "C" fn enable_callback(
    enable: u32,
    _h: sys::CUpti_SubscriberHandle,
    d: sys::CUpti_CallbackDomain,
    cbid: sys::CUpti_CallbackId,
) -> sys::CUptiResult {
    if ENABLE_IN_FLIGHT.swap(true, Ordering::SeqCst) {
        ENABLE_OVERLAP.store(true, Ordering::SeqCst);
    }
    // Long enough for an unserialized caller on another thread to overlap.
    std::thread::sleep(std::time::Duration::from_micros(200));
    ENABLE_IN_FLIGHT.store(false, Ordering::SeqCst);
    if cbid > 100_000 {
        return sys::CUptiResult::CUPTI_ERROR_INVALID_PARAMETER;
    }
    ENABLED_CBIDS.lock().unwrap().push((enable, d.0, cbid));
    OK
}

unsafe extern "C" fn activity_enable(k: sys::CUpti_ActivityKind) -> sys::CUptiResult {
    ENABLED_KINDS.lock().unwrap().push(k.0);
    OK
}

unsafe extern "C" fn register_callbacks(
    req: sys::CUpti_BuffersCallbackRequestFunc,
    done: sys::CUpti_BuffersCallbackCompleteFunc,
) -> sys::CUptiResult {
    *BUFFER_CBS.lock().unwrap() = Some((req.unwrap(), done.unwrap()));
    OK
}

unsafe extern "C" fn register_timestamp(cb: sys::CUpti_TimestampCallbackFunc) -> sys::CUptiResult {
    *TIMESTAMP_CB.lock().unwrap() = cb;
    OK
}

unsafe extern "C" fn dropped_records(
    _c: sys::CUcontext,
    _s: u32,
    n: *mut usize,
) -> sys::CUptiResult {
    // SAFETY: valid out-pointer.
    unsafe { *n = DROPPED.load(Ordering::Relaxed) };
    OK
}

/// Size CUPTI's iterator steps over for a record of `kind` (8-byte aligned).
pub fn record_size(kind: u32) -> usize {
    use std::mem::size_of;
    type K = sys::CUpti_ActivityKind;
    let s = match sys::CUpti_ActivityKind(kind) {
        K::CUPTI_ACTIVITY_KIND_KERNEL | K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL => {
            size_of::<sys::CUpti_ActivityKernel10>()
        }
        K::CUPTI_ACTIVITY_KIND_MEMCPY => size_of::<sys::CUpti_ActivityMemcpy6>(),
        K::CUPTI_ACTIVITY_KIND_MEMCPY2 => size_of::<sys::CUpti_ActivityMemcpyPtoP4>(),
        K::CUPTI_ACTIVITY_KIND_MEMSET => size_of::<sys::CUpti_ActivityMemset4>(),
        K::CUPTI_ACTIVITY_KIND_RUNTIME | K::CUPTI_ACTIVITY_KIND_DRIVER => {
            size_of::<sys::CUpti_ActivityAPI>()
        }
        K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION => size_of::<sys::CUpti_ActivitySynchronization2>(),
        K::CUPTI_ACTIVITY_KIND_MARKER => size_of::<sys::CUpti_ActivityMarker2>(),
        K::CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION => {
            size_of::<sys::CUpti_ActivityExternalCorrelation>()
        }
        K::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER => {
            size_of::<sys::CUpti_ActivityUnifiedMemoryCounter3>()
        }
        _ => 16,
    };
    s.div_ceil(8) * 8
}

unsafe extern "C" fn next_record(
    buf: *mut u8,
    valid: usize,
    rec: *mut *mut sys::CUpti_Activity,
) -> sys::CUptiResult {
    // SAFETY: test fake over buffers the tests built.
    unsafe {
        let cur = *rec;
        let off = if cur.is_null() {
            0
        } else {
            let kind = std::ptr::read_unaligned(cur.cast::<u32>());
            cur.cast::<u8>().offset_from(buf) as usize + record_size(kind)
        };
        if off + 4 > valid {
            return sys::CUptiResult::CUPTI_ERROR_MAX_LIMIT_REACHED;
        }
        let next = buf.add(off);
        if std::ptr::read_unaligned(next.cast::<u32>()) == POISON_KIND {
            return sys::CUptiResult::CUPTI_ERROR_INVALID_KIND;
        }
        *rec = next.cast();
    }
    OK
}

/// The unified-memory counters configured: (kind, enable) of each config
/// passed, in order.
pub static UM_CONFIGS: Mutex<Vec<(u32, u32)>> = Mutex::new(Vec::new());
/// The result the fake's `cuptiActivityConfigureUnifiedMemoryCounter` gives.
pub static UM_RESULT: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" fn configure_unified_memory(
    config: *mut sys::CUpti_ActivityUnifiedMemoryCounterConfig,
    count: u32,
) -> sys::CUptiResult {
    // SAFETY: test fake; the safe layer passes `count` configs.
    let configs = unsafe { std::slice::from_raw_parts(config, count as usize) };
    let mut v = UM_CONFIGS.lock().unwrap();
    for c in configs {
        v.push((c.kind.0, c.enable));
    }
    sys::CUptiResult(UM_RESULT.load(Ordering::Relaxed))
}

/// The fake's symbol table; names in `missing` resolve to null.
pub fn api(missing: &[&str]) -> sys::CuptiApi {
    let resolve = |name: &CStr| -> *const c_void {
        let n = name.to_str().unwrap();
        if missing.contains(&n) {
            return std::ptr::null();
        }
        match n {
            "cuptiGetVersion" => get_version as *const c_void,
            "cuptiGetResultString" => get_result_string as *const c_void,
            "cuptiSubscribe" => subscribe as *const c_void,
            "cuptiSubscribe_v2" => subscribe_v2 as *const c_void,
            "cuptiUnsubscribe" => unsubscribe as *const c_void,
            "cuptiEnableCallback" => enable_callback as *const c_void,
            "cuptiActivityEnable" => activity_enable as *const c_void,
            "cuptiActivityRegisterCallbacks" => register_callbacks as *const c_void,
            "cuptiActivityRegisterTimestampCallback" => register_timestamp as *const c_void,
            "cuptiActivityGetNumDroppedRecords" => dropped_records as *const c_void,
            "cuptiActivityGetNextRecord" => next_record as *const c_void,
            "cuptiActivityConfigureUnifiedMemoryCounter" => {
                configure_unified_memory as *const c_void
            }
            _ => std::ptr::null(),
        }
    };
    // SAFETY: every non-null pointer above has the C signature of its name.
    unsafe { sys::CuptiApi::load_with(resolve) }
}

/// A `Cupti` over the fake, without the symbols named in `missing`.
pub fn cupti(missing: &[&str]) -> Cupti {
    try_cupti(missing).expect("fake CUPTI loads")
}

/// As [`cupti`], returning the version check's outcome.
pub fn try_cupti(missing: &[&str]) -> cupti::Result<Cupti> {
    // SAFETY: `api` resolves every name to a fake with that name's C
    // signature; the fakes are functions of this binary, never unloaded.
    unsafe { Cupti::from_table(api(missing), "fake") }
}

/// Calls the registered subscriber like CUPTI would. Returns false if none.
pub fn fire(domain: sys::CUpti_CallbackDomain, cbid: u32, data: *const c_void) -> bool {
    let sub = *SUBSCRIBER.lock().unwrap();
    match sub {
        Some(Sub {
            cb: Some(cb),
            userdata,
        }) => {
            // SAFETY: the trampoline and userdata the safe layer registered.
            unsafe { cb(userdata as *mut c_void, domain, cbid, data) };
            true
        }
        _ => false,
    }
}

/// Calls the last registered subscriber even if it has unsubscribed since,
/// as a callback CUPTI had already started on another thread would. Returns
/// false if there never was one.
pub fn fire_stale(domain: sys::CUpti_CallbackDomain, cbid: u32, data: *const c_void) -> bool {
    let sub = *LAST_SUBSCRIBER.lock().unwrap();
    match sub {
        Some(Sub {
            cb: Some(cb),
            userdata,
        }) => {
            // SAFETY: the trampoline and userdata the safe layer registered,
            // which it promises to keep alive after unsubscribing.
            unsafe { cb(userdata as *mut c_void, domain, cbid, data) };
            true
        }
        _ => false,
    }
}

/// The registered activity buffer callbacks.
pub fn buffer_callbacks() -> (Req, Done) {
    BUFFER_CBS.lock().unwrap().expect("callbacks registered")
}
