//! `-t uvm`: switching CUPTI's unified-memory counters on and off, tried
//! again while CUDA is not ready for them.

use cupti::Cupti;
use cupti::activity::{self, Activity, ActivityKind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Switches CUPTI's unified-memory counters. CUPTI configures them only
/// once the driver is initialised, which it may not be yet when recording
/// starts (inside `cuInit`), and on the H200 (driver 580, CUPTI 13.0) it
/// enables their records only once the first context is made: not from
/// inside `cuInit`, nor from the context's creation callback
/// (`CUPTI_ERROR_NOT_READY`). Then the next API call retries, up to
/// [`UVM_TRIES`] times.
pub(crate) struct Uvm {
    cupti: Cupti,
    notes: gpu_trace_perfetto::Notes,
    /// (wanted, on in CUPTI).
    state: Mutex<(bool, bool)>,
    /// CUPTI was not ready: the next API call tries again.
    pending: AtomicBool,
    tries: std::sync::atomic::AtomicU32,
}

/// How many times unified memory is tried while CUPTI is not ready.
const UVM_TRIES: u32 = 1000;

impl Uvm {
    pub(crate) fn new(cupti: Cupti, notes: gpu_trace_perfetto::Notes) -> Self {
        Uvm {
            cupti,
            notes,
            state: Mutex::new((false, false)),
            pending: AtomicBool::new(false),
            tries: std::sync::atomic::AtomicU32::new(0),
        }
    }

    pub(crate) fn set(&self, wanted: bool) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0 = wanted;
        self.apply();
    }

    /// At an API call: retries when CUPTI was not ready.
    pub(crate) fn retry(&self) {
        if self.pending.load(Ordering::Relaxed) {
            self.apply();
        }
    }

    /// CUPTI is not ready for `what` yet: try again at the next API call,
    /// unless it has been tried too often.
    fn wait(&self, st: &mut (bool, bool), what: &str, e: &cupti::Error) {
        let n = self.tries.fetch_add(1, Ordering::Relaxed) + 1;
        if n == 1 {
            gpu_trace_model::verbose!("{what} waits for CUDA ({e}); retried at the next API calls");
        }
        if n >= UVM_TRIES {
            let msg = format!(
                "cannot record unified memory ({e}, {n} tries); the trace has no UVM events"
            );
            gpu_trace_model::warn_once!("{msg}");
            self.notes.warn(msg);
            st.0 = false;
            self.pending.store(false, Ordering::Relaxed);
        } else {
            self.pending.store(true, Ordering::Relaxed);
        }
    }

    /// Brings CUPTI to what is wanted, if it can now.
    pub(crate) fn apply(&self) {
        use cupti::activity::UnifiedMemoryCounterKind as K;
        let Some(a) = Activity::get() else { return };
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (wanted, on) = *st;
        if wanted == on {
            self.pending.store(false, Ordering::Relaxed);
            return;
        }
        if !wanted {
            if let Err(e) = a.disable(ActivityKind::UnifiedMemoryCounter) {
                gpu_trace_model::verbose!("cannot stop unified-memory records: {e}");
            }
            let _ = activity::configure_unified_memory(&self.cupti, &K::ALL, false);
            st.1 = false;
            self.pending.store(false, Ordering::Relaxed);
            return;
        }
        let kinds: Vec<K> = match activity::configure_unified_memory(&self.cupti, &K::ALL, true) {
            Ok(()) => K::ALL.to_vec(),
            Err(e @ cupti::Error::NotInitialized(_)) => {
                self.wait(&mut st, "configuring unified-memory counters", &e);
                return;
            }
            Err(e) if e.is_not_ready() => {
                self.wait(&mut st, "configuring unified-memory counters", &e);
                return;
            }
            Err(e) => {
                // Some platforms count only some kinds (no peer copies on one
                // GPU): keep those that configure alone.
                let ok: Vec<K> = K::ALL
                    .into_iter()
                    .filter(|k| {
                        activity::configure_unified_memory(&self.cupti, &[*k], true).is_ok()
                    })
                    .collect();
                if ok.is_empty() {
                    let msg = format!(
                        "unified-memory counters are not available here ({e}); the trace has no UVM migrations or faults"
                    );
                    gpu_trace_model::warn_once!("{msg}");
                    self.notes.warn(msg);
                    // Do not ask again.
                    st.0 = false;
                    return;
                }
                let missing: Vec<String> = K::ALL
                    .iter()
                    .filter(|k| !ok.contains(k))
                    .map(|k| format!("{k:?}"))
                    .collect();
                self.notes.info(format!(
                    "unified-memory counters {} are not available here ({e})",
                    missing.join(", ")
                ));
                ok
            }
        };
        match a.enable(ActivityKind::UnifiedMemoryCounter) {
            Ok(()) => {
                st.1 = true;
                self.pending.store(false, Ordering::Relaxed);
                gpu_trace_model::verbose!(
                    "recording unified memory: {kinds:?} (after {} tries)",
                    self.tries.load(Ordering::Relaxed) + 1
                );
            }
            Err(e) if e.is_not_ready() => self.wait(&mut st, "recording unified memory", &e),
            Err(e) => {
                let msg =
                    format!("cannot record unified memory ({e}); the trace has no UVM events");
                gpu_trace_model::warn_once!("{msg}");
                self.notes.warn(msg);
                st.0 = false;
            }
        }
    }
}
