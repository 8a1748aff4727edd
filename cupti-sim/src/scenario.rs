//! The scripted CUDA program: kernels and host threads doing runtime/driver and NVTX calls.
//!
//! Scenarios are JSON ([`Scenario::from_json`]); streams are small integers (0 is the legacy
//! default stream, handle 0; stream `n` has the opaque handle [`stream_handle`]`(n)`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::counters::ProfilerSpec;

/// A whole scripted program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Kernels the program launches.
    pub kernels: Vec<KernelSpec>,
    /// Host threads; they run concurrently.
    pub threads: Vec<ThreadSpec>,
    /// The GPU's counters: what CUPTI's profiler offers and which of its calls fail.
    #[serde(default)]
    pub profiler: ProfilerSpec,
}

/// A kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSpec {
    /// Short name used by launch ops.
    pub name: String,
    /// Mangled symbol name in the activity record.
    pub symbol: String,
    /// Registers per thread.
    #[serde(default)]
    pub registers: u16,
    /// Static shared memory per block, bytes.
    #[serde(default)]
    pub static_smem: i32,
    /// Simulated GPU time.
    pub duration_us: u64,
}

/// One host thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadSpec {
    /// Ops in order.
    pub ops: Vec<Op>,
}

/// Copy direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CopyKind {
    /// Host (pageable) to device.
    H2D,
    /// Device to host (pageable).
    D2H,
    /// Device to device.
    D2D,
}

impl CopyKind {
    /// The name the trace gives such a copy.
    pub fn trace_name(self) -> &'static str {
        match self {
            CopyKind::H2D => "Memcpy HtoD",
            CopyKind::D2H => "Memcpy DtoH",
            CopyKind::D2D => "Memcpy DtoD",
        }
    }
}

/// Which API a launch goes through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// `cudaLaunchKernel`, whose `cuLaunchKernel` fires inside it with the same correlation id.
    #[default]
    Runtime,
    /// `cuLaunchKernel` alone.
    Driver,
}

/// One scripted call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// A kernel launch.
    Launch {
        /// Kernel short name.
        kernel: String,
        /// Grid in blocks.
        grid: [u32; 3],
        /// Block in threads.
        block: [u32; 3],
        /// Stream (0: legacy default stream).
        #[serde(default)]
        stream: u32,
        /// Runtime (with its nested driver call) or driver alone.
        #[serde(default)]
        layer: Layer,
    },
    /// `cudaMemcpy` (`cudaMemcpyAsync` with a stream); its driver copy fires inside it.
    Memcpy {
        /// Bytes.
        bytes: u64,
        /// Direction.
        kind: CopyKind,
        /// Async on this stream.
        #[serde(default)]
        stream: Option<u32>,
    },
    /// `cudaMemcpyPeer` (`cudaMemcpyPeerAsync` with a stream), with its
    /// driver copy inside: a `MEMCPY2` (peer-to-peer) record, run by
    /// device 0's context.
    MemcpyPeer {
        /// Bytes.
        bytes: u64,
        /// Source device ordinal.
        src_device: u32,
        /// Destination device ordinal.
        dst_device: u32,
        /// Async on this stream.
        #[serde(default)]
        stream: Option<u32>,
    },
    /// `cudaMemset` (`cudaMemsetAsync` with a stream).
    Memset {
        /// Bytes.
        bytes: u64,
        /// Value.
        value: u8,
        /// Async on this stream.
        #[serde(default)]
        stream: Option<u32>,
    },
    /// `cudaStreamSynchronize`: returns when the stream's work has ended.
    StreamSync {
        /// Stream.
        stream: u32,
    },
    /// `cudaDeviceSynchronize`.
    DeviceSync,
    /// `cudaStreamBeginCapture`: later work on the stream is captured, not run.
    BeginCapture {
        /// Stream.
        stream: u32,
    },
    /// `cudaStreamEndCapture`: the captured work becomes graph `graph`.
    EndCapture {
        /// Stream.
        stream: u32,
        /// Name to launch it by.
        graph: String,
    },
    /// `cudaGraphLaunch` of a captured graph: each node runs, with the launch's correlation id.
    GraphLaunch {
        /// Name given at end of capture.
        graph: String,
        /// Stream.
        #[serde(default)]
        stream: u32,
    },
    /// `cudaProfilerStart` (with `cuProfilerStart` inside).
    ProfilerStart,
    /// `cudaProfilerStop` (with `cuProfilerStop` inside).
    ProfilerStop,
    /// `nvtxRangePushA`, or `nvtxDomainRangePushEx` in `domain`.
    NvtxPush {
        /// Message.
        message: String,
        /// Domain name (created on first use).
        #[serde(default)]
        domain: Option<String>,
    },
    /// `nvtxRangePop`, or `nvtxDomainRangePop`.
    NvtxPop {
        /// Domain name.
        #[serde(default)]
        domain: Option<String>,
    },
    /// `nvtxMarkA`.
    NvtxMark {
        /// Message.
        message: String,
    },
    /// `nvtxRangeStartA`; the id is remembered under `slot` on this thread.
    NvtxStart {
        /// Message.
        message: String,
        /// Name to end it by.
        slot: String,
    },
    /// `nvtxRangeEnd` of a range started on this thread.
    NvtxEnd {
        /// Name given at start.
        slot: String,
    },
    /// Signals: reads every thread's blocked signals (`Report::thread_masks`),
    /// then installs a SIGUSR1 handler and sends `count` SIGUSR1 to the
    /// process, one at a time, each waited for.
    Signals {
        /// SIGUSR1 sent.
        count: u32,
    },
    /// Host work.
    SleepUs {
        /// Microseconds.
        us: u64,
    },
    /// Writes the process id into `path`, for a test that waits for the
    /// program to reach this point.
    Announce {
        /// File to write.
        path: String,
    },
    /// Waits until `path` exists (at most `timeout_ms`), for a test that
    /// acts on the running program in between.
    WaitFile {
        /// File to wait for.
        path: String,
        /// Longest wait, ms.
        timeout_ms: u64,
    },
    /// An allocation (`cudaMalloc`, `cudaMallocManaged`, `cudaMallocAsync`,
    /// `cudaMallocPitch` with their driver calls inside, or `cuMemCreate`),
    /// kept under `slot` on this thread.
    Alloc {
        /// Bytes (a row's width for a pitched allocation).
        bytes: u64,
        /// Which call.
        #[serde(default)]
        kind: AllocKind,
        /// Name to free it by.
        slot: String,
    },
    /// The free matching the allocation under `slot` (`cudaFree`,
    /// `cudaFreeAsync`, `cuMemRelease`).
    Free {
        /// Name given at allocation.
        slot: String,
    },
    /// A unified-memory migration or fault, done by the driver: a
    /// `UNIFIED_MEMORY_COUNTER` record when the tool configured its counter.
    Uvm {
        /// What happened.
        op: UvmOp,
        /// Bytes migrated (ignored for faults).
        #[serde(default)]
        bytes: u64,
        /// Virtual address concerned.
        #[serde(default)]
        address: u64,
    },
    /// `fork()`: the child (one thread, the forking one) calls `exit(exit_code)` at once,
    /// which runs the exit handlers it inherited (the tool's among them); the parent waits
    /// for it and notes its exit status in `Report::children`. The child makes no CUDA
    /// call: CUDA is not usable in a child forked after its initialisation.
    Fork {
        /// The child's exit code.
        #[serde(default)]
        exit_code: i32,
    },
    /// `execv(program, [program, args...])`: the process becomes another program, as a
    /// launcher that re-executes itself does. No exit handler runs; the fake writes its
    /// report first (records still in CUPTI's buffer count as lost at exec).
    Exec {
        /// Path of the program.
        program: String,
        /// Its arguments after `argv[0]`.
        #[serde(default)]
        args: Vec<String>,
    },
    /// A call of the gpu-trace C API (`gpu_trace.h`) that the injection
    /// exports: `gpu_trace_<call>` (`start`, `stop`, `window_begin`,
    /// `window_end`, `is_active`, `range_push`, `range_pop`), with `name`
    /// for the two that take one (null without it). What it returned is
    /// appended to `Report::gpu_trace_calls`.
    GpuTrace {
        /// The function, without its `gpu_trace_` prefix.
        call: String,
        /// The name argument.
        #[serde(default)]
        name: Option<String>,
    },
    /// The ops, `times` times.
    Repeat {
        /// Count.
        times: u32,
        /// Ops.
        ops: Vec<Op>,
    },
}

impl Op {
    /// [`Op::Announce`] into `path`.
    pub fn announce(path: &std::path::Path) -> Op {
        Op::Announce {
            path: path.display().to_string(),
        }
    }

    /// [`Op::WaitFile`] for `path`, at most a minute.
    pub fn wait_for(path: &std::path::Path) -> Op {
        Op::WaitFile {
            path: path.display().to_string(),
            timeout_ms: 60_000,
        }
    }
}

/// How an [`Op::Alloc`] allocates.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllocKind {
    /// `cudaMalloc` → `cuMemAlloc_v2`.
    #[default]
    Device,
    /// `cudaMallocManaged` → `cuMemAllocManaged`.
    Managed,
    /// `cudaMallocAsync` → `cuMemAllocAsync` (stream ordered).
    Async,
    /// `cudaMallocPitch` → `cuMemAllocPitch_v2`: `rows` rows of the pitch
    /// the fake gives a row of `bytes` (rounded up to 512).
    Pitch {
        /// Rows.
        rows: u64,
    },
    /// `cuMemCreate` of physical memory on device 0 (virtual memory
    /// management, driver only).
    Vmm,
}

/// What an [`Op::Uvm`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UvmOp {
    /// Pages migrated to the GPU (cause: coherence).
    HtoD,
    /// Pages migrated to the host (cause: eviction).
    DtoH,
    /// A GPU page fault (a write).
    GpuFault,
    /// A CPU page fault (a read; an instant).
    CpuFault,
    /// GPU 0 and the CPU contending for a region (an instant).
    Thrashing,
}

/// The name the trace gives a peer-to-peer copy.
pub const PEER_COPY: &str = "Memcpy PtoP";

/// The opaque `CUstream` of scripted stream `n` (0 stays the null handle).
pub fn stream_handle(n: u32) -> u64 {
    if n == 0 { 0 } else { 0x5000 + u64::from(n) }
}

/// The driver function a copy goes through.
pub fn driver_copy(kind: CopyKind, is_async: bool) -> &'static str {
    match (kind, is_async) {
        (CopyKind::H2D, false) => "cuMemcpyHtoD_v2",
        (CopyKind::D2H, false) => "cuMemcpyDtoH_v2",
        (CopyKind::D2D, false) => "cuMemcpyDtoD_v2",
        (CopyKind::H2D, true) => "cuMemcpyHtoDAsync_v2",
        (CopyKind::D2H, true) => "cuMemcpyDtoHAsync_v2",
        (CopyKind::D2D, true) => "cuMemcpyDtoDAsync_v2",
    }
}

/// The `CUcontext` the fake hands out (opaque, never dereferenced).
pub const CONTEXT_HANDLE: u64 = 0xC0_0000;

/// What a tool that traces everything must show for a scenario.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Expected {
    /// API slices by the name the trace gives them (CUPTI's function name).
    pub api_slices: BTreeMap<String, u64>,
    /// Submission arrows by API slice name (a graph launch has one, to its first node).
    pub arrows: BTreeMap<String, u64>,
    /// API slices without an arrow by name (e.g. launches into a capture).
    pub silent_slices: BTreeMap<String, u64>,
    /// Kernel executions by symbol.
    pub kernels: BTreeMap<String, u64>,
    /// Kernel executions that are graph nodes.
    pub graph_kernels: u64,
    /// Copies by trace name (`Memcpy HtoD`, ...).
    pub copies: BTreeMap<String, u64>,
    /// Bytes copied.
    pub copy_bytes: u64,
    /// Memsets.
    pub memsets: u64,
    /// NVTX push/pop ranges by message.
    pub nvtx_pushes: BTreeMap<String, u64>,
    /// NVTX start/end ranges by message.
    pub nvtx_ranges: BTreeMap<String, u64>,
    /// NVTX marks by message.
    pub nvtx_marks: BTreeMap<String, u64>,
    /// NVTX domains created.
    pub nvtx_domains: BTreeSet<String>,
}

impl Scenario {
    /// Parses and validates a scenario.
    pub fn from_json(text: &str) -> Result<Scenario, String> {
        let s: Scenario = serde_json::from_str(text).map_err(|e| e.to_string())?;
        s.validate()?;
        Ok(s)
    }

    /// Checks references (kernels, graphs, slots, capture nesting).
    pub fn validate(&self) -> Result<(), String> {
        fn walk(s: &Scenario, ops: &[Op], names: &mut BTreeSet<String>) -> Result<(), String> {
            for op in ops {
                match op {
                    Op::Launch { kernel, block, .. } => {
                        if !s.kernels.iter().any(|k| &k.name == kernel) {
                            return Err(format!("unknown kernel {kernel}"));
                        }
                        if block.contains(&0) {
                            return Err("block size 0".into());
                        }
                    }
                    Op::EndCapture { graph, .. } => {
                        names.insert(format!("graph:{graph}"));
                    }
                    Op::GraphLaunch { graph, .. } if !names.contains(&format!("graph:{graph}")) => {
                        return Err(format!("graph {graph} launched before it was captured"));
                    }
                    Op::NvtxStart { slot, .. } => {
                        names.insert(format!("slot:{slot}"));
                    }
                    Op::NvtxEnd { slot } if !names.contains(&format!("slot:{slot}")) => {
                        return Err(format!("range slot {slot} ended before it started"));
                    }
                    Op::Alloc { slot, .. } => {
                        names.insert(format!("alloc:{slot}"));
                    }
                    Op::Free { slot } if !names.remove(&format!("alloc:{slot}")) => {
                        return Err(format!("free of {slot}, which holds no allocation"));
                    }
                    Op::Repeat { ops, .. } => walk(s, ops, names)?,
                    _ => {}
                }
            }
            Ok(())
        }
        for t in &self.threads {
            walk(self, &t.ops, &mut BTreeSet::new())?;
        }
        self.profiler.validate()
    }

    /// The kernel named `name`.
    pub fn kernel(&self, name: &str) -> Option<&KernelSpec> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// What the trace must show. API slices carry the names of `api` (INJECTION_API_LAYER):
    /// with [`Layer::Runtime`] a runtime call hides the driver call inside it, with
    /// [`Layer::Driver`] only driver calls are drawn. With `capture_range`
    /// (INJECTION_CAPTURE_RANGE=cudaProfilerApi) only the work between a profiler start and
    /// stop counts, and the calls themselves do not appear; NVTX is assumed outside such
    /// scenarios.
    pub fn expected(&self, api: Layer, capture_range: bool) -> Expected {
        struct W<'a> {
            s: &'a Scenario,
            api: Layer,
            capture_range: bool,
            e: Expected,
            open: bool,
            capturing: BTreeMap<u32, Vec<String>>,
            graphs: BTreeMap<String, Vec<String>>,
            allocs: BTreeMap<String, AllocKind>,
        }
        fn op_slot(op: &Op) -> String {
            match op {
                Op::Alloc { slot, .. } => slot.clone(),
                _ => String::new(),
            }
        }
        fn bump(m: &mut BTreeMap<String, u64>, k: &str, n: u64) {
            *m.entry(k.to_owned()).or_default() += n;
        }
        impl W<'_> {
            /// A call of runtime function `rt` made through driver function `drv`.
            fn call(&mut self, (rt, drv): (&str, &str), arrows: u64) {
                if !self.open {
                    return;
                }
                let name = match self.api {
                    Layer::Runtime => rt,
                    Layer::Driver => drv,
                };
                bump(&mut self.e.api_slices, name, 1);
                if arrows > 0 {
                    bump(&mut self.e.arrows, name, arrows);
                } else {
                    bump(&mut self.e.silent_slices, name, 1);
                }
            }
            fn walk(&mut self, ops: &[Op]) {
                for op in ops {
                    match op {
                        Op::Launch {
                            kernel,
                            stream,
                            layer,
                            ..
                        } => {
                            let name = match layer {
                                Layer::Runtime => ("cudaLaunchKernel_v7000", "cuLaunchKernel"),
                                Layer::Driver => ("cuLaunchKernel", "cuLaunchKernel"),
                            };
                            let symbol = self.s.kernel(kernel).expect("validated").symbol.clone();
                            if let Some(c) = self.capturing.get_mut(stream) {
                                c.push(symbol);
                                self.call(name, 0);
                            } else {
                                self.call(name, 1);
                                if self.open {
                                    bump(&mut self.e.kernels, &symbol, 1);
                                }
                            }
                        }
                        Op::Memcpy {
                            bytes,
                            kind,
                            stream,
                        } => {
                            let rt = if stream.is_some() {
                                "cudaMemcpyAsync_v3020"
                            } else {
                                "cudaMemcpy_v3020"
                            };
                            self.call((rt, driver_copy(*kind, stream.is_some())), 1);
                            if self.open {
                                bump(&mut self.e.copies, kind.trace_name(), 1);
                                self.e.copy_bytes += bytes;
                            }
                        }
                        Op::MemcpyPeer { bytes, stream, .. } => {
                            self.call(
                                if stream.is_some() {
                                    ("cudaMemcpyPeerAsync_v4000", "cuMemcpyPeerAsync")
                                } else {
                                    ("cudaMemcpyPeer_v4000", "cuMemcpyPeer")
                                },
                                1,
                            );
                            if self.open {
                                bump(&mut self.e.copies, PEER_COPY, 1);
                                self.e.copy_bytes += bytes;
                            }
                        }
                        Op::Memset { stream, .. } => {
                            self.call(
                                if stream.is_some() {
                                    ("cudaMemsetAsync_v3020", "cuMemsetD8Async")
                                } else {
                                    ("cudaMemset_v3020", "cuMemsetD8_v2")
                                },
                                1,
                            );
                            if self.open {
                                self.e.memsets += 1;
                            }
                        }
                        Op::StreamSync { .. } => {
                            self.call(("cudaStreamSynchronize_v3020", "cuStreamSynchronize"), 0)
                        }
                        Op::DeviceSync => {
                            self.call(("cudaDeviceSynchronize_v3020", "cuCtxSynchronize"), 0)
                        }
                        Op::BeginCapture { stream } => {
                            self.capturing.insert(*stream, Vec::new());
                            self.call(
                                ("cudaStreamBeginCapture_v10000", "cuStreamBeginCapture_v2"),
                                0,
                            );
                        }
                        Op::EndCapture { stream, graph } => {
                            let nodes = self.capturing.remove(stream).unwrap_or_default();
                            self.graphs.insert(graph.clone(), nodes);
                            self.call(("cudaStreamEndCapture_v10000", "cuStreamEndCapture"), 0);
                        }
                        Op::GraphLaunch { graph, .. } => {
                            let nodes = self.graphs.get(graph).cloned().unwrap_or_default();
                            // One arrow per launch, to its first node: the nodes share it.
                            let arrows = u64::from(!nodes.is_empty());
                            self.call(("cudaGraphLaunch_v10000", "cuGraphLaunch"), arrows);
                            if self.open {
                                for n in &nodes {
                                    bump(&mut self.e.kernels, n, 1);
                                }
                                self.e.graph_kernels += nodes.len() as u64;
                            }
                        }
                        // Without a capture range the profiler calls change nothing (and are
                        // not drawn either way).
                        Op::ProfilerStart => self.open = true,
                        Op::ProfilerStop => self.open = !self.capture_range,
                        Op::NvtxPush { message, domain } => {
                            bump(&mut self.e.nvtx_pushes, message, 1);
                            if let Some(d) = domain {
                                self.e.nvtx_domains.insert(d.clone());
                            }
                        }
                        Op::NvtxMark { message } => bump(&mut self.e.nvtx_marks, message, 1),
                        Op::NvtxStart { message, .. } => bump(&mut self.e.nvtx_ranges, message, 1),
                        Op::NvtxPop { .. }
                        | Op::NvtxEnd { .. }
                        | Op::SleepUs { .. }
                        | Op::Signals { .. }
                        | Op::Announce { .. }
                        | Op::WaitFile { .. }
                        | Op::Fork { .. }
                        | Op::Exec { .. }
                        | Op::GpuTrace { .. } => {}
                        Op::Alloc { kind, .. } => {
                            let name = match kind {
                                AllocKind::Device => Some(("cudaMalloc_v3020", "cuMemAlloc_v2")),
                                AllocKind::Managed => {
                                    Some(("cudaMallocManaged_v6000", "cuMemAllocManaged"))
                                }
                                AllocKind::Async => {
                                    Some(("cudaMallocAsync_v11020", "cuMemAllocAsync"))
                                }
                                AllocKind::Pitch { .. } => {
                                    Some(("cudaMallocPitch_v3020", "cuMemAllocPitch_v2"))
                                }
                                // Not an allocation call the API slices show.
                                AllocKind::Vmm => None,
                            };
                            if let Some(n) = name {
                                self.call(n, 0);
                            }
                            let slot = op_slot(op);
                            self.allocs.insert(slot, kind.clone());
                        }
                        Op::Free { slot } => match self.allocs.remove(slot) {
                            Some(AllocKind::Vmm) | None => {}
                            Some(AllocKind::Async) => {
                                self.call(("cudaFreeAsync_v11020", "cuMemFreeAsync"), 0)
                            }
                            Some(_) => self.call(("cudaFree_v3020", "cuMemFree_v2"), 0),
                        },
                        Op::Uvm { .. } => {}
                        Op::Repeat { times, ops } => {
                            for _ in 0..*times {
                                self.walk(ops);
                            }
                        }
                    }
                }
            }
        }
        let mut w = W {
            s: self,
            api,
            capture_range,
            e: Expected::default(),
            open: !capture_range,
            capturing: BTreeMap::new(),
            graphs: BTreeMap::new(),
            allocs: BTreeMap::new(),
        };
        for t in &self.threads {
            w.open = !capture_range;
            w.capturing.clear();
            w.walk(&t.ops);
        }
        w.e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(stream: u32) -> Op {
        Op::Launch {
            kernel: "k".into(),
            grid: [1, 1, 1],
            block: [32, 1, 1],
            stream,
            layer: Layer::Runtime,
        }
    }

    fn scenario(ops: Vec<Op>) -> Scenario {
        Scenario {
            kernels: vec![KernelSpec {
                name: "k".into(),
                symbol: "_Z1kv".into(),
                registers: 16,
                static_smem: 0,
                duration_us: 5,
            }],
            threads: vec![ThreadSpec { ops }],
            profiler: ProfilerSpec::default(),
        }
    }

    #[test]
    fn captured_launches_run_with_their_graph() {
        let s = scenario(vec![
            Op::BeginCapture { stream: 1 },
            launch(1),
            launch(1),
            Op::EndCapture {
                stream: 1,
                graph: "g".into(),
            },
            Op::Repeat {
                times: 3,
                ops: vec![Op::GraphLaunch {
                    graph: "g".into(),
                    stream: 1,
                }],
            },
            launch(2),
        ]);
        let e = s.expected(Layer::Runtime, false);
        assert_eq!(e.kernels["_Z1kv"], 7);
        assert_eq!(e.graph_kernels, 6);
        assert_eq!(e.arrows["cudaGraphLaunch_v10000"], 3);
        assert_eq!(e.arrows["cudaLaunchKernel_v7000"], 1);
        assert_eq!(e.silent_slices["cudaLaunchKernel_v7000"], 2);
    }

    #[test]
    fn a_capture_range_keeps_only_what_is_inside() {
        let s = scenario(vec![
            launch(0),
            Op::ProfilerStart,
            launch(0),
            Op::ProfilerStop,
            launch(0),
        ]);
        assert_eq!(s.expected(Layer::Driver, true).kernels["_Z1kv"], 1);
        assert_eq!(s.expected(Layer::Driver, false).kernels["_Z1kv"], 3);
    }

    #[test]
    fn invalid_scenarios_are_rejected() {
        let s = scenario(vec![Op::GraphLaunch {
            graph: "nope".into(),
            stream: 0,
        }]);
        assert!(s.validate().unwrap_err().contains("nope"));
        let mut s = scenario(vec![launch(0)]);
        s.kernels.clear();
        assert!(s.validate().unwrap_err().contains("unknown kernel"));
    }
}
