//! External correlation: linking API records to ids of the caller's own
//! (a framework's op ids).

use std::marker::PhantomData;

use cupti_sys as sys;

use crate::{Cupti, Result};

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
