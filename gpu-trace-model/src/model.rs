//! The backend-neutral event model.
//!
//! Both the CUPTI and the rocprofiler backends translate their records into
//! these types. Nothing here knows about Perfetto. Timestamps are nanoseconds
//! in the tracer's clock domain (CLOCK_BOOTTIME unless the backend declared a
//! custom GPU clock: the writer's `GpuClock`).
//!
//! Hot-path types hold no heap data: names are interned once into
//! [`NameId`]s and [`KernelId`]s, and marker text lives in the recording
//! thread's text arena (see [`crate::Recorder`]).

use smallvec::SmallVec;

/// Nanoseconds.
pub type Timestamp = u64;

/// A string interned in the tracer's name table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NameId(pub u32);

/// A kernel function in one launch-configuration class, interned in the
/// tracer's kernel table (see [`KernelDesc`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelId(pub u32);

/// A counter registered with the tracer (see [`CounterSpec`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CounterId(pub u32);

/// Three-dimensional launch size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Dim3 {
    /// x
    pub x: u32,
    /// y
    pub y: u32,
    /// z
    pub z: u32,
}

impl Dim3 {
    /// A new size.
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Self { x, y, z }
    }

    /// x·y·z, saturating.
    pub fn volume(self) -> u64 {
        (self.x as u64)
            .saturating_mul(self.y as u64)
            .saturating_mul(self.z as u64)
    }
}

/// A GPU as users see it (`nvidia-smi` / `rocm-smi` index).
///
/// New fields will come (clocks, links, ...): make one with
/// [`Device::new`] and set the fields the backend knows.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Device {
    /// Index as the vendor's management tool shows it; the trace's `gpu_id`.
    pub id: u32,
    /// Marketing name, e.g. "NVIDIA H200".
    pub name: String,
    /// Vendor as `GpuInfo.vendor` spells it ("NVIDIA", "AMD"), if known:
    /// the backend names it, so that the model keeps no list of vendors.
    pub vendor: Option<String>,
    /// 16-byte UUID, if known.
    pub uuid: Option<[u8; 16]>,
    /// PCI bus id, `dddd:bb:dd.f`.
    pub pci_bdf: Option<String>,
    /// Architecture family, e.g. "Hopper" or "CDNA3".
    pub architecture: String,
    /// Instruction-set name, e.g. "sm_90" or "gfx942".
    pub arch_id: String,
    /// Streaming multiprocessors (NVIDIA) or compute units (AMD).
    pub sm_count: u32,
    /// Device memory in bytes.
    pub total_memory: Option<u64>,
    /// Anything else worth showing (driver version, clocks, ...).
    pub extra: Vec<(String, String)>,
}

impl Device {
    /// Device `id` called `name`, nothing else known yet.
    pub fn new(id: u32, name: impl Into<String>) -> Self {
        Self {
            id,
            name: name.into(),
            ..Self::default()
        }
    }
}

/// A value attached to a kernel or launch as a Perfetto compute arg.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArgValue {
    /// Signed integer.
    Int(i64),
    /// Unsigned integer.
    Uint(u64),
    /// Floating point.
    Double(f64),
    /// Interned string.
    Name(NameId),
}

/// Everything about a kernel that does not change from launch to launch
/// within its launch-configuration class: the function, its resources, and
/// the occupancy those give for one block size. Interned once, referenced by
/// [`KernelId`] from every [`KernelExec`].
///
/// New fields will come: make one with [`KernelDesc::new`] and set the
/// rest (`args`) after.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct KernelDesc {
    /// Mangled (linkage) name.
    pub mangled: NameId,
    /// Demangled name; equal to `mangled` when it does not demangle.
    pub demangled: NameId,
    /// Short display name used as the slice name.
    pub display: NameId,
    /// Instruction set, e.g. "sm_90".
    pub arch: NameId,
    /// Per-function and per-configuration args (registers, shared memory,
    /// occupancy limits ...), keyed by interned arg name.
    pub args: Vec<(NameId, ArgValue)>,
}

impl KernelDesc {
    /// The function's names and instruction set, with no args yet.
    #[inline]
    pub fn new(mangled: NameId, demangled: NameId, display: NameId, arch: NameId) -> Self {
        Self {
            mangled,
            demangled,
            display,
            arch,
            args: Vec::new(),
        }
    }
}

/// One kernel execution on the GPU.
///
/// New fields will come: make one with [`KernelExec::new`] and set the
/// fields the backend knows.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct KernelExec {
    /// `gpu_id` of the device.
    pub device: u32,
    /// Backend context id (CUDA context id, HIP agent/context).
    pub context: u32,
    /// Stream / queue id within the device.
    pub stream: u64,
    /// Correlation id shared with the API call that launched it.
    pub correlation_id: u64,
    /// Start, ns.
    pub start: Timestamp,
    /// End, ns.
    pub end: Timestamp,
    /// Function and launch class.
    pub kernel: KernelId,
    /// Grid size in blocks.
    pub grid: Dim3,
    /// Block (workgroup) size in threads.
    pub block: Dim3,
    /// Waves per multiprocessor, if the backend could compute it.
    pub waves_per_sm: Option<f32>,
    /// CUDA graph node id, when launched from a graph; 0 otherwise.
    pub graph_node: u64,
}

impl KernelExec {
    /// Kernel `kernel` on `device`, launched by the call `correlation_id`,
    /// from `start` to `end`. The rest starts as zero / unknown: context
    /// and stream 0, grid and block 0×0×0, no waves, no graph node.
    #[inline]
    pub fn new(
        device: u32,
        correlation_id: u64,
        start: Timestamp,
        end: Timestamp,
        kernel: KernelId,
    ) -> Self {
        Self {
            device,
            context: 0,
            stream: 0,
            correlation_id,
            start,
            end,
            kernel,
            grid: Dim3::new(0, 0, 0),
            block: Dim3::new(0, 0, 0),
            waves_per_sm: None,
            graph_node: 0,
        }
    }
}

/// Direction of a memory copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
#[non_exhaustive]
pub enum CopyKind {
    HtoD,
    DtoH,
    DtoD,
    HtoH,
    PtoP,
    HtoA,
    AtoH,
    AtoA,
    AtoD,
    DtoA,
    Unknown,
}

impl CopyKind {
    /// Short name as nsys spells it.
    pub fn name(self) -> &'static str {
        match self {
            CopyKind::HtoD => "HtoD",
            CopyKind::DtoH => "DtoH",
            CopyKind::DtoD => "DtoD",
            CopyKind::HtoH => "HtoH",
            CopyKind::PtoP => "PtoP",
            CopyKind::HtoA => "HtoA",
            CopyKind::AtoH => "AtoH",
            CopyKind::AtoA => "AtoA",
            CopyKind::AtoD => "AtoD",
            CopyKind::DtoA => "DtoA",
            CopyKind::Unknown => "Unknown",
        }
    }

    /// All kinds, in a stable order.
    pub const ALL: [CopyKind; 11] = [
        CopyKind::HtoD,
        CopyKind::DtoH,
        CopyKind::DtoD,
        CopyKind::HtoH,
        CopyKind::PtoP,
        CopyKind::HtoA,
        CopyKind::AtoH,
        CopyKind::AtoA,
        CopyKind::AtoD,
        CopyKind::DtoA,
        CopyKind::Unknown,
    ];

    /// Parses [`CopyKind::name`].
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// Kind of memory on either side of a copy or under a memset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
#[non_exhaustive]
pub enum MemoryKind {
    Unknown,
    Pageable,
    Pinned,
    Device,
    Array,
    Managed,
    DeviceStatic,
    ManagedStatic,
}

impl MemoryKind {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            MemoryKind::Unknown => "unknown",
            MemoryKind::Pageable => "pageable",
            MemoryKind::Pinned => "pinned",
            MemoryKind::Device => "device",
            MemoryKind::Array => "array",
            MemoryKind::Managed => "managed",
            MemoryKind::DeviceStatic => "device_static",
            MemoryKind::ManagedStatic => "managed_static",
        }
    }

    /// All kinds, in a stable order.
    pub const ALL: [MemoryKind; 8] = [
        MemoryKind::Unknown,
        MemoryKind::Pageable,
        MemoryKind::Pinned,
        MemoryKind::Device,
        MemoryKind::Array,
        MemoryKind::Managed,
        MemoryKind::DeviceStatic,
        MemoryKind::ManagedStatic,
    ];

    /// Parses [`MemoryKind::name`].
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// What a memory operation did.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum MemoryOpKind {
    /// A copy.
    Copy {
        /// Direction.
        kind: CopyKind,
        /// Source memory.
        src: MemoryKind,
        /// Destination memory.
        dst: MemoryKind,
        /// Peer copies: source and destination `gpu_id`.
        peer: Option<(u32, u32)>,
    },
    /// A memset.
    Set {
        /// Byte value written.
        value: u32,
        /// Memory written.
        memory: MemoryKind,
    },
}

/// One copy or memset on the GPU.
///
/// New fields will come: make one with [`MemoryOp::new`] and set the
/// fields the backend knows.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MemoryOp {
    /// `gpu_id` of the device that ran it.
    pub device: u32,
    /// Backend context id.
    pub context: u32,
    /// Stream / queue id.
    pub stream: u64,
    /// Correlation id shared with the API call.
    pub correlation_id: u64,
    /// Start, ns.
    pub start: Timestamp,
    /// End, ns.
    pub end: Timestamp,
    /// Bytes copied or set.
    pub bytes: u64,
    /// Copy or set.
    pub kind: MemoryOpKind,
    /// Node id when the operation ran as part of a graph launch, else 0.
    pub graph_node: u64,
}

impl MemoryOp {
    /// `bytes` copied or set (`kind`) on `device` by the call
    /// `correlation_id`, from `start` to `end`; context, stream and graph
    /// node 0.
    #[inline]
    pub fn new(
        device: u32,
        correlation_id: u64,
        start: Timestamp,
        end: Timestamp,
        bytes: u64,
        kind: MemoryOpKind,
    ) -> Self {
        Self {
            device,
            context: 0,
            stream: 0,
            correlation_id,
            start,
            end,
            bytes,
            kind,
            graph_node: 0,
        }
    }
}

/// A runtime or driver API call on a CPU thread.
///
/// New fields will come: make one with [`ApiCall::new`] and set the
/// fields the backend knows.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApiCall {
    /// Function name, e.g. "cudaLaunchKernel".
    pub name: NameId,
    /// OS thread id of the caller.
    pub thread: u32,
    /// Entry, ns (CLOCK_BOOTTIME).
    pub start: Timestamp,
    /// Exit, ns (CLOCK_BOOTTIME).
    pub end: Timestamp,
    /// Correlation id of the call.
    pub correlation_id: u64,
    /// Whether the call submitted GPU work carrying its correlation id
    /// (launches, copies, memsets, graph launches).
    pub submits: bool,
    /// Correlation ids of GPU work this call waited for (synchronisation).
    pub waits: SmallVec<[u64; 2]>,
    /// Non-zero return code of a failed call.
    pub status: i32,
    /// The source call stack that made the call (the Python frames of a
    /// launch), when call sites are recorded.
    pub callstack: Option<crate::callstack::CallstackId>,
}

impl ApiCall {
    /// The call `name` on `thread` from `start` to `end`, with its
    /// `correlation_id`: submits nothing, waits for nothing, succeeded
    /// (status 0). Allocates nothing (`waits` is inline until it spills).
    #[inline]
    pub fn new(
        name: NameId,
        thread: u32,
        start: Timestamp,
        end: Timestamp,
        correlation_id: u64,
    ) -> Self {
        Self {
            name,
            thread,
            start,
            end,
            correlation_id,
            submits: false,
            waits: SmallVec::new(),
            status: 0,
            callstack: None,
        }
    }
}

/// A byte range in the recording thread's text arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextRef {
    /// Offset of the first byte.
    pub offset: u32,
    /// Length in bytes.
    pub len: u32,
}

/// An NVTX or roctx annotation.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Marker {
    /// Push of a thread-local nested range.
    Push {
        /// Domain name (NVTX domain), `None` for the default domain.
        domain: Option<NameId>,
        /// Range text.
        text: TextRef,
    },
    /// Pop of the innermost range of the domain.
    Pop {
        /// Domain.
        domain: Option<NameId>,
    },
    /// Start of a process-wide range that may end on another thread.
    Start {
        /// Range id as returned to the application.
        id: u64,
        /// Domain.
        domain: Option<NameId>,
        /// Range text.
        text: TextRef,
    },
    /// End of a process-wide range.
    End {
        /// Range id.
        id: u64,
    },
    /// An instantaneous mark.
    Mark {
        /// Domain.
        domain: Option<NameId>,
        /// Mark text.
        text: TextRef,
    },
}

/// A marker with its thread and time.
///
/// New fields may come: make one with [`MarkerEvent::new`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct MarkerEvent {
    /// OS thread id.
    pub thread: u32,
    /// When, ns (CLOCK_BOOTTIME).
    pub ts: Timestamp,
    /// What.
    pub marker: Marker,
}

impl MarkerEvent {
    /// `marker` on `thread` at `ts`.
    #[inline]
    pub fn new(thread: u32, ts: Timestamp, marker: Marker) -> Self {
        Self { thread, ts, marker }
    }
}

/// A line of the trace's GPU log at a point in time (recording windows
/// opening and closing), written in time order with the other events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogEvent {
    /// When, ns (CLOCK_BOOTTIME).
    pub ts: Timestamp,
    /// A warning (else information).
    pub warning: bool,
    /// The line, in the batch's text.
    pub text: TextRef,
}

impl LogEvent {
    /// A line at `ts`.
    #[inline]
    pub fn new(ts: Timestamp, warning: bool, text: TextRef) -> Self {
        Self { ts, warning, text }
    }
}

/// Unit of a counter value: numerator over denominator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
#[non_exhaustive]
pub enum Unit {
    None,
    Bit,
    Byte,
    Kilobyte,
    Megabyte,
    Gigabyte,
    Hertz,
    Megahertz,
    Nanosecond,
    Microsecond,
    Millisecond,
    Second,
    Milliwatt,
    Watt,
    Joule,
    Volt,
    Celsius,
    Percent,
    Instruction,
}

/// What a counter belongs to, for grouping in the UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CounterGroup {
    /// Per-kernel compute metrics (joined with kernels by the UI).
    Compute,
    /// Memory subsystem.
    Memory,
    /// Device telemetry: clocks, power, temperature, utilisation.
    System,
}

/// A counter's description.
///
/// New fields will come: make one with [`CounterSpec::new`] and set the
/// rest (`description`, `per`) after.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CounterSpec {
    /// Metric name, e.g. "sm__throughput.avg.pct_of_peak_sustained_elapsed".
    pub name: String,
    /// One sentence for people.
    pub description: String,
    /// Numerator units.
    pub unit: Unit,
    /// Denominator units (e.g. `Second` for rates).
    pub per: Option<Unit>,
    /// Group.
    pub group: CounterGroup,
}

impl CounterSpec {
    /// Counter `name` in `unit`, shown in `group`; no description, no
    /// denominator.
    #[inline]
    pub fn new(name: impl Into<String>, unit: Unit, group: CounterGroup) -> Self {
        Self {
            name: name.into(),
            description: String::new(),
            unit,
            per: None,
            group,
        }
    }
}

/// Values of per-kernel counters for one kernel execution.
///
/// New fields may come: make one with [`KernelCounters::new`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct KernelCounters {
    /// `gpu_id`.
    pub device: u32,
    /// Correlation id of the kernel measured.
    pub correlation_id: u64,
    /// Kernel start, ns; samples are placed inside `[start, end)`.
    pub start: Timestamp,
    /// Kernel end, ns.
    pub end: Timestamp,
    /// Values.
    pub values: Box<[(CounterId, f64)]>,
}

impl KernelCounters {
    /// `values` measured on `device` for the kernel `correlation_id`, which
    /// ran from `start` to `end`.
    #[inline]
    pub fn new(
        device: u32,
        correlation_id: u64,
        start: Timestamp,
        end: Timestamp,
        values: Box<[(CounterId, f64)]>,
    ) -> Self {
        Self {
            device,
            correlation_id,
            start,
            end,
            values,
        }
    }
}

/// Periodic device counters (telemetry: clocks, power, utilisation ...),
/// written to the telemetry data source (`gpu.telemetry.<suffix>`).
///
/// Read on the host, so `ts` is CLOCK_BOOTTIME whatever GPU clock the
/// backend declared. New fields may come: make one with
/// [`CounterSample::new`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CounterSample {
    /// `gpu_id`.
    pub device: u32,
    /// When, ns (CLOCK_BOOTTIME). Each value holds from here to the
    /// device's next sample.
    pub ts: Timestamp,
    /// Values.
    pub values: Box<[(CounterId, f64)]>,
    /// The GPU's shader (SM) clock, also written as Perfetto's GPU
    /// frequency track.
    pub frequency_khz: Option<u32>,
}

impl CounterSample {
    /// `values` read from `device` at `ts`.
    #[inline]
    pub fn new(device: u32, ts: Timestamp, values: Box<[(CounterId, f64)]>) -> Self {
        Self {
            device,
            ts,
            values,
            frequency_khz: None,
        }
    }
}

/// What a unified-memory event was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UvmKind {
    /// Pages migrated from the host to a GPU (`value`: bytes).
    MigrationHtoD,
    /// Pages migrated from a GPU to the host (`value`: bytes).
    MigrationDtoH,
    /// Pages migrated between GPUs (`value`: bytes).
    MigrationDtoD,
    /// A GPU page fault group (`value`: faults in the group), from the
    /// driver taking it to the replay of the faulting accesses.
    GpuPageFault,
    /// A CPU page fault on managed memory (`value`: the faulting
    /// instruction's address); an instant.
    CpuPageFault,
    /// Processors fighting over a region (`value`: bytes); an instant.
    Thrashing,
    /// The driver holding one processor off a region to stop thrashing.
    Throttling,
    /// A region mapped remotely instead of migrated (`value`: bytes); an
    /// instant.
    RemoteMap,
}

impl UvmKind {
    /// The slice name.
    pub fn name(self) -> &'static str {
        match self {
            UvmKind::MigrationHtoD => "UM migration HtoD",
            UvmKind::MigrationDtoH => "UM migration DtoH",
            UvmKind::MigrationDtoD => "UM migration DtoD",
            UvmKind::GpuPageFault => "UM GPU page fault",
            UvmKind::CpuPageFault => "UM CPU page fault",
            UvmKind::Thrashing => "UM thrashing",
            UvmKind::Throttling => "UM throttling",
            UvmKind::RemoteMap => "UM remote map",
        }
    }

    /// What `value` counts, as the slice arg is named.
    pub fn value_name(self) -> &'static str {
        match self {
            UvmKind::GpuPageFault => "faults",
            UvmKind::CpuPageFault => "pc",
            _ => "bytes",
        }
    }

    /// Whether the event has a duration (the others are instants).
    pub fn has_duration(self) -> bool {
        !matches!(
            self,
            UvmKind::CpuPageFault | UvmKind::Thrashing | UvmKind::RemoteMap
        )
    }

    /// All kinds, in a stable order.
    pub const ALL: [UvmKind; 8] = [
        UvmKind::MigrationHtoD,
        UvmKind::MigrationDtoH,
        UvmKind::MigrationDtoD,
        UvmKind::GpuPageFault,
        UvmKind::CpuPageFault,
        UvmKind::Thrashing,
        UvmKind::Throttling,
        UvmKind::RemoteMap,
    ];
}

/// One unified-memory (managed memory) event: a migration, a fault,
/// thrashing and what the driver did about it.
///
/// New fields will come: make one with [`UnifiedMemoryEvent::new`] and set
/// the fields the backend knows.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct UnifiedMemoryEvent {
    /// `gpu_id` of the GPU it happened on or for: the destination of a
    /// migration to a GPU, the source of one from it, the GPU that
    /// faulted. CPU page faults, which have none, go with the first GPU.
    pub device: u32,
    /// What it was.
    pub kind: UvmKind,
    /// Start, ns (GPU clock domain, as kernels).
    pub start: Timestamp,
    /// End, ns; equal to `start` for instants.
    pub end: Timestamp,
    /// Virtual address of the (first) page concerned.
    pub address: u64,
    /// Bytes, faults or instruction address (see [`UvmKind::value_name`]).
    pub value: u64,
    /// Source and destination processors as the vendor numbers them
    /// (`gpu_id`s where they are GPUs the trace knows).
    pub src: Option<u32>,
    /// See `src`.
    pub dst: Option<u32>,
    /// Why it happened (migration or remote-map cause) or what access
    /// faulted, as a short word ("prefetch", "eviction", "write"...).
    pub cause: Option<&'static str>,
}

impl UnifiedMemoryEvent {
    /// `kind` on `device` from `start` to `end`, at `address`, with its
    /// `value`; no processors and no cause known.
    #[inline]
    pub fn new(
        device: u32,
        kind: UvmKind,
        start: Timestamp,
        end: Timestamp,
        address: u64,
        value: u64,
    ) -> Self {
        Self {
            device,
            kind,
            start,
            end,
            address,
            value,
            src: None,
            dst: None,
            cause: None,
        }
    }
}

/// Device memory this process holds on one GPU, after an allocation or a
/// free changed it.
///
/// New fields may come: make one with [`MemoryUsage::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryUsage {
    /// `gpu_id`.
    pub device: u32,
    /// When, ns (CLOCK_BOOTTIME: the call that changed it).
    pub ts: Timestamp,
    /// Bytes allocated and not freed since recording began.
    pub bytes: u64,
}

impl MemoryUsage {
    /// `bytes` in use on `device` from `ts` on.
    #[inline]
    pub fn new(device: u32, ts: Timestamp, bytes: u64) -> Self {
        Self { device, ts, bytes }
    }
}

/// Everything a backend records, as the emitter receives it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// A kernel execution.
    Kernel(KernelExec),
    /// A copy or memset.
    Memory(MemoryOp),
    /// A CPU-side API call.
    Api(ApiCall),
    /// An NVTX / roctx annotation.
    Marker(MarkerEvent),
    /// Per-kernel counter values.
    KernelCounters(KernelCounters),
    /// Periodic device counters (telemetry).
    Counters(CounterSample),
    /// A GPU log line.
    Log(LogEvent),
    /// A unified-memory migration, fault or thrashing event.
    UnifiedMemory(UnifiedMemoryEvent),
    /// Device memory in use after an allocation or free.
    MemoryUsage(MemoryUsage),
}

impl Event {
    /// Timestamp used to order events within a batch.
    pub fn time(&self) -> Timestamp {
        match self {
            Event::Kernel(k) => k.start,
            Event::Memory(m) => m.start,
            Event::Api(a) => a.start,
            Event::Marker(m) => m.ts,
            Event::KernelCounters(c) => c.start,
            Event::Counters(c) => c.ts,
            Event::Log(l) => l.ts,
            Event::UnifiedMemory(u) => u.start,
            Event::MemoryUsage(m) => m.ts,
        }
    }
}

/// What was dropped, for the drop counts written into the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DropKind {
    /// Events that did not fit the recording thread's buffer.
    ThreadBuffer,
    /// Activity records the vendor library could not store.
    VendorRecords,
    /// Records that were malformed (e.g. end before start).
    InvalidRecords,
    /// Per-kernel counter values that could not be collected.
    Counters,
}

impl DropKind {
    /// All kinds, in a stable order.
    pub const ALL: [DropKind; 4] = [
        DropKind::ThreadBuffer,
        DropKind::VendorRecords,
        DropKind::InvalidRecords,
        DropKind::Counters,
    ];

    /// Short key used in the trace.
    pub fn key(self) -> &'static str {
        match self {
            DropKind::ThreadBuffer => "thread_buffer",
            DropKind::VendorRecords => "vendor_records",
            DropKind::InvalidRecords => "invalid_records",
            DropKind::Counters => "counters",
        }
    }
}

/// What each recorded event moves into its thread's batch: 88 bytes, the
/// size of a kernel execution, whatever the kind. An API call (72 bytes,
/// its call-stack id included) stays within it, so carrying the id costs
/// the per-call path nothing in memory traffic.
const _: () = assert!(size_of::<Event>() <= 88 && size_of::<ApiCall>() <= 72);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_path_events_stay_small() {
        // Events are copied into per-thread buffers on the application's
        // threads; keep them within two cache lines.
        assert!(
            std::mem::size_of::<Event>() <= 128,
            "{}",
            std::mem::size_of::<Event>()
        );
    }

    #[test]
    fn names_round_trip() {
        for k in CopyKind::ALL {
            assert_eq!(CopyKind::from_name(k.name()), Some(k));
        }
        for k in MemoryKind::ALL {
            assert_eq!(MemoryKind::from_name(k.name()), Some(k));
        }
    }
}
