//! The same fake, called inside this process without a scripted program: its CUPTI functions
//! as the [`CuptiApi`](sys::CuptiApi) table the safe layer loads. The `cupti` crate's own tests
//! and the benchmarks of the injection's paths use it; the test plays the rest of CUPTI's part:
//! it fires callbacks ([`fire`]), takes the buffer callbacks the tool registered
//! ([`buffer_callbacks`]) and hands buffers back.
//!
//! ```ignore
//! let _g = cupti_sim::inproc::serial();
//! // SAFETY: every name resolves to a fake with that name's C signature, never unloaded.
//! let cupti = unsafe { cupti::Cupti::from_table(cupti_sim::inproc::api(&[]), "fake") }?;
//! ```
//!
//! The fake is one per process, as CUPTI is: tests in one binary take [`serial`] first, which
//! also starts them on a fresh fake.
#![allow(unsafe_code)] // function pointers of the C ABI

use std::ffi::{CStr, c_void};
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

use cupti_sys as sys;

use crate::runtime::{self, FAKE, exports, lock, memory};

/// A record kind CUPTI's iterator rejects as corrupt (`CUPTI_ERROR_INVALID_KIND`).
pub const POISON_KIND: u32 = runtime::POISON_KIND;

/// `CUpti_BuffersCallbackRequestFunc`, as the tool registered it.
pub type RequestBuffer = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
/// `CUpti_BuffersCallbackCompleteFunc`, as the tool registered it.
pub type CompleteBuffer = unsafe extern "C" fn(sys::CUcontext, u32, *mut u8, usize, usize);

/// Takes the fake for one test and starts it afresh: nothing subscribed, enabled or
/// registered, the version 13.0 Update 1, and the driver's context made (as a tool
/// called from the application finds it).
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    let g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    runtime::reset();
    runtime::exec::context_exists();
    g
}

macro_rules! symbols {
    ($($module:ident :: $name:ident),* $(,)?) => {
        /// The fake's function of CUPTI's name `name`, or null.
        fn symbol(name: &str) -> *const c_void {
            match name {
                $(stringify!($name) => $module::$name as *const c_void,)*
                _ => std::ptr::null(),
            }
        }

        /// Compile-time check that each function has its field's prototype.
        #[allow(dead_code)]
        fn prototypes(c: &mut sys::CuptiApi) {
            $(c.$name = Some($module::$name);)*
        }
    };
}

symbols! {
    exports::cuptiGetVersion,
    exports::cuptiGetResultString,
    exports::cuptiGetTimestamp,
    exports::cuptiSubscribe,
    exports::cuptiSubscribe_v2,
    exports::cuptiUnsubscribe,
    exports::cuptiEnableCallback,
    exports::cuptiEnableDomain,
    exports::cuptiActivityEnable,
    exports::cuptiActivityDisable,
    exports::cuptiActivityRegisterCallbacks,
    exports::cuptiActivityRegisterTimestampCallback,
    exports::cuptiActivityFlushAll,
    exports::cuptiActivityFlushPeriod,
    exports::cuptiActivityGetNumDroppedRecords,
    exports::cuptiActivityGetNextRecord,
    exports::cuptiFinalize,
    exports::cuptiGetDeviceId,
    memory::cuptiActivityConfigureUnifiedMemoryCounter,
}

/// The fake's CUPTI table; names in `missing` resolve to null, as in an older CUPTI.
pub fn api(missing: &[&str]) -> sys::CuptiApi {
    let resolve = |name: &CStr| -> *const c_void {
        let Ok(n) = name.to_str() else {
            return std::ptr::null();
        };
        if missing.contains(&n) {
            return std::ptr::null();
        }
        symbol(n)
    };
    // SAFETY: every non-null pointer is the fake's function of that name, with its C
    // prototype (checked by `prototypes`); they are functions of this binary, never unloaded.
    unsafe { sys::CuptiApi::load_with(resolve) }
}

/// Calls the subscriber as CUPTI would for `(domain, cbid)`, whether or not it was enabled
/// (the test decides what fires). Returns false when nothing is subscribed.
pub fn fire(domain: sys::CUpti_CallbackDomain, cbid: u32, data: *const c_void) -> bool {
    let sub = *lock(&FAKE.sub);
    call(sub, domain, cbid, data)
}

/// Calls the last subscriber even after it unsubscribed, as a callback CUPTI had already
/// started on another thread would. Returns false when there never was one.
pub fn fire_stale(domain: sys::CUpti_CallbackDomain, cbid: u32, data: *const c_void) -> bool {
    let sub = *lock(&FAKE.last_sub);
    call(sub, domain, cbid, data)
}

fn call(
    sub: Option<runtime::Subscriber>,
    domain: sys::CUpti_CallbackDomain,
    cbid: u32,
    data: *const c_void,
) -> bool {
    let Some(sub) = sub else { return false };
    // SAFETY: the trampoline and user data the tool subscribed with, which it keeps alive
    // after unsubscribing; `data` is the caller's, of the type CUPTI documents for `domain`.
    unsafe { (sub.cb)(sub.userdata as *mut c_void, domain, cbid, data) };
    true
}

/// The activity buffer callbacks the tool registered.
///
/// # Panics
/// When none are registered.
pub fn buffer_callbacks() -> (RequestBuffer, CompleteBuffer) {
    lock(&FAKE.buffer_cbs).expect("activity buffer callbacks registered")
}

/// The timestamp callback the tool registered, if any.
pub fn timestamp_callback() -> Option<unsafe extern "C" fn() -> u64> {
    *lock(&FAKE.timestamp)
}

/// Records CUPTI dropped: what the next `cuptiActivityGetNumDroppedRecords` reports.
pub fn set_dropped(n: u64) {
    FAKE.dropped.store(n, Ordering::Relaxed);
}

/// The version `cuptiGetVersion` reports (`130001` for 13.0 Update 1).
pub fn set_version(v: u32) {
    FAKE.version.store(v, Ordering::Relaxed);
}

/// `function` gives `result` instead of doing its work (`None`: works again). Honoured by
/// `cuptiActivityConfigureUnifiedMemoryCounter`.
pub fn force(function: &'static str, result: Option<sys::CUptiResult>) {
    let mut f = lock(&FAKE.forced);
    match result {
        Some(r) => f.insert(function, r),
        None => f.remove(function),
    };
}

/// Enable calls take 200 µs, so that an unserialized caller on another thread overlaps them
/// (a [`violation`](violations)).
pub fn slow_enable(on: bool) {
    FAKE.slow_enable.store(on, Ordering::Relaxed);
}

/// The activity kinds enabled now, in ascending order.
pub fn enabled_kinds() -> Vec<u32> {
    let mut v: Vec<u32> = lock(&FAKE.kinds).iter().copied().collect();
    v.sort_unstable();
    v
}

/// The callbacks enabled one by one now, as (domain, cbid), in ascending order.
pub fn enabled_callbacks() -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = lock(&FAKE.enabled).ids.iter().copied().collect();
    v.sort_unstable();
    v
}

/// Every unified-memory counter config passed, in order: (counter kind, enable).
pub fn unified_memory_configs() -> Vec<(u32, u32)> {
    lock(&memory::UM_LOG).clone()
}

/// What the fake saw so far, as a scripted run reports it.
pub fn report() -> crate::Report {
    lock(&FAKE.report).clone()
}

/// Breaches of CUPTI's rules by the tool so far.
pub fn violations() -> Vec<String> {
    lock(&FAKE.report).violations.clone()
}

/// Bytes CUPTI's iterator steps over for a record of `kind` (CUPTI 13.0 layouts, 8-byte
/// aligned).
pub fn record_size(kind: u32) -> usize {
    runtime::record_size(kind)
}
