//! The CUPTI activity API: asynchronous records of GPU work (kernels, copies,
//! sets, synchronization, API calls, markers).
//!
//! CUPTI's buffer callbacks carry no user data, so this module keeps one
//! process-wide slot, set once by [`register`]: a bounded buffer pool and the
//! user's handler. CUPTI asks the pool for empty buffers and hands filled ones
//! back; the handler receives each filled buffer as [`Records`], after which
//! the buffer goes back to the pool. When the pool is exhausted and at its
//! hard cap, CUPTI gets an empty buffer, drops records and counts them
//! ([`Records::dropped`], [`Activity::stats`]); memory never grows unbounded.
//!
//! Order of calls: [`register_timestamp_callback`] (optional) → [`register`] →
//! [`Activity::enable`] … → [`Activity::flush_all`]. NVIDIA's teardown order is
//! disable callbacks, disable activity kinds, then a forced flush.

use std::{
    alloc::Layout,
    ffi::CStr,
    marker::PhantomData,
    ptr::NonNull,
    sync::{
        Condvar, Mutex, OnceLock,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use cupti_sys as sys;

use crate::{Cupti, Error, Result};

/// An activity kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ActivityKind {
    /// `CUPTI_ACTIVITY_KIND_MEMCPY`.
    Memcpy,
    /// `CUPTI_ACTIVITY_KIND_MEMCPY2` (peer-to-peer copies).
    MemcpyPeer,
    /// `CUPTI_ACTIVITY_KIND_MEMSET`.
    Memset,
    /// `CUPTI_ACTIVITY_KIND_KERNEL` (serializes kernels; prefer `ConcurrentKernel`).
    Kernel,
    /// `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`.
    ConcurrentKernel,
    /// `CUPTI_ACTIVITY_KIND_DRIVER`.
    Driver,
    /// `CUPTI_ACTIVITY_KIND_RUNTIME`.
    Runtime,
    /// `CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`.
    Synchronization,
    /// `CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION`.
    ExternalCorrelation,
    /// `CUPTI_ACTIVITY_KIND_MARKER`.
    Marker,
    /// `CUPTI_ACTIVITY_KIND_MARKER_DATA`.
    MarkerData,
    /// `CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER`.
    UnifiedMemoryCounter,
    /// `CUPTI_ACTIVITY_KIND_OVERHEAD`.
    Overhead,
    /// Any other kind, raw.
    Other(u32),
}

impl ActivityKind {
    /// The raw `CUpti_ActivityKind`.
    pub fn to_raw(self) -> sys::CUpti_ActivityKind {
        type K = sys::CUpti_ActivityKind;
        match self {
            Self::Memcpy => K::CUPTI_ACTIVITY_KIND_MEMCPY,
            Self::MemcpyPeer => K::CUPTI_ACTIVITY_KIND_MEMCPY2,
            Self::Memset => K::CUPTI_ACTIVITY_KIND_MEMSET,
            Self::Kernel => K::CUPTI_ACTIVITY_KIND_KERNEL,
            Self::ConcurrentKernel => K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
            Self::Driver => K::CUPTI_ACTIVITY_KIND_DRIVER,
            Self::Runtime => K::CUPTI_ACTIVITY_KIND_RUNTIME,
            Self::Synchronization => K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
            Self::ExternalCorrelation => K::CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
            Self::Marker => K::CUPTI_ACTIVITY_KIND_MARKER,
            Self::MarkerData => K::CUPTI_ACTIVITY_KIND_MARKER_DATA,
            Self::UnifiedMemoryCounter => K::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER,
            Self::Overhead => K::CUPTI_ACTIVITY_KIND_OVERHEAD,
            Self::Other(x) => sys::CUpti_ActivityKind(x),
        }
    }

    /// From the raw `CUpti_ActivityKind`; unknown values become [`ActivityKind::Other`].
    pub fn from_raw(raw: sys::CUpti_ActivityKind) -> Self {
        type K = sys::CUpti_ActivityKind;
        match raw {
            K::CUPTI_ACTIVITY_KIND_MEMCPY => Self::Memcpy,
            K::CUPTI_ACTIVITY_KIND_MEMCPY2 => Self::MemcpyPeer,
            K::CUPTI_ACTIVITY_KIND_MEMSET => Self::Memset,
            K::CUPTI_ACTIVITY_KIND_KERNEL => Self::Kernel,
            K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL => Self::ConcurrentKernel,
            K::CUPTI_ACTIVITY_KIND_DRIVER => Self::Driver,
            K::CUPTI_ACTIVITY_KIND_RUNTIME => Self::Runtime,
            K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION => Self::Synchronization,
            K::CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION => Self::ExternalCorrelation,
            K::CUPTI_ACTIVITY_KIND_MARKER => Self::Marker,
            K::CUPTI_ACTIVITY_KIND_MARKER_DATA => Self::MarkerData,
            K::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER => Self::UnifiedMemoryCounter,
            K::CUPTI_ACTIVITY_KIND_OVERHEAD => Self::Overhead,
            other => Self::Other(other.0),
        }
    }
}

/// Buffer pool sizing.
#[derive(Clone, Copy, Debug)]
pub struct ActivityConfig {
    /// Bytes per buffer (CUPTI recommends 1–10 MiB). Default 8 MiB.
    pub buffer_size: usize,
    /// Buffers allocated up front. Default 4.
    pub initial_buffers: usize,
    /// Hard cap on buffers ever allocated; past it CUPTI gets an empty buffer
    /// and drops (and counts) records. Default 32.
    pub max_buffers: usize,
    /// How long a request made past the cap waits for a completed buffer
    /// to come back before it is refused. Only threads that never delivered
    /// a completed buffer wait (the application's, launching work): the
    /// thread that delivers them must not wait for itself. Default zero:
    /// refuse at once.
    pub request_wait: Duration,
}

impl Default for ActivityConfig {
    fn default() -> Self {
        Self {
            buffer_size: 8 << 20,
            initial_buffers: 4,
            max_buffers: 32,
            request_wait: Duration::ZERO,
        }
    }
}

/// Counters of the buffer pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes per buffer.
    pub buffer_size: usize,
    /// Buffers allocated so far (never more than the cap).
    pub allocated: usize,
    /// Buffers waiting in the pool.
    pub free: usize,
    /// Requests answered with an empty buffer because the cap was reached.
    pub refused_requests: u64,
    /// Requests that found the cap reached and waited for a buffer to come
    /// back (see [`ActivityConfig::request_wait`]), refused or not.
    pub waited_requests: u64,
    /// Completed buffers handed to the handler.
    pub completed_buffers: u64,
    /// Records CUPTI reported dropped, summed over completed buffers.
    pub dropped_records: u64,
}

const RECORD_ALIGN: usize = 8; // ACTIVITY_RECORD_ALIGNMENT in cupti_common.h

struct Buf(NonNull<u8>);
// SAFETY: a Buf is an owned heap allocation; moving it between threads is fine.
unsafe impl Send for Buf {}

struct Pool {
    layout: Layout,
    max: usize,
    wait: Duration,
    free: Mutex<Vec<Buf>>,
    /// Signalled when a buffer comes back.
    returned: Condvar,
    /// A wait ran out: nothing comes back (the delivery thread itself may
    /// be stuck). Until a buffer does, requests are refused at once.
    gave_up: AtomicBool,
    allocated: AtomicUsize,
    refused: AtomicU64,
    waited: AtomicU64,
    completed: AtomicU64,
    dropped: AtomicU64,
}

impl Pool {
    fn new(c: &ActivityConfig) -> Self {
        let size = c.buffer_size.max(RECORD_ALIGN);
        let layout = Layout::from_size_align(size, RECORD_ALIGN).expect("buffer size overflows");
        let pool = Self {
            layout,
            max: c.max_buffers.max(1),
            wait: c.request_wait,
            free: Mutex::new(Vec::with_capacity(c.max_buffers)),
            returned: Condvar::new(),
            gave_up: AtomicBool::new(false),
            allocated: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            waited: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        };
        for _ in 0..c.initial_buffers.min(pool.max) {
            if let Some(b) = pool.alloc() {
                pool.free_list().push(b);
            }
        }
        pool
    }

    fn free_list(&self) -> std::sync::MutexGuard<'_, Vec<Buf>> {
        // A panic while holding this lock cannot leave the Vec inconsistent.
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn alloc(&self) -> Option<Buf> {
        let n = self.allocated.fetch_add(1, Ordering::Relaxed);
        if n >= self.max {
            self.allocated.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        // SAFETY: non-zero size (at least RECORD_ALIGN).
        NonNull::new(unsafe { std::alloc::alloc(self.layout) }).map(Buf)
    }

    fn take(&self) -> Option<Buf> {
        let reused = self.free_list().pop();
        if let Some(b) = reused.or_else(|| self.alloc()) {
            return Some(b);
        }
        if self.wait.is_zero() || DELIVERS.with(|d| d.get()) || self.gave_up.load(Ordering::Relaxed)
        {
            return None;
        }
        // Past the cap, on a thread that launches work: wait for CUPTI's
        // delivery thread to hand a buffer back. The launch waits instead
        // of its records being dropped.
        self.waited.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + self.wait;
        let mut free = self.free_list();
        loop {
            if let Some(b) = free.pop() {
                return Some(b);
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                self.gave_up.store(true, Ordering::Relaxed);
                return None;
            };
            free = self
                .returned
                .wait_timeout(free, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn give_back(&self, b: Buf) {
        self.free_list().push(b);
        self.gave_up.store(false, Ordering::Relaxed);
        self.returned.notify_one();
    }

    fn stats(&self) -> PoolStats {
        PoolStats {
            buffer_size: self.layout.size(),
            allocated: self.allocated.load(Ordering::Relaxed),
            free: self.free_list().len(),
            refused_requests: self.refused.load(Ordering::Relaxed),
            waited_requests: self.waited.load(Ordering::Relaxed),
            completed_buffers: self.completed.load(Ordering::Relaxed),
            dropped_records: self.dropped.load(Ordering::Relaxed),
        }
    }
}

type Handler = Box<dyn Fn(Records<'_>) + Send + Sync>;

struct Global {
    cupti: Cupti,
    pool: Pool,
    handler: Handler,
    disabled: AtomicBool,
}

static GLOBAL: OnceLock<Global> = OnceLock::new();

thread_local! {
    // Set on a thread once it has delivered a completed buffer (CUPTI's
    // worker, or a thread inside `flush_all`): it never waits for a buffer
    // to come back, since it may be the one that would bring it.
    static DELIVERS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
static ANY_KIND_ENABLED: AtomicBool = AtomicBool::new(false);

/// After `cuptiFinalize` no kind is enabled: the timestamp callback may be
/// registered again.
pub(crate) fn forget_enabled_kinds() {
    ANY_KIND_ENABLED.store(false, Ordering::Relaxed);
}

/// The registered activity handler and pool (see [`register`]).
#[derive(Clone, Copy)]
pub struct Activity {
    global: &'static Global,
}

impl std::fmt::Debug for Activity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Activity")
            .field("stats", &self.stats())
            .finish()
    }
}

/// Registers the process-wide buffer callbacks with a pool sized by `config`
/// and `handler`, which receives each completed buffer. `handler` runs on
/// CUPTI's worker thread or inside [`Activity::flush_all`]; a panic inside it
/// is caught, logged once, and disables the handler (buffers are still
/// recycled).
///
/// # Errors
///
/// [`Error::ActivityAlreadyRegistered`] on a second call in the process; the
/// CUPTI error of `cuptiActivityRegisterCallbacks` (the slot stays taken: the
/// process-wide handler is set once, by design).
#[doc(alias = "cuptiActivityRegisterCallbacks")]
pub fn register<F>(cupti: &Cupti, config: ActivityConfig, handler: F) -> Result<Activity>
where
    F: Fn(Records<'_>) + Send + Sync + 'static,
{
    let mut fresh = false;
    let global = GLOBAL.get_or_init(|| {
        fresh = true;
        Global {
            cupti: cupti.clone(),
            pool: Pool::new(&config),
            handler: Box::new(handler),
            disabled: AtomicBool::new(false),
        }
    });
    if !fresh {
        return Err(Error::ActivityAlreadyRegistered);
    }
    // SAFETY: both functions match CUPTI's callback types and never unwind.
    cupti.check(unsafe {
        cupti
            .api()
            .cuptiActivityRegisterCallbacks(Some(buffer_requested), Some(buffer_completed))
    })?;
    Ok(Activity { global })
}

impl Activity {
    /// The registered instance, if [`register`] succeeded in this process.
    pub fn get() -> Option<Self> {
        GLOBAL.get().map(|global| Self { global })
    }

    fn cupti(&self) -> &Cupti {
        &self.global.cupti
    }

    /// Registers the buffer callbacks again after [`Cupti::finalize`]
    /// detached CUPTI (which forgets them); the pool and handler are kept.
    ///
    /// # Errors
    ///
    /// The CUPTI error of `cuptiActivityRegisterCallbacks`.
    #[doc(alias = "cuptiActivityRegisterCallbacks")]
    pub fn reattach(&self) -> Result<()> {
        // SAFETY: as in `register`.
        self.cupti().check(unsafe {
            self.cupti()
                .api()
                .cuptiActivityRegisterCallbacks(Some(buffer_requested), Some(buffer_completed))
        })
    }

    /// Starts recording `kind`.
    ///
    /// # Errors
    ///
    /// [`Error::NotSupported`] for kinds this device/CUPTI cannot record; the
    /// CUPTI error otherwise.
    #[doc(alias = "cuptiActivityEnable")]
    pub fn enable(&self, kind: ActivityKind) -> Result<()> {
        ANY_KIND_ENABLED.store(true, Ordering::Relaxed);
        // SAFETY: plain value.
        self.cupti()
            .check(unsafe { self.cupti().api().cuptiActivityEnable(kind.to_raw()) })
    }

    /// Stops recording `kind`.
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiActivityDisable")]
    pub fn disable(&self, kind: ActivityKind) -> Result<()> {
        // SAFETY: plain value.
        self.cupti()
            .check(unsafe { self.cupti().api().cuptiActivityDisable(kind.to_raw()) })
    }

    /// Delivers every buffer holding completed records to the handler, on this
    /// thread. `forced` also delivers buffers with incomplete records (whose
    /// timestamps may be unresolved): use it at teardown, not periodically.
    /// Not re-entrant: never call it from the handler.
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiActivityFlushAll")]
    pub fn flush_all(&self, forced: bool) -> Result<()> {
        // Buffers are delivered on this thread now.
        DELIVERS.with(|d| d.set(true));
        let flag = if forced {
            sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED.0
        } else {
            0
        };
        // SAFETY: plain value.
        self.cupti()
            .check(unsafe { self.cupti().api().cuptiActivityFlushAll(flag) })
    }

    /// Makes CUPTI's worker thread flush every `period_ms` (0: CUPTI's default).
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiActivityFlushPeriod")]
    pub fn set_flush_period(&self, period_ms: u32) -> Result<()> {
        // SAFETY: plain value.
        self.cupti()
            .check(unsafe { self.cupti().api().cuptiActivityFlushPeriod(period_ms) })
    }

    /// Records CUPTI dropped for `(context, stream_id)` so far; `None` and 0
    /// for the global buffers CUPTI uses by default. Each completed buffer
    /// also reports its count ([`Records::dropped`]).
    ///
    /// # Errors
    ///
    /// The CUPTI error.
    #[doc(alias = "cuptiActivityGetNumDroppedRecords")]
    pub fn dropped_records(&self, context: Option<crate::Context>, stream_id: u32) -> Result<u64> {
        let mut n = 0usize;
        let ctx = context.map_or(std::ptr::null_mut(), |c| c.0);
        // SAFETY: null or a context handle CUPTI gave us; valid out-pointer.
        self.cupti().check(unsafe {
            self.cupti()
                .api()
                .cuptiActivityGetNumDroppedRecords(ctx, stream_id, &mut n)
        })?;
        Ok(n as u64)
    }

    /// After [`Cupti::finalize`]: buffers CUPTI was still holding will never
    /// come back. They stop counting against the cap (their memory is not
    /// freed: nothing says CUPTI no longer holds their address); returns
    /// how many. Call it only with no buffer being delivered.
    pub fn forget_lent_after_finalize(&self) -> usize {
        let pool = &self.global.pool;
        let free = pool.free_list().len();
        let lent = pool.allocated.load(Ordering::Relaxed).saturating_sub(free);
        pool.allocated.fetch_sub(lent, Ordering::Relaxed);
        lent
    }

    /// Pool and drop counters.
    pub fn stats(&self) -> PoolStats {
        self.global.pool.stats()
    }

    /// Whether a panic disabled the handler.
    pub fn is_disabled(&self) -> bool {
        self.global.disabled.load(Ordering::Relaxed)
    }
}

/// Pushes an external correlation id (e.g. a framework op id) for the calling
/// thread; API records made until the matching pop get an
/// `ExternalCorrelation` record linking them to it.
///
/// # Errors
///
/// The CUPTI error.
#[doc(alias = "cuptiActivityPushExternalCorrelationId")]
pub fn push_external_correlation(cupti: &Cupti, kind: u32, id: u64) -> Result<()> {
    // SAFETY: plain values.
    cupti.check(unsafe {
        cupti
            .api()
            .cuptiActivityPushExternalCorrelationId(sys::CUpti_ExternalCorrelationKind(kind), id)
    })
}

/// Pops the last external correlation id of `kind` for the calling thread.
///
/// # Errors
///
/// The CUPTI error.
#[doc(alias = "cuptiActivityPopExternalCorrelationId")]
pub fn pop_external_correlation(cupti: &Cupti, kind: u32) -> Result<u64> {
    let mut id = 0;
    // SAFETY: valid out-pointer.
    cupti.check(unsafe {
        cupti.api().cuptiActivityPopExternalCorrelationId(
            sys::CUpti_ExternalCorrelationKind(kind),
            &mut id,
        )
    })?;
    Ok(id)
}

/// Chooses which unified-memory counters
/// [`ActivityKind::UnifiedMemoryCounter`] records (`enable`), or stops
/// them. Call it before enabling that kind, once the driver is initialised
/// (CUPTI answers [`Error::NotInitialized`] before it is).
///
/// # Errors
///
/// [`Error::NotSupported`] where the platform or device cannot count
/// unified memory (no P2P between the GPUs, MPS, ...); the CUPTI error
/// otherwise.
#[doc(alias = "cuptiActivityConfigureUnifiedMemoryCounter")]
pub fn configure_unified_memory(
    cupti: &Cupti,
    kinds: &[UnifiedMemoryCounterKind],
    enable: bool,
) -> Result<()> {
    let mut configs: Vec<sys::CUpti_ActivityUnifiedMemoryCounterConfig> = kinds
        .iter()
        .map(|k| sys::CUpti_ActivityUnifiedMemoryCounterConfig {
            // Scope and device are deprecated and ignored since CUDA 7.0.
            scope: sys::CUpti_ActivityUnifiedMemoryCounterScope::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE,
            kind: k.to_raw(),
            deviceId: 0,
            enable: u32::from(enable),
        })
        .collect();
    // SAFETY: `configs` holds `len` initialised structs for the call.
    cupti.check(unsafe {
        cupti
            .api()
            .cuptiActivityConfigureUnifiedMemoryCounter(configs.as_mut_ptr(), configs.len() as u32)
    })
}

/// CLOCK_BOOTTIME in nanoseconds: the clock Perfetto's trace processor uses by
/// default, and the one activity timestamps use after
/// [`register_timestamp_callback`] (gpu-trace's one clock,
/// `gpu_trace_model::clock::boottime_ns`).
pub use gpu_trace_model::clock::boottime_ns;

extern "C" fn boottime_callback() -> u64 {
    boottime_ns()
}

/// Makes CUPTI timestamp activity records with CLOCK_BOOTTIME (our own
/// callback), so they share the host trace's clock.
///
/// Must happen before any kind is enabled: CUPTI converts timestamps as
/// records are written, so records made earlier would be on another clock.
///
/// # Errors
///
/// [`Error::TimestampAfterEnable`] if [`Activity::enable`] already ran in
/// this process; the CUPTI error.
#[doc(alias = "cuptiActivityRegisterTimestampCallback")]
pub fn register_timestamp_callback(cupti: &Cupti) -> Result<()> {
    if ANY_KIND_ENABLED.load(Ordering::Relaxed) {
        return Err(Error::TimestampAfterEnable);
    }
    // SAFETY: the callback matches CUpti_TimestampCallbackFunc and cannot unwind
    // (clock_gettime does not panic).
    cupti.check(unsafe {
        cupti
            .api()
            .cuptiActivityRegisterTimestampCallback(Some(boottime_callback))
    })
}

unsafe extern "C" fn buffer_requested(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
) {
    if buffer.is_null() || size.is_null() {
        return;
    }
    // SAFETY: CUPTI passes valid out-pointers. Default: no buffer (records dropped).
    unsafe {
        *buffer = std::ptr::null_mut();
        *size = 0;
        if !max_records.is_null() {
            *max_records = 0; // as many as fit
        }
    }
    let Some(g) = GLOBAL.get() else { return };
    let got =
        gpu_trace_model::guard::contain("activity buffer request", &g.disabled, || g.pool.take());
    match got.flatten() {
        Some(b) => {
            // SAFETY: out-pointers as above; CUPTI owns the buffer until it
            // hands it back through `buffer_completed`.
            unsafe {
                *buffer = b.0.as_ptr();
                *size = g.pool.layout.size();
            }
            // `Buf` has no Drop: CUPTI now owns the allocation until it
            // returns it through `buffer_completed`.
            let _ = b;
        }
        None => {
            g.pool.refused.fetch_add(1, Ordering::Relaxed);
        }
    }
}

unsafe extern "C" fn buffer_completed(
    ctx: sys::CUcontext,
    stream_id: u32,
    buffer: *mut u8,
    size: usize,
    valid_size: usize,
) {
    let Some(buf) = NonNull::new(buffer) else {
        return;
    };
    DELIVERS.with(|d| d.set(true));
    let Some(g) = GLOBAL.get() else { return };
    let mut dropped = 0usize;
    // SAFETY: CUPTI's own arguments; valid out-pointer.
    let r = unsafe {
        g.cupti
            .api()
            .cuptiActivityGetNumDroppedRecords(ctx, stream_id, &mut dropped)
    };
    if r != Ok(sys::CUptiResult::CUPTI_SUCCESS) {
        dropped = 0;
    }
    g.pool.dropped.fetch_add(dropped as u64, Ordering::Relaxed);
    g.pool.completed.fetch_add(1, Ordering::Relaxed);
    if !g.disabled.load(Ordering::Relaxed) {
        gpu_trace_model::guard::contain("activity buffer handler", &g.disabled, || {
            let records = Records {
                cupti: &g.cupti,
                buffer,
                valid_size: valid_size.min(size),
                cursor: std::ptr::null_mut(),
                done: false,
                context: ctx as u64,
                stream_id,
                dropped: dropped as u64,
                _buffer: PhantomData,
            };
            (g.handler)(records);
        });
    }
    if size == g.pool.layout.size() {
        g.pool.give_back(Buf(buf));
    } else {
        // Not one of ours (never expected): do not guess its layout; leak it.
    }
}

/// The records of one completed buffer. Iterating yields each record in order;
/// the end of the buffer ends the iteration (it is not an error). A CUPTI
/// error is yielded once, then iteration stops.
pub struct Records<'a> {
    cupti: &'a Cupti,
    buffer: *mut u8,
    valid_size: usize,
    cursor: *mut sys::CUpti_Activity,
    done: bool,
    context: u64,
    stream_id: u32,
    dropped: u64,
    _buffer: PhantomData<&'a mut [u8]>,
}

impl std::fmt::Debug for Records<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("valid_size", &self.valid_size)
            .field("dropped", &self.dropped)
            .finish()
    }
}

impl<'a> Records<'a> {
    /// Iterates the records in `buffer[..valid_size]`.
    ///
    /// # Safety
    ///
    /// The bytes must be activity records as CUPTI writes them (a buffer CUPTI
    /// completed, or one laid out the same way) and 8-byte aligned; any name
    /// pointers inside must be valid for `'a`.
    pub unsafe fn from_buffer(cupti: &'a Cupti, buffer: &'a mut [u8], valid_size: usize) -> Self {
        Self {
            cupti,
            buffer: buffer.as_mut_ptr(),
            valid_size: valid_size.min(buffer.len()),
            cursor: std::ptr::null_mut(),
            done: false,
            context: 0,
            stream_id: 0,
            dropped: 0,
            _buffer: PhantomData,
        }
    }

    /// Records CUPTI dropped for this buffer's context/stream so far
    /// (`cuptiActivityGetNumDroppedRecords` when the buffer completed).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The buffer's context (0 for CUPTI's global buffers).
    pub fn context_handle(&self) -> u64 {
        self.context
    }

    /// The buffer's stream id (0 for global buffers).
    pub fn stream_id(&self) -> u32 {
        self.stream_id
    }

    /// Bytes of records in the buffer.
    pub fn valid_size(&self) -> usize {
        self.valid_size
    }

    /// Copies a `T` at `p` after checking it lies inside the valid bytes.
    fn read<T: Copy>(&self, p: *const sys::CUpti_Activity) -> Option<T> {
        let start = p as usize;
        let base = self.buffer as usize;
        let end = start.checked_add(std::mem::size_of::<T>())?;
        if start < base || end > base + self.valid_size {
            return None;
        }
        // SAFETY: in bounds of the valid bytes (checked); records are plain
        // data; unaligned read so a misplaced record cannot be UB.
        Some(unsafe { std::ptr::read_unaligned(p.cast::<T>()) })
    }

    fn decode(&self, p: *const sys::CUpti_Activity) -> Result<Record<'a>> {
        type K = sys::CUpti_ActivityKind;
        let head: sys::CUpti_Activity = self.read(p).ok_or(Error::TruncatedRecord { kind: 0 })?;
        let kind = head.kind;
        let trunc = || Error::TruncatedRecord { kind: kind.0 };
        macro_rules! rec {
            ($variant:ident, $view:ident) => {
                Record::$variant($view {
                    raw: self.read(p).ok_or_else(trunc)?,
                    _buffer: PhantomData,
                })
            };
        }
        Ok(match kind {
            K::CUPTI_ACTIVITY_KIND_KERNEL | K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL => {
                rec!(Kernel, KernelRecord)
            }
            K::CUPTI_ACTIVITY_KIND_MEMCPY => rec!(Memcpy, MemcpyRecord),
            K::CUPTI_ACTIVITY_KIND_MEMCPY2 => rec!(MemcpyPeer, MemcpyPeerRecord),
            K::CUPTI_ACTIVITY_KIND_MEMSET => rec!(Memset, MemsetRecord),
            K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION => rec!(Synchronization, SyncRecord),
            K::CUPTI_ACTIVITY_KIND_RUNTIME | K::CUPTI_ACTIVITY_KIND_DRIVER => rec!(Api, ApiRecord),
            K::CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION => {
                rec!(ExternalCorrelation, ExternalCorrelationRecord)
            }
            K::CUPTI_ACTIVITY_KIND_MARKER => rec!(Marker, MarkerRecord),
            K::CUPTI_ACTIVITY_KIND_MARKER_DATA => rec!(MarkerData, MarkerDataRecord),
            K::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER => {
                rec!(UnifiedMemory, UnifiedMemoryRecord)
            }
            other => Record::Other {
                kind: ActivityKind::from_raw(other),
            },
        })
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>>;

    #[doc(alias = "cuptiActivityGetNextRecord")]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        // SAFETY: the buffer and its valid size come from CUPTI (or the
        // `from_buffer` contract); `cursor` is CUPTI's own iteration state.
        let r = unsafe {
            self.cupti.api().cuptiActivityGetNextRecord(
                self.buffer,
                self.valid_size,
                &mut self.cursor,
            )
        };
        match r {
            Ok(sys::CUptiResult::CUPTI_SUCCESS) => {
                let rec = self.decode(self.cursor);
                if rec.is_err() {
                    self.done = true;
                }
                Some(rec)
            }
            Ok(sys::CUptiResult::CUPTI_ERROR_MAX_LIMIT_REACHED) => {
                self.done = true;
                None
            }
            Ok(code) => {
                self.done = true;
                Some(Err(self.cupti.error(code)))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e.into()))
            }
        }
    }
}

/// A decoded activity record. Copies of CUPTI's structs; name strings are
/// borrowed and valid while the buffer is (`'a`).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Record<'a> {
    /// `KERNEL` / `CONCURRENT_KERNEL`.
    Kernel(KernelRecord<'a>),
    /// `MEMCPY`.
    Memcpy(MemcpyRecord<'a>),
    /// `MEMCPY2` (peer to peer).
    MemcpyPeer(MemcpyPeerRecord<'a>),
    /// `MEMSET`.
    Memset(MemsetRecord<'a>),
    /// `SYNCHRONIZATION`.
    Synchronization(SyncRecord<'a>),
    /// `RUNTIME` / `DRIVER`.
    Api(ApiRecord<'a>),
    /// `EXTERNAL_CORRELATION`.
    ExternalCorrelation(ExternalCorrelationRecord<'a>),
    /// `MARKER`.
    Marker(MarkerRecord<'a>),
    /// `MARKER_DATA`.
    MarkerData(MarkerDataRecord<'a>),
    /// `UNIFIED_MEMORY_COUNTER`.
    UnifiedMemory(UnifiedMemoryRecord<'a>),
    /// Any kind not decoded here.
    Other {
        /// Its kind.
        kind: ActivityKind,
    },
}

macro_rules! view {
    ($(#[$m:meta])* $name:ident, $raw:ty) => {
        $(#[$m])*
        #[derive(Clone, Copy)]
        pub struct $name<'a> {
            raw: $raw,
            _buffer: PhantomData<&'a [u8]>,
        }

        impl $name<'_> {
            /// The raw record (CUDA 13.0 layout).
            pub fn raw(&self) -> &$raw {
                &self.raw
            }
        }
    };
}

macro_rules! getters {
    ($name:ident { $($(#[$m:meta])* $get:ident: $ty:ty = $field:ident $(. $inner:tt)?;)* }) => {
        impl $name<'_> {
            $(
                $(#[$m])*
                pub fn $get(&self) -> $ty {
                    self.raw.$field $(. $inner)? as $ty
                }
            )*
        }
    };
}

fn cstr<'a>(p: *const std::ffi::c_char) -> Option<&'a CStr> {
    // SAFETY: CUPTI's name strings are NUL-terminated and outlive the buffer.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
}

/// How a kernel was launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LaunchType {
    /// Regular launch.
    Regular,
    /// Cooperative launch on one device.
    CooperativeSingleDevice,
    /// Cooperative multi-device launch.
    CooperativeMultiDevice,
    /// Launched through a command list (CBL).
    CommandList,
    /// Another value.
    Other(u8),
}

view!(
    /// A kernel execution (`CUpti_ActivityKernel10`).
    KernelRecord, sys::CUpti_ActivityKernel10
);

getters!(KernelRecord {
    /// Start, ns.
    start: u64 = start;
    /// End, ns.
    end: u64 = end;
    /// When the kernel and its child grids completed, ns (0 if unknown).
    completed: u64 = completed;
    /// Device id.
    device_id: u32 = deviceId;
    /// Context id.
    context_id: u32 = contextId;
    /// Stream id.
    stream_id: u32 = streamId;
    /// Correlation id of the launching API call.
    correlation_id: u32 = correlationId;
    /// Registers per thread.
    registers_per_thread: u16 = registersPerThread;
    /// Static shared memory per block, bytes.
    static_shared_memory: i32 = staticSharedMemory;
    /// Dynamic shared memory per block, bytes.
    dynamic_shared_memory: i32 = dynamicSharedMemory;
    /// Local memory per thread, bytes.
    local_memory_per_thread: u32 = localMemoryPerThread;
    /// Total local memory reserved, bytes.
    local_memory_total: u64 = localMemoryTotal_v2;
    /// Shared memory executed per SM, bytes.
    shared_memory_executed: u32 = sharedMemoryExecuted;
    /// Shared memory bank config.
    shared_memory_config: u8 = sharedMemoryConfig;
    /// Requested carveout (percent), if `is_carveout_requested`.
    shared_memory_carveout_requested: u8 = sharedMemoryCarveoutRequested;
    /// Graph node id (0 if not launched from a graph).
    graph_node_id: u64 = graphNodeId;
    /// Graph id (0 if not launched from a graph).
    graph_id: u32 = graphId;
    /// Grid id.
    grid_id: i64 = gridId;
    /// Queued timestamp, ns (needs latency timestamps enabled).
    queued: u64 = queued;
    /// Submitted timestamp, ns (needs latency timestamps enabled).
    submitted: u64 = submitted;
    /// Hardware channel id.
    channel_id: u32 = channelID;
    /// Cluster scheduling policy.
    cluster_scheduling_policy: u32 = clusterSchedulingPolicy;
});

impl<'a> KernelRecord<'a> {
    /// `KERNEL` or `CONCURRENT_KERNEL`.
    pub fn kind(&self) -> ActivityKind {
        ActivityKind::from_raw(self.raw.kind)
    }

    /// Grid size (x, y, z).
    pub fn grid(&self) -> [i32; 3] {
        [self.raw.gridX, self.raw.gridY, self.raw.gridZ]
    }

    /// Block size (x, y, z).
    pub fn block(&self) -> [i32; 3] {
        [self.raw.blockX, self.raw.blockY, self.raw.blockZ]
    }

    /// Cluster size (x, y, z), 0 when not a cluster launch.
    pub fn cluster(&self) -> [u32; 3] {
        [self.raw.clusterX, self.raw.clusterY, self.raw.clusterZ]
    }

    /// Requested cache config (`CUfunc_cache`).
    pub fn cache_config_requested(&self) -> u8 {
        // SAFETY: the union's bitfield view covers its single byte.
        unsafe { self.raw.cacheConfig.config }.requested()
    }

    /// Executed cache config (`CUfunc_cache`).
    pub fn cache_config_executed(&self) -> u8 {
        // SAFETY: as above.
        unsafe { self.raw.cacheConfig.config }.executed()
    }

    /// Whether a shared memory carveout was requested.
    pub fn is_carveout_requested(&self) -> bool {
        self.raw.isSharedMemoryCarveoutRequested != 0
    }

    /// Whether this was a thread-block-cluster launch (cluster size set).
    pub fn is_cluster_launch(&self) -> bool {
        self.cluster().iter().any(|&d| d > 1)
    }

    /// Whether the kernel was launched from the device.
    pub fn is_device_launched(&self) -> bool {
        self.raw.isDeviceLaunched != 0
    }

    /// How it was launched.
    pub fn launch_type(&self) -> LaunchType {
        type L = sys::CUpti_ActivityLaunchType;
        match u32::from(self.raw.launchType) {
            x if x == L::CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR.0 => LaunchType::Regular,
            x if x == L::CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE.0 => {
                LaunchType::CooperativeSingleDevice
            }
            x if x == L::CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE.0 => {
                LaunchType::CooperativeMultiDevice
            }
            x if x == L::CUPTI_ACTIVITY_LAUNCH_TYPE_CBL_COMMANDLIST.0 => LaunchType::CommandList,
            _ => LaunchType::Other(self.raw.launchType),
        }
    }

    /// The (mangled) kernel name.
    pub fn name(&self) -> Option<&'a CStr> {
        cstr(self.raw.name)
    }
}

impl std::fmt::Debug for KernelRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelRecord")
            .field("name", &self.name())
            .field("start", &self.start())
            .field("end", &self.end())
            .field("correlation_id", &self.correlation_id())
            .finish_non_exhaustive()
    }
}

/// Direction of a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemcpyKind {
    /// Host to device.
    HtoD,
    /// Device to host.
    DtoH,
    /// Host to array.
    HtoA,
    /// Array to host.
    AtoH,
    /// Array to array.
    AtoA,
    /// Array to device.
    AtoD,
    /// Device to array.
    DtoA,
    /// Device to device.
    DtoD,
    /// Host to host.
    HtoH,
    /// Peer to peer.
    PtoP,
    /// Unknown or newer.
    Other(u8),
}

impl MemcpyKind {
    fn from_raw(v: u8) -> Self {
        type K = sys::CUpti_ActivityMemcpyKind;
        match u32::from(v) {
            x if x == K::CUPTI_ACTIVITY_MEMCPY_KIND_HTOD.0 => Self::HtoD,
            x if x == K::CUPTI_ACTIVITY_MEMCPY_KIND_DTOH.0 => Self::DtoH,
            x if x == K::CUPTI_ACTIVITY_MEMCPY_KIND_HTOA.0 => Self::HtoA,
            x if x == K::CUPTI_ACTIVITY_MEMCPY_KIND_ATOH.0 => Self::AtoH,
            x if x == K::CUPTI_ACTIVITY_MEMCPY_KIND_ATOA.0 => Self::AtoA,
            x if x == K::CUPTI_ACTIVITY_MEMCPY_KIND_ATOD.0 => Self::AtoD,
            x if x == K::CUPTI_ACTIVITY_MEMCPY_KIND_DTOA.0 => Self::DtoA,
            x if x == K::CUPTI_ACTIVITY_MEMCPY_KIND_DTOD.0 => Self::DtoD,
            x if x == K::CUPTI_ACTIVITY_MEMCPY_KIND_HTOH.0 => Self::HtoH,
            x if x == K::CUPTI_ACTIVITY_MEMCPY_KIND_PTOP.0 => Self::PtoP,
            _ => Self::Other(v),
        }
    }
}

/// Kind of memory at one end of a copy or set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryKind {
    /// Pageable host memory.
    Pageable,
    /// Pinned host memory.
    Pinned,
    /// Device memory.
    Device,
    /// CUDA array.
    Array,
    /// Managed memory.
    Managed,
    /// Static device memory.
    DeviceStatic,
    /// Static managed memory.
    ManagedStatic,
    /// Unknown or newer.
    Other(u32),
}

impl MemoryKind {
    fn from_raw(v: u32) -> Self {
        type K = sys::CUpti_ActivityMemoryKind;
        match v {
            x if x == K::CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE.0 => Self::Pageable,
            x if x == K::CUPTI_ACTIVITY_MEMORY_KIND_PINNED.0 => Self::Pinned,
            x if x == K::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE.0 => Self::Device,
            x if x == K::CUPTI_ACTIVITY_MEMORY_KIND_ARRAY.0 => Self::Array,
            x if x == K::CUPTI_ACTIVITY_MEMORY_KIND_MANAGED.0 => Self::Managed,
            x if x == K::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC.0 => Self::DeviceStatic,
            x if x == K::CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC.0 => Self::ManagedStatic,
            _ => Self::Other(v),
        }
    }
}

fn is_async(flags: u32) -> bool {
    flags & sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC.0 != 0
}

view!(
    /// A copy (`CUpti_ActivityMemcpy6`).
    MemcpyRecord, sys::CUpti_ActivityMemcpy6
);

getters!(MemcpyRecord {
    /// Bytes copied.
    bytes: u64 = bytes;
    /// Start, ns.
    start: u64 = start;
    /// End, ns.
    end: u64 = end;
    /// Device id.
    device_id: u32 = deviceId;
    /// Context id.
    context_id: u32 = contextId;
    /// Stream id.
    stream_id: u32 = streamId;
    /// Correlation id of the API call.
    correlation_id: u32 = correlationId;
    /// Graph node id.
    graph_node_id: u64 = graphNodeId;
    /// Graph id.
    graph_id: u32 = graphId;
    /// Number of copies a batched call performed.
    copy_count: u64 = copyCount;
});

impl MemcpyRecord<'_> {
    /// Direction.
    pub fn copy_kind(&self) -> MemcpyKind {
        MemcpyKind::from_raw(self.raw.copyKind)
    }
    /// Source memory kind.
    pub fn src_kind(&self) -> MemoryKind {
        MemoryKind::from_raw(u32::from(self.raw.srcKind))
    }
    /// Destination memory kind.
    pub fn dst_kind(&self) -> MemoryKind {
        MemoryKind::from_raw(u32::from(self.raw.dstKind))
    }
    /// Whether the copy was asynchronous.
    pub fn is_async(&self) -> bool {
        is_async(u32::from(self.raw.flags))
    }
}

impl std::fmt::Debug for MemcpyRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemcpyRecord")
            .field("kind", &self.copy_kind())
            .field("bytes", &self.bytes())
            .field("correlation_id", &self.correlation_id())
            .finish_non_exhaustive()
    }
}

view!(
    /// A peer-to-peer copy (`CUpti_ActivityMemcpyPtoP4`).
    MemcpyPeerRecord, sys::CUpti_ActivityMemcpyPtoP4
);

getters!(MemcpyPeerRecord {
    /// Bytes copied.
    bytes: u64 = bytes;
    /// Start, ns.
    start: u64 = start;
    /// End, ns.
    end: u64 = end;
    /// Device that ran the copy.
    device_id: u32 = deviceId;
    /// Context that ran the copy.
    context_id: u32 = contextId;
    /// Stream id.
    stream_id: u32 = streamId;
    /// Source device.
    src_device_id: u32 = srcDeviceId;
    /// Source context.
    src_context_id: u32 = srcContextId;
    /// Destination device.
    dst_device_id: u32 = dstDeviceId;
    /// Destination context.
    dst_context_id: u32 = dstContextId;
    /// Correlation id.
    correlation_id: u32 = correlationId;
    /// Graph node id.
    graph_node_id: u64 = graphNodeId;
});

impl MemcpyPeerRecord<'_> {
    /// Direction.
    pub fn copy_kind(&self) -> MemcpyKind {
        MemcpyKind::from_raw(self.raw.copyKind)
    }
    /// Whether the copy was asynchronous.
    pub fn is_async(&self) -> bool {
        is_async(u32::from(self.raw.flags))
    }
}

impl std::fmt::Debug for MemcpyPeerRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemcpyPeerRecord")
            .field("bytes", &self.bytes())
            .field("src_device_id", &self.src_device_id())
            .field("dst_device_id", &self.dst_device_id())
            .finish_non_exhaustive()
    }
}

view!(
    /// A memset (`CUpti_ActivityMemset4`).
    MemsetRecord, sys::CUpti_ActivityMemset4
);

getters!(MemsetRecord {
    /// Bytes set.
    bytes: u64 = bytes;
    /// The value.
    value: u32 = value;
    /// Start, ns.
    start: u64 = start;
    /// End, ns.
    end: u64 = end;
    /// Device id.
    device_id: u32 = deviceId;
    /// Context id.
    context_id: u32 = contextId;
    /// Stream id.
    stream_id: u32 = streamId;
    /// Correlation id.
    correlation_id: u32 = correlationId;
    /// Graph node id.
    graph_node_id: u64 = graphNodeId;
    /// Graph id.
    graph_id: u32 = graphId;
});

impl MemsetRecord<'_> {
    /// Memory kind set.
    pub fn memory_kind(&self) -> MemoryKind {
        MemoryKind::from_raw(u32::from(self.raw.memoryKind))
    }
    /// Whether the set was asynchronous.
    pub fn is_async(&self) -> bool {
        is_async(u32::from(self.raw.flags))
    }
}

impl std::fmt::Debug for MemsetRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemsetRecord")
            .field("bytes", &self.bytes())
            .field("value", &self.value())
            .finish_non_exhaustive()
    }
}

/// What a synchronization record waited for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SyncType {
    /// `cudaEventSynchronize` / `cuEventSynchronize`.
    EventSynchronize,
    /// `cudaStreamWaitEvent` / `cuStreamWaitEvent`.
    StreamWaitEvent,
    /// `cudaStreamSynchronize` / `cuStreamSynchronize`.
    StreamSynchronize,
    /// `cudaDeviceSynchronize` / `cuCtxSynchronize`.
    ContextSynchronize,
    /// Unknown or newer.
    Other(u32),
}

view!(
    /// A synchronization (`CUpti_ActivitySynchronization2`).
    SyncRecord, sys::CUpti_ActivitySynchronization2
);

getters!(SyncRecord {
    /// Start, ns.
    start: u64 = start;
    /// End, ns.
    end: u64 = end;
    /// Correlation id of the API call.
    correlation_id: u32 = correlationId;
    /// Context id.
    context_id: u32 = contextId;
    /// Stream id (for stream syncs and waits).
    stream_id: u32 = streamId;
    /// CUDA event id (for event syncs and waits).
    cuda_event_id: u32 = cudaEventId;
    /// Id of the event record this sync waited for.
    cuda_event_sync_id: u64 = cudaEventSyncId;
    /// Return value of the synchronizing call.
    return_value: u32 = returnValue;
});

impl SyncRecord<'_> {
    /// What was waited for.
    pub fn sync_type(&self) -> SyncType {
        type T = sys::CUpti_ActivitySynchronizationType;
        match self.raw.type_ {
            T::CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE => SyncType::EventSynchronize,
            T::CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT => SyncType::StreamWaitEvent,
            T::CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE => {
                SyncType::StreamSynchronize
            }
            T::CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE => {
                SyncType::ContextSynchronize
            }
            other => SyncType::Other(other.0),
        }
    }
}

impl std::fmt::Debug for SyncRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncRecord")
            .field("type", &self.sync_type())
            .field("correlation_id", &self.correlation_id())
            .finish_non_exhaustive()
    }
}

view!(
    /// A runtime or driver API call (`CUpti_ActivityAPI`).
    ApiRecord, sys::CUpti_ActivityAPI
);

getters!(ApiRecord {
    /// Callback id of the function.
    cbid: u32 = cbid;
    /// Start, ns.
    start: u64 = start;
    /// End, ns.
    end: u64 = end;
    /// Process id.
    process_id: u32 = processId;
    /// Thread id.
    thread_id: u32 = threadId;
    /// Correlation id.
    correlation_id: u32 = correlationId;
    /// Return value.
    return_value: u32 = returnValue;
});

impl ApiRecord<'_> {
    /// Runtime or driver.
    pub fn domain(&self) -> crate::cbid::ApiDomain {
        if self.raw.kind == sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_DRIVER {
            crate::cbid::ApiDomain::Driver
        } else {
            crate::cbid::ApiDomain::Runtime
        }
    }
}

impl std::fmt::Debug for ApiRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiRecord")
            .field("domain", &self.domain())
            .field("cbid", &self.cbid())
            .field("correlation_id", &self.correlation_id())
            .finish_non_exhaustive()
    }
}

view!(
    /// Link from a CUPTI correlation id to an external id
    /// (`CUpti_ActivityExternalCorrelation`).
    ExternalCorrelationRecord, sys::CUpti_ActivityExternalCorrelation
);

getters!(ExternalCorrelationRecord {
    /// The `CUpti_ExternalCorrelationKind`.
    external_kind: u32 = externalKind.0;
    /// The external id.
    external_id: u64 = externalId;
    /// CUPTI's correlation id.
    correlation_id: u32 = correlationId;
});

impl std::fmt::Debug for ExternalCorrelationRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalCorrelationRecord")
            .field("external_id", &self.external_id())
            .field("correlation_id", &self.correlation_id())
            .finish()
    }
}

view!(
    /// An NVTX marker or range end (`CUpti_ActivityMarker2`).
    MarkerRecord, sys::CUpti_ActivityMarker2
);

getters!(MarkerRecord {
    /// `CUpti_ActivityFlag` bits (instantaneous / start / end …).
    flags: u32 = flags.0;
    /// Timestamp, ns.
    timestamp: u64 = timestamp;
    /// Marker id (pairs start and end).
    id: u32 = id;
});

impl<'a> MarkerRecord<'a> {
    /// The message (start and instantaneous markers).
    pub fn name(&self) -> Option<&'a CStr> {
        cstr(self.raw.name)
    }
    /// The NVTX domain name (`None`: default domain).
    pub fn domain(&self) -> Option<&'a CStr> {
        cstr(self.raw.domain)
    }
}

impl std::fmt::Debug for MarkerRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MarkerRecord")
            .field("id", &self.id())
            .field("flags", &self.flags())
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

view!(
    /// Extra data of a marker (`CUpti_ActivityMarkerData2`).
    MarkerDataRecord, sys::CUpti_ActivityMarkerData2
);

getters!(MarkerDataRecord {
    /// `CUpti_ActivityFlag` bits (color set or not).
    flags: u32 = flags.0;
    /// Marker id.
    id: u32 = id;
    /// ARGB color.
    color: u32 = color;
    /// Category.
    category: u32 = category;
});

impl std::fmt::Debug for MarkerDataRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MarkerDataRecord")
            .field("id", &self.id())
            .field("color", &self.color())
            .finish_non_exhaustive()
    }
}

/// What a unified-memory counter record counts
/// (`CUpti_ActivityUnifiedMemoryCounterKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UnifiedMemoryCounterKind {
    /// Pages migrated host to device (`value`: bytes).
    BytesHtoD,
    /// Pages migrated device to host (`value`: bytes).
    BytesDtoH,
    /// Pages migrated between devices (`value`: bytes).
    BytesDtoD,
    /// A CPU page fault (`value`: the faulting instruction's address).
    CpuPageFault,
    /// A GPU page fault group (`value`: faults in the group).
    GpuPageFault,
    /// Processors contending for a region (`value`: bytes).
    Thrashing,
    /// The driver holding a processor off a region.
    Throttling,
    /// A region mapped remotely instead of migrated (`value`: bytes).
    RemoteMap,
    /// Unknown or newer.
    Other(u32),
}

impl UnifiedMemoryCounterKind {
    /// Every counter CUDA 13 defines.
    pub const ALL: [Self; 8] = [
        Self::BytesHtoD,
        Self::BytesDtoH,
        Self::BytesDtoD,
        Self::CpuPageFault,
        Self::GpuPageFault,
        Self::Thrashing,
        Self::Throttling,
        Self::RemoteMap,
    ];

    /// The raw `CUpti_ActivityUnifiedMemoryCounterKind`.
    pub fn to_raw(self) -> sys::CUpti_ActivityUnifiedMemoryCounterKind {
        type K = sys::CUpti_ActivityUnifiedMemoryCounterKind;
        match self {
            Self::BytesHtoD => K::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
            Self::BytesDtoH => K::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
            Self::BytesDtoD => K::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD,
            Self::CpuPageFault => {
                K::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT
            }
            Self::GpuPageFault => K::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
            Self::Thrashing => K::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING,
            Self::Throttling => K::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING,
            Self::RemoteMap => K::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP,
            Self::Other(x) => sys::CUpti_ActivityUnifiedMemoryCounterKind(x),
        }
    }

    /// From the raw value; unknown values become [`Self::Other`].
    pub fn from_raw(raw: sys::CUpti_ActivityUnifiedMemoryCounterKind) -> Self {
        Self::ALL
            .into_iter()
            .find(|k| k.to_raw() == raw)
            .unwrap_or(Self::Other(raw.0))
    }
}

/// Why pages migrated (`CUpti_ActivityUnifiedMemoryMigrationCause`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MigrationCause {
    /// Not known.
    Unknown,
    /// An explicit request (`cudaMemPrefetchAsync`).
    User,
    /// Data coherence: a CPU or GPU fault.
    Coherence,
    /// The driver's speculative prefetch.
    Prefetch,
    /// Evicted from the GPU to make room.
    Eviction,
    /// Access-counter notifications (frequently used pages).
    AccessCounters,
    /// Newer.
    Other(u32),
}

/// The access that faulted (`CUpti_ActivityUnifiedMemoryAccessType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AccessType {
    /// Not known.
    Unknown,
    /// A read.
    Read,
    /// A write.
    Write,
    /// An atomic.
    Atomic,
    /// A prefetch.
    Prefetch,
    /// Newer.
    Other(u32),
}

/// Why a region was mapped remotely
/// (`CUpti_ActivityUnifiedMemoryRemoteMapCause`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RemoteMapCause {
    /// Not known.
    Unknown,
    /// Data coherence.
    Coherence,
    /// To stop thrashing.
    Thrashing,
    /// The program's hints or the driver's heuristics.
    Policy,
    /// No memory left on the processor, and eviction was impossible.
    OutOfMemory,
    /// After an eviction.
    Eviction,
    /// Newer.
    Other(u32),
}

view!(
    /// A unified-memory counter (`CUpti_ActivityUnifiedMemoryCounter3`).
    UnifiedMemoryRecord, sys::CUpti_ActivityUnifiedMemoryCounter3
);

getters!(UnifiedMemoryRecord {
    /// The `CUpti_ActivityUnifiedMemoryCounterKind`.
    counter_kind: u32 = counterKind.0;
    /// Value (bytes, or a count, by kind).
    value: u64 = value;
    /// Start, ns.
    start: u64 = start;
    /// End, ns.
    end: u64 = end;
    /// Virtual address.
    address: u64 = address;
    /// Source id.
    src_id: u32 = srcId;
    /// Destination id.
    dst_id: u32 = dstId;
    /// Stream id.
    stream_id: u32 = streamId;
    /// Process id.
    process_id: u32 = processId;
    /// Raw flags: the cause or access type, by kind.
    flags: u32 = flags;
});

impl UnifiedMemoryRecord<'_> {
    /// What the record counts.
    pub fn kind(&self) -> UnifiedMemoryCounterKind {
        UnifiedMemoryCounterKind::from_raw(self.raw.counterKind)
    }

    /// Why pages migrated, for the byte-transfer kinds.
    pub fn migration_cause(&self) -> Option<MigrationCause> {
        use UnifiedMemoryCounterKind as K;
        type C = sys::CUpti_ActivityUnifiedMemoryMigrationCause;
        if !matches!(self.kind(), K::BytesHtoD | K::BytesDtoH | K::BytesDtoD) {
            return None;
        }
        Some(
            match sys::CUpti_ActivityUnifiedMemoryMigrationCause(self.raw.flags) {
                C::CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_UNKNOWN => MigrationCause::Unknown,
                C::CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER => MigrationCause::User,
                C::CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE => {
                    MigrationCause::Coherence
                }
                C::CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_PREFETCH => {
                    MigrationCause::Prefetch
                }
                C::CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_EVICTION => {
                    MigrationCause::Eviction
                }
                C::CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_ACCESS_COUNTERS => {
                    MigrationCause::AccessCounters
                }
                other => MigrationCause::Other(other.0),
            },
        )
    }

    /// The access that faulted, for page faults.
    pub fn access_type(&self) -> Option<AccessType> {
        use UnifiedMemoryCounterKind as K;
        type A = sys::CUpti_ActivityUnifiedMemoryAccessType;
        if !matches!(self.kind(), K::GpuPageFault | K::CpuPageFault) {
            return None;
        }
        Some(
            match sys::CUpti_ActivityUnifiedMemoryAccessType(self.raw.flags) {
                A::CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_UNKNOWN => AccessType::Unknown,
                A::CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ => AccessType::Read,
                A::CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE => AccessType::Write,
                A::CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_ATOMIC => AccessType::Atomic,
                A::CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_PREFETCH => AccessType::Prefetch,
                other => AccessType::Other(other.0),
            },
        )
    }

    /// Why the region was mapped remotely, for remote maps.
    pub fn remote_map_cause(&self) -> Option<RemoteMapCause> {
        type C = sys::CUpti_ActivityUnifiedMemoryRemoteMapCause;
        if self.kind() != UnifiedMemoryCounterKind::RemoteMap {
            return None;
        }
        Some(
            match sys::CUpti_ActivityUnifiedMemoryRemoteMapCause(self.raw.flags) {
                C::CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_UNKNOWN => {
                    RemoteMapCause::Unknown
                }
                C::CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_COHERENCE => {
                    RemoteMapCause::Coherence
                }
                C::CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_THRASHING => {
                    RemoteMapCause::Thrashing
                }
                C::CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_POLICY => RemoteMapCause::Policy,
                C::CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_OUT_OF_MEMORY => {
                    RemoteMapCause::OutOfMemory
                }
                C::CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_EVICTION => {
                    RemoteMapCause::Eviction
                }
                other => RemoteMapCause::Other(other.0),
            },
        )
    }

    /// For thrashing and throttling: whether the CPU takes part
    /// (`CUPTI_ACTIVITY_FLAG_THRASHING_IN_CPU` / `_THROTTLING_IN_CPU`).
    pub fn involves_cpu(&self) -> Option<bool> {
        use UnifiedMemoryCounterKind as K;
        matches!(self.kind(), K::Thrashing | K::Throttling).then_some(
            self.raw.flags & sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_THRASHING_IN_CPU.0 != 0,
        )
    }

    /// For thrashing: the bitmask of the devices contending, 64 per word
    /// (device 0 is bit 0 of word 0).
    pub fn processors(&self) -> [u64; 5] {
        self.raw.processors
    }
}

impl std::fmt::Debug for UnifiedMemoryRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnifiedMemoryRecord")
            .field("counter_kind", &self.counter_kind())
            .field("value", &self.value())
            .finish_non_exhaustive()
    }
}
