//! Activity timestamps on the host trace's clock.

use std::sync::atomic::Ordering;

use super::registration::ANY_KIND_ENABLED;
use crate::{Cupti, Error, Result};

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
/// [`Error::TimestampAfterEnable`] if [`Activity::enable`](super::Activity::enable) already ran in
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
