//! Kernel records.

use std::{ffi::CStr, marker::PhantomData};

use cupti_sys as sys;

use super::{ActivityKind, records::cstr};

/// How a kernel was launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LaunchType {
    /// Regular launch.
    Regular,
    /// Cooperative launch on one device.
    CooperativeSingleDevice,
    /// Cooperative multi-device launch.
    CooperativeMultiDevice,
    /// Launched through a command list (CBL).
    CommandList,
    /// Another value.
    Other(u8),
}

view!(
    /// A kernel execution (`CUpti_ActivityKernel10`).
    KernelRecord, sys::CUpti_ActivityKernel10
);

getters!(KernelRecord {
    /// Start, ns.
    start: u64 = start;
    /// End, ns.
    end: u64 = end;
    /// When the kernel and its child grids completed, ns (0 if unknown).
    completed: u64 = completed;
    /// Device id.
    device_id: u32 = deviceId;
    /// Context id.
    context_id: u32 = contextId;
    /// Stream id.
    stream_id: u32 = streamId;
    /// Correlation id of the launching API call.
    correlation_id: u32 = correlationId;
    /// Registers per thread.
    registers_per_thread: u16 = registersPerThread;
    /// Static shared memory per block, bytes.
    static_shared_memory: i32 = staticSharedMemory;
    /// Dynamic shared memory per block, bytes.
    dynamic_shared_memory: i32 = dynamicSharedMemory;
    /// Local memory per thread, bytes.
    local_memory_per_thread: u32 = localMemoryPerThread;
    /// Total local memory reserved, bytes.
    local_memory_total: u64 = localMemoryTotal_v2;
    /// Shared memory executed per SM, bytes.
    shared_memory_executed: u32 = sharedMemoryExecuted;
    /// Shared memory bank config.
    shared_memory_config: u8 = sharedMemoryConfig;
    /// Requested carveout (percent), if `is_carveout_requested`.
    shared_memory_carveout_requested: u8 = sharedMemoryCarveoutRequested;
    /// Graph node id (0 if not launched from a graph).
    graph_node_id: u64 = graphNodeId;
    /// Graph id (0 if not launched from a graph).
    graph_id: u32 = graphId;
    /// Grid id.
    grid_id: i64 = gridId;
    /// Queued timestamp, ns (needs latency timestamps enabled).
    queued: u64 = queued;
    /// Submitted timestamp, ns (needs latency timestamps enabled).
    submitted: u64 = submitted;
    /// Hardware channel id.
    channel_id: u32 = channelID;
    /// Cluster scheduling policy.
    cluster_scheduling_policy: u32 = clusterSchedulingPolicy;
});

impl<'a> KernelRecord<'a> {
    /// `KERNEL` or `CONCURRENT_KERNEL`.
    pub fn kind(&self) -> ActivityKind {
        ActivityKind::from_raw(self.raw.kind)
    }

    /// Grid size (x, y, z).
    pub fn grid(&self) -> [i32; 3] {
        [self.raw.gridX, self.raw.gridY, self.raw.gridZ]
    }

    /// Block size (x, y, z).
    pub fn block(&self) -> [i32; 3] {
        [self.raw.blockX, self.raw.blockY, self.raw.blockZ]
    }

    /// Cluster size (x, y, z), 0 when not a cluster launch.
    pub fn cluster(&self) -> [u32; 3] {
        [self.raw.clusterX, self.raw.clusterY, self.raw.clusterZ]
    }

    /// Requested cache config (`CUfunc_cache`).
    pub fn cache_config_requested(&self) -> u8 {
        // SAFETY: the union's bitfield view covers its single byte.
        unsafe { self.raw.cacheConfig.config }.requested()
    }

    /// Executed cache config (`CUfunc_cache`).
    pub fn cache_config_executed(&self) -> u8 {
        // SAFETY: as above.
        unsafe { self.raw.cacheConfig.config }.executed()
    }

    /// Whether a shared memory carveout was requested.
    pub fn is_carveout_requested(&self) -> bool {
        self.raw.isSharedMemoryCarveoutRequested != 0
    }

    /// Whether this was a thread-block-cluster launch (cluster size set).
    pub fn is_cluster_launch(&self) -> bool {
        self.cluster().iter().any(|&d| d > 1)
    }

    /// Whether the kernel was launched from the device.
    pub fn is_device_launched(&self) -> bool {
        self.raw.isDeviceLaunched != 0
    }

    /// How it was launched.
    pub fn launch_type(&self) -> LaunchType {
        type L = sys::CUpti_ActivityLaunchType;
        match u32::from(self.raw.launchType) {
            x if x == L::CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR.0 => LaunchType::Regular,
            x if x == L::CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE.0 => {
                LaunchType::CooperativeSingleDevice
            }
            x if x == L::CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE.0 => {
                LaunchType::CooperativeMultiDevice
            }
            x if x == L::CUPTI_ACTIVITY_LAUNCH_TYPE_CBL_COMMANDLIST.0 => LaunchType::CommandList,
            _ => LaunchType::Other(self.raw.launchType),
        }
    }

    /// The (mangled) kernel name.
    pub fn name(&self) -> Option<&'a CStr> {
        cstr(self.raw.name)
    }
}

impl std::fmt::Debug for KernelRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelRecord")
            .field("name", &self.name())
            .field("start", &self.start())
            .field("end", &self.end())
            .field("correlation_id", &self.correlation_id())
            .finish_non_exhaustive()
    }
}
