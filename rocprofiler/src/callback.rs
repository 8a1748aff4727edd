//! Callback tracing: the event handed to closures, with typed views of its payload.

use std::ffi::CStr;
use std::mem::size_of;

use rocprofiler_sys as sys;

use crate::ids::covers;
use crate::{AgentId, ContextId, CorrelationId, Dim3, Runtime};

/// Phase of a callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// Before the call (code objects: load).
    Enter,
    /// After the call (code objects: unload).
    Exit,
    /// Anything else.
    Other(u32),
}

impl Phase {
    /// Code-object name of `Enter`.
    pub const LOAD: Phase = Phase::Enter;
    /// Code-object name of `Exit`.
    pub const UNLOAD: Phase = Phase::Exit;
}

impl From<sys::rocprofiler_callback_phase_t> for Phase {
    fn from(p: sys::rocprofiler_callback_phase_t) -> Self {
        match p {
            sys::rocprofiler_callback_phase_t::ENTER => Phase::Enter,
            sys::rocprofiler_callback_phase_t::EXIT => Phase::Exit,
            other => Phase::Other(other.0),
        }
    }
}

/// One callback-tracing callback: a HIP call entering or leaving, a roctx marker, a code object
/// or kernel symbol being loaded or unloaded.
pub struct CallbackEvent<'a> {
    pub(crate) record: &'a sys::rocprofiler_callback_tracing_record_t,
    pub(crate) user_data: *mut sys::rocprofiler_user_data_t,
    pub(crate) rt: &'a Runtime,
}

impl<'a> CallbackEvent<'a> {
    /// Tracing kind.
    pub fn kind(&self) -> sys::rocprofiler_callback_tracing_kind_t {
        self.record.kind
    }
    /// Operation within the kind (e.g. a `rocprofiler_hip_runtime_api_id_t` value).
    pub fn operation(&self) -> i32 {
        self.record.operation
    }
    /// The operation's name, from the SDK (`hipLaunchKernel`, `roctxRangePushA`, ...).
    pub fn operation_name(&self) -> Option<&'static str> {
        self.rt
            .callback_operation_name(self.record.kind, self.record.operation)
            .ok()
    }
    /// ENTER/EXIT (LOAD/UNLOAD).
    pub fn phase(&self) -> Phase {
        self.record.phase.into()
    }
    /// Correlation id; `internal` joins an API call with the GPU work it launched.
    pub fn correlation_id(&self) -> CorrelationId {
        self.record.correlation_id.into()
    }
    /// Calling thread (kernel tid).
    pub fn thread_id(&self) -> u64 {
        self.record.thread_id
    }
    /// Context whose service fired.
    pub fn context_id(&self) -> ContextId {
        ContextId(self.record.context_id.handle)
    }
    /// Per-call storage: what was set at ENTER is seen again at EXIT.
    pub fn user_data(&self) -> u64 {
        // SAFETY: the SDK passes a valid pointer for the duration of the callback (checked
        // non-null); both union members are 8 plain bytes.
        unsafe { self.user_data.as_ref().map(|u| u.value).unwrap_or(0) }
    }
    /// Sets the per-call storage.
    pub fn set_user_data(&mut self, value: u64) {
        // SAFETY: as above; the storage belongs to this call and this thread.
        if let Some(u) = unsafe { self.user_data.as_mut() } {
            u.value = value;
        }
    }
    /// The runtime (names, timestamps).
    pub fn runtime(&self) -> &'a Runtime {
        self.rt
    }
    /// The raw record.
    pub fn raw(&self) -> &'a sys::rocprofiler_callback_tracing_record_t {
        self.record
    }

    /// Typed view of the payload; `Other` for kinds not decoded here or payloads too short.
    pub fn payload(&self) -> Payload<'a> {
        type K = sys::rocprofiler_callback_tracing_kind_t;
        type CO = sys::rocprofiler_code_object_operation_t;
        let p = self.record.payload;
        if p.is_null() {
            return Payload::Other;
        }
        // Every payload starts with `uint64_t size`.
        // SAFETY: non-null payload of the running callback.
        let size = unsafe { *p.cast::<u64>() };
        match self.record.kind {
            K::HIP_RUNTIME_API | K::HIP_COMPILER_API => {
                if !covers(
                    size,
                    size_of::<sys::rocprofiler_callback_tracing_hip_api_data_t>(),
                ) {
                    return Payload::Other;
                }
                // SAFETY: size checked; valid for the callback's duration ('a).
                let data =
                    unsafe { &*p.cast::<sys::rocprofiler_callback_tracing_hip_api_data_t>() };
                Payload::Hip(HipCall {
                    data,
                    operation: self.record.operation,
                })
            }
            K::MARKER_CORE_API => {
                if !covers(
                    size,
                    size_of::<sys::rocprofiler_callback_tracing_marker_api_data_t>(),
                ) {
                    return Payload::Other;
                }
                // SAFETY: as above.
                let data =
                    unsafe { &*p.cast::<sys::rocprofiler_callback_tracing_marker_api_data_t>() };
                Payload::Marker(MarkerCall {
                    data,
                    operation: self.record.operation,
                    phase: self.phase(),
                })
            }
            K::CODE_OBJECT if self.record.operation == CO::LOAD.0 as i32 => {
                type D = sys::rocprofiler_callback_tracing_code_object_load_data_t;
                if !covers(size, size_of::<D>()) {
                    return Payload::Other;
                }
                // SAFETY: size checked; valid for the callback's duration ('a).
                let data = unsafe { &*p.cast::<D>() };
                Payload::CodeObject(CodeObject { data })
            }
            K::CODE_OBJECT
                if self.record.operation == CO::DEVICE_KERNEL_SYMBOL_REGISTER.0 as i32 =>
            {
                type D =
                    sys::rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t;
                if !covers(size, size_of::<D>()) {
                    return Payload::Other;
                }
                // SAFETY: size checked; valid for the callback's duration ('a).
                let data = unsafe { &*p.cast::<D>() };
                Payload::KernelSymbol(KernelSymbol { data })
            }
            _ => Payload::Other,
        }
    }
}

/// Typed payload of a [`CallbackEvent`].
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum Payload<'a> {
    /// A HIP runtime/compiler API call.
    Hip(HipCall<'a>),
    /// A roctx core marker call.
    Marker(MarkerCall<'a>),
    /// A code object (phase LOAD/UNLOAD).
    CodeObject(CodeObject<'a>),
    /// A device kernel symbol (phase LOAD = register, UNLOAD = unregister).
    KernelSymbol(KernelSymbol<'a>),
    /// Not decoded here.
    Other,
}

/// Arguments of a kernel launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchArgs {
    /// Grid in blocks, as passed to HIP.
    pub grid_blocks: Dim3,
    /// Block size.
    pub block: Dim3,
    /// Dynamic LDS bytes.
    pub shared_mem_bytes: u64,
    /// Stream handle.
    pub stream: u64,
}

/// Arguments of a memory copy call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemcpyArgs {
    /// Destination.
    pub dst: u64,
    /// Source.
    pub src: u64,
    /// Bytes.
    pub bytes: u64,
    /// `hipMemcpyKind` value.
    pub kind: u32,
    /// Stream (`hipMemcpyAsync`).
    pub stream: Option<u64>,
}

/// A HIP API call's payload.
#[derive(Clone, Copy)]
pub struct HipCall<'a> {
    data: &'a sys::rocprofiler_callback_tracing_hip_api_data_t,
    operation: i32,
}

impl<'a> HipCall<'a> {
    /// The `rocprofiler_hip_runtime_api_id_t` value.
    pub fn operation(&self) -> sys::rocprofiler_hip_runtime_api_id_t {
        sys::rocprofiler_hip_runtime_api_id_t(self.operation)
    }
    /// `hipError_t` returned (meaningful at EXIT for calls returning `hipError_t`).
    pub fn hip_error(&self) -> i32 {
        // SAFETY: reading 4 bytes of the plain-data union.
        unsafe { self.data.retval.hipError_t_retval.0 }
    }
    /// Launch arguments of `hipLaunchKernel`, `hipExtLaunchKernel`, `hipModuleLaunchKernel`.
    pub fn launch(&self) -> Option<LaunchArgs> {
        type Id = sys::rocprofiler_hip_runtime_api_id_t;
        let a = &self.data.args;
        // SAFETY (all arms): the operation says which union member the SDK filled.
        match self.operation() {
            Id::hipLaunchKernel => {
                // SAFETY: the operation says which union member the SDK filled.
                let l = unsafe { a.hipLaunchKernel };
                Some(LaunchArgs {
                    grid_blocks: l.numBlocks.into(),
                    block: l.dimBlocks.into(),
                    shared_mem_bytes: l.sharedMemBytes as u64,
                    stream: l.stream as u64,
                })
            }
            Id::hipExtLaunchKernel => {
                // SAFETY: the operation says which union member the SDK filled.
                let l = unsafe { a.hipExtLaunchKernel };
                Some(LaunchArgs {
                    grid_blocks: l.numBlocks.into(),
                    block: l.dimBlocks.into(),
                    shared_mem_bytes: l.sharedMemBytes as u64,
                    stream: l.stream as u64,
                })
            }
            Id::hipModuleLaunchKernel => {
                // SAFETY: the operation says which union member the SDK filled.
                let l = unsafe { a.hipModuleLaunchKernel };
                Some(LaunchArgs {
                    grid_blocks: Dim3 {
                        x: l.gridDimX,
                        y: l.gridDimY,
                        z: l.gridDimZ,
                    },
                    block: Dim3 {
                        x: l.blockDimX,
                        y: l.blockDimY,
                        z: l.blockDimZ,
                    },
                    shared_mem_bytes: l.sharedMemBytes.into(),
                    stream: l.stream as u64,
                })
            }
            _ => None,
        }
    }
    /// Arguments of `hipMemcpy` / `hipMemcpyAsync`.
    pub fn memcpy(&self) -> Option<MemcpyArgs> {
        type Id = sys::rocprofiler_hip_runtime_api_id_t;
        let a = &self.data.args;
        // SAFETY (both arms): the operation says which union member the SDK filled.
        match self.operation() {
            Id::hipMemcpy => {
                // SAFETY: the operation says which union member the SDK filled.
                let m = unsafe { a.hipMemcpy };
                Some(MemcpyArgs {
                    dst: m.dst as u64,
                    src: m.src as u64,
                    bytes: m.sizeBytes as u64,
                    kind: m.kind.0,
                    stream: None,
                })
            }
            Id::hipMemcpyAsync => {
                // SAFETY: the operation says which union member the SDK filled.
                let m = unsafe { a.hipMemcpyAsync };
                Some(MemcpyArgs {
                    dst: m.dst as u64,
                    src: m.src as u64,
                    bytes: m.sizeBytes as u64,
                    kind: m.kind.0,
                    stream: Some(m.stream as u64),
                })
            }
            _ => None,
        }
    }
    /// Bytes asked of `hipMalloc`.
    pub fn malloc_size(&self) -> Option<u64> {
        if self.operation() != sys::rocprofiler_hip_runtime_api_id_t::hipMalloc {
            return None;
        }
        // SAFETY: the operation says which union member the SDK filled.
        Some(unsafe { self.data.args.hipMalloc.size } as u64)
    }
    /// Stream of `hipStreamSynchronize`.
    pub fn synchronized_stream(&self) -> Option<u64> {
        if self.operation() != sys::rocprofiler_hip_runtime_api_id_t::hipStreamSynchronize {
            return None;
        }
        // SAFETY: the operation says which union member the SDK filled.
        Some(unsafe { self.data.args.hipStreamSynchronize.stream } as u64)
    }
    /// `(event, stream)` of `hipEventRecord`.
    pub fn event_record(&self) -> Option<(u64, u64)> {
        if self.operation() != sys::rocprofiler_hip_runtime_api_id_t::hipEventRecord {
            return None;
        }
        // SAFETY: the operation says which union member the SDK filled.
        let e = unsafe { self.data.args.hipEventRecord };
        Some((e.event as u64, e.stream as u64))
    }
    /// Event of `hipEventSynchronize`.
    pub fn synchronized_event(&self) -> Option<u64> {
        if self.operation() != sys::rocprofiler_hip_runtime_api_id_t::hipEventSynchronize {
            return None;
        }
        // SAFETY: the operation says which union member the SDK filled.
        Some(unsafe { self.data.args.hipEventSynchronize.event } as u64)
    }
    /// Device ordinal of `hipSetDevice`.
    pub fn set_device(&self) -> Option<i32> {
        if self.operation() != sys::rocprofiler_hip_runtime_api_id_t::hipSetDevice {
            return None;
        }
        // SAFETY: the operation says which union member the SDK filled.
        Some(unsafe { self.data.args.hipSetDevice.deviceId })
    }
    /// The stream argument of the bound calls that take one (launches, `hipMemcpyAsync`,
    /// `hipMemsetAsync`, `hipStreamSynchronize`, `hipEventRecord`); 0 is the null stream.
    pub fn stream(&self) -> Option<u64> {
        type Id = sys::rocprofiler_hip_runtime_api_id_t;
        if let Some(l) = self.launch() {
            return Some(l.stream);
        }
        if let Some(m) = self.memcpy() {
            return m.stream;
        }
        match self.operation() {
            Id::hipMemsetAsync => {
                // SAFETY: the operation says which union member the SDK filled.
                Some(unsafe { self.data.args.hipMemsetAsync.stream } as u64)
            }
            _ => self
                .synchronized_stream()
                .or_else(|| self.event_record().map(|(_, s)| s)),
        }
    }
    /// The raw payload.
    pub fn raw(&self) -> &'a sys::rocprofiler_callback_tracing_hip_api_data_t {
        self.data
    }
}

/// roctx core operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MarkerOp {
    /// `roctxMarkA`.
    Mark,
    /// `roctxRangePushA`.
    RangePush,
    /// `roctxRangePop`.
    RangePop,
    /// `roctxRangeStartA`.
    RangeStart,
    /// `roctxRangeStop`.
    RangeStop,
    /// Anything else.
    Other(i32),
}

/// A roctx marker call's payload.
#[derive(Clone, Copy)]
pub struct MarkerCall<'a> {
    data: &'a sys::rocprofiler_callback_tracing_marker_api_data_t,
    operation: i32,
    phase: Phase,
}

impl<'a> MarkerCall<'a> {
    /// Which roctx call.
    pub fn op(&self) -> MarkerOp {
        type Id = sys::rocprofiler_marker_core_api_id_t;
        match sys::rocprofiler_marker_core_api_id_t(self.operation) {
            Id::roctxMarkA => MarkerOp::Mark,
            Id::roctxRangePushA => MarkerOp::RangePush,
            Id::roctxRangePop => MarkerOp::RangePop,
            Id::roctxRangeStartA => MarkerOp::RangeStart,
            Id::roctxRangeStop => MarkerOp::RangeStop,
            _ => MarkerOp::Other(self.operation),
        }
    }
    /// Message of mark/push/start (application memory: valid during the callback).
    pub fn message(&self) -> Option<&'a CStr> {
        // SAFETY (each arm): these three calls fill the `message` member.
        let p = match self.op() {
            // SAFETY: see above.
            MarkerOp::Mark => unsafe { self.data.args.roctxMarkA.message },
            // SAFETY: see above.
            MarkerOp::RangePush => unsafe { self.data.args.roctxRangePushA.message },
            // SAFETY: see above.
            MarkerOp::RangeStart => unsafe { self.data.args.roctxRangeStartA.message },
            _ => return None,
        };
        // SAFETY: the application's NUL-terminated string, valid during the callback.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
    }
    /// Range id: the argument of `roctxRangeStop`, or what `roctxRangeStartA` returned (EXIT).
    pub fn range_id(&self) -> Option<u64> {
        match (self.op(), self.phase) {
            // SAFETY: Stop fills `id`.
            (MarkerOp::RangeStop, _) => Some(unsafe { self.data.args.roctxRangeStop.id }),
            (MarkerOp::RangeStart, Phase::Exit) => {
                // SAFETY: Start's return value is set at EXIT.
                Some(unsafe { self.data.retval.roctx_range_id_t_retval })
            }
            _ => None,
        }
    }
    /// Nesting level returned by push/pop (EXIT).
    pub fn level(&self) -> Option<i32> {
        match (self.op(), self.phase) {
            (MarkerOp::RangePush | MarkerOp::RangePop, Phase::Exit) => {
                // SAFETY: push/pop return `int`, set at EXIT.
                Some(unsafe { self.data.retval.int32_t_retval })
            }
            _ => None,
        }
    }
}

/// Where a code object lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeObjectStorage {
    /// In a file (descriptor).
    File(i32),
    /// In memory.
    Memory {
        /// Address.
        base: u64,
        /// Bytes.
        size: u64,
    },
    /// Unknown.
    Other,
}

/// A code object being loaded or unloaded.
#[derive(Clone, Copy)]
pub struct CodeObject<'a> {
    data: &'a sys::rocprofiler_callback_tracing_code_object_load_data_t,
}

impl<'a> CodeObject<'a> {
    /// Id.
    pub fn id(&self) -> u64 {
        self.data.code_object_id
    }
    /// Agent.
    pub fn agent_id(&self) -> AgentId {
        AgentId(self.data.agent_id.handle)
    }
    /// `file://` or `memory://` URI.
    pub fn uri(&self) -> Option<&'a CStr> {
        // SAFETY: NUL-terminated SDK string, valid until SDK finalisation (checked non-null).
        (!self.data.uri.is_null()).then(|| unsafe { CStr::from_ptr(self.data.uri) })
    }
    /// Load address.
    pub fn load_base(&self) -> u64 {
        self.data.load_base
    }
    /// Loaded bytes.
    pub fn load_size(&self) -> u64 {
        self.data.load_size
    }
    /// Load delta.
    pub fn load_delta(&self) -> i64 {
        self.data.load_delta
    }
    /// Storage.
    pub fn storage(&self) -> CodeObjectStorage {
        type S = sys::rocprofiler_code_object_storage_type_t;
        match self.data.storage_type {
            S::FILE => {
                // SAFETY: the storage type says which union member is filled.
                CodeObjectStorage::File(unsafe { self.data.storage.file.storage_file })
            }
            S::MEMORY => {
                // SAFETY: as above.
                let m = unsafe { self.data.storage.memory };
                CodeObjectStorage::Memory {
                    base: m.memory_base,
                    size: m.memory_size,
                }
            }
            _ => CodeObjectStorage::Other,
        }
    }
}

/// A device kernel symbol being registered (LOAD) or unregistered (UNLOAD).
#[derive(Clone, Copy)]
pub struct KernelSymbol<'a> {
    data: &'a sys::rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t,
}

/// Owned copy of a kernel symbol, to keep in a `kernel_id` map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSymbolInfo {
    /// Key of dispatch records.
    pub kernel_id: u64,
    /// Owning code object.
    pub code_object_id: u64,
    /// Mangled name.
    pub name: String,
    /// Kernel object handle.
    pub kernel_object: u64,
    /// Kernel-argument bytes.
    pub kernarg_segment_size: u32,
    /// Kernel-argument alignment.
    pub kernarg_segment_alignment: u32,
    /// Static LDS bytes.
    pub group_segment_size: u32,
    /// Static scratch bytes per work-item.
    pub private_segment_size: u32,
    /// Scalar registers.
    pub sgpr_count: u32,
    /// Architected vector registers.
    pub arch_vgpr_count: u32,
    /// Accumulation vector registers.
    pub accum_vgpr_count: u32,
}

impl<'a> KernelSymbol<'a> {
    /// Key of dispatch records.
    pub fn kernel_id(&self) -> u64 {
        self.data.kernel_id
    }
    /// Mangled name (valid until SDK finalisation).
    pub fn name(&self) -> Option<&'a CStr> {
        // SAFETY: NUL-terminated SDK string (checked non-null).
        (!self.data.kernel_name.is_null()).then(|| unsafe { CStr::from_ptr(self.data.kernel_name) })
    }
    /// The raw payload.
    pub fn raw(
        &self,
    ) -> &'a sys::rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t {
        self.data
    }
    /// Owned copy.
    pub fn to_info(&self) -> KernelSymbolInfo {
        let d = self.data;
        KernelSymbolInfo {
            kernel_id: d.kernel_id,
            code_object_id: d.code_object_id,
            name: self
                .name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            kernel_object: d.kernel_object,
            kernarg_segment_size: d.kernarg_segment_size,
            kernarg_segment_alignment: d.kernarg_segment_alignment,
            group_segment_size: d.group_segment_size,
            private_segment_size: d.private_segment_size,
            sgpr_count: d.sgpr_count,
            arch_vgpr_count: d.arch_vgpr_count,
            accum_vgpr_count: d.accum_vgpr_count,
        }
    }
}
