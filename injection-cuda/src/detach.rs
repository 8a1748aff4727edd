//! Detaching CUPTI while no recording window is open (`INJECTION_DETACH`).
//!
//! An attached CUPTI costs every CUDA call even with nothing enabled: on the
//! H200 (`benches/gpu/detach_probe.cpp`, 200,000 empty launches,
//! 10 interleaved runs) a subscriber with the timestamp callback and no kind
//! made a launch 1.13x as slow as without CUPTI, gpu-trace paused 1.20x, and
//! CUPTI detached by `cuptiFinalize` 0.98x. So a paused process detaches:
//!
//! 1. A window closes ([`Detach::closed`]): recording is already off; what
//!    the window submitted must still reach the trace, and `cuptiFinalize`
//!    loses a kernel still running (the same probe, `inflight.cu`). The
//!    correlator knows each stream's last submission in the window; once
//!    each has its record, and no record came for a moment
//!    ([`SETTLE_NS`], for a graph launch's later kernels), everything the
//!    window submitted is in ([`Detach::poll`], after each flush).
//! 2. Then an API exit callsite is asked for (the driver domain's
//!    callbacks), where CUPTI says finalising is safe. There, on the
//!    application's thread, when no thread of ours is inside a CUPTI call
//!    ([`Detach::gate`]), a forced flush and `cuptiFinalize`
//!    ([`Detach::at_exit`]).
//! 3. While detached no CUPTI function is called (any would attach it
//!    again). A window opens: the backend subscribes again and registers
//!    activity before switching sources on, as for a fresh CUPTI; CUPTI may
//!    hand out correlation ids from 1 again, so ids get an offset per
//!    attachment ([`corr`]).
//!
//! `cuptiFinalize` waits for the GPU's running work, on the application's
//! thread: on the H200 a detach took 1.5-6 ms beside 2 ms kernels
//! and 194-199 ms beside a 200 ms one. So detaching has a budget: once its
//! stalls add up to more than [`STALL_SHARE`] of the run so far, CUPTI
//! stays attached after a window (an idle CUPTI costs less), until the run
//! has grown enough for them to fit again ([`over_budget`]).
//!
//! CUPTI keeps memory at each detach: on the H200 300 cycles of a
//! bare injection grew the process 55-85 kB each, steadily. So a run
//! detaches at most `INJECTION_DETACH=N` times (by default
//! [`DEFAULT_MAX_DETACHES`], under ~85 MB); then CUPTI stays attached.
//!
//! A window without API recording cannot say what it submitted, so after
//! it CUPTI stays attached (as it does when the drain has not finished in
//! [`DRAIN_LIMIT`]); so it does with capture ranges (which need CUPTI's
//! callbacks to open), counters, unified memory, memory accounting, and in
//! system mode.

use arc_swap::ArcSwapOption;
use cupti::callback::Subscriber;
#[cfg(doc)]
use gpu_trace_agent::cuda_config::DEFAULT_MAX_DETACHES;
use gpu_trace_model::clock::boottime_ns;
use gpu_trace_model::correlate::Correlator;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard};

const ATTACHED: u8 = 0;
const DRAINING: u8 = 1;
const READY: u8 = 2;
const DETACHED: u8 = 3;
/// Attached until the next window (the drain could not be confirmed).
const STAY: u8 = 4;
/// The process is exiting: attached for good (or detached for good).
const STOPPED: u8 = 5;
/// Paused from the start: nothing to drain; detach once a context exists.
const WAIT_CONTEXT: u8 = 6;

/// How long a closed window's work may take to reach us before CUPTI stays
/// attached for this pause.
pub(crate) const DRAIN_LIMIT: u64 = 10_000_000_000;
/// How long no record must have come before detaching.
pub(crate) const SETTLE_NS: u64 = 200_000_000;

/// The share of the run's time that detaches may hold the application's
/// threads, in thousandths: 0.5%, half the windows' cost target. Beyond it
/// CUPTI stays attached after a window (an idle CUPTI made an empty launch
/// 1.13x as slow, a fraction of a microsecond).
pub(crate) const STALL_SHARE: u64 = 5;

/// Whether detaches that held the application's threads `stalled_ns` in
/// all, `elapsed_ns` into the run, are over their budget.
pub(crate) fn over_budget(stalled_ns: u64, elapsed_ns: u64) -> bool {
    stalled_ns.saturating_mul(1000) > elapsed_ns.saturating_mul(STALL_SHARE)
}

/// The most recent GPU records (correlation id, end), for the drain's
/// question whether a stream's last submission has its record.
const RECENT: usize = 1 << 15;

static OFFSET: AtomicU64 = AtomicU64::new(0);
static GLOBAL: OnceLock<Detach> = OnceLock::new();

/// The process's detach state, once the tool set it up.
pub(crate) fn global() -> Option<&'static Detach> {
    GLOBAL.get()
}

/// Sets the process's detach state up (once): `allowed` at most `max`
/// times.
pub(crate) fn init(allowed: bool, max: u32) -> &'static Detach {
    GLOBAL.get_or_init(|| Detach::new(allowed, max))
}

/// A GPU record came (see [`Detach::record`]).
pub(crate) fn record(corr: u64, end: u64) {
    if let Some(d) = global() {
        d.record(corr, end);
    }
}

/// A CUPTI correlation id as the trace keys it: unique across attachments.
pub(crate) fn corr(raw: u32) -> u64 {
    OFFSET.load(Ordering::Relaxed) + u64::from(raw)
}

/// Which attachment of CUPTI records come from: a number that changes at
/// each detach (CUPTI's own pointers, kernel names among them, may be
/// reused for other things after one).
pub(crate) fn attachment() -> u64 {
    OFFSET.load(Ordering::Relaxed)
}

pub(crate) struct Detach {
    allowed: bool,
    /// The most detaches in the run.
    max: u32,
    /// Whether the limit kept CUPTI attached.
    capped: AtomicBool,
    state: AtomicU8,
    /// Held (shared) by our threads around their CUPTI calls; the finalising
    /// thread takes it exclusively, without waiting.
    gate: RwLock<()>,
    /// When recording last turned on, and when the drain began.
    opened_at: AtomicU64,
    drain_since: AtomicU64,
    /// When the last GPU record came.
    last_record: AtomicU64,
    recent: Box<[(AtomicU64, AtomicU64)]>,
    recent_at: AtomicUsize,
    finalizes: AtomicU32,
    finalize_ns: AtomicU64,
    /// The longest detach held its thread this long (ns).
    longest_ns: AtomicU64,
    /// When the tool started (for the detaches' budget).
    started: u64,
    /// Whether the budget kept CUPTI attached after a window.
    kept: AtomicBool,
    /// The subscription `cuptiFinalize` ends (told so, so that dropping it
    /// calls nothing).
    subscriber: ArcSwapOption<Subscriber>,
}

impl Detach {
    pub(crate) fn new(allowed: bool, max: u32) -> Self {
        Detach {
            allowed,
            max,
            capped: AtomicBool::new(false),
            state: AtomicU8::new(ATTACHED),
            gate: RwLock::new(()),
            opened_at: AtomicU64::new(0),
            drain_since: AtomicU64::new(0),
            last_record: AtomicU64::new(0),
            recent: (0..if allowed { RECENT } else { 0 })
                .map(|_| (AtomicU64::new(0), AtomicU64::new(0)))
                .collect(),
            recent_at: AtomicUsize::new(0),
            finalizes: AtomicU32::new(0),
            finalize_ns: AtomicU64::new(0),
            longest_ns: AtomicU64::new(0),
            started: boottime_ns(),
            kept: AtomicBool::new(false),
            subscriber: ArcSwapOption::empty(),
        }
    }

    /// The current subscription.
    pub(crate) fn set_subscriber(&self, s: Arc<Subscriber>) {
        self.subscriber.store(Some(s));
    }

    /// A closed window's records are awaited.
    pub(crate) fn is_draining(&self) -> bool {
        self.state.load(Ordering::Relaxed) == DRAINING
    }

    pub(crate) fn is_detached(&self) -> bool {
        self.state.load(Ordering::Acquire) == DETACHED
    }

    /// For our threads' CUPTI calls: `None` while CUPTI is being detached
    /// or is detached (the call must be skipped).
    pub(crate) fn try_gate(&self) -> Option<RwLockReadGuard<'_, ()>> {
        let g = self.gate.try_read().ok()?;
        (!self.is_detached()).then_some(g)
    }

    /// For the switching thread, which may wait for a finalise under way.
    pub(crate) fn gate(&self) -> RwLockReadGuard<'_, ()> {
        self.gate.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Recording is on (CUPTI attached again if it was detached).
    pub(crate) fn opened(&self) {
        self.opened_at.store(boottime_ns(), Ordering::Relaxed);
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |s| {
                (s != STOPPED).then_some(ATTACHED)
            });
    }

    /// Recording went off. `knows_submissions`: API calls were recorded
    /// throughout, or no GPU work was.
    pub(crate) fn closed(&self, knows_submissions: bool) {
        if !self.allowed {
            return;
        }
        let now = boottime_ns();
        let stalled_ns = self.finalize_ns.load(Ordering::Relaxed);
        let stalled = over_budget(stalled_ns, now.saturating_sub(self.started));
        let capped = self.finalizes.load(Ordering::Relaxed) >= self.max;
        let next = if knows_submissions && !stalled && !capped {
            DRAINING
        } else {
            STAY
        };
        self.drain_since.store(now, Ordering::Relaxed);
        self.last_record.store(now, Ordering::Relaxed);
        let moved = self
            .state
            .compare_exchange(ATTACHED, next, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok();
        if moved && capped {
            if !self.capped.swap(true, Ordering::Relaxed) {
                gpu_trace_model::verbose!(
                    "CUPTI stays attached from now on: it was detached {} times, the most INJECTION_DETACH allows (CUPTI keeps some memory at each detach)",
                    self.max
                );
            }
        } else if moved && stalled {
            self.kept.store(true, Ordering::Relaxed);
            gpu_trace_model::verbose!(
                "CUPTI stays attached until the next window: detaching has held the application's threads {:.1} ms in {:.1} s, more than {}.{}% of the run",
                stalled_ns as f64 / 1e6,
                now.saturating_sub(self.started) as f64 / 1e9,
                STALL_SHARE / 10,
                STALL_SHARE % 10
            );
        } else if moved && next == STAY {
            gpu_trace_model::verbose!(
                "CUPTI stays attached until the next window: this one recorded GPU work without API calls, so what it submitted is not known"
            );
        }
    }

    /// Paused from the start: detach as soon as the program has made a
    /// context ([`Detach::context_made`]), nothing being recorded before.
    pub(crate) fn paused_at_start(&self) {
        if self.allowed {
            let _ = self.state.compare_exchange(
                ATTACHED,
                WAIT_CONTEXT,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
    }

    /// The program made a context (inside its creation callback): nothing
    /// to drain; the next flush asks for an exit to detach at.
    pub(crate) fn context_made(&self) {
        if self.state.load(Ordering::Acquire) != WAIT_CONTEXT {
            return;
        }
        let now = boottime_ns();
        self.drain_since.store(now, Ordering::Relaxed);
        self.last_record
            .store(now.saturating_sub(SETTLE_NS), Ordering::Relaxed);
        let _ = self.state.compare_exchange(
            WAIT_CONTEXT,
            DRAINING,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }

    /// Waiting for an API exit to detach at (the driver domain's callbacks
    /// are on for it).
    pub(crate) fn is_ready(&self) -> bool {
        self.state.load(Ordering::Acquire) == READY
    }

    /// Turns on the callbacks of every driver call, for an exit callsite to
    /// detach at. The caller holds the gate.
    fn ask_for_exit(&self) -> bool {
        let Some(s) = self.subscriber.load_full() else {
            return false;
        };
        match s.enable_domain(cupti::callback::Domain::Driver) {
            Ok(()) => true,
            Err(e) => {
                gpu_trace_model::verbose!("cannot ask for an API exit to detach at: {e}");
                false
            }
        }
    }

    /// A GPU record with (offset) correlation id `corr` came.
    pub(crate) fn record(&self, corr: u64, end: u64) {
        if self.recent.is_empty() {
            return;
        }
        let i = self.recent_at.fetch_add(1, Ordering::Relaxed) % RECENT;
        self.recent[i].0.store(corr, Ordering::Relaxed);
        self.recent[i].1.store(end, Ordering::Relaxed);
        if self.state.load(Ordering::Relaxed) == DRAINING {
            self.last_record.store(boottime_ns(), Ordering::Relaxed);
        }
    }

    fn end_of(&self, corr: u64) -> Option<u64> {
        self.recent
            .iter()
            .find(|(c, _)| c.load(Ordering::Relaxed) == corr)
            .map(|(_, e)| e.load(Ordering::Relaxed))
    }

    /// After a flush, the caller holding the gate and keeping the sources
    /// from changing meanwhile: when the drain has finished, asks for an
    /// API exit callsite to detach at. `contexts`: the
    /// process has made a context (detaching before would miss its
    /// creation).
    pub(crate) fn poll(&self, correlator: &Correlator, contexts: bool) -> bool {
        if self.state.load(Ordering::Acquire) != DRAINING || !contexts {
            return false;
        }
        let now = boottime_ns();
        let since = self.drain_since.load(Ordering::Relaxed);
        if now.saturating_sub(since) > DRAIN_LIMIT {
            gpu_trace_model::verbose!(
                "CUPTI stays attached until the next window: the closed window's work did not all reach the trace within {} s",
                DRAIN_LIMIT / 1_000_000_000
            );
            let _ =
                self.state
                    .compare_exchange(DRAINING, STAY, Ordering::AcqRel, Ordering::Relaxed);
            return false;
        }
        if now.saturating_sub(self.last_record.load(Ordering::Relaxed)) < SETTLE_NS {
            return false;
        }
        let opened = self.opened_at.load(Ordering::Relaxed);
        let done = correlator
            .last_submissions_since(opened)
            .into_iter()
            .all(|c| self.end_of(c).is_some_and(|end| end <= now));
        done && self.ask_for_exit()
            && self
                .state
                .compare_exchange(DRAINING, READY, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }

    /// Whether an API exit should try [`Detach::at_exit`].
    pub(crate) fn wants_exit(&self) -> bool {
        self.state.load(Ordering::Relaxed) == READY
    }

    /// At an API exit callsite on an application thread (`raw`: the call's
    /// correlation id): detaches if no thread of ours is in CUPTI, else
    /// leaves it to a later exit.
    pub(crate) fn at_exit(&self, cupti: &cupti::Cupti, raw: u32) {
        let Ok(_w) = self.gate.try_write() else {
            return;
        };
        if self
            .state
            .compare_exchange(READY, DETACHED, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        let t0 = boottime_ns();
        if let Some(a) = cupti::activity::Activity::get()
            && let Err(e) = a.flush_all(true)
        {
            gpu_trace_model::verbose!("flush before detaching failed: {e}");
        }
        match cupti.finalize() {
            Ok(()) => {
                if let Some(s) = self.subscriber.load().as_ref() {
                    s.forget_after_finalize();
                }
                if let Some(a) = cupti::activity::Activity::get() {
                    let kept = a.forget_lent_after_finalize();
                    if kept > 0 {
                        gpu_trace_model::verbose!(
                            "CUPTI kept {kept} activity buffer(s) at the detach; new ones replace them"
                        );
                    }
                }
                // Ids of this attachment are at most this call's.
                OFFSET.fetch_add(u64::from(raw) + 1, Ordering::Relaxed);
                let n = self.finalizes.fetch_add(1, Ordering::Relaxed) + 1;
                let took = boottime_ns() - t0;
                self.finalize_ns.fetch_add(took, Ordering::Relaxed);
                self.longest_ns.fetch_max(took, Ordering::Relaxed);
                gpu_trace_model::verbose!(
                    "CUPTI detached (time {n}, {:.1} ms) until the next window",
                    took as f64 / 1e6
                );
                if took > 10_000_000 {
                    gpu_trace_model::verbose!(
                        "that detach held the application's thread for {:.1} ms (cuptiFinalize waits for the GPU's running work)",
                        took as f64 / 1e6
                    );
                }
            }
            Err(e) => {
                gpu_trace_model::warn_once!(
                    "cannot detach CUPTI between windows ({e}); it stays attached, at its idle cost"
                );
                self.state.store(STAY, Ordering::Release);
            }
        }
    }

    /// At exit: no detaching from now on (a detached CUPTI stays so).
    pub(crate) fn stop(&self) {
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |s| {
                (s != DETACHED).then_some(STOPPED)
            });
    }

    /// Times detached, and their total ms, for the trace's log.
    pub(crate) fn summary(&self) -> Option<String> {
        let n = self.finalizes.load(Ordering::Relaxed);
        let longest = self.longest_ns.load(Ordering::Relaxed);
        (n > 0).then(|| {
            let mut line = format!(
                "CUPTI was detached {n} time(s) while no window recorded (cuptiFinalize, {:.1} ms in all on the application's threads, the longest {:.1} ms), and attached again for each window",
                self.finalize_ns.load(Ordering::Relaxed) as f64 / 1e6,
                longest as f64 / 1e6
            );
            if self.capped.load(Ordering::Relaxed) {
                line.push_str(&format!(
                    "; then it stayed attached, {} detaches being the most INJECTION_DETACH allows (CUPTI keeps some memory at each)",
                    self.max
                ));
            }
            if self.kept.load(Ordering::Relaxed) {
                line.push_str(&format!(
                    "; it stayed attached after some windows, detaching having held the application's threads more than {}.{}% of the run",
                    STALL_SHARE / 10,
                    STALL_SHARE % 10
                ));
            }
            line
        })
    }
}

#[cfg(test)]
mod tests {
    use super::over_budget;

    #[test]
    fn detaches_may_hold_half_a_percent_of_the_run() {
        const MS: u64 = 1_000_000;
        // Two 2 ms detaches (train.py on the H200) in 20 s: well inside.
        assert!(!over_budget(4 * MS, 20_000 * MS));
        // A 195 ms one (beside a 200 ms kernel) 3.5 s in: over, until the
        // run is 39 s long.
        assert!(over_budget(195 * MS, 3_500 * MS));
        assert!(over_budget(195 * MS, 38_900 * MS));
        assert!(!over_budget(195 * MS, 39_000 * MS));
        assert!(!over_budget(0, 0));
    }
}
