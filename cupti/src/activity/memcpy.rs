//! Copy and memset records.

use std::marker::PhantomData;

use cupti_sys as sys;

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
