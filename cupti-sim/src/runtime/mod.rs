//! The fake itself: what the tool enabled, the activity buffers it lent, the simulated GPU,
//! and the scripted program run on real threads.
//!
//! Locks are never held while the tool is called: a callback may enable other callbacks
//! (the capture range does), and a completed buffer is read through
//! `cuptiActivityGetNextRecord`.
#![allow(unsafe_code)] // the C ABI of CUPTI, the driver and NVTX

pub(crate) mod exec;
pub(crate) mod exports;
pub(crate) mod memory;
mod nvtx;
mod process;
mod range_profiler;
mod signals;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};

use cupti_sys as sys;

use crate::Report;

/// Everything the fake knows; one per process, like CUPTI.
pub(crate) struct Fake {
    pub(crate) report: Mutex<Report>,
    pub(crate) sub: Mutex<Option<Subscriber>>,
    pub(crate) enabled: Mutex<Enabled>,
    pub(crate) kinds: Mutex<HashSet<u32>>,
    pub(crate) buffer_cbs: Mutex<Option<(Req, Done)>>,
    pub(crate) timestamp: Mutex<Option<unsafe extern "C" fn() -> u64>>,
    pub(crate) buffer: Mutex<Option<Buffer>>,
    pub(crate) gpu: Mutex<Gpu>,
    pub(crate) dropped: AtomicU64,
    /// What `cuptiGetVersion` reports.
    pub(crate) version: AtomicU32,
    /// The last subscription, kept after unsubscribe: what a callback already under way on
    /// another thread still holds.
    pub(crate) last_sub: Mutex<Option<Subscriber>>,
    /// The current subscriber's `subscriberName` (`None`: subscribed without one).
    pub(crate) holder: Mutex<Option<String>>,
    /// An enable call is running (CUPTI requires them serialized).
    pub(crate) enabling: AtomicBool,
    /// Enable calls take long enough for an unserialized caller to overlap them.
    pub(crate) slow_enable: AtomicBool,
    /// Results a function gives instead of doing its work, by function name.
    pub(crate) forced: Mutex<HashMap<&'static str, sys::CUptiResult>>,
}

#[derive(Clone, Copy)]
pub(crate) struct Subscriber {
    pub(crate) cb: unsafe extern "C" fn(*mut c_void, sys::CUpti_CallbackDomain, u32, *const c_void),
    pub(crate) userdata: usize,
}

#[derive(Default)]
pub(crate) struct Enabled {
    pub(crate) domains: HashSet<u32>,
    pub(crate) ids: HashSet<(u32, u32)>,
}

pub(crate) type Req = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
pub(crate) type Done = unsafe extern "C" fn(sys::CUcontext, u32, *mut u8, usize, usize);

/// A buffer the tool lent us.
pub(crate) struct Buffer {
    pub(crate) ptr: usize,
    pub(crate) size: usize,
    pub(crate) used: usize,
    pub(crate) records: u64,
}

/// The simulated device: when each stream's queue drains, what is being captured, the graphs.
#[derive(Default)]
pub(crate) struct Gpu {
    pub(crate) tails: HashMap<u32, u64>,
    pub(crate) capturing: HashMap<u32, Vec<String>>,
    pub(crate) graphs: HashMap<String, Vec<String>>,
    pub(crate) next_node: u64,
    pub(crate) next_graph: u32,
}

pub(crate) static FAKE: LazyLock<Fake> = LazyLock::new(|| Fake {
    report: Mutex::new(Report::default()),
    sub: Mutex::new(None),
    enabled: Mutex::new(Enabled::default()),
    kinds: Mutex::new(HashSet::new()),
    buffer_cbs: Mutex::new(None),
    timestamp: Mutex::new(None),
    buffer: Mutex::new(None),
    gpu: Mutex::new(Gpu::default()),
    dropped: AtomicU64::new(0),
    version: AtomicU32::new(exports::VERSION),
    last_sub: Mutex::new(None),
    holder: Mutex::new(None),
    enabling: AtomicBool::new(false),
    slow_enable: AtomicBool::new(false),
    forced: Mutex::new(HashMap::new()),
});

/// Starts the fake afresh, as a new process would find it (for a tool called in-process,
/// one test after another).
pub(crate) fn reset() {
    *lock(&FAKE.report) = Report::default();
    *lock(&FAKE.sub) = None;
    *lock(&FAKE.last_sub) = None;
    *lock(&FAKE.holder) = None;
    *lock(&FAKE.enabled) = Enabled::default();
    lock(&FAKE.kinds).clear();
    *lock(&FAKE.buffer_cbs) = None;
    *lock(&FAKE.timestamp) = None;
    *lock(&FAKE.buffer) = None;
    FAKE.dropped.store(0, Ordering::Relaxed);
    FAKE.version.store(exports::VERSION, Ordering::Relaxed);
    FAKE.enabling.store(false, Ordering::Relaxed);
    FAKE.slow_enable.store(false, Ordering::Relaxed);
    lock(&FAKE.forced).clear();
    memory::reset();
}

/// The result `what` was told to give instead of doing its work, if any.
pub(crate) fn forced(what: &str) -> Option<sys::CUptiResult> {
    lock(&FAKE.forced).get(what).copied()
}

/// Locks, ignoring poisoning (a panic already failed the run).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f`, turning a panic into `fallback` so that none crosses the C boundary. CUPTI
/// functions (`cupti*`) are also counted while they run, for [`finalize`], and a CUPTI call
/// made while CUPTI is detached is noted: real CUPTI would attach again.
pub(crate) fn guard<R>(what: &'static str, fallback: R, f: impl FnOnce() -> R) -> R {
    let cupti = what.starts_with("cupti") && !what.starts_with("cupti_sim");
    if cupti {
        detach::entered(what);
    }
    let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            violation(format!("cupti-sim panicked in {what}"));
            fallback
        }
    };
    if cupti {
        detach::left();
    }
    r
}

/// `cuptiFinalize` as CUPTI 13.0 on the H200 behaves (probed with a bare injection): what it finds
/// still in CUPTI's buffer is discarded, a recorded kernel still running is lost, and
/// everything the tool set up is forgotten; the next CUPTI call attaches again. It returns
/// once the GPU's running work has ended (194-199 ms beside a 200 ms
/// kernel, 1.5-6 ms beside 2 ms ones).
pub(crate) mod detach {
    use super::{FAKE, activity_ts, exec, lock, violation};
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

    /// CUPTI calls running on any thread.
    static IN_CUPTI: AtomicUsize = AtomicUsize::new(0);
    /// Which, by thread.
    static RUNNING: std::sync::Mutex<Vec<(std::thread::ThreadId, &'static str)>> =
        std::sync::Mutex::new(Vec::new());
    static DETACHED: AtomicBool = AtomicBool::new(false);
    /// The latest end of any GPU work whose record was written.
    static LAST_RECORDED_END: AtomicU64 = AtomicU64::new(0);
    thread_local! {
        static DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    pub(crate) fn entered(what: &'static str) {
        lock(&RUNNING).push((std::thread::current().id(), what));
        IN_CUPTI.fetch_add(1, Ordering::SeqCst);
        DEPTH.with(|d| d.set(d.get() + 1));
        if DETACHED.load(Ordering::SeqCst) {
            if what.starts_with("cuptiSubscribe") {
                DETACHED.store(false, Ordering::SeqCst);
            } else {
                lock(&FAKE.report)
                    .calls_while_detached
                    .push(what.to_owned());
            }
        }
    }

    pub(crate) fn left() {
        DEPTH.with(|d| d.set(d.get() - 1));
        IN_CUPTI.fetch_sub(1, Ordering::SeqCst);
        let me = std::thread::current().id();
        let mut r = lock(&RUNNING);
        if let Some(i) = r.iter().rposition(|(t, _)| *t == me) {
            r.remove(i);
        }
    }

    /// GPU work ending at `end` got a record.
    pub(crate) fn recorded(end: u64) {
        LAST_RECORDED_END.fetch_max(end, Ordering::Relaxed);
    }

    pub(crate) fn finalize() {
        if !exec::in_api_exit() {
            violation("cuptiFinalize outside an API exit callback".into());
        }
        let mine = DEPTH.with(|d| d.get());
        let others = IN_CUPTI.load(Ordering::SeqCst).saturating_sub(mine);
        if others > 0 {
            let me = std::thread::current().id();
            let names: Vec<&str> = lock(&RUNNING)
                .iter()
                .filter(|(t, _)| *t != me)
                .map(|(_, n)| *n)
                .collect();
            violation(format!(
                "cuptiFinalize overlapped {others} CUPTI call(s) of other threads: {names:?}"
            ));
        }
        let now = activity_ts();
        let last = LAST_RECORDED_END.load(Ordering::Relaxed);
        if last > now {
            violation(format!(
                "cuptiFinalize while recorded GPU work still runs (for {} us more): it is lost",
                (last - now) / 1000
            ));
        }
        let left = lock(&FAKE.buffer).take();
        if let Some(b) = left
            && b.records > 0
        {
            violation(format!(
                "cuptiFinalize discarded {} unflushed records",
                b.records
            ));
            lock(&FAKE.report).records_lost_at_finalize += b.records;
        }
        exec::wait_all();
        *lock(&FAKE.sub) = None;
        *lock(&FAKE.enabled) = super::Enabled::default();
        lock(&FAKE.kinds).clear();
        *lock(&FAKE.buffer_cbs) = None;
        *lock(&FAKE.timestamp) = None;
        // The worst case for a tool: correlation ids start again, and kernel
        // names take the addresses of the last attachment's.
        exec::restart_correlation();
        super::reuse_kernel_names();
        lock(&FAKE.report).finalizes += 1;
        DETACHED.store(true, Ordering::SeqCst);
    }
}

pub(crate) fn violation(s: String) {
    eprintln!("cupti-sim: {s}");
    lock(&FAKE.report).violations.push(s);
}

/// CLOCK_BOOTTIME in ns.
pub(crate) use gpu_trace_model::clock::boottime_ns as boottime;

/// The activity clock: the tool's timestamp callback when it registered one.
pub(crate) fn activity_ts() -> u64 {
    match *lock(&FAKE.timestamp) {
        // SAFETY: the tool registered this `CUpti_TimestampCallbackFunc`; it takes nothing.
        Some(f) => unsafe { f() },
        None => boottime(),
    }
}

/// A name of CUPTI's id tables as a string that lives for the process (function names handed
/// to callbacks are CUPTI constants too).
pub(crate) fn static_cstr(s: &str) -> &'static CStr {
    static CACHE: LazyLock<Mutex<HashMap<String, &'static CStr>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    let mut c = lock(&CACHE);
    if let Some(v) = c.get(s) {
        return v;
    }
    let v: &'static CStr = Box::leak(CString::new(s).expect("no NUL").into_boxed_c_str());
    c.insert(s.to_owned(), v);
    v
}

/// Bytes in a kernel-name slot; a longer name gets memory of its own, never
/// reused.
const NAME_SLOT: usize = 4096;

/// Kernel-name slots, and the slot of each name of the current attachment.
struct NameArena {
    slots: Vec<Box<[u8]>>,
    used: HashMap<String, usize>,
}

static NAMES: LazyLock<Mutex<NameArena>> = LazyLock::new(|| {
    Mutex::new(NameArena {
        slots: Vec::new(),
        used: HashMap::new(),
    })
});

/// Kernel names as CUPTI's kernel records point at them: strings of the
/// current attachment, in slots that are never freed but are handed out
/// again, in the same order, after `cuptiFinalize` ([`reuse_kernel_names`]).
/// So a kernel of the next attachment can have, at the same address,
/// another name than a kernel of the last one had: the worst a CUPTI that
/// frees its name strings at the detach can do to a tool that keys
/// anything by those addresses.
pub(crate) fn kernel_name(s: &str) -> *const c_char {
    if s.len() >= NAME_SLOT {
        return static_cstr(s).as_ptr();
    }
    let mut a = lock(&NAMES);
    if let Some(&i) = a.used.get(s) {
        return a.slots[i].as_ptr().cast();
    }
    let i = a.used.len();
    if i == a.slots.len() {
        a.slots.push(vec![0u8; NAME_SLOT].into_boxed_slice());
    }
    let slot = &mut a.slots[i];
    slot[..s.len()].copy_from_slice(s.as_bytes());
    slot[s.len()] = 0;
    let p = slot.as_ptr().cast();
    a.used.insert(s.to_owned(), i);
    p
}

/// `cuptiFinalize`: the next attachment's kernel names take the slots of
/// this one's ([`kernel_name`]).
fn reuse_kernel_names() {
    lock(&NAMES).used.clear();
}

/// The callback id of a runtime (`cuda*`) or driver (`cu*`) function, by CUPTI's name.
pub(crate) fn cbid(name: &str) -> (sys::CUpti_CallbackDomain, u32) {
    let (domain, table) = if name.starts_with("cuda") {
        (
            sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RUNTIME_API,
            sys::cbid_names::RUNTIME_CBID_NAMES,
        )
    } else {
        (
            sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API,
            sys::cbid_names::DRIVER_CBID_NAMES,
        )
    };
    let id = table
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(i, _)| *i)
        .unwrap_or_else(|| panic!("{name} is not a CUPTI callback name"));
    (domain, id)
}

fn domain_name(d: sys::CUpti_CallbackDomain) -> &'static str {
    type D = sys::CUpti_CallbackDomain;
    match d {
        D::CUPTI_CB_DOMAIN_RUNTIME_API => "RUNTIME",
        D::CUPTI_CB_DOMAIN_DRIVER_API => "DRIVER",
        D::CUPTI_CB_DOMAIN_RESOURCE => "RESOURCE",
        _ => "OTHER",
    }
}

/// Calls the subscriber for `(domain, cbid)` if the tool enabled it.
pub(crate) fn fire(domain: sys::CUpti_CallbackDomain, cbid: u32, what: &str, data: *const c_void) {
    let on = {
        let e = lock(&FAKE.enabled);
        e.domains.contains(&domain.0) || e.ids.contains(&(domain.0, cbid))
    };
    let sub = *lock(&FAKE.sub);
    let (true, Some(sub)) = (on, sub) else {
        return;
    };
    *lock(&FAKE.report)
        .callbacks
        .entry(format!("{}/{what}", domain_name(domain)))
        .or_default() += 1;
    // SAFETY: the trampoline and user data the tool subscribed with; `data` is the cbdata
    // type CUPTI documents for the domain, alive for the call.
    unsafe { (sub.cb)(sub.userdata as *mut c_void, domain, cbid, data) };
}

/// Whether activity kind `k` is enabled now.
pub(crate) fn kind_on(k: sys::CUpti_ActivityKind) -> bool {
    lock(&FAKE.kinds).contains(&k.0)
}

/// Size the iterator steps over for a record of `kind` (CUPTI 13.0 layouts, 8-byte aligned).
pub(crate) fn record_size(kind: u32) -> usize {
    type K = sys::CUpti_ActivityKind;
    let s = match sys::CUpti_ActivityKind(kind) {
        K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL | K::CUPTI_ACTIVITY_KIND_KERNEL => {
            size_of::<sys::CUpti_ActivityKernel10>()
        }
        K::CUPTI_ACTIVITY_KIND_MEMCPY => size_of::<sys::CUpti_ActivityMemcpy6>(),
        K::CUPTI_ACTIVITY_KIND_MEMCPY2 => size_of::<sys::CUpti_ActivityMemcpyPtoP4>(),
        K::CUPTI_ACTIVITY_KIND_MEMSET => size_of::<sys::CUpti_ActivityMemset4>(),
        K::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER => {
            size_of::<sys::CUpti_ActivityUnifiedMemoryCounter3>()
        }
        K::CUPTI_ACTIVITY_KIND_RUNTIME | K::CUPTI_ACTIVITY_KIND_DRIVER => {
            size_of::<sys::CUpti_ActivityAPI>()
        }
        K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION => size_of::<sys::CUpti_ActivitySynchronization2>(),
        K::CUPTI_ACTIVITY_KIND_MARKER => size_of::<sys::CUpti_ActivityMarker2>(),
        K::CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION => {
            size_of::<sys::CUpti_ActivityExternalCorrelation>()
        }
        _ => 16,
    };
    s.div_ceil(8) * 8
}

/// A record kind CUPTI's iterator rejects as corrupt (`CUPTI_ERROR_INVALID_KIND`); no
/// activity kind has this value.
pub(crate) const POISON_KIND: u32 = 0x7fff_0001;

/// Copies a record of `kind` into the tool's current buffer (asking for one, or handing a
/// full one back first).
pub(crate) fn emit<T: Copy>(kind: sys::CUpti_ActivityKind, name: &str, rec: T) {
    let len = record_size(kind.0);
    debug_assert!(size_of::<T>() <= len);
    let full = {
        let mut b = lock(&FAKE.buffer);
        if b.as_ref().is_some_and(|b| b.used + len > b.size) {
            b.take()
        } else {
            None
        }
    };
    if let Some(f) = full {
        complete(f);
    }
    let mut b = lock(&FAKE.buffer);
    if b.is_none() {
        *b = request();
    }
    let Some(buf) = b.as_mut().filter(|b| b.used + len <= b.size) else {
        FAKE.dropped.fetch_add(1, Ordering::Relaxed);
        lock(&FAKE.report).records_dropped += 1;
        return;
    };
    // SAFETY: `buf` is a buffer of `size` bytes the tool lent us and has not had back;
    // `used + len <= size` (checked), and `T` fits in `len`.
    unsafe {
        let at = (buf.ptr as *mut u8).add(buf.used);
        std::ptr::write_bytes(at, 0, len);
        std::ptr::write_unaligned(at.cast::<T>(), rec);
    }
    buf.used += len;
    buf.records += 1;
    *lock(&FAKE.report)
        .records_made
        .entry(name.to_owned())
        .or_default() += 1;
}

fn request() -> Option<Buffer> {
    let (req, _) = (*lock(&FAKE.buffer_cbs))?;
    let mut ptr: *mut u8 = std::ptr::null_mut();
    let mut size = 0usize;
    let mut max = 0usize;
    // SAFETY: the tool's `CUpti_BuffersCallbackRequestFunc`, with valid out-pointers.
    unsafe { req(&mut ptr, &mut size, &mut max) };
    lock(&FAKE.report).buffers_requested += 1;
    if ptr.is_null() || size == 0 {
        return None;
    }
    if !(ptr as usize).is_multiple_of(8) {
        violation(format!("activity buffer {ptr:p} is not 8-byte aligned"));
        return None;
    }
    Some(Buffer {
        ptr: ptr as usize,
        size,
        used: 0,
        records: 0,
    })
}

thread_local! {
    static IN_COMPLETION: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Hands a buffer back to the tool (global buffer: no context, stream 0).
pub(crate) fn complete(b: Buffer) {
    let Some((_, done)) = *lock(&FAKE.buffer_cbs) else {
        return;
    };
    IN_COMPLETION.with(|c| c.set(true));
    // SAFETY: the tool's `CUpti_BuffersCallbackCompleteFunc` with the buffer it lent, its
    // size and the bytes of records in it.
    unsafe { done(std::ptr::null_mut(), 0, b.ptr as *mut u8, b.size, b.used) };
    IN_COMPLETION.with(|c| c.set(false));
    let mut r = lock(&FAKE.report);
    r.buffers_completed += 1;
    r.records_delivered += b.records;
}

/// `cuptiActivityFlushAll`: every buffer with records goes back to the tool.
pub(crate) fn flush_all() {
    if IN_COMPLETION.with(|c| c.get()) {
        violation("cuptiActivityFlushAll called from inside a buffer-completed callback".into());
        return;
    }
    lock(&FAKE.report).flushes += 1;
    let b = lock(&FAKE.buffer).take();
    match b {
        Some(b) if b.records > 0 => complete(b),
        // Keep an empty buffer for the next records.
        Some(b) => *lock(&FAKE.buffer) = Some(b),
        None => {}
    }
}

/// The process that runs the program; a child it forks writes no report (the parent's
/// would be overwritten).
static PROGRAM_PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Runs at exit after the tool's own exit handler (registered before the tool was loaded):
/// records never handed back are the tool's loss; writes the report.
extern "C" fn at_exit() {
    guard("the exit handler", (), || {
        if std::process::id() == PROGRAM_PID.load(Ordering::Relaxed) {
            write_report(false);
        }
    });
}

/// Writes the report: at exit, or just before the program replaces itself (`at_exec`), when
/// records still in CUPTI's buffer are lost with the process image rather than undelivered.
pub(crate) fn write_report(at_exec: bool) {
    let left = lock(&FAKE.buffer).as_ref().map_or(0, |b| b.records);
    let mut r = lock(&FAKE.report).clone();
    if at_exec {
        r.records_lost_at_exec = left;
    } else {
        r.records_undelivered = left;
    }
    let mut calls: BTreeMap<String, u64> = BTreeMap::new();
    for (k, v) in lock(&nvtx::CALLS).iter() {
        calls.insert(k.clone(), *v);
    }
    r.nvtx_calls = calls;
    if let Some(path) = std::env::var_os(crate::host::REPORT_ENV) {
        match serde_json::to_vec_pretty(&r) {
            Ok(bytes) => {
                if let Err(e) = std::fs::write(&path, bytes) {
                    eprintln!("cupti-sim: cannot write the report: {e}");
                }
            }
            Err(e) => eprintln!("cupti-sim: cannot encode the report: {e}"),
        }
    }
}

unsafe extern "C" {
    fn atexit(f: extern "C" fn()) -> std::ffi::c_int;
}

/// Registers the report writer; it must come before the tool registers its own handler.
pub(crate) fn register_exit_report() {
    PROGRAM_PID.store(std::process::id(), Ordering::Relaxed);
    // SAFETY: `at_exit` is a plain `extern "C" fn()` that never unwinds (guarded).
    if unsafe { atexit(at_exit) } != 0 {
        eprintln!("cupti-sim: cannot register the exit report");
    }
}
