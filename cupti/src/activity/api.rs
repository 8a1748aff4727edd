//! Runtime and driver API records.

use std::marker::PhantomData;

use cupti_sys as sys;

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
