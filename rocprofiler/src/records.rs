//! Buffered records, decoded into owned values after checking the SDK's `size` fields.

use std::mem::{offset_of, size_of};

use rocprofiler_sys as sys;

use crate::ids::covers;
use crate::{AgentId, AsyncCorrelationId, CorrelationId, Dim3, QueueId};

/// Kernel, queue and sizes of a dispatch (`rocprofiler_kernel_dispatch_info_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatchInfo {
    /// GPU.
    pub agent_id: AgentId,
    /// Queue.
    pub queue_id: QueueId,
    /// Kernel symbol (see code-object tracing).
    pub kernel_id: u64,
    /// Dispatch id.
    pub dispatch_id: u64,
    /// Scratch bytes per work-item.
    pub private_segment_size: u32,
    /// LDS bytes per work-group (static + dynamic).
    pub group_segment_size: u32,
    /// Work-group size.
    pub workgroup_size: Dim3,
    /// Grid size in **work-items** (HIP's grid is in blocks).
    pub grid_size: Dim3,
}

/// Bytes of `rocprofiler_kernel_dispatch_info_t` this crate reads (the 7.0 SDK fills 72).
const DISPATCH_INFO_USED: usize = offset_of!(sys::rocprofiler_kernel_dispatch_info_t, grid_size)
    + size_of::<sys::rocprofiler_dim3_t>();

impl DispatchInfo {
    pub(crate) fn from_raw(d: &sys::rocprofiler_kernel_dispatch_info_t) -> Option<Self> {
        if !covers(d.size, DISPATCH_INFO_USED) {
            return None;
        }
        Some(Self {
            agent_id: AgentId(d.agent_id.handle),
            queue_id: QueueId(d.queue_id.handle),
            kernel_id: d.kernel_id,
            dispatch_id: d.dispatch_id,
            private_segment_size: d.private_segment_size,
            group_segment_size: d.group_segment_size,
            workgroup_size: d.workgroup_size.into(),
            grid_size: d.grid_size.into(),
        })
    }

    /// Grid in work-groups (rounded up per dimension).
    pub fn grid_in_workgroups(&self) -> Dim3 {
        let div = |a: u32, b: u32| if b == 0 { 0 } else { a.div_ceil(b) };
        Dim3 {
            x: div(self.grid_size.x, self.workgroup_size.x),
            y: div(self.grid_size.y, self.workgroup_size.y),
            z: div(self.grid_size.z, self.workgroup_size.z),
        }
    }
}

/// A completed kernel dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelDispatch {
    /// Join key with the launching API call (`internal`).
    pub correlation_id: AsyncCorrelationId,
    /// Launching thread.
    pub thread_id: u64,
    /// GPU start, ns (CLOCK_BOOTTIME).
    pub start_ns: u64,
    /// GPU end, ns.
    pub end_ns: u64,
    /// What ran where.
    pub info: DispatchInfo,
}

/// Direction of a memory copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemoryCopyDirection {
    /// Host to host.
    HostToHost,
    /// Host to device.
    HostToDevice,
    /// Device to host.
    DeviceToHost,
    /// Device to device.
    DeviceToDevice,
    /// Anything else.
    Other(u32),
}

impl From<sys::rocprofiler_memory_copy_operation_t> for MemoryCopyDirection {
    fn from(op: sys::rocprofiler_memory_copy_operation_t) -> Self {
        type O = sys::rocprofiler_memory_copy_operation_t;
        match op {
            O::HOST_TO_HOST => Self::HostToHost,
            O::HOST_TO_DEVICE => Self::HostToDevice,
            O::DEVICE_TO_HOST => Self::DeviceToHost,
            O::DEVICE_TO_DEVICE => Self::DeviceToDevice,
            other => Self::Other(other.0),
        }
    }
}

/// A completed memory copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryCopy {
    /// Direction (the record's operation).
    pub direction: MemoryCopyDirection,
    /// Join key with the API call.
    pub correlation_id: AsyncCorrelationId,
    /// Launching thread.
    pub thread_id: u64,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// Source agent.
    pub src_agent: AgentId,
    /// Destination agent.
    pub dst_agent: AgentId,
    /// Bytes.
    pub bytes: u64,
    /// Source address.
    pub src_address: u64,
    /// Destination address.
    pub dst_address: u64,
}

/// A buffered HIP API call (no arguments; use callback tracing for those).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HipApiRecord {
    /// Runtime or compiler API.
    pub kind: sys::rocprofiler_buffer_tracing_kind_t,
    /// A `rocprofiler_hip_runtime_api_id_t` value.
    pub operation: i32,
    /// Correlation id.
    pub correlation_id: CorrelationId,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// Calling thread.
    pub thread_id: u64,
}

/// Header of the counter records of one dispatch (buffered dispatch counting).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountingDispatch {
    /// Counter records that follow in the buffer.
    pub num_records: u64,
    /// Join key with the API call.
    pub correlation_id: AsyncCorrelationId,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// The dispatch.
    pub info: DispatchInfo,
}

/// One counter value of one hardware instance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterRecord {
    /// Instance id; `Runtime::record_counter_id` gives the counter.
    pub instance_id: u64,
    /// Value.
    pub value: f64,
    /// Dispatch.
    pub dispatch_id: u64,
    /// The dispatch callback's user data.
    pub user_data: u64,
    /// Agent.
    pub agent_id: AgentId,
}

impl From<&sys::rocprofiler_counter_record_t> for CounterRecord {
    fn from(r: &sys::rocprofiler_counter_record_t) -> Self {
        Self {
            instance_id: r.id,
            value: r.counter_value,
            dispatch_id: r.dispatch_id,
            // SAFETY: both union members are 8 plain bytes.
            user_data: unsafe { r.user_data.value },
            agent_id: AgentId(r.agent_id.handle),
        }
    }
}

/// One buffered record.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum BufferRecord {
    /// `TRACING` / `KERNEL_DISPATCH`.
    KernelDispatch(KernelDispatch),
    /// `TRACING` / `MEMORY_COPY`.
    MemoryCopy(MemoryCopy),
    /// `TRACING` / `HIP_RUNTIME_API` or `HIP_COMPILER_API`.
    HipApi(HipApiRecord),
    /// `COUNTERS` / dispatch header.
    CountingDispatch(CountingDispatch),
    /// `COUNTERS` / value.
    Counter(CounterRecord),
    /// A record this crate does not decode, or one too short for its type.
    Unknown {
        /// `rocprofiler_buffer_category_t` value.
        category: u32,
        /// Kind within the category.
        kind: u32,
    },
}

fn size_ok<'a, T>(p: *const T) -> Option<&'a T> {
    // Every record struct starts with `uint64_t size`; read it before trusting the rest.
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null payload of a header the SDK handed us; its first 8 bytes are `size`.
    let size = unsafe { *p.cast::<u64>() };
    if !covers(size, size_of::<T>()) {
        return None;
    }
    // SAFETY: the SDK says the whole struct is there; it stays valid during the callback, and
    // callers copy values out before returning.
    Some(unsafe { &*p })
}

impl BufferRecord {
    /// Decodes one header delivered by a buffer callback.
    ///
    /// # Safety
    /// `h` must be a header the SDK passed to the running buffer callback.
    pub(crate) unsafe fn decode(h: &sys::rocprofiler_record_header_t) -> Self {
        type C = sys::rocprofiler_buffer_category_t;
        type K = sys::rocprofiler_buffer_tracing_kind_t;
        type CK = sys::rocprofiler_counter_record_kind_t;
        let category = h.category();
        let kind = h.kind();
        let unknown = Self::Unknown {
            category: category.0,
            kind,
        };
        let p = h.payload;
        match (category, kind) {
            (C::TRACING, k) if k == K::KERNEL_DISPATCH.0 => {
                let Some(r) =
                    size_ok(p.cast::<sys::rocprofiler_buffer_tracing_kernel_dispatch_record_t>())
                else {
                    return unknown;
                };
                let Some(info) = DispatchInfo::from_raw(&r.dispatch_info) else {
                    return unknown;
                };
                Self::KernelDispatch(KernelDispatch {
                    correlation_id: r.correlation_id.into(),
                    thread_id: r.thread_id,
                    start_ns: r.start_timestamp,
                    end_ns: r.end_timestamp,
                    info,
                })
            }
            (C::TRACING, k) if k == K::MEMORY_COPY.0 => {
                let Some(r) =
                    size_ok(p.cast::<sys::rocprofiler_buffer_tracing_memory_copy_record_t>())
                else {
                    return unknown;
                };
                Self::MemoryCopy(MemoryCopy {
                    direction: r.operation.into(),
                    correlation_id: r.correlation_id.into(),
                    thread_id: r.thread_id,
                    start_ns: r.start_timestamp,
                    end_ns: r.end_timestamp,
                    src_agent: AgentId(r.src_agent_id.handle),
                    dst_agent: AgentId(r.dst_agent_id.handle),
                    bytes: r.bytes,
                    // SAFETY: union of plain 8 bytes.
                    src_address: unsafe { r.src_address.value },
                    // SAFETY: as above.
                    dst_address: unsafe { r.dst_address.value },
                })
            }
            (C::TRACING, k) if k == K::HIP_RUNTIME_API.0 || k == K::HIP_COMPILER_API.0 => {
                let Some(r) = size_ok(p.cast::<sys::rocprofiler_buffer_tracing_hip_api_record_t>())
                else {
                    return unknown;
                };
                Self::HipApi(HipApiRecord {
                    kind: r.kind,
                    operation: r.operation,
                    correlation_id: r.correlation_id.into(),
                    start_ns: r.start_timestamp,
                    end_ns: r.end_timestamp,
                    thread_id: r.thread_id,
                })
            }
            (C::COUNTERS, k) if k == CK::PROFILE_COUNTING_DISPATCH_HEADER.0 => {
                let Some(r) =
                    size_ok(p.cast::<sys::rocprofiler_dispatch_counting_service_record_t>())
                else {
                    return unknown;
                };
                let Some(info) = DispatchInfo::from_raw(&r.dispatch_info) else {
                    return unknown;
                };
                Self::CountingDispatch(CountingDispatch {
                    num_records: r.num_records,
                    correlation_id: r.correlation_id.into(),
                    start_ns: r.start_timestamp,
                    end_ns: r.end_timestamp,
                    info,
                })
            }
            (C::COUNTERS, k) if k == CK::VALUE.0 => {
                // Counter records carry no size field; their 40-byte layout is fixed in 1.x.
                if p.is_null() {
                    return unknown;
                }
                // SAFETY: non-null payload of a COUNTERS/VALUE header.
                let r = unsafe { &*p.cast::<sys::rocprofiler_counter_record_t>() };
                Self::Counter(r.into())
            }
            _ => unknown,
        }
    }
}
