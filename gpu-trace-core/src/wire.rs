//! Perfetto field numbers used by the writer and the reader.
//!
//! Where the SDK crates generate a field-number enum, the constant is taken
//! from it so that a typo cannot compile; the few the crates lack are
//! literals with the proto they come from.
#![allow(missing_docs)]

use perfetto_sdk::protos::config::data_source_config::DataSourceConfigFieldNumber as Dsc;
use perfetto_sdk::protos::config::trace_config::{
    TraceConfigBufferConfigFieldNumber as Buf, TraceConfigBuiltinDataSourceFieldNumber as Bds,
    TraceConfigDataSourceFieldNumber as TcDs, TraceConfigFieldNumber as Tc,
    TraceConfigIncrementalStateConfigFieldNumber as Isc,
};
use perfetto_sdk::protos::config::track_event::track_event_config::TrackEventConfigFieldNumber as Tec;
use perfetto_sdk::protos::trace::clock_snapshot::{
    ClockSnapshotClockFieldNumber as Clk, ClockSnapshotFieldNumber as Cs,
};
use perfetto_sdk::protos::trace::interned_data::interned_data::InternedDataFieldNumber as Idf;
use perfetto_sdk::protos::trace::trace::TraceFieldNumber as Tr;
use perfetto_sdk::protos::trace::trace_packet::{
    TracePacketDefaultsFieldNumber as Tpd, TracePacketFieldNumber as Tp,
};
use perfetto_sdk::protos::trace::track_event::debug_annotation::DebugAnnotationFieldNumber as Da;
use perfetto_sdk::protos::trace::track_event::process_descriptor::ProcessDescriptorFieldNumber as Pd;
use perfetto_sdk::protos::trace::track_event::thread_descriptor::ThreadDescriptorFieldNumber as Thd;
use perfetto_sdk::protos::trace::track_event::track_descriptor::TrackDescriptorFieldNumber as Td;
use perfetto_sdk::protos::trace::track_event::track_event::{
    EventNameFieldNumber as En, TrackEventFieldNumber as Te,
};
use perfetto_sdk_protos_gpu::protos::common::gpu_counter_descriptor::{
    GpuCounterDescriptorFieldNumber as Gcd, GpuCounterDescriptorGpuCounterSpecFieldNumber as Gcs,
};
use perfetto_sdk_protos_gpu::protos::config::data_source_config::DataSourceConfigExtFieldNumber as DscX;
use perfetto_sdk_protos_gpu::protos::config::gpu::gpu_counter_config::GpuCounterConfigFieldNumber as Gcc;
use perfetto_sdk_protos_gpu::protos::trace::gpu::gpu_counter_event::{
    GpuCounterEventFieldNumber as Gce, GpuCounterEventGpuCounterFieldNumber as Gc,
    InternedGpuCounterDescriptorFieldNumber as Igcd,
};
use perfetto_sdk_protos_gpu::protos::trace::gpu::gpu_interned_data::InternedDataExtFieldNumber as GIdX;
use perfetto_sdk_protos_gpu::protos::trace::gpu::gpu_log::GpuLogFieldNumber as Gl;
use perfetto_sdk_protos_gpu::protos::trace::gpu::gpu_render_stage_event::{
    GpuRenderStageEventComputeKernelLaunchFieldNumber as Kl,
    GpuRenderStageEventDim3FieldNumber as D3, GpuRenderStageEventExtraComputeArgFieldNumber as Arg,
    GpuRenderStageEventFieldNumber as Rse, InternedComputeArgNameFieldNumber as Ian,
    InternedComputeKernelFieldNumber as Ick,
    InternedGpuRenderStageSpecificationFieldNumber as Spec,
    InternedGraphicsContextFieldNumber as Gctx,
};
use perfetto_sdk_protos_gpu::protos::trace::gpu::gpu_track_event::{
    GpuCorrelationFieldNumber as Corr, TrackEventExtFieldNumber as TeX,
};
use perfetto_sdk_protos_gpu::protos::trace::interned_data::interned_data::InternedDataExtFieldNumber as IdX;
use perfetto_sdk_protos_gpu::protos::trace::system_info::gpu_info::{
    GpuInfoFieldNumber as Gi, GpuInfoGpuFieldNumber as Gg, GpuInfoGpuKeyValueFieldNumber as Kv,
};
use perfetto_sdk_protos_gpu::protos::trace::trace_packet::TracePacketExtFieldNumber as TpX;

pub const TRACE_PACKET: u32 = Tr::Packet as u32;

pub mod packet {
    use super::*;
    pub const TIMESTAMP: u32 = Tp::Timestamp as u32;
    pub const TIMESTAMP_CLOCK_ID: u32 = Tp::TimestampClockId as u32;
    pub const SEQUENCE_ID: u32 = Tp::TrustedPacketSequenceId as u32;
    pub const SEQUENCE_FLAGS: u32 = Tp::SequenceFlags as u32;
    pub const INTERNED_DATA: u32 = Tp::InternedData as u32;
    pub const DEFAULTS: u32 = Tp::TracePacketDefaults as u32;
    pub const CLOCK_SNAPSHOT: u32 = Tp::ClockSnapshot as u32;
    pub const TRACK_EVENT: u32 = Tp::TrackEvent as u32;
    pub const TRACK_DESCRIPTOR: u32 = Tp::TrackDescriptor as u32;
    pub const TRUSTED_PID: u32 = Tp::TrustedPid as u32;
    pub const GPU_COUNTER_EVENT: u32 = TpX::GpuCounterEvent as u32;
    pub const GPU_RENDER_STAGE_EVENT: u32 = TpX::GpuRenderStageEvent as u32;
    pub const GPU_LOG: u32 = TpX::GpuLog as u32;
    pub const GPU_INFO: u32 = TpX::GpuInfo as u32;
    /// `TracePacket.trace_stats` (trace/trace_stats.proto).
    pub const TRACE_STATS: u32 = 35;
    /// `TracePacket.trace_config`: the session's config, written by the service.
    pub const TRACE_CONFIG: u32 = 33;

    pub const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
    pub const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
    pub const DEFAULTS_CLOCK_ID: u32 = Tpd::TimestampClockId as u32;
    pub const DEFAULTS_TRACK_EVENT: u32 = Tpd::TrackEventDefaults as u32;
}

/// `BuiltinClock` values.
pub mod clock {
    pub const BOOTTIME: u32 = 6;
}

pub mod clock_snapshot {
    use super::*;
    pub const CLOCKS: u32 = Cs::Clocks as u32;
    pub const CLOCK_ID: u32 = Clk::ClockId as u32;
    pub const TIMESTAMP: u32 = Clk::Timestamp as u32;
    pub const IS_INCREMENTAL: u32 = Clk::IsIncremental as u32;
}

pub mod interned {
    use super::*;
    pub const EVENT_NAMES: u32 = Idf::EventNames as u32;
    pub const DEBUG_ANNOTATION_NAMES: u32 = Idf::DebugAnnotationNames as u32;
    pub const GRAPHICS_CONTEXTS: u32 = IdX::GraphicsContexts as u32;
    pub const GPU_SPECIFICATIONS: u32 = IdX::GpuSpecifications as u32;
    pub const GPU_COUNTER_DESCRIPTORS: u32 = IdX::GpuCounterDescriptors as u32;
    pub const COMPUTE_KERNELS: u32 = GIdX::ComputeKernels as u32;
    pub const COMPUTE_ARG_NAMES: u32 = GIdX::ComputeArgNames as u32;
    /// `iid` and `name` of EventName, DebugAnnotationName and friends.
    pub const IID: u32 = En::Iid as u32;
    pub const NAME: u32 = En::Name as u32;
}

pub mod spec {
    use super::*;
    pub const IID: u32 = Spec::Iid as u32;
    pub const NAME: u32 = Spec::Name as u32;
    pub const DESCRIPTION: u32 = Spec::Description as u32;
    pub const CATEGORY: u32 = Spec::Category as u32;
    pub const CATEGORY_OTHER: u64 = 0;
    pub const CATEGORY_COMPUTE: u64 = 2;
}

pub mod context {
    use super::*;
    pub const IID: u32 = Gctx::Iid as u32;
    pub const PID: u32 = Gctx::Pid as u32;
    pub const API: u32 = Gctx::Api as u32;
    pub const API_CUDA: u64 = 4;
    pub const API_HIP: u64 = 5;
}

pub mod kernel {
    use super::*;
    pub const IID: u32 = Ick::Iid as u32;
    pub const NAME: u32 = Ick::Name as u32;
    pub const DEMANGLED_NAME: u32 = Ick::DemangledName as u32;
    pub const ARCH: u32 = Ick::Arch as u32;
    pub const ARGS: u32 = Ick::Args as u32;
}

pub mod arg_name {
    use super::*;
    pub const IID: u32 = Ian::Iid as u32;
    pub const NAME: u32 = Ian::Name as u32;
}

pub mod arg {
    use super::*;
    pub const NAME_IID: u32 = Arg::NameIid as u32;
    pub const NAME: u32 = Arg::Name as u32;
    pub const INT: u32 = Arg::IntValue as u32;
    pub const UINT: u32 = Arg::UintValue as u32;
    pub const DOUBLE: u32 = Arg::DoubleValue as u32;
    pub const STRING: u32 = Arg::StringValue as u32;
}

pub mod rse {
    use super::*;
    pub const EVENT_ID: u32 = Rse::EventId as u32;
    pub const DURATION: u32 = Rse::Duration as u32;
    pub const HW_QUEUE_IID: u32 = Rse::HwQueueIid as u32;
    pub const STAGE_IID: u32 = Rse::StageIid as u32;
    pub const GPU_ID: u32 = Rse::GpuId as u32;
    pub const CONTEXT: u32 = Rse::Context as u32;
    pub const NAME_IID: u32 = Rse::NameIid as u32;
    pub const KERNEL_IID: u32 = Rse::KernelIid as u32;
    pub const LAUNCH: u32 = Rse::Launch as u32;
    pub const LAUNCH_GRID: u32 = Kl::GridSize as u32;
    pub const LAUNCH_WORKGROUP: u32 = Kl::WorkgroupSize as u32;
    pub const LAUNCH_ARGS: u32 = Kl::Args as u32;
    pub const X: u32 = D3::X as u32;
    pub const Y: u32 = D3::Y as u32;
    pub const Z: u32 = D3::Z as u32;
}

pub mod counters {
    use super::*;
    pub const DESCRIPTOR_IID: u32 = Gce::CounterDescriptorIid as u32;
    pub const COUNTERS: u32 = Gce::Counters as u32;
    pub const GPU_ID: u32 = Gce::GpuId as u32;
    pub const COUNTER_ID: u32 = Gc::CounterId as u32;
    pub const INT_VALUE: u32 = Gc::IntValue as u32;
    pub const DOUBLE_VALUE: u32 = Gc::DoubleValue as u32;
    pub const IDESC_IID: u32 = Igcd::Iid as u32;
    pub const IDESC_DESCRIPTOR: u32 = Igcd::CounterDescriptor as u32;
    pub const IDESC_GPU_ID: u32 = Igcd::GpuId as u32;
    pub const DESC_SPECS: u32 = Gcd::Specs as u32;
    pub const DESC_SUPPORTS_INSTRUMENTED: u32 = Gcd::SupportsInstrumentedSampling as u32;
    pub const DESC_SUPPORTS_NAMES: u32 = Gcd::SupportsCounterNames as u32;
    pub const SPEC_COUNTER_ID: u32 = Gcs::CounterId as u32;
    pub const SPEC_NAME: u32 = Gcs::Name as u32;
    pub const SPEC_DESCRIPTION: u32 = Gcs::Description as u32;
    pub const SPEC_NUM_UNITS: u32 = Gcs::NumeratorUnits as u32;
    pub const SPEC_DEN_UNITS: u32 = Gcs::DenominatorUnits as u32;
    pub const SPEC_GROUPS: u32 = Gcs::Groups as u32;
    pub const SPEC_VALUE_DIRECTION: u32 = Gcs::ValueDirection as u32;
    pub const FORWARDS_LOOKING: u64 = 2;
    pub const GROUP_SYSTEM: u64 = 1;
    pub const GROUP_MEMORY: u64 = 5;
    pub const GROUP_COMPUTE: u64 = 6;
}

pub mod gpu_info {
    use super::*;
    pub const GPUS: u32 = Gi::Gpus as u32;
    pub const NAME: u32 = Gg::Name as u32;
    pub const VENDOR: u32 = Gg::Vendor as u32;
    pub const MODEL: u32 = Gg::Model as u32;
    pub const ARCHITECTURE: u32 = Gg::Architecture as u32;
    pub const UUID: u32 = Gg::Uuid as u32;
    pub const PCI_BDF: u32 = Gg::PciBdf as u32;
    pub const EXTRA_INFO: u32 = Gg::ExtraInfo as u32;
    pub const KEY: u32 = Kv::Key as u32;
    pub const VALUE: u32 = Kv::Value as u32;
}

pub mod gpu_log {
    use super::*;
    pub const SEVERITY: u32 = Gl::Severity as u32;
    pub const TAG: u32 = Gl::Tag as u32;
    pub const MESSAGE: u32 = Gl::LogMessage as u32;
    pub const INFO: u64 = 3;
    pub const WARNING: u64 = 4;
}

pub mod track_event {
    use super::*;
    pub const TYPE: u32 = Te::Type as u32;
    pub const TRACK_UUID: u32 = Te::TrackUuid as u32;
    pub const NAME_IID: u32 = Te::NameIid as u32;
    pub const NAME: u32 = Te::Name as u32;
    pub const DEBUG_ANNOTATIONS: u32 = Te::DebugAnnotations as u32;
    pub const GPU_CORRELATION: u32 = TeX::GpuCorrelation as u32;
    pub const GPU_API: u32 = TeX::GpuApi as u32;
    pub const SUBMISSION_IDS: u32 = Corr::RenderStageSubmissionEventIds as u32;
    pub const WAIT_IDS: u32 = Corr::RenderStageWaitEventIds as u32;
    pub const TYPE_SLICE_BEGIN: u64 = 1;
    pub const TYPE_SLICE_END: u64 = 2;
    pub const TYPE_INSTANT: u64 = 3;
    pub const GPU_API_CUDA: u64 = 4;
    pub const GPU_API_HIP: u64 = 5;
}

pub mod debug_annotation {
    use super::*;
    pub const NAME: u32 = Da::Name as u32;
    pub const UINT: u32 = Da::UintValue as u32;
    pub const INT: u32 = Da::IntValue as u32;
    pub const STRING: u32 = Da::StringValue as u32;
}

pub mod track_descriptor {
    use super::*;
    pub const UUID: u32 = Td::Uuid as u32;
    pub const PARENT_UUID: u32 = Td::ParentUuid as u32;
    pub const NAME: u32 = Td::Name as u32;
    pub const PROCESS: u32 = Td::Process as u32;
    pub const THREAD: u32 = Td::Thread as u32;
    pub const PROCESS_PID: u32 = Pd::Pid as u32;
    pub const PROCESS_NAME: u32 = Pd::ProcessName as u32;
    pub const THREAD_PID: u32 = Thd::Pid as u32;
    pub const THREAD_TID: u32 = Thd::Tid as u32;
    pub const THREAD_NAME: u32 = Thd::ThreadName as u32;
}

pub mod config {
    use super::*;
    pub const BUFFERS: u32 = Tc::Buffers as u32;
    pub const DATA_SOURCES: u32 = Tc::DataSources as u32;
    pub const WRITE_INTO_FILE: u32 = Tc::WriteIntoFile as u32;
    pub const OUTPUT_PATH: u32 = Tc::OutputPath as u32;
    pub const FILE_WRITE_PERIOD_MS: u32 = Tc::FileWritePeriodMs as u32;
    pub const FLUSH_PERIOD_MS: u32 = Tc::FlushPeriodMs as u32;
    pub const WRITE_FLUSH_MODE: u32 = Tc::WriteFlushMode as u32;
    /// Flush data sources before every periodic file write.
    pub const WRITE_FLUSH_ENABLED: u64 = 3;
    pub const FLUSH_TIMEOUT_MS: u32 = Tc::FlushTimeoutMs as u32;
    pub const DATA_SOURCE_STOP_TIMEOUT_MS: u32 = Tc::DataSourceStopTimeoutMs as u32;
    pub const UNIQUE_SESSION_NAME: u32 = Tc::UniqueSessionName as u32;
    pub const INCREMENTAL_STATE_CONFIG: u32 = Tc::IncrementalStateConfig as u32;
    pub const INCREMENTAL_CLEAR_PERIOD_MS: u32 = Isc::ClearPeriodMs as u32;
    pub const BUFFER_SIZE_KB: u32 = Buf::SizeKb as u32;
    pub const BUFFER_FILL_POLICY: u32 = Buf::FillPolicy as u32;
    pub const FILL_POLICY_RING_BUFFER: u64 = 1;
    pub const FILL_POLICY_DISCARD: u64 = 2;
    pub const BUILTIN_DATA_SOURCES: u32 = Tc::BuiltinDataSources as u32;
    pub const BUILTIN_SNAPSHOT_INTERVAL_MS: u32 = Bds::SnapshotIntervalMs as u32;
    pub const DS_CONFIG: u32 = TcDs::Config as u32;
    pub const DSC_NAME: u32 = Dsc::Name as u32;
    pub const DSC_TARGET_BUFFER: u32 = Dsc::TargetBuffer as u32;
    pub const DSC_TRACK_EVENT_CONFIG: u32 = Dsc::TrackEventConfig as u32;
    pub const DSC_GPU_COUNTER_CONFIG: u32 = DscX::GpuCounterConfig as u32;
    pub const TE_ENABLED_CATEGORIES: u32 = Tec::EnabledCategories as u32;
    pub const TE_DISABLED_CATEGORIES: u32 = Tec::DisabledCategories as u32;
    pub const GCC_COUNTER_NAMES: u32 = Gcc::CounterNames as u32;
    pub const GCC_INSTRUMENTED_SAMPLING: u32 = Gcc::InstrumentedSampling as u32;
    pub const GCC_INSTRUMENTED_SAMPLING_CONFIG: u32 = Gcc::InstrumentedSamplingConfig as u32;
}
