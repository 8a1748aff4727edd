//! What the simulated SDK observed and delivered during a run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Outcome of one run, written by the simulator.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Encoded SDK version announced to the tool.
    pub sdk_version: u32,
    /// `rocprofiler_configure` was found and called.
    pub configure_called: bool,
    /// It returned non-null.
    pub configure_accepted: bool,
    /// `client_id->name` as the tool set it.
    pub client_name: Option<String>,
    /// The tool wrote nothing into `client_id` but `name` (1.x) or nothing at all (0.x), and
    /// nothing past the struct.
    pub client_id_intact: bool,
    /// `size` of the returned configure result.
    pub result_size: Option<u64>,
    /// What `initialize` returned.
    pub initialize_status: Option<i32>,
    /// Times `finalize` was called.
    pub finalize_calls: u32,
    /// Calls the tool made into the SDK, by function.
    pub calls: BTreeMap<String, u64>,
    /// Calls that did not return success, by function and status name.
    pub failed_calls: BTreeMap<String, BTreeMap<String, u64>>,
    /// What was delivered to the tool.
    pub delivered: Delivered,
    /// Records still in a buffer when the process "exited" (the tool did not flush them).
    pub undelivered_records: u64,
    /// Violations of the documented protocol by the tool.
    pub violations: Vec<String>,
    /// Kernel tids of the simulated application threads.
    pub app_thread_ids: Vec<u64>,
    /// The program's calls of the gpu-trace C API (`Op::GpuTrace`) in order: the function and
    /// what it returned (`None`: the tool does not export it).
    #[serde(default)]
    pub gpu_trace_calls: Vec<(String, Option<i32>)>,
}

/// Deliveries to the tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Delivered {
    /// Callback-tracing callbacks by `KIND/operation/PHASE`.
    pub callbacks: BTreeMap<String, u64>,
    /// Buffered records by kind (`KERNEL_DISPATCH`, `MEMORY_COPY`, `HIP_RUNTIME_API`,
    /// `COUNTER_HEADER`, `COUNTER_VALUE`).
    pub buffer_records: BTreeMap<String, u64>,
    /// Buffer callback invocations.
    pub buffer_batches: u64,
    /// Records dropped (DISCARD policy).
    pub dropped_records: u64,
    /// Dispatch-counting dispatch callbacks.
    pub dispatch_callbacks: u64,
    /// Dispatch-counting record callbacks.
    pub record_callbacks: u64,
    /// Counter records handed over (callback and buffer).
    pub counter_records: u64,
    /// Kernel tids of the threads that ran buffer callbacks.
    pub delivery_thread_ids: Vec<u64>,
}
