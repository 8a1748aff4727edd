//! GPU work: buffered kernel-dispatch and memory-copy records → model events, on the SDK's
//! buffer thread; kernel symbols from code-object callbacks; agents → devices.
//!
//! Dispatch records carry a kernel id, the agent, the queue, and the grid (in work-items) and
//! workgroup sizes; the kernel's name and register counts come from its symbol, registered by
//! code-object tracing before any dispatch of it. Each distinct (kernel, LDS, scratch,
//! workgroup) class is described once.

use gpu_trace_model::Recorder;
use gpu_trace_model::model::{
    ArgValue, CopyKind, Device, Dim3, DropKind, KernelDesc, KernelExec, KernelId, MemoryKind,
    MemoryOp, MemoryOpKind, NameId,
};
use gpu_trace_model::names::{KernelNames, Kernels, Names};
use rocprofiler::{
    Agent, BufferBatch, BufferRecord, CallbackEvent, KernelDispatch, MemoryCopy,
    MemoryCopyDirection, Payload, Phase,
};
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// Longest wait for the emitter per buffer delivery.
const RECORDS_WAIT_LIMIT: Duration = Duration::from_secs(1);

/// rocprofiler reports no queue for a copy: copies of a device share this stream number, and
/// kernels' hardware queues are numbered from 1.
pub(crate) const COPY_STREAM: u64 = 0;

/// An agent as the trace shows it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AgentEntry {
    /// `gpu_id` for GPUs.
    pub(crate) gpu_id: Option<u32>,
    /// ISA (`gfx90a`).
    pub(crate) arch: NameId,
}

/// Kernel symbol, from its registration.
#[derive(Debug, Clone, Copy)]
struct Symbol {
    names: KernelNames,
    arch: NameId,
    sgpr: u32,
    vgpr: u32,
    agpr: u32,
    lds_static: u32,
    kernarg: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct ClassKey {
    kernel_id: u64,
    lds: u32,
    scratch: u32,
    workgroup: [u32; 3],
}

struct ArgNames {
    vgpr: NameId,
    sgpr: NameId,
    agpr: NameId,
    lds: NameId,
    lds_static: NameId,
    scratch: NameId,
    kernarg: NameId,
    block_size: NameId,
}

/// Stream numbers of hardware queues, per agent in order of first use.
#[derive(Default)]
struct Queues {
    /// (agent, queue handle) → stream number.
    numbers: FxHashMap<(u64, u64), u64>,
    /// Agent → last number given.
    last: FxHashMap<u64, u64>,
}

/// Converts records; one per process.
pub(crate) struct GpuRecords {
    recorder: Recorder,
    names: Arc<Names>,
    kernels: Arc<Kernels>,
    agents: FxHashMap<u64, AgentEntry>,
    unknown_arch: NameId,
    code_objects: Mutex<FxHashMap<u64, u64>>,
    symbols: RwLock<FxHashMap<u64, Symbol>>,
    classes: Mutex<FxHashMap<ClassKey, KernelId>>,
    queues: Mutex<Queues>,
    args: ArgNames,
}

impl GpuRecords {
    pub(crate) fn new(
        recorder: Recorder,
        names: Arc<Names>,
        kernels: Arc<Kernels>,
        agents: &[Agent],
    ) -> Self {
        let n = |s: &str| names.intern(s);
        let args = ArgNames {
            vgpr: n("vgpr_count"),
            sgpr: n("sgpr_count"),
            agpr: n("agpr_count"),
            lds: n("lds_size"),
            lds_static: n("lds_size_static"),
            scratch: n("scratch_size"),
            kernarg: n("kernarg_size"),
            block_size: n("launch__block_size"),
        };
        let agents = agents
            .iter()
            .map(|a| {
                (
                    a.id.0,
                    AgentEntry {
                        gpu_id: gpu_id(a),
                        arch: n(&a.name),
                    },
                )
            })
            .collect();
        Self {
            unknown_arch: n("gfx_unknown"),
            recorder,
            kernels,
            agents,
            code_objects: Mutex::new(FxHashMap::default()),
            symbols: RwLock::new(FxHashMap::default()),
            classes: Mutex::new(FxHashMap::default()),
            queues: Mutex::new(Default::default()),
            args,
            names,
        }
    }

    /// The trace's device for an agent.
    pub(crate) fn agent(&self, agent: u64) -> Option<AgentEntry> {
        self.agents.get(&agent).copied()
    }

    /// A kernel's mangled and demangled names (the same when it is not a
    /// C++ name), once its symbol is registered.
    pub(crate) fn kernel_names(&self, kernel_id: u64) -> Option<(Arc<str>, Arc<str>)> {
        let names = self
            .symbols
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&kernel_id)?
            .names;
        Some((
            self.names.get(names.mangled),
            self.names.get(names.demangled),
        ))
    }

    /// Code objects and kernel symbols being loaded (kept after unload: kernel ids are not
    /// reused, and records still in a buffer may refer to them).
    pub(crate) fn on_code_object(&self, ev: &CallbackEvent<'_>) {
        if ev.phase() != Phase::Enter {
            return;
        }
        match ev.payload() {
            Payload::CodeObject(co) => {
                self.code_objects
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(co.id(), co.agent_id().0);
            }
            Payload::KernelSymbol(k) => {
                let info = k.to_info();
                let agent = self
                    .code_objects
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&info.code_object_id)
                    .copied();
                let arch = agent
                    .and_then(|a| self.agents.get(&a))
                    .map_or(self.unknown_arch, |a| a.arch);
                let names = self.kernels.names(&self.names, &info.name);
                self.symbols
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(
                        info.kernel_id,
                        Symbol {
                            names,
                            arch,
                            sgpr: info.sgpr_count,
                            vgpr: info.arch_vgpr_count,
                            agpr: info.accum_vgpr_count,
                            lds_static: info.group_segment_size,
                            kernarg: info.kernarg_segment_size,
                        },
                    );
            }
            _ => {}
        }
    }

    /// One buffer delivery, on an SDK thread. `emitter_waits`: the emitter asked for it and
    /// is blocked until it is done, so waiting for the emitter here would only stall both.
    pub(crate) fn on_batch(&self, batch: &BufferBatch<'_>, emitter_waits: bool) {
        crate::failpoint::maybe_panic("buffer", true);
        if !emitter_waits {
            // When the emitter is behind, slow the SDK's delivery (its buffer is lossless and
            // bounded) rather than drop here.
            self.recorder.wait_for_room(RECORDS_WAIT_LIMIT);
        }
        self.recorder
            .dropped(DropKind::VendorRecords, batch.drop_count());
        for r in batch.records() {
            match r {
                BufferRecord::KernelDispatch(k) => self.kernel(&k),
                BufferRecord::MemoryCopy(m) => self.copy(&m),
                BufferRecord::Unknown { .. } => {
                    self.recorder.dropped(DropKind::InvalidRecords, 1);
                }
                _ => {}
            }
        }
    }

    fn valid(&self, start: u64, end: u64) -> bool {
        let ok = start != 0 && end >= start;
        if !ok {
            self.recorder.dropped(DropKind::InvalidRecords, 1);
        }
        ok
    }

    fn stream(&self, agent: u64, queue: u64) -> u64 {
        let mut q = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&s) = q.numbers.get(&(agent, queue)) {
            return s;
        }
        let last = q.last.entry(agent).or_insert(0);
        *last += 1;
        let s = *last;
        q.numbers.insert((agent, queue), s);
        s
    }

    fn kernel(&self, k: &KernelDispatch) {
        if !self.valid(k.start_ns, k.end_ns) {
            return;
        }
        let info = &k.info;
        let Some(gpu) = self.agent(info.agent_id.0).and_then(|a| a.gpu_id) else {
            self.recorder.dropped(DropKind::InvalidRecords, 1);
            return;
        };
        let wg = info.workgroup_size;
        let key = ClassKey {
            kernel_id: info.kernel_id,
            lds: info.group_segment_size,
            scratch: info.private_segment_size,
            workgroup: [wg.x, wg.y, wg.z],
        };
        let class = {
            let mut classes = self.classes.lock().unwrap_or_else(|e| e.into_inner());
            match classes.get(&key) {
                Some(c) => *c,
                None => {
                    let c = self.new_class(&key, info.agent_id.0);
                    classes.insert(key, c);
                    c
                }
            }
        };
        let grid = info.grid_in_workgroups();
        let mut exec = KernelExec::new(gpu, k.correlation_id.internal, k.start_ns, k.end_ns, class);
        exec.context = gpu;
        exec.stream = self.stream(info.agent_id.0, info.queue_id.0);
        exec.grid = Dim3::new(grid.x, grid.y, grid.z);
        exec.block = Dim3::new(wg.x, wg.y, wg.z);
        self.recorder.kernel(exec);
    }

    fn new_class(&self, key: &ClassKey, agent: u64) -> KernelId {
        let sym = self
            .symbols
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key.kernel_id)
            .copied();
        let a = &self.args;
        let u = |v: u32| ArgValue::Uint(v.into());
        let mut args = vec![
            (a.lds, u(key.lds)),
            (a.scratch, u(key.scratch)),
            (
                a.block_size,
                ArgValue::Uint(key.workgroup.iter().map(|&v| u64::from(v)).product()),
            ),
        ];
        let (names, arch) = match sym {
            Some(s) => {
                args.extend([
                    (a.vgpr, u(s.vgpr)),
                    (a.sgpr, u(s.sgpr)),
                    (a.agpr, u(s.agpr)),
                    (a.lds_static, u(s.lds_static)),
                    (a.kernarg, u(s.kernarg)),
                ]);
                (s.names, s.arch)
            }
            None => {
                gpu_trace_model::verbose!(
                    "kernel id {} ran without a registered symbol",
                    key.kernel_id
                );
                let n = self
                    .kernels
                    .names(&self.names, &format!("kernel#{}", key.kernel_id));
                let arch = self.agent(agent).map_or(self.unknown_arch, |a| a.arch);
                (n, arch)
            }
        };
        let mut desc = KernelDesc::new(names.mangled, names.demangled, names.display, arch);
        desc.args = args;
        self.kernels.register(desc)
    }

    fn copy(&self, m: &MemoryCopy) {
        if !self.valid(m.start_ns, m.end_ns) {
            return;
        }
        let src = self.agent(m.src_agent.0).and_then(|a| a.gpu_id);
        let dst = self.agent(m.dst_agent.0).and_then(|a| a.gpu_id);
        let side = |gpu: Option<u32>| {
            if gpu.is_some() {
                MemoryKind::Device
            } else {
                MemoryKind::Unknown
            }
        };
        let (kind, peer) = match m.direction {
            MemoryCopyDirection::HostToDevice => (CopyKind::HtoD, None),
            MemoryCopyDirection::DeviceToHost => (CopyKind::DtoH, None),
            MemoryCopyDirection::HostToHost => (CopyKind::HtoH, None),
            MemoryCopyDirection::DeviceToDevice => match (src, dst) {
                (Some(s), Some(d)) if s != d => (CopyKind::PtoP, Some((s, d))),
                _ => (CopyKind::DtoD, None),
            },
            _ => (CopyKind::Unknown, None),
        };
        // The device whose engine moved the data: the GPU side, the source for device-to-device
        // copies; host-to-host copies are drawn on GPU 0.
        let device = match kind {
            CopyKind::HtoD => dst.or(src),
            _ => src.or(dst),
        }
        .unwrap_or(0);
        let mut op = MemoryOp::new(
            device,
            m.correlation_id.internal,
            m.start_ns,
            m.end_ns,
            m.bytes,
            MemoryOpKind::Copy {
                kind,
                src: side(src),
                dst: side(dst),
                peer,
            },
        );
        op.context = device;
        op.stream = COPY_STREAM;
        self.recorder.memory(op);
    }
}

/// The GPU's index as `rocm-smi` shows it: the agent's position among the GPU agents of the
/// KFD topology (which visibility masks do not renumber).
fn gpu_id(a: &Agent) -> Option<u32> {
    if !a.is_gpu() {
        return None;
    }
    u32::try_from(a.logical_node_type_id).ok()
}

/// Describes a GPU agent for `GpuInfo`.
pub(crate) fn describe(a: &Agent) -> Option<Device> {
    let id = gpu_id(a)?;
    let mut extra = vec![
        (
            "gfx_target_version".to_owned(),
            a.gfx_target_version.to_string(),
        ),
        ("simd_count".to_owned(), a.simd_count.to_string()),
        ("wavefront_size".to_owned(), a.wave_front_size.to_string()),
        ("xcc_count".to_owned(), a.num_xcc.to_string()),
        (
            "max_waves_per_cu".to_owned(),
            a.max_waves_per_cu.to_string(),
        ),
        (
            "lds_kib_per_workgroup".to_owned(),
            a.lds_size_in_kb.to_string(),
        ),
        ("kfd_node_id".to_owned(), a.node_id.to_string()),
        ("kfd_gpu_id".to_owned(), a.gpu_id.to_string()),
    ];
    if a.vendor_id != 0 {
        extra.push((
            "pci_id".to_owned(),
            format!("{:04x}:{:04x}", a.vendor_id, a.device_id),
        ));
    }
    let name = if a.product_name.is_empty() {
        format!("AMD {}", a.name)
    } else {
        a.product_name.clone()
    };
    let mut d = Device::new(id, name);
    d.vendor = Some("AMD".into());
    d.pci_bdf = pci_bdf(a.domain, a.location_id);
    d.architecture = family(&a.name).to_owned();
    d.arch_id = a.name.clone();
    d.sm_count = a.cu_count;
    d.total_memory = (a.local_mem_size > 0).then_some(a.local_mem_size);
    d.extra = extra;
    Some(d)
}

/// KFD's `location_id` is the PCI bus/device/function as `bus << 8 | device << 3 | function`.
fn pci_bdf(domain: u32, location_id: u32) -> Option<String> {
    if domain == 0 && location_id == 0 {
        return None;
    }
    Some(format!(
        "{domain:04x}:{:02x}:{:02x}.{:x}",
        (location_id >> 8) & 0xff,
        (location_id >> 3) & 0x1f,
        location_id & 0x7
    ))
}

/// Architecture family of a `gfx` ISA name.
fn family(gfx: &str) -> &'static str {
    match gfx {
        "gfx900" | "gfx902" | "gfx904" | "gfx906" | "gfx909" | "gfx90c" => "GCN5",
        "gfx908" => "CDNA",
        "gfx90a" => "CDNA2",
        "gfx940" | "gfx941" | "gfx942" => "CDNA3",
        "gfx950" => "CDNA4",
        g if g.starts_with("gfx101") => "RDNA",
        g if g.starts_with("gfx103") => "RDNA2",
        g if g.starts_with("gfx110") => "RDNA3",
        g if g.starts_with("gfx115") => "RDNA3.5",
        g if g.starts_with("gfx12") => "RDNA4",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_location_ids_decode() {
        // 0000:c1:00.0 as KFD reports it.
        assert_eq!(pci_bdf(0, 0xc100).as_deref(), Some("0000:c1:00.0"));
        assert_eq!(
            pci_bdf(1, (0x23 << 8) | (2 << 3) | 1).as_deref(),
            Some("0001:23:02.1")
        );
        assert_eq!(pci_bdf(0, 0), None);
    }

    #[test]
    fn families() {
        assert_eq!(family("gfx90a"), "CDNA2");
        assert_eq!(family("gfx942"), "CDNA3");
        assert_eq!(family("gfx1100"), "RDNA3");
        assert_eq!(family("gfx1201"), "RDNA4");
        assert_eq!(family("gfx9999"), "");
    }
}
