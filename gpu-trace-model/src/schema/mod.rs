//! What gpu-trace's traces hold, for the writer and every reader: the
//! Perfetto field numbers and enum values the encoder writes with (as
//! literals, so that reading needs no Perfetto SDK; the test kit's
//! `wire_check` compares every one with the field-number enums the SDK
//! crates generate, so a typo fails a test, and the few the crates lack
//! name the proto they come from), the busy tracks' names and interval
//! ([`busy`]), and the recording-window markers of the GPU log
//! ([`RecordingWindow`]).
#![allow(missing_docs)]

mod window;

pub use window::{RecordingWindow, WINDOW_LOG};
pub const TRACE_PACKET: u32 = 1;

pub mod packet {
    pub const TIMESTAMP: u32 = 8;
    pub const TIMESTAMP_CLOCK_ID: u32 = 58;
    pub const SEQUENCE_ID: u32 = 10;
    pub const SEQUENCE_FLAGS: u32 = 13;
    pub const INTERNED_DATA: u32 = 12;
    pub const DEFAULTS: u32 = 59;
    pub const CLOCK_SNAPSHOT: u32 = 6;
    pub const TRACK_EVENT: u32 = 11;
    pub const TRACK_DESCRIPTOR: u32 = 60;
    pub const TRUSTED_PID: u32 = 79;
    pub const GPU_COUNTER_EVENT: u32 = 52;
    pub const GPU_RENDER_STAGE_EVENT: u32 = 53;
    pub const GPU_LOG: u32 = 63;
    pub const GPU_INFO: u32 = 128;
    /// `TracePacket.generic_gpu_frequency_event` (trace/gpu/gpu_frequency_event.proto).
    pub const GENERIC_GPU_FREQUENCY_EVENT: u32 = 129;
    pub const GPU_MEM_TOTAL_EVENT: u32 = 71;
    /// `TracePacket.trace_stats` (trace/trace_stats.proto).
    pub const TRACE_STATS: u32 = 35;
    /// `TracePacket.trace_config`: the session's config, written by the service.
    pub const TRACE_CONFIG: u32 = 33;
    /// `TracePacket.incremental_state_cleared` (trace/trace_packet.proto).
    pub const INCREMENTAL_STATE_CLEARED: u32 = 41;
    /// `TracePacket.previous_packet_dropped` (trace/trace_packet.proto).
    pub const PREVIOUS_PACKET_DROPPED: u32 = 42;
    /// `TracePacket.service_event` (trace/perfetto/tracing_service_event.proto).
    pub const SERVICE_EVENT: u32 = 69;

    pub const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
    pub const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
    pub const DEFAULTS_CLOCK_ID: u32 = 58;
    pub const DEFAULTS_TRACK_EVENT: u32 = 11;
}

/// `TracingServiceEvent` (trace/perfetto/tracing_service_event.proto): the
/// service's marks of its flushes and buffer reads.
pub mod service_event {
    pub const ALL_DATA_SOURCES_FLUSHED: u32 = 3;
    pub const READ_TRACING_BUFFERS_COMPLETED: u32 = 4;
}

/// `BuiltinClock` values.
pub mod clock {
    pub const BOOTTIME: u32 = 6;
}

pub mod clock_snapshot {
    pub const CLOCKS: u32 = 1;
    pub const CLOCK_ID: u32 = 1;
    pub const TIMESTAMP: u32 = 2;
    pub const IS_INCREMENTAL: u32 = 3;
}

pub mod interned {
    pub const EVENT_NAMES: u32 = 2;
    /// `InternedString`s of frames' functions, files and mappings.
    pub const FUNCTION_NAMES: u32 = 5;
    pub const FRAMES: u32 = 6;
    pub const CALLSTACKS: u32 = 7;
    pub const MAPPING_PATHS: u32 = 17;
    pub const SOURCE_PATHS: u32 = 18;
    pub const MAPPINGS: u32 = 19;
    /// `InternedString`: `iid`, `str`.
    pub const STRING_IID: u32 = 1;
    pub const STRING_STR: u32 = 2;
    pub const DEBUG_ANNOTATION_NAMES: u32 = 3;
    pub const GRAPHICS_CONTEXTS: u32 = 23;
    pub const GPU_SPECIFICATIONS: u32 = 24;
    pub const GPU_COUNTER_DESCRIPTORS: u32 = 47;
    pub const COMPUTE_KERNELS: u32 = 1000;
    pub const COMPUTE_ARG_NAMES: u32 = 1001;
    /// `iid` and `name` of EventName, DebugAnnotationName and friends.
    pub const IID: u32 = 1;
    pub const NAME: u32 = 2;
}

/// `Frame` (profile_common.proto).
pub mod frame {
    pub const IID: u32 = 1;
    pub const FUNCTION_NAME_ID: u32 = 2;
    pub const MAPPING_ID: u32 = 3;
    pub const REL_PC: u32 = 4;
    pub const SOURCE_PATH_IID: u32 = 5;
    pub const LINE_NUMBER: u32 = 6;
}

/// `Callstack` (profile_common.proto): frames outermost first.
pub mod callstack {
    pub const IID: u32 = 1;
    pub const FRAME_IDS: u32 = 2;
}

/// `Mapping` (profile_common.proto).
pub mod mapping {
    pub const IID: u32 = 1;
    pub const PATH_STRING_IDS: u32 = 7;
}

pub mod spec {
    pub const IID: u32 = 1;
    pub const NAME: u32 = 2;
    pub const DESCRIPTION: u32 = 3;
    pub const CATEGORY: u32 = 4;
    pub const CATEGORY_OTHER: u64 = 0;
    pub const CATEGORY_COMPUTE: u64 = 2;
}

pub mod context {
    pub const IID: u32 = 1;
    pub const PID: u32 = 2;
    pub const API: u32 = 3;
    pub const API_CUDA: u64 = 4;
    pub const API_HIP: u64 = 5;
}

pub mod kernel {
    pub const IID: u32 = 1;
    pub const NAME: u32 = 2;
    pub const DEMANGLED_NAME: u32 = 3;
    pub const ARCH: u32 = 4;
    pub const ARGS: u32 = 5;
}

pub mod arg_name {
    pub const IID: u32 = 1;
    pub const NAME: u32 = 2;
}

pub mod arg {
    pub const NAME_IID: u32 = 1;
    pub const NAME: u32 = 2;
    pub const INT: u32 = 3;
    pub const UINT: u32 = 4;
    pub const DOUBLE: u32 = 5;
    pub const STRING: u32 = 6;
}

pub mod rse {
    pub const EVENT_ID: u32 = 1;
    pub const DURATION: u32 = 2;
    pub const HW_QUEUE_IID: u32 = 13;
    pub const STAGE_IID: u32 = 14;
    pub const GPU_ID: u32 = 11;
    pub const CONTEXT: u32 = 5;
    pub const NAME_IID: u32 = 20;
    pub const KERNEL_IID: u32 = 19;
    pub const LAUNCH: u32 = 21;
    pub const LAUNCH_GRID: u32 = 1;
    pub const LAUNCH_WORKGROUP: u32 = 2;
    pub const LAUNCH_ARGS: u32 = 3;
    pub const X: u32 = 1;
    pub const Y: u32 = 2;
    pub const Z: u32 = 3;
}

pub mod counters {
    pub const DESCRIPTOR_IID: u32 = 4;
    pub const COUNTERS: u32 = 2;
    pub const GPU_ID: u32 = 3;
    pub const COUNTER_ID: u32 = 1;
    pub const INT_VALUE: u32 = 2;
    pub const DOUBLE_VALUE: u32 = 3;
    pub const IDESC_IID: u32 = 1;
    pub const IDESC_DESCRIPTOR: u32 = 2;
    pub const IDESC_GPU_ID: u32 = 3;
    pub const DESC_SPECS: u32 = 1;
    pub const DESC_SUPPORTS_INSTRUMENTED: u32 = 5;
    pub const DESC_SUPPORTS_NAMES: u32 = 7;
    pub const SPEC_COUNTER_ID: u32 = 1;
    pub const SPEC_NAME: u32 = 2;
    pub const SPEC_DESCRIPTION: u32 = 3;
    pub const SPEC_NUM_UNITS: u32 = 7;
    pub const SPEC_DEN_UNITS: u32 = 8;
    pub const SPEC_GROUPS: u32 = 10;
    pub const SPEC_VALUE_DIRECTION: u32 = 11;
    pub const FORWARDS_LOOKING: u64 = 2;
    pub const GROUP_SYSTEM: u64 = 1;
    pub const GROUP_MEMORY: u64 = 5;
    pub const GROUP_COMPUTE: u64 = 6;

    use crate::model::{CounterGroup, Unit};

    /// `GpuCounterDescriptor.MeasureUnit` of a counter's unit.
    pub fn unit_code(u: Unit) -> u64 {
        match u {
            Unit::None => 0,
            Unit::Bit => 1,
            Unit::Byte => 7,
            Unit::Kilobyte => 8,
            Unit::Megabyte => 9,
            Unit::Gigabyte => 10,
            Unit::Hertz => 13,
            Unit::Megahertz => 15,
            Unit::Nanosecond => 19,
            Unit::Microsecond => 20,
            Unit::Millisecond => 21,
            Unit::Second => 22,
            Unit::Milliwatt => 28,
            Unit::Watt => 29,
            Unit::Joule => 31,
            Unit::Volt => 32,
            Unit::Celsius => 34,
            Unit::Percent => 37,
            Unit::Instruction => 40,
        }
    }

    /// `GpuCounterDescriptor.GpuCounterGroup` of a counter's group.
    pub fn group_code(g: CounterGroup) -> u64 {
        match g {
            CounterGroup::Compute => GROUP_COMPUTE,
            CounterGroup::Memory => GROUP_MEMORY,
            CounterGroup::System => GROUP_SYSTEM,
        }
    }
}

/// `GenericGpuFrequencyEvent`.
pub mod gpu_frequency {
    pub const GPU_ID: u32 = 1;
    pub const FREQUENCY_KHZ: u32 = 2;
}

pub mod gpu_info {
    pub const GPUS: u32 = 1;
    pub const NAME: u32 = 1;
    pub const VENDOR: u32 = 2;
    pub const MODEL: u32 = 3;
    pub const ARCHITECTURE: u32 = 4;
    pub const UUID: u32 = 5;
    pub const PCI_BDF: u32 = 7;
    pub const EXTRA_INFO: u32 = 6;
    pub const KEY: u32 = 1;
    pub const VALUE: u32 = 2;
}

pub mod gpu_mem_total {
    pub const GPU_ID: u32 = 1;
    pub const PID: u32 = 2;
    pub const SIZE: u32 = 3;
}

pub mod gpu_log {
    pub const SEVERITY: u32 = 1;
    pub const TAG: u32 = 2;
    pub const MESSAGE: u32 = 3;
    pub const INFO: u64 = 3;
    pub const WARNING: u64 = 4;
}

pub mod track_event {
    pub const TYPE: u32 = 9;
    pub const TRACK_UUID: u32 = 11;
    pub const NAME_IID: u32 = 10;
    pub const NAME: u32 = 23;
    pub const DEBUG_ANNOTATIONS: u32 = 4;
    pub const GPU_CORRELATION: u32 = 3000;
    pub const GPU_API: u32 = 3001;
    /// An interned `Callstack` (Perfetto v53+).
    pub const CALLSTACK_IID: u32 = 56;
    pub const SUBMISSION_IDS: u32 = 1;
    pub const WAIT_IDS: u32 = 2;
    pub const TYPE_SLICE_BEGIN: u64 = 1;
    pub const TYPE_SLICE_END: u64 = 2;
    pub const TYPE_INSTANT: u64 = 3;
    pub const TYPE_COUNTER: u64 = 4;
    pub const DOUBLE_COUNTER_VALUE: u32 = 44;
    pub const GPU_API_CUDA: u64 = 4;
    pub const GPU_API_HIP: u64 = 5;
}

pub mod debug_annotation {
    pub const NAME: u32 = 10;
    pub const UINT: u32 = 3;
    pub const INT: u32 = 4;
    pub const STRING: u32 = 6;
}

pub mod track_descriptor {
    pub const UUID: u32 = 1;
    pub const PARENT_UUID: u32 = 5;
    pub const NAME: u32 = 2;
    pub const PROCESS: u32 = 3;
    pub const THREAD: u32 = 4;
    pub const PROCESS_PID: u32 = 1;
    pub const PROCESS_NAME: u32 = 6;
    pub const PROCESS_LABELS: u32 = 8;
    pub const THREAD_PID: u32 = 1;
    pub const THREAD_TID: u32 = 2;
    pub const THREAD_NAME: u32 = 5;
    pub const COUNTER: u32 = 8;
    pub const COUNTER_UNIT_NAME: u32 = 6;
}

pub mod config {
    pub const BUFFERS: u32 = 1;
    pub const DATA_SOURCES: u32 = 2;
    pub const WRITE_INTO_FILE: u32 = 8;
    pub const OUTPUT_PATH: u32 = 29;
    pub const FILE_WRITE_PERIOD_MS: u32 = 9;
    pub const FLUSH_PERIOD_MS: u32 = 13;
    pub const WRITE_FLUSH_MODE: u32 = 44;
    /// Flush data sources before every periodic file write.
    pub const WRITE_FLUSH_ENABLED: u64 = 3;
    pub const FLUSH_TIMEOUT_MS: u32 = 14;
    pub const DATA_SOURCE_STOP_TIMEOUT_MS: u32 = 23;
    pub const UNIQUE_SESSION_NAME: u32 = 22;
    pub const INCREMENTAL_STATE_CONFIG: u32 = 21;
    pub const INCREMENTAL_CLEAR_PERIOD_MS: u32 = 1;
    pub const BUFFER_SIZE_KB: u32 = 1;
    pub const BUFFER_FILL_POLICY: u32 = 4;
    pub const FILL_POLICY_RING_BUFFER: u64 = 1;
    pub const FILL_POLICY_DISCARD: u64 = 2;
    pub const BUILTIN_DATA_SOURCES: u32 = 20;
    pub const BUILTIN_SNAPSHOT_INTERVAL_MS: u32 = 6;
    pub const BUILTIN_DISABLE_SERVICE_EVENTS: u32 = 4;
    pub const DS_CONFIG: u32 = 1;
    pub const DSC_NAME: u32 = 1;
    pub const DSC_TARGET_BUFFER: u32 = 2;
    pub const DSC_TRACK_EVENT_CONFIG: u32 = 113;
    pub const DSC_GPU_COUNTER_CONFIG: u32 = 108;
    pub const TE_ENABLED_CATEGORIES: u32 = 2;
    pub const TE_DISABLED_CATEGORIES: u32 = 1;
    pub const GCC_COUNTER_NAMES: u32 = 6;
    pub const GCC_INSTRUMENTED_SAMPLING: u32 = 3;
    pub const GCC_INSTRUMENTED_SAMPLING_CONFIG: u32 = 5;
    /// `GpuCounterConfig.InstrumentedSamplingConfig`.
    pub const ISC_ACTIVITY_NAME_FILTERS: u32 = 3;
    pub const ISC_ACTIVITY_RANGES: u32 = 5;
    pub const ISC_ACTIVITY_TX_INCLUDE_GLOBS: u32 = 6;
    pub const ISC_ACTIVITY_TX_EXCLUDE_GLOBS: u32 = 7;
    /// `InstrumentedSamplingConfig.ActivityNameFilter`.
    pub const ANF_NAME_GLOB: u32 = 1;
    pub const ANF_NAME_BASE: u32 = 2;
    /// `ActivityNameFilter.NameBase` values.
    pub const NAME_BASE_MANGLED_KERNEL_NAME: u64 = 0;
    pub const NAME_BASE_DEMANGLED_KERNEL_NAME: u64 = 1;
    pub const NAME_BASE_FUNCTION_NAME: u64 = 2;
    /// `InstrumentedSamplingConfig.ActivityRange`.
    pub const AR_SKIP: u32 = 1;
    pub const AR_COUNT: u32 = 2;
}

/// The busy tracks the writer derives from the GPU activity records.
pub mod busy {
    /// Width of one interval: 10 ms, as `perf stat -I 10` and `intel_gpu_top`
    /// sample engine busyness. Short enough to show a training step's phases,
    /// long enough that a busy GPU costs at most a few points per second per
    /// track.
    pub const INTERVAL: u64 = 10_000_000;

    /// The counter tracks of engine busy time that the emitter derives from
    /// the GPU activity records (`gpu.renderstages`): kernels, each copy
    /// direction and memsets, as a share of every [`INTERVAL`]. They are in
    /// the SYSTEM and MEMORY groups, as device telemetry is, so a reader tells
    /// them apart by these names.
    pub const ENGINE_COUNTERS: [&str; 6] = [
        "Compute busy",
        "Copy HtoD busy",
        "Copy DtoH busy",
        "Copy DtoD busy",
        "Copy peer busy",
        "Memset busy",
    ];
}
