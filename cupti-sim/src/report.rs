//! What the fake CUPTI observed and delivered during a run, written at process exit (after the
//! injection's own exit handler has run).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Outcome of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// What `InitializeInjection` returned (`None`: never called).
    pub initialize_injection: Option<i32>,
    /// What `InitializeInjectionNvtx2` returned (`None`: no NVTX call, or no NVTX injection).
    pub initialize_nvtx: Option<i32>,
    /// Subscriptions made.
    pub subscribes: u64,
    /// Each subscription's `subscriberName`, in order (empty: `cuptiSubscribe`, without one).
    #[serde(default)]
    pub subscriber_names: Vec<String>,
    /// `cuptiUnsubscribe` calls.
    #[serde(default)]
    pub unsubscribes: u64,
    /// Callbacks delivered, by `DOMAIN/name/SITE` (`RESOURCE/CONTEXT_CREATED`).
    pub callbacks: BTreeMap<String, u64>,
    /// Activity records written into the tool's buffers, by kind.
    pub records_made: BTreeMap<String, u64>,
    /// Records in buffers handed back to the tool (completed).
    pub records_delivered: u64,
    /// Records the tool never got back: still in a buffer at exit.
    pub records_undelivered: u64,
    /// Records dropped because the tool gave no buffer.
    pub records_dropped: u64,
    /// Buffers the tool gave / that were completed back to it.
    pub buffers_requested: u64,
    /// See `buffers_requested`.
    pub buffers_completed: u64,
    /// `cuptiActivityFlushAll` calls.
    pub flushes: u64,
    /// NVTX calls made into the tool's function table, by name.
    pub nvtx_calls: BTreeMap<String, u64>,
    /// NVTX calls the tool left without a handler (slot empty), by name.
    pub nvtx_unhandled: BTreeMap<String, u64>,
    /// Kernel tids of the scripted threads.
    pub app_thread_ids: Vec<u64>,
    /// Calls of CUPTI's profiler API (`cuptiProfiler*`, `cuptiRangeProfiler*`,
    /// `cuptiDeviceGetChipName`) by function name, failed ones included.
    pub profiler_calls: BTreeMap<String, u64>,
    /// Ranges the range profiler recorded (one per kernel in auto range), decoded or not.
    pub ranges_profiled: u64,
    /// Ranges dropped because the pass or the counter data image was full.
    pub ranges_dropped: u64,
    /// Kernel executions kernel replay added: each profiled launch runs once per pass.
    pub kernel_replays: u64,
    /// Records of `WaitNs` kernels, which CUPTI's profiler launches itself (one after each
    /// kernel profiled under user replay).
    pub profiler_kernels: u64,
    /// The thread that loaded the injection and ran the program's setup.
    pub program_thread_id: u64,
    /// Every thread of the process and its blocked signals, when `Op::Signals` ran.
    pub thread_masks: Vec<ThreadMask>,
    /// SIGUSR1 the program's handler ran for (`Op::Signals`).
    pub signals_handled: u32,
    /// Names of the threads the SIGUSR1 handler ran on.
    pub signal_handler_threads: Vec<String>,
    /// `cuptiFinalize` calls (each detaches CUPTI).
    pub finalizes: u64,
    /// Records `cuptiFinalize` found unflushed in CUPTI's buffer and discarded.
    pub records_lost_at_finalize: u64,
    /// CUPTI calls made while CUPTI was detached, other than the subscription that attaches
    /// it again: each would have attached CUPTI again.
    pub calls_while_detached: Vec<String>,
    /// Exit statuses of the children `Op::Fork` made (`None`: ended by a signal), in order.
    pub children: Vec<Option<i32>>,
    /// Records still in CUPTI's buffer when the program called `exec` (`Op::Exec`): lost
    /// with the process image, as they would be with the real CUPTI.
    pub records_lost_at_exec: u64,
    /// The program's calls of the gpu-trace C API (`Op::GpuTrace`) in order: the function
    /// and what it returned (`None`: the injection does not export it).
    #[serde(default)]
    pub gpu_trace_calls: Vec<(String, Option<i32>)>,
    /// Protocol violations by the tool.
    pub violations: Vec<String>,
}

/// A thread and the signals it blocks (`/proc/self/task/<tid>/status`'s `SigBlk`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadMask {
    /// Kernel tid.
    pub tid: u64,
    /// Its name (`comm`).
    pub name: String,
    /// Bit `n - 1` set: signal `n` blocked.
    pub blocked: u64,
}
