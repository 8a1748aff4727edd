//! Small value types shared by records.

use rocprofiler_sys as sys;

macro_rules! id {
    ($($(#[$m:meta])* $name:ident => $raw:ty;)*) => {$(
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub u64);
        impl $name {
            /// As the C handle.
            pub fn raw(self) -> $raw {
                <$raw>::from_handle(self.0)
            }
        }
    )*};
}

trait FromHandle {
    fn from_handle(h: u64) -> Self;
}

macro_rules! from_handle {
    ($($t:ty),*) => {$(
        impl FromHandle for $t {
            fn from_handle(handle: u64) -> Self {
                Self { handle }
            }
        }
    )*};
}

from_handle!(
    sys::rocprofiler_agent_id_t,
    sys::rocprofiler_queue_id_t,
    sys::rocprofiler_counter_id_t,
    sys::rocprofiler_context_id_t,
    sys::rocprofiler_buffer_id_t
);

id! {
    /// An agent (CPU or GPU).
    AgentId => sys::rocprofiler_agent_id_t;
    /// A hardware queue.
    QueueId => sys::rocprofiler_queue_id_t;
    /// A hardware counter.
    CounterId => sys::rocprofiler_counter_id_t;
    /// A context.
    ContextId => sys::rocprofiler_context_id_t;
    /// A buffer.
    BufferId => sys::rocprofiler_buffer_id_t;
}

/// Three extents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Dim3 {
    /// x.
    pub x: u32,
    /// y.
    pub y: u32,
    /// z.
    pub z: u32,
}

impl Dim3 {
    /// x·y·z.
    pub fn volume(self) -> u64 {
        u64::from(self.x) * u64::from(self.y) * u64::from(self.z)
    }
}

impl From<sys::rocprofiler_dim3_t> for Dim3 {
    fn from(d: sys::rocprofiler_dim3_t) -> Self {
        Self {
            x: d.x,
            y: d.y,
            z: d.z,
        }
    }
}

/// Correlation id of a synchronous API call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CorrelationId {
    /// SDK id; GPU work launched by the call carries the same value.
    pub internal: u64,
    /// Tool-provided id.
    pub external: u64,
    /// `internal` of the enclosing API call, 0 if none.
    pub ancestor: u64,
}

impl From<sys::rocprofiler_correlation_id_t> for CorrelationId {
    fn from(c: sys::rocprofiler_correlation_id_t) -> Self {
        // SAFETY: both union members are 8 plain bytes.
        let external = unsafe { c.external.value };
        Self {
            internal: c.internal,
            external,
            ancestor: c.ancestor,
        }
    }
}

/// Correlation id of asynchronous work (kernel, copy, counting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AsyncCorrelationId {
    /// `internal` of the launching API call.
    pub internal: u64,
    /// Tool-provided id.
    pub external: u64,
}

impl From<sys::rocprofiler_async_correlation_id_t> for AsyncCorrelationId {
    fn from(c: sys::rocprofiler_async_correlation_id_t) -> Self {
        // SAFETY: both union members are 8 plain bytes.
        let external = unsafe { c.external.value };
        Self {
            internal: c.internal,
            external,
        }
    }
}

/// Whether a record whose `size` field says `size` contains the bytes of a field ending at `end`.
pub(crate) fn covers(size: u64, end: usize) -> bool {
    size >= end as u64
}
