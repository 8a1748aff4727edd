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

use cupti_sys as sys;

// The record views' macros, which the kind modules below expand.
#[macro_use]
mod records;

mod api;
mod clock;
mod correlation;
mod kernel;
mod marker;
mod memcpy;
mod pool;
mod registration;
mod synchronization;
mod unified_memory;

pub use api::ApiRecord;
pub use clock::{boottime_ns, register_timestamp_callback};
pub use correlation::{
    ExternalCorrelationRecord, pop_external_correlation, push_external_correlation,
};
pub use kernel::{KernelRecord, LaunchType};
pub use marker::{MarkerDataRecord, MarkerRecord};
pub use memcpy::{MemcpyKind, MemcpyPeerRecord, MemcpyRecord, MemoryKind, MemsetRecord};
pub use pool::{ActivityConfig, PoolStats};
pub use records::{Record, Records};
pub(crate) use registration::forget_enabled_kinds;
pub use registration::{Activity, register};
pub use synchronization::{SyncRecord, SyncType};
pub use unified_memory::{
    AccessType, MigrationCause, RemoteMapCause, UnifiedMemoryCounterKind, UnifiedMemoryRecord,
    configure_unified_memory,
};

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
