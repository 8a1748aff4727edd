//! Activity records → model events, on CUPTI's buffer thread.
//!
//! Kernel records carry everything a kernel event needs (grid, block,
//! registers, shared memory and the carve-out it ran with), so recording GPU
//! work needs no callback on the application's threads. Each distinct
//! (function, resources, block) class is described once, with its
//! occupancy; devices are described on first sight.

use crate::occupancy::{self, DeviceLimits, KernelResources};
use cupti::activity::{
    AccessType, KernelRecord, MemcpyKind, MemcpyPeerRecord, MemcpyRecord,
    MemoryKind as CuptiMemoryKind, MemsetRecord, MigrationCause, Record, Records, RemoteMapCause,
    UnifiedMemoryCounterKind, UnifiedMemoryRecord,
};
use gpu_trace_model::Recorder;
use gpu_trace_model::model::{
    ArgValue, CopyKind, Device, Dim3, DropKind, KernelDesc, KernelExec, KernelId, MemoryKind,
    MemoryOp, MemoryOpKind, NameId, UnifiedMemoryEvent, UvmKind,
};
use gpu_trace_model::names::{Kernels, Names};
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Longest wait for the emitter per activity buffer.
const RECORDS_WAIT_LIMIT: Duration = Duration::from_secs(1);

/// A device as the trace shows it.
#[derive(Clone, Copy, Debug)]
struct DeviceEntry {
    gpu_id: u32,
    limits: DeviceLimits,
    /// Instruction set, e.g. "sm_90".
    arch: NameId,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct ClassKey {
    name: usize,
    device: u32,
    registers: u16,
    static_smem: i32,
    dynamic_smem: i32,
    block: [i32; 3],
    smem_config: u32,
    local_mem: u32,
}

struct ArgNames {
    registers: NameId,
    static_smem: NameId,
    dynamic_smem: NameId,
    smem_config: NameId,
    block_size: NameId,
    local_mem: NameId,
    limit_blocks: NameId,
    limit_registers: NameId,
    limit_smem: NameId,
    limit_warps: NameId,
    occupancy_pct: NameId,
    occupancy_warps: NameId,
}

/// Kernel classes of one attachment of CUPTI ([`crate::detach::attachment`]).
#[derive(Default)]
struct Classes {
    attachment: u64,
    map: FxHashMap<ClassKey, KernelId>,
}

/// Converts records; one per process.
pub(crate) struct RecordState {
    recorder: Recorder,
    names: Arc<Names>,
    kernels: Arc<Kernels>,
    devices: Arc<DevicesSink>,
    /// Kernel classes by CUPTI's name pointer and resources, for the
    /// attachment of CUPTI they were seen in: after a detach CUPTI may give
    /// another kernel's name the same address.
    classes: Mutex<Classes>,
    device_cache: Mutex<FxHashMap<u32, DeviceEntry>>,
    args: ArgNames,
    /// Where profiled kernels' counters wait for their records.
    join: OnceLock<Arc<crate::counters::Join>>,
    /// CUDA devices in the process, asked once: processor ids of
    /// unified-memory records below it are GPUs, the others the host.
    device_count: OnceLock<u32>,
}

/// Where device descriptions go (the tracer's table).
pub(crate) struct DevicesSink(pub(crate) Box<dyn Fn(Device) + Send + Sync>);

impl RecordState {
    pub(crate) fn new(
        recorder: Recorder,
        names: Arc<Names>,
        kernels: Arc<Kernels>,
        devices: DevicesSink,
    ) -> Self {
        let n = |s: &str| names.intern(s);
        let args = ArgNames {
            registers: n("launch__registers_per_thread"),
            static_smem: n("launch__shared_mem_per_block_static"),
            dynamic_smem: n("launch__shared_mem_per_block_dynamic"),
            smem_config: n("launch__shared_mem_config_size"),
            block_size: n("launch__block_size"),
            local_mem: n("local_memory_per_thread"),
            limit_blocks: n("launch__occupancy_limit_blocks"),
            limit_registers: n("launch__occupancy_limit_registers"),
            limit_smem: n("launch__occupancy_limit_shared_mem"),
            limit_warps: n("launch__occupancy_limit_warps"),
            occupancy_pct: n("sm__maximum_warps_per_active_cycle_pct"),
            occupancy_warps: n("sm__maximum_warps_avg_per_active_cycle"),
        };
        Self {
            recorder,
            names,
            kernels,
            devices: Arc::new(devices),
            classes: Mutex::new(Classes::default()),
            device_cache: Mutex::new(FxHashMap::default()),
            args,
            join: OnceLock::new(),
            device_count: OnceLock::new(),
        }
    }

    pub(crate) fn set_join(&self, join: Arc<crate::counters::Join>) {
        let _ = self.join.set(join);
    }

    /// One completed buffer.
    pub(crate) fn on_records(&self, records: Records<'_>) {
        crate::failpoint::maybe_panic("buffer", true);
        // This is CUPTI's delivery thread, not the application's: when the
        // emitter is behind, wait here so a burst is not dropped.
        self.recorder.wait_for_room(RECORDS_WAIT_LIMIT);
        let dropped = records.dropped();
        if dropped > 0 {
            self.recorder.dropped(DropKind::VendorRecords, dropped);
        }
        for r in records {
            match r {
                Ok(Record::Kernel(k)) => self.kernel(&k),
                Ok(Record::Memcpy(m)) => self.memcpy(&m),
                Ok(Record::MemcpyPeer(m)) => self.memcpy_peer(&m),
                Ok(Record::Memset(m)) => self.memset(&m),
                Ok(Record::UnifiedMemory(u)) => self.unified_memory(&u),
                Ok(_) => {}
                Err(e) => {
                    gpu_trace_model::warn_once!("an activity buffer could not be read: {e}");
                    self.recorder.dropped(DropKind::InvalidRecords, 1);
                    break;
                }
            }
        }
    }

    fn valid(&self, start: u64, end: u64) -> bool {
        // Records of work still running at a forced flush, or of a context
        // torn down mid-kernel, have no end: count them rather than drawing
        // nonsense.
        let ok = start != 0 && end >= start;
        if !ok {
            self.recorder.dropped(DropKind::InvalidRecords, 1);
        }
        ok
    }

    /// Describes CUDA device `ordinal` now if it was not yet.
    pub(crate) fn describe_device(&self, ordinal: u32) {
        let _ = self.device(ordinal);
    }

    /// The trace's `gpu_id` of CUDA device `ordinal` (described on first
    /// use).
    pub(crate) fn gpu_id(&self, ordinal: u32) -> u32 {
        self.device(ordinal).gpu_id
    }

    /// The `gpu_id` of a unified-memory record's processor id, if it is a
    /// GPU of this process (CUPTI numbers the host outside them).
    fn processor(&self, id: u32) -> Option<u32> {
        let count = *self.device_count.get_or_init(|| {
            crate::api::driver()
                .and_then(|d| crate::api::internal(|| d.device_count()).ok())
                .map_or(0, |n| n.max(0) as u32)
        });
        (id < count).then(|| self.gpu_id(id))
    }

    fn unified_memory(&self, u: &UnifiedMemoryRecord<'_>) {
        use UnifiedMemoryCounterKind as K;
        let kind = match u.kind() {
            K::BytesHtoD => UvmKind::MigrationHtoD,
            K::BytesDtoH => UvmKind::MigrationDtoH,
            K::BytesDtoD => UvmKind::MigrationDtoD,
            K::GpuPageFault => UvmKind::GpuPageFault,
            K::CpuPageFault => UvmKind::CpuPageFault,
            K::Thrashing => UvmKind::Thrashing,
            K::Throttling => UvmKind::Throttling,
            K::RemoteMap => UvmKind::RemoteMap,
            _ => return,
        };
        // Instants keep only their start (CUPTI says to ignore their end).
        let end = if kind.has_duration() {
            u.end()
        } else {
            u.start()
        };
        if !self.valid(u.start(), end) {
            return;
        }
        let (src, dst) = (self.processor(u.src_id()), self.processor(u.dst_id()));
        // The host side of a migration is no GPU, whatever id CUPTI gives it.
        let (src, dst) = match kind {
            UvmKind::MigrationHtoD => (None, dst),
            UvmKind::MigrationDtoH => (src, None),
            _ => (src, dst),
        };
        let device = match kind {
            UvmKind::MigrationHtoD | UvmKind::MigrationDtoD | UvmKind::RemoteMap => dst,
            UvmKind::MigrationDtoH => src,
            UvmKind::GpuPageFault | UvmKind::Throttling => src,
            // The lowest of the GPUs contending (a bitmask, not an id).
            UvmKind::Thrashing => u
                .processors()
                .iter()
                .enumerate()
                .find(|(_, w)| **w != 0)
                .and_then(|(i, w)| self.processor(i as u32 * 64 + w.trailing_zeros())),
            _ => None,
        };
        // CPU faults (and anything whose GPU is not known) go with CUDA
        // device 0.
        let device = device.unwrap_or_else(|| self.gpu_id(0));
        let mut ev = UnifiedMemoryEvent::new(device, kind, u.start(), end, u.address(), u.value());
        if matches!(
            kind,
            UvmKind::MigrationHtoD
                | UvmKind::MigrationDtoH
                | UvmKind::MigrationDtoD
                | UvmKind::RemoteMap
        ) {
            ev.src = src;
            ev.dst = dst;
        }
        ev.cause = uvm_cause(u);
        self.recorder.unified_memory(ev);
    }

    /// The trace's view of CUDA device `ordinal`, described on first use.
    fn device(&self, ordinal: u32) -> DeviceEntry {
        if let Some(d) = self
            .device_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&ordinal)
        {
            return *d;
        }
        let (entry, desc) = crate::api::internal(|| self.describe(ordinal));
        self.device_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(ordinal, entry);
        (self.devices.0)(desc);
        entry
    }

    fn describe(&self, ordinal: u32) -> (DeviceEntry, Device) {
        use cupti_sys::CUdevice_attribute_enum as A;
        let mut desc = Device::new(ordinal, format!("CUDA device {ordinal}"));
        desc.vendor = Some("NVIDIA".into());
        let mut limits = DeviceLimits::default();
        if let Some(drv) = crate::api::driver()
            && let Ok(dev) = drv.device(ordinal as i32)
        {
            let attr = |a| drv.device_attribute(dev, a).map(|v| v as u32).unwrap_or(0);
            limits = DeviceLimits {
                sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                max_threads_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
                max_blocks_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR),
                regs_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
                regs_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
                smem_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
                reserved_smem_per_block: attr(
                    A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
                ),
                warp_size: attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE),
                cc_major: attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            };
            let minor = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
            if let Ok(n) = drv.device_name(dev) {
                desc.name = n;
            }
            desc.uuid = drv.device_uuid(dev).ok();
            desc.pci_bdf = drv
                .device_pci_bus_id(dev)
                .ok()
                .map(|s| s.to_ascii_lowercase());
            desc.total_memory = drv.device_total_mem(dev).ok();
            desc.sm_count = limits.sm_count;
            desc.arch_id = format!("sm_{}{}", limits.cc_major, minor);
            desc.architecture = architecture(limits.cc_major, minor).to_owned();
            desc.extra
                .push(("cuda_ordinal".into(), ordinal.to_string()));
            desc.extra.push((
                "compute_capability".into(),
                format!("{}.{minor}", limits.cc_major),
            ));
            if let Ok(v) = drv.version() {
                desc.extra.push((
                    "cuda_driver".into(),
                    format!("{}.{}", v / 1000, (v % 1000) / 10),
                ));
            }
        } else {
            gpu_trace_model::verbose!(
                "CUDA device {ordinal} described without the driver (libcuda.so.1 not loaded)"
            );
        }
        // Users know GPUs by their nvidia-smi index (PCI order), not the
        // CUDA ordinal, which CUDA_VISIBLE_DEVICES and FASTEST_FIRST reorder.
        let gpu_id = desc
            .pci_bdf
            .as_deref()
            .and_then(system_index)
            .unwrap_or(ordinal);
        desc.id = gpu_id;
        let arch = self.names.intern(if desc.arch_id.is_empty() {
            "sm_unknown"
        } else {
            &desc.arch_id
        });
        (
            DeviceEntry {
                gpu_id,
                limits,
                arch,
            },
            desc,
        )
    }

    fn kernel(&self, k: &KernelRecord<'_>) {
        let corr = crate::detach::corr(k.correlation_id());
        crate::detach::record(corr, k.end());
        // A profiled kernel's record has no timestamps (kernel replay):
        // the counters' join places it.
        // CUPTI's own kernel, launched inside the profiled launch (so with
        // its correlation id): not the program's work.
        if self
            .join
            .get()
            .is_some_and(|j| j.is_profiler_kernel(k.name()))
        {
            return;
        }
        let profiled = self
            .join
            .get()
            .is_some_and(|j| j.is_pending(k.correlation_id() as u64));
        if !profiled && !self.valid(k.start(), k.end()) {
            return;
        }
        let dev = self.device(k.device_id());
        let key = ClassKey {
            name: k.name().map_or(0, |n| n.as_ptr() as usize),
            device: k.device_id(),
            registers: k.registers_per_thread(),
            static_smem: k.static_shared_memory(),
            dynamic_smem: k.dynamic_shared_memory(),
            block: k.block(),
            smem_config: k.shared_memory_executed(),
            local_mem: k.local_memory_per_thread(),
        };
        let class = {
            let mut classes = self.classes.lock().unwrap_or_else(|e| e.into_inner());
            let attachment = crate::detach::attachment();
            if classes.attachment != attachment {
                classes.attachment = attachment;
                classes.map.clear();
            }
            match classes.map.get(&key) {
                Some(c) => *c,
                None => {
                    let c = self.new_class(k, &key, &dev);
                    classes.map.insert(key, c);
                    c
                }
            }
        };
        let [gx, gy, gz] = k.grid().map(|v| v.max(0) as u32);
        let [bx, by, bz] = k.block().map(|v| v.max(0) as u32);
        let grid = Dim3::new(gx, gy, gz);
        let mut exec = KernelExec::new(dev.gpu_id, corr, k.start(), k.end(), class);
        exec.context = k.context_id();
        exec.stream = k.stream_id() as u64;
        exec.grid = grid;
        exec.block = Dim3::new(bx, by, bz);
        // Waves (left `None`) cost 13 bytes per kernel; `gpu-trace stats`
        // can derive them from the grid and the class's occupancy instead.
        exec.graph_node = k.graph_node_id();
        let exec = match self.join.get() {
            Some(j) if profiled => j.kernel(exec),
            _ => Some(exec),
        };
        if let Some(exec) = exec {
            self.recorder.kernel(exec);
        }
    }

    fn new_class(&self, k: &KernelRecord<'_>, key: &ClassKey, dev: &DeviceEntry) -> KernelId {
        let name = k
            .name()
            .map(|n| n.to_string_lossy())
            .unwrap_or(std::borrow::Cow::Borrowed("<unnamed kernel>"));
        let kn = self.kernels.names(&self.names, &name);
        let block_threads = key.block.iter().map(|&v| v.max(1) as u32).product::<u32>();
        let occ = occupancy::compute(
            &dev.limits,
            &KernelResources {
                block_threads,
                registers: key.registers as u32,
                static_smem: key.static_smem.max(0) as u32,
                dynamic_smem: key.dynamic_smem.max(0) as u32,
                smem_config: key.smem_config,
            },
        );
        let a = &self.args;
        let u = |v: u32| ArgValue::Uint(v as u64);
        let mut args = vec![
            (a.registers, u(key.registers as u32)),
            (a.static_smem, u(key.static_smem.max(0) as u32)),
            (a.dynamic_smem, u(key.dynamic_smem.max(0) as u32)),
            (a.smem_config, u(key.smem_config)),
            (a.block_size, u(block_threads)),
        ];
        if key.local_mem > 0 {
            args.push((a.local_mem, u(key.local_mem)));
        }
        if dev.limits.max_threads_per_sm > 0 {
            args.extend([
                (a.limit_blocks, u(occ.limit_blocks)),
                (a.limit_registers, u(occ.limit_registers)),
                (a.limit_smem, u(occ.limit_shared_mem)),
                (a.limit_warps, u(occ.limit_warps)),
                (a.occupancy_pct, ArgValue::Double(occ.percent)),
                (a.occupancy_warps, ArgValue::Double(occ.active_warps as f64)),
            ]);
        }
        let mut desc = KernelDesc::new(kn.mangled, kn.demangled, kn.display, dev.arch);
        desc.args = args;
        self.kernels.register(desc)
    }

    fn memcpy(&self, m: &MemcpyRecord<'_>) {
        let corr = crate::detach::corr(m.correlation_id());
        crate::detach::record(corr, m.end());
        if !self.valid(m.start(), m.end()) {
            return;
        }
        let dev = self.device(m.device_id());
        let mut op = MemoryOp::new(
            dev.gpu_id,
            corr,
            m.start(),
            m.end(),
            m.bytes(),
            MemoryOpKind::Copy {
                kind: copy_kind(m.copy_kind()),
                src: memory_kind(m.src_kind()),
                dst: memory_kind(m.dst_kind()),
                peer: None,
            },
        );
        op.context = m.context_id();
        op.stream = m.stream_id() as u64;
        op.graph_node = m.graph_node_id();
        self.recorder.memory(op);
    }

    fn memcpy_peer(&self, m: &MemcpyPeerRecord<'_>) {
        let corr = crate::detach::corr(m.correlation_id());
        crate::detach::record(corr, m.end());
        if !self.valid(m.start(), m.end()) {
            return;
        }
        let dev = self.device(m.device_id());
        let src = self.device(m.src_device_id()).gpu_id;
        let dst = self.device(m.dst_device_id()).gpu_id;
        let mut op = MemoryOp::new(
            dev.gpu_id,
            corr,
            m.start(),
            m.end(),
            m.bytes(),
            MemoryOpKind::Copy {
                kind: CopyKind::PtoP,
                src: MemoryKind::Device,
                dst: MemoryKind::Device,
                peer: Some((src, dst)),
            },
        );
        op.context = m.context_id();
        op.stream = m.stream_id() as u64;
        op.graph_node = m.graph_node_id();
        self.recorder.memory(op);
    }

    fn memset(&self, m: &MemsetRecord<'_>) {
        let corr = crate::detach::corr(m.correlation_id());
        crate::detach::record(corr, m.end());
        if !self.valid(m.start(), m.end()) {
            return;
        }
        let dev = self.device(m.device_id());
        let mut op = MemoryOp::new(
            dev.gpu_id,
            corr,
            m.start(),
            m.end(),
            m.bytes(),
            MemoryOpKind::Set {
                value: m.value(),
                memory: memory_kind(m.memory_kind()),
            },
        );
        op.context = m.context_id();
        op.stream = m.stream_id() as u64;
        op.graph_node = m.graph_node_id();
        self.recorder.memory(op);
    }
}

/// Why a unified-memory event happened, as its record says, in a word.
fn uvm_cause(u: &UnifiedMemoryRecord<'_>) -> Option<&'static str> {
    if let Some(c) = u.migration_cause() {
        return match c {
            MigrationCause::User => Some("user"),
            MigrationCause::Coherence => Some("coherence"),
            MigrationCause::Prefetch => Some("prefetch"),
            MigrationCause::Eviction => Some("eviction"),
            MigrationCause::AccessCounters => Some("access counters"),
            _ => None,
        };
    }
    if let Some(a) = u.access_type() {
        return match a {
            AccessType::Read => Some("read"),
            AccessType::Write => Some("write"),
            AccessType::Atomic => Some("atomic"),
            AccessType::Prefetch => Some("prefetch"),
            _ => None,
        };
    }
    if let Some(c) = u.remote_map_cause() {
        return match c {
            RemoteMapCause::Coherence => Some("coherence"),
            RemoteMapCause::Thrashing => Some("thrashing"),
            RemoteMapCause::Policy => Some("policy"),
            RemoteMapCause::OutOfMemory => Some("out of memory"),
            RemoteMapCause::Eviction => Some("eviction"),
            _ => None,
        };
    }
    u.involves_cpu()
        .and_then(|cpu| cpu.then_some("with the CPU"))
}

fn architecture(major: u32, minor: u32) -> &'static str {
    match (major, minor) {
        (7, 0 | 2) => "Volta",
        (7, 5) => "Turing",
        (8, 0 | 6 | 7) => "Ampere",
        (8, 9) => "Ada",
        (9, _) => "Hopper",
        (10..=12, _) => "Blackwell",
        _ => "",
    }
}

/// Position of `pci` among the NVIDIA GPUs in PCI order (nvidia-smi's
/// default numbering), from the driver's /proc listing.
fn system_index(pci: &str) -> Option<u32> {
    let mut all: Vec<String> = std::fs::read_dir("/proc/driver/nvidia/gpus")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .map(|s| s.to_ascii_lowercase())
        .collect();
    all.sort();
    let want = gpu_trace_model::pci::normalize_bdf(pci);
    all.iter()
        .position(|p| gpu_trace_model::pci::normalize_bdf(p) == want)
        .map(|i| i as u32)
}

fn copy_kind(k: MemcpyKind) -> CopyKind {
    match k {
        MemcpyKind::HtoD => CopyKind::HtoD,
        MemcpyKind::DtoH => CopyKind::DtoH,
        MemcpyKind::HtoA => CopyKind::HtoA,
        MemcpyKind::AtoH => CopyKind::AtoH,
        MemcpyKind::AtoA => CopyKind::AtoA,
        MemcpyKind::AtoD => CopyKind::AtoD,
        MemcpyKind::DtoA => CopyKind::DtoA,
        MemcpyKind::DtoD => CopyKind::DtoD,
        MemcpyKind::HtoH => CopyKind::HtoH,
        MemcpyKind::PtoP => CopyKind::PtoP,
        _ => CopyKind::Unknown,
    }
}

fn memory_kind(k: CuptiMemoryKind) -> MemoryKind {
    match k {
        CuptiMemoryKind::Pageable => MemoryKind::Pageable,
        CuptiMemoryKind::Pinned => MemoryKind::Pinned,
        CuptiMemoryKind::Device => MemoryKind::Device,
        CuptiMemoryKind::Array => MemoryKind::Array,
        CuptiMemoryKind::Managed => MemoryKind::Managed,
        CuptiMemoryKind::DeviceStatic => MemoryKind::DeviceStatic,
        CuptiMemoryKind::ManagedStatic => MemoryKind::ManagedStatic,
        _ => MemoryKind::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_ids_compare_across_spellings() {
        assert_eq!(
            gpu_trace_model::pci::normalize_bdf("00000000:06:00.0"),
            gpu_trace_model::pci::normalize_bdf("0000:06:00.0")
        );
        assert_eq!(
            gpu_trace_model::pci::normalize_bdf("0000:00:06.0"),
            "0000:00:06.0"
        );
    }

    /// Compute capabilities of shipped NVIDIA GPUs and their architecture, as NVIDIA's
    /// "CUDA GPU Compute Capability" list and the CUDA C++ Programming Guide's
    /// compute-capability table give them (data, not the match above restated).
    const DOCUMENTED: &[((u32, u32), &str, &str)] = &[
        ((7, 0), "Volta", "V100"),
        ((7, 2), "Volta", "Jetson AGX Xavier"),
        ((7, 5), "Turing", "T4, RTX 20"),
        ((8, 0), "Ampere", "A100, A30"),
        ((8, 6), "Ampere", "A10, A40, RTX 30"),
        ((8, 7), "Ampere", "Jetson AGX Orin"),
        ((8, 9), "Ada", "L4, L40, RTX 40"),
        ((9, 0), "Hopper", "H100, H200, GH200"),
        ((10, 0), "Blackwell", "B200, GB200"),
        ((10, 3), "Blackwell", "B300, GB300"),
        ((11, 0), "Blackwell", "Jetson Thor"),
        ((12, 0), "Blackwell", "RTX PRO 6000, RTX 50"),
        ((12, 1), "Blackwell", "DGX Spark (GB10)"),
    ];

    /// Generations in the order of their compute capabilities.
    const GENERATIONS: &[&str] = &["Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell"];

    #[test]
    fn documented_compute_capabilities_map_to_their_architecture() {
        for &((major, minor), arch, gpus) in DOCUMENTED {
            assert_eq!(
                architecture(major, minor),
                arch,
                "sm_{major}{minor} ({gpus})"
            );
        }
    }

    #[test]
    fn architectures_older_or_newer_than_the_known_ones_are_unnamed() {
        // Pascal and Maxwell are not supported by CUPTI 13; what comes after Blackwell is
        // not known yet. Either way: no name rather than a wrong one.
        for (major, minor) in [
            (3, 5),
            (5, 0),
            (5, 2),
            (6, 0),
            (6, 1),
            (6, 2),
            (13, 0),
            (99, 0),
        ] {
            assert_eq!(architecture(major, minor), "", "sm_{major}{minor}");
        }
        assert_eq!(architecture(0, 0), "");
    }

    #[test]
    fn architectures_follow_compute_capability_order() {
        // Walking every capability in order, each named generation appears in one run, and the
        // runs come in GENERATIONS order: an entry naming the wrong generation (or one
        // name spelled two ways) breaks it.
        let mut runs: Vec<&str> = Vec::new();
        for major in 0..=16 {
            for minor in 0..=9 {
                let a = architecture(major, minor);
                if a.is_empty() || runs.last() == Some(&a) {
                    continue;
                }
                assert!(
                    !runs.contains(&a),
                    "{a} appears again at sm_{major}{minor} after {runs:?}"
                );
                runs.push(a);
            }
        }
        assert_eq!(runs, GENERATIONS);
    }
}
