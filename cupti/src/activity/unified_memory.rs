//! Unified memory: choosing the counters CUPTI records, and their records.

use std::marker::PhantomData;

use cupti_sys as sys;

use crate::{Cupti, Result};

/// Chooses which unified-memory counters
/// [`ActivityKind::UnifiedMemoryCounter`](super::ActivityKind::UnifiedMemoryCounter) records (`enable`), or stops
/// them. Call it before enabling that kind, once the driver is initialised
/// (CUPTI answers [`Error::NotInitialized`](crate::Error::NotInitialized) before it is).
///
/// # Errors
///
/// [`Error::NotSupported`](crate::Error::NotSupported) where the platform or device cannot count
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
