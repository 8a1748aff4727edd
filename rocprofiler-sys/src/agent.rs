//! `rocprofiler-sdk/agent.h`: agents as the SDK describes them.

use core::ffi::c_char;

use crate::{
    rocprofiler_agent_id_t, rocprofiler_agent_type_t, rocprofiler_dim3_t, rocprofiler_uuid_t,
};

c_enum! {
    /// Layout version asked of `rocprofiler_query_available_agents`.
    pub struct rocprofiler_agent_version_t(u32) = "ROCPROFILER_AGENT_INFO_VERSION_" {
        NONE = 0,
        V0 = 1 => "ROCPROFILER_AGENT_INFO_VERSION_0",
        LAST = 2,
    }
}

macro_rules! hsa_u32 {
    ($($(#[$m:meta])* $name:ident;)*) => {$(
        $(#[$m])*
        /// (A union of a `u32` and bitfields in `hsakmt/hsakmttypes.h`; only the value is bound.)
        #[repr(C)]
        #[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
        pub struct $name {
            /// The raw 32 bits.
            pub Value: u32,
        }
    )*};
}

hsa_u32! {
    /// Firmware version of the SDMA engines.
    HSA_ENGINE_VERSION;
    /// Engine id and firmware version.
    HSA_ENGINE_ID;
    /// Capability bits of the node.
    HSA_CAPABILITY;
}

/// Which runtimes can see an agent (bitfields in one `u32`, 0.6.0+).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct rocprofiler_agent_runtime_visiblity_t {
    /// bit 0 hsa, bit 1 hip, bit 2 rccl, bit 3 rocdecode, 28 reserved bits.
    pub bits: u32,
}

impl rocprofiler_agent_runtime_visiblity_t {
    /// Visible to HSA.
    pub fn hsa(self) -> bool {
        self.bits & 1 != 0
    }
    /// Visible to HIP.
    pub fn hip(self) -> bool {
        self.bits & 2 != 0
    }
    /// Visible to RCCL.
    pub fn rccl(self) -> bool {
        self.bits & 4 != 0
    }
    /// Visible to rocDecode.
    pub fn rocdecode(self) -> bool {
        self.bits & 8 != 0
    }
}

/// Opaque memory-bank entry (24 bytes); only pointed to.
#[repr(C)]
pub struct rocprofiler_agent_mem_bank_t {
    _opaque: [u64; 3],
}
/// Opaque cache entry (40 bytes); only pointed to.
#[repr(C)]
pub struct rocprofiler_agent_cache_t {
    _opaque: [u64; 5],
}
/// Opaque IO-link entry (48 bytes); only pointed to.
#[repr(C)]
pub struct rocprofiler_agent_io_link_t {
    _opaque: [u64; 6],
}

/// One agent (304 bytes in 7.0). The SDK hands out pointers to its own copies; read only the
/// bytes `size` says are there.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct rocprofiler_agent_v0_t {
    /// Bytes of this struct the SDK filled.
    pub size: u64,
    /// Id found in every record.
    pub id: rocprofiler_agent_id_t,
    /// CPU or GPU.
    pub r#type: rocprofiler_agent_type_t,
    /// CPU cores (CPU agents).
    pub cpu_cores_count: u32,
    /// SIMDs.
    pub simd_count: u32,
    /// Entries in `mem_banks`.
    pub mem_banks_count: u32,
    /// Entries in `caches`.
    pub caches_count: u32,
    /// Entries in `io_links`.
    pub io_links_count: u32,
    /// First CPU core id.
    pub cpu_core_id_base: u32,
    /// First SIMD id.
    pub simd_id_base: u32,
    /// Max waves per SIMD.
    pub max_waves_per_simd: u32,
    /// LDS per work-group, KiB.
    pub lds_size_in_kb: u32,
    /// GDS, KiB.
    pub gds_size_in_kb: u32,
    /// Global wave syncs.
    pub num_gws: u32,
    /// Wavefront size.
    pub wave_front_size: u32,
    /// XCCs.
    pub num_xcc: u32,
    /// Compute units.
    pub cu_count: u32,
    /// SIMD arrays.
    pub array_count: u32,
    /// Shader banks.
    pub num_shader_banks: u32,
    /// SIMD arrays per engine.
    pub simd_arrays_per_engine: u32,
    /// CUs per SIMD array.
    pub cu_per_simd_array: u32,
    /// SIMDs per CU.
    pub simd_per_cu: u32,
    /// Scratch slots per CU.
    pub max_slots_scratch_cu: u32,
    /// e.g. 90010 for gfx90a.
    pub gfx_target_version: u32,
    /// PCI vendor id.
    pub vendor_id: u16,
    /// PCI device id.
    pub device_id: u16,
    /// PCI bus/device/function.
    pub location_id: u32,
    /// PCI domain.
    pub domain: u32,
    /// DRM render minor.
    pub drm_render_minor: u32,
    /// SDMA engines.
    pub num_sdma_engines: u32,
    /// XGMI SDMA engines.
    pub num_sdma_xgmi_engines: u32,
    /// SDMA queues per engine.
    pub num_sdma_queues_per_engine: u32,
    /// CP queues.
    pub num_cp_queues: u32,
    /// Max compute engine clock, MHz.
    pub max_engine_clk_ccompute: u32,
    /// Max fcompute clock, MHz.
    pub max_engine_clk_fcompute: u32,
    /// SDMA firmware.
    pub sdma_fw_version: HSA_ENGINE_VERSION,
    /// Firmware.
    pub fw_version: HSA_ENGINE_ID,
    /// Capabilities.
    pub capability: HSA_CAPABILITY,
    /// CUs per engine.
    pub cu_per_engine: u32,
    /// Max waves per CU.
    pub max_waves_per_cu: u32,
    /// Family id.
    pub family_id: u32,
    /// Max work-group size.
    pub workgroup_max_size: u32,
    /// Max grid size.
    pub grid_max_size: u32,
    /// Local memory, bytes.
    pub local_mem_size: u64,
    /// XGMI hive.
    pub hive_id: u64,
    /// KFD gpu id.
    pub gpu_id: u64,
    /// Max work-group extents.
    pub workgroup_max_dim: rocprofiler_dim3_t,
    /// Max grid extents.
    pub grid_max_dim: rocprofiler_dim3_t,
    /// `mem_banks_count` entries.
    pub mem_banks: *const rocprofiler_agent_mem_bank_t,
    /// `caches_count` entries.
    pub caches: *const rocprofiler_agent_cache_t,
    /// `io_links_count` entries.
    pub io_links: *const rocprofiler_agent_io_link_t,
    /// GPU: ISA name such as `gfx90a`; CPU: model name.
    pub name: *const c_char,
    /// Vendor.
    pub vendor_name: *const c_char,
    /// Marketing name.
    pub product_name: *const c_char,
    /// Model.
    pub model_name: *const c_char,
    /// KFD node id.
    pub node_id: u32,
    /// 0..N over all agents.
    pub logical_node_id: i32,
    /// 0..N among agents of the same type (the HIP device ordinal without visibility masks).
    pub logical_node_type_id: i32,
    /// Runtimes that see the agent.
    pub runtime_visibility: rocprofiler_agent_runtime_visiblity_t,
    /// UUID (8 bytes in 7.0; widened to 16 on the 7.1 line, of which these are the first 8).
    pub uuid: rocprofiler_uuid_t,
}

/// `rocprofiler_agent_t` is version 0.
pub type rocprofiler_agent_t = rocprofiler_agent_v0_t;
