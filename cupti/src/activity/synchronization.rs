//! Synchronization records.

use std::marker::PhantomData;

use cupti_sys as sys;

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
