//! Agents, copied out of the SDK's structs.

use rocprofiler_sys as sys;

use crate::runtime::owned;
use crate::{AgentId, Dim3};

/// CPU or GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AgentKind {
    /// A CPU.
    Cpu,
    /// A GPU.
    Gpu,
    /// Anything else.
    Other(u32),
}

/// An agent as the SDK describes it (the fields this project uses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// Id found in records.
    pub id: AgentId,
    /// CPU or GPU.
    pub kind: AgentKind,
    /// GPU: ISA name (`gfx90a`); CPU: model.
    pub name: String,
    /// Vendor.
    pub vendor_name: String,
    /// Marketing name.
    pub product_name: String,
    /// Model.
    pub model_name: String,
    /// e.g. 90010.
    pub gfx_target_version: u32,
    /// KFD node id.
    pub node_id: u32,
    /// 0..N over all agents.
    pub logical_node_id: i32,
    /// 0..N among agents of the same kind: the HIP ordinal without visibility masks.
    pub logical_node_type_id: i32,
    /// KFD gpu id.
    pub gpu_id: u64,
    /// PCI vendor id.
    pub vendor_id: u16,
    /// PCI device id.
    pub device_id: u16,
    /// PCI bus/device/function.
    pub location_id: u32,
    /// PCI domain.
    pub domain: u32,
    /// Compute units.
    pub cu_count: u32,
    /// SIMDs.
    pub simd_count: u32,
    /// Wavefront size.
    pub wave_front_size: u32,
    /// XCCs.
    pub num_xcc: u32,
    /// Max waves per CU.
    pub max_waves_per_cu: u32,
    /// LDS per work-group, KiB.
    pub lds_size_in_kb: u32,
    /// Local memory, bytes.
    pub local_mem_size: u64,
    /// Max work-group extents.
    pub workgroup_max_dim: Dim3,
    /// Max grid extents.
    pub grid_max_dim: Dim3,
}

impl Agent {
    pub(crate) fn from_raw(a: &sys::rocprofiler_agent_v0_t) -> Self {
        Self {
            id: AgentId(a.id.handle),
            kind: match a.r#type {
                sys::rocprofiler_agent_type_t::CPU => AgentKind::Cpu,
                sys::rocprofiler_agent_type_t::GPU => AgentKind::Gpu,
                other => AgentKind::Other(other.0),
            },
            name: owned(a.name),
            vendor_name: owned(a.vendor_name),
            product_name: owned(a.product_name),
            model_name: owned(a.model_name),
            gfx_target_version: a.gfx_target_version,
            node_id: a.node_id,
            logical_node_id: a.logical_node_id,
            logical_node_type_id: a.logical_node_type_id,
            gpu_id: a.gpu_id,
            vendor_id: a.vendor_id,
            device_id: a.device_id,
            location_id: a.location_id,
            domain: a.domain,
            cu_count: a.cu_count,
            simd_count: a.simd_count,
            wave_front_size: a.wave_front_size,
            num_xcc: a.num_xcc,
            max_waves_per_cu: a.max_waves_per_cu,
            lds_size_in_kb: a.lds_size_in_kb,
            local_mem_size: a.local_mem_size,
            workgroup_max_dim: a.workgroup_max_dim.into(),
            grid_max_dim: a.grid_max_dim.into(),
        }
    }

    /// Whether this is a GPU.
    pub fn is_gpu(&self) -> bool {
        self.kind == AgentKind::Gpu
    }
}
