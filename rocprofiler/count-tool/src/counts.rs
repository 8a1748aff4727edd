//! What the tool counted, written as JSON at finalize.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rocprofiler::{Dim3, KernelSymbolInfo};
use serde::Serialize;

/// Kernel symbol as seen.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Symbol {
    pub(crate) name: String,
    pub(crate) sgpr: u32,
    pub(crate) vgpr: u32,
    pub(crate) accum_vgpr: u32,
    pub(crate) lds: u32,
    pub(crate) scratch: u32,
}

impl From<KernelSymbolInfo> for Symbol {
    fn from(k: KernelSymbolInfo) -> Self {
        Symbol {
            name: k.name,
            sgpr: k.sgpr_count,
            vgpr: k.arch_vgpr_count,
            accum_vgpr: k.accum_vgpr_count,
            lds: k.group_segment_size,
            scratch: k.private_segment_size,
        }
    }
}

/// Everything counted.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Counts {
    pub(crate) sdk_version: String,
    pub(crate) priority: u32,
    pub(crate) agents: Vec<String>,
    pub(crate) hip_enter: BTreeMap<String, u64>,
    pub(crate) hip_exit: BTreeMap<String, u64>,
    pub(crate) hip_thread_ids: BTreeSet<u64>,
    pub(crate) hip_buffered: BTreeMap<String, u64>,
    pub(crate) memcpy_call_bytes: u64,
    #[serde(skip)]
    pub(crate) launches: HashMap<u64, (Dim3, Dim3)>,
    pub(crate) marker_calls: BTreeMap<String, u64>,
    pub(crate) marker_messages: BTreeSet<String>,
    pub(crate) range_ids_started: BTreeSet<u64>,
    pub(crate) range_ids_stopped: BTreeSet<u64>,
    pub(crate) code_objects_loaded: u64,
    pub(crate) code_objects_unloaded: u64,
    pub(crate) symbols_registered: u64,
    pub(crate) symbols_unregistered: u64,
    pub(crate) symbols: BTreeMap<u64, Symbol>,
    pub(crate) buffer_batches: u64,
    pub(crate) dropped: u64,
    pub(crate) kernel_dispatches: u64,
    pub(crate) dispatches_by_symbol: BTreeMap<String, u64>,
    pub(crate) correlated_dispatches: u64,
    pub(crate) uncorrelated: u64,
    pub(crate) grid_mismatches: u64,
    pub(crate) bad_timestamps: u64,
    pub(crate) memory_copies: BTreeMap<String, u64>,
    pub(crate) memory_copy_bytes: u64,
    pub(crate) counting_requests: u64,
    pub(crate) counted_dispatches: u64,
    pub(crate) counter_records: BTreeMap<String, u64>,
    pub(crate) counter_sums: BTreeMap<String, f64>,
    pub(crate) counter_max: BTreeMap<String, f64>,
    pub(crate) late_context_status: Option<String>,
    pub(crate) flush_in_callback: Option<String>,
    pub(crate) finalized: bool,
    pub(crate) errors: Vec<String>,
}
