//! The process-wide slot CUPTI's buffer callbacks reach: registering the
//! pool and handler, switching kinds, flushing, and the callbacks
//! themselves.

use std::{
    marker::PhantomData,
    ptr::NonNull,
    sync::{
        OnceLock,
        atomic::{AtomicBool, Ordering},
    },
};

use cupti_sys as sys;

use super::{
    ActivityConfig, ActivityKind, PoolStats, Records,
    pool::{Buf, DELIVERS, Pool},
};
use crate::{Cupti, Error, Result};

type Handler = Box<dyn Fn(Records<'_>) + Send + Sync>;

struct Global {
    cupti: Cupti,
    pool: Pool,
    handler: Handler,
    disabled: AtomicBool,
}

static GLOBAL: OnceLock<Global> = OnceLock::new();

pub(super) static ANY_KIND_ENABLED: AtomicBool = AtomicBool::new(false);

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
