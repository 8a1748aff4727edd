//! Every field number in `gpu_trace_model::schema` that the SDK crates also
//! generate must equal the SDK's: the schema's are literals, so that
//! writing and reading traces need no SDK types.

use gpu_trace_model::schema as wire;
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
use perfetto_sdk_protos_gpu::protos::trace::generic_kernel::generic_gpu_frequency::GenericGpuFrequencyEventFieldNumber as Freq;
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

#[test]
fn field_numbers_match_the_sdk() {
    assert_eq!(wire::TRACE_PACKET, Tr::Packet as u32, "wire::TRACE_PACKET");
    assert_eq!(
        wire::packet::TIMESTAMP,
        Tp::Timestamp as u32,
        "wire::packet::TIMESTAMP"
    );
    assert_eq!(
        wire::packet::TIMESTAMP_CLOCK_ID,
        Tp::TimestampClockId as u32,
        "wire::packet::TIMESTAMP_CLOCK_ID"
    );
    assert_eq!(
        wire::packet::SEQUENCE_ID,
        Tp::TrustedPacketSequenceId as u32,
        "wire::packet::SEQUENCE_ID"
    );
    assert_eq!(
        wire::packet::SEQUENCE_FLAGS,
        Tp::SequenceFlags as u32,
        "wire::packet::SEQUENCE_FLAGS"
    );
    assert_eq!(
        wire::packet::INTERNED_DATA,
        Tp::InternedData as u32,
        "wire::packet::INTERNED_DATA"
    );
    assert_eq!(
        wire::packet::DEFAULTS,
        Tp::TracePacketDefaults as u32,
        "wire::packet::DEFAULTS"
    );
    assert_eq!(
        wire::packet::CLOCK_SNAPSHOT,
        Tp::ClockSnapshot as u32,
        "wire::packet::CLOCK_SNAPSHOT"
    );
    assert_eq!(
        wire::packet::TRACK_EVENT,
        Tp::TrackEvent as u32,
        "wire::packet::TRACK_EVENT"
    );
    assert_eq!(
        wire::packet::TRACK_DESCRIPTOR,
        Tp::TrackDescriptor as u32,
        "wire::packet::TRACK_DESCRIPTOR"
    );
    assert_eq!(
        wire::packet::TRUSTED_PID,
        Tp::TrustedPid as u32,
        "wire::packet::TRUSTED_PID"
    );
    assert_eq!(
        wire::packet::GPU_COUNTER_EVENT,
        TpX::GpuCounterEvent as u32,
        "wire::packet::GPU_COUNTER_EVENT"
    );
    assert_eq!(
        wire::packet::GPU_RENDER_STAGE_EVENT,
        TpX::GpuRenderStageEvent as u32,
        "wire::packet::GPU_RENDER_STAGE_EVENT"
    );
    assert_eq!(
        wire::packet::GPU_LOG,
        TpX::GpuLog as u32,
        "wire::packet::GPU_LOG"
    );
    assert_eq!(
        wire::packet::GPU_INFO,
        TpX::GpuInfo as u32,
        "wire::packet::GPU_INFO"
    );
    assert_eq!(
        wire::packet::GENERIC_GPU_FREQUENCY_EVENT,
        TpX::GenericGpuFrequencyEvent as u32,
        "wire::packet::GENERIC_GPU_FREQUENCY_EVENT"
    );
    assert_eq!(wire::gpu_frequency::GPU_ID, Freq::GpuId as u32);
    assert_eq!(
        wire::gpu_frequency::FREQUENCY_KHZ,
        Freq::FrequencyKhz as u32
    );
    assert_eq!(
        wire::packet::DEFAULTS_CLOCK_ID,
        Tpd::TimestampClockId as u32,
        "wire::packet::DEFAULTS_CLOCK_ID"
    );
    assert_eq!(
        wire::packet::DEFAULTS_TRACK_EVENT,
        Tpd::TrackEventDefaults as u32,
        "wire::packet::DEFAULTS_TRACK_EVENT"
    );
    assert_eq!(
        wire::clock_snapshot::CLOCKS,
        Cs::Clocks as u32,
        "wire::clock_snapshot::CLOCKS"
    );
    assert_eq!(
        wire::clock_snapshot::CLOCK_ID,
        Clk::ClockId as u32,
        "wire::clock_snapshot::CLOCK_ID"
    );
    assert_eq!(
        wire::clock_snapshot::TIMESTAMP,
        Clk::Timestamp as u32,
        "wire::clock_snapshot::TIMESTAMP"
    );
    assert_eq!(
        wire::clock_snapshot::IS_INCREMENTAL,
        Clk::IsIncremental as u32,
        "wire::clock_snapshot::IS_INCREMENTAL"
    );
    assert_eq!(
        wire::interned::EVENT_NAMES,
        Idf::EventNames as u32,
        "wire::interned::EVENT_NAMES"
    );
    assert_eq!(
        wire::interned::DEBUG_ANNOTATION_NAMES,
        Idf::DebugAnnotationNames as u32,
        "wire::interned::DEBUG_ANNOTATION_NAMES"
    );
    assert_eq!(
        wire::interned::GRAPHICS_CONTEXTS,
        IdX::GraphicsContexts as u32,
        "wire::interned::GRAPHICS_CONTEXTS"
    );
    assert_eq!(
        wire::interned::GPU_SPECIFICATIONS,
        IdX::GpuSpecifications as u32,
        "wire::interned::GPU_SPECIFICATIONS"
    );
    assert_eq!(
        wire::interned::GPU_COUNTER_DESCRIPTORS,
        IdX::GpuCounterDescriptors as u32,
        "wire::interned::GPU_COUNTER_DESCRIPTORS"
    );
    assert_eq!(
        wire::interned::COMPUTE_KERNELS,
        GIdX::ComputeKernels as u32,
        "wire::interned::COMPUTE_KERNELS"
    );
    assert_eq!(
        wire::interned::COMPUTE_ARG_NAMES,
        GIdX::ComputeArgNames as u32,
        "wire::interned::COMPUTE_ARG_NAMES"
    );
    assert_eq!(wire::interned::IID, En::Iid as u32, "wire::interned::IID");
    assert_eq!(
        wire::interned::NAME,
        En::Name as u32,
        "wire::interned::NAME"
    );
    assert_eq!(wire::spec::IID, Spec::Iid as u32, "wire::spec::IID");
    assert_eq!(wire::spec::NAME, Spec::Name as u32, "wire::spec::NAME");
    assert_eq!(
        wire::spec::DESCRIPTION,
        Spec::Description as u32,
        "wire::spec::DESCRIPTION"
    );
    assert_eq!(
        wire::spec::CATEGORY,
        Spec::Category as u32,
        "wire::spec::CATEGORY"
    );
    assert_eq!(wire::context::IID, Gctx::Iid as u32, "wire::context::IID");
    assert_eq!(wire::context::PID, Gctx::Pid as u32, "wire::context::PID");
    assert_eq!(wire::context::API, Gctx::Api as u32, "wire::context::API");
    assert_eq!(wire::kernel::IID, Ick::Iid as u32, "wire::kernel::IID");
    assert_eq!(wire::kernel::NAME, Ick::Name as u32, "wire::kernel::NAME");
    assert_eq!(
        wire::kernel::DEMANGLED_NAME,
        Ick::DemangledName as u32,
        "wire::kernel::DEMANGLED_NAME"
    );
    assert_eq!(wire::kernel::ARCH, Ick::Arch as u32, "wire::kernel::ARCH");
    assert_eq!(wire::kernel::ARGS, Ick::Args as u32, "wire::kernel::ARGS");
    assert_eq!(wire::arg_name::IID, Ian::Iid as u32, "wire::arg_name::IID");
    assert_eq!(
        wire::arg_name::NAME,
        Ian::Name as u32,
        "wire::arg_name::NAME"
    );
    assert_eq!(
        wire::arg::NAME_IID,
        Arg::NameIid as u32,
        "wire::arg::NAME_IID"
    );
    assert_eq!(wire::arg::NAME, Arg::Name as u32, "wire::arg::NAME");
    assert_eq!(wire::arg::INT, Arg::IntValue as u32, "wire::arg::INT");
    assert_eq!(wire::arg::UINT, Arg::UintValue as u32, "wire::arg::UINT");
    assert_eq!(
        wire::arg::DOUBLE,
        Arg::DoubleValue as u32,
        "wire::arg::DOUBLE"
    );
    assert_eq!(
        wire::arg::STRING,
        Arg::StringValue as u32,
        "wire::arg::STRING"
    );
    assert_eq!(
        wire::rse::EVENT_ID,
        Rse::EventId as u32,
        "wire::rse::EVENT_ID"
    );
    assert_eq!(
        wire::rse::DURATION,
        Rse::Duration as u32,
        "wire::rse::DURATION"
    );
    assert_eq!(
        wire::rse::HW_QUEUE_IID,
        Rse::HwQueueIid as u32,
        "wire::rse::HW_QUEUE_IID"
    );
    assert_eq!(
        wire::rse::STAGE_IID,
        Rse::StageIid as u32,
        "wire::rse::STAGE_IID"
    );
    assert_eq!(wire::rse::GPU_ID, Rse::GpuId as u32, "wire::rse::GPU_ID");
    assert_eq!(
        wire::rse::CONTEXT,
        Rse::Context as u32,
        "wire::rse::CONTEXT"
    );
    assert_eq!(
        wire::rse::NAME_IID,
        Rse::NameIid as u32,
        "wire::rse::NAME_IID"
    );
    assert_eq!(
        wire::rse::KERNEL_IID,
        Rse::KernelIid as u32,
        "wire::rse::KERNEL_IID"
    );
    assert_eq!(wire::rse::LAUNCH, Rse::Launch as u32, "wire::rse::LAUNCH");
    assert_eq!(
        wire::rse::LAUNCH_GRID,
        Kl::GridSize as u32,
        "wire::rse::LAUNCH_GRID"
    );
    assert_eq!(
        wire::rse::LAUNCH_WORKGROUP,
        Kl::WorkgroupSize as u32,
        "wire::rse::LAUNCH_WORKGROUP"
    );
    assert_eq!(
        wire::rse::LAUNCH_ARGS,
        Kl::Args as u32,
        "wire::rse::LAUNCH_ARGS"
    );
    assert_eq!(
        wire::counters::DESCRIPTOR_IID,
        Gce::CounterDescriptorIid as u32,
        "wire::counters::DESCRIPTOR_IID"
    );
    assert_eq!(
        wire::counters::COUNTERS,
        Gce::Counters as u32,
        "wire::counters::COUNTERS"
    );
    assert_eq!(
        wire::counters::GPU_ID,
        Gce::GpuId as u32,
        "wire::counters::GPU_ID"
    );
    assert_eq!(
        wire::counters::COUNTER_ID,
        Gc::CounterId as u32,
        "wire::counters::COUNTER_ID"
    );
    assert_eq!(
        wire::counters::INT_VALUE,
        Gc::IntValue as u32,
        "wire::counters::INT_VALUE"
    );
    assert_eq!(
        wire::counters::DOUBLE_VALUE,
        Gc::DoubleValue as u32,
        "wire::counters::DOUBLE_VALUE"
    );
    assert_eq!(
        wire::counters::IDESC_IID,
        Igcd::Iid as u32,
        "wire::counters::IDESC_IID"
    );
    assert_eq!(
        wire::counters::IDESC_DESCRIPTOR,
        Igcd::CounterDescriptor as u32,
        "wire::counters::IDESC_DESCRIPTOR"
    );
    assert_eq!(
        wire::counters::IDESC_GPU_ID,
        Igcd::GpuId as u32,
        "wire::counters::IDESC_GPU_ID"
    );
    assert_eq!(
        wire::counters::DESC_SPECS,
        Gcd::Specs as u32,
        "wire::counters::DESC_SPECS"
    );
    assert_eq!(
        wire::counters::DESC_SUPPORTS_INSTRUMENTED,
        Gcd::SupportsInstrumentedSampling as u32,
        "wire::counters::DESC_SUPPORTS_INSTRUMENTED"
    );
    assert_eq!(
        wire::counters::DESC_SUPPORTS_NAMES,
        Gcd::SupportsCounterNames as u32,
        "wire::counters::DESC_SUPPORTS_NAMES"
    );
    assert_eq!(
        wire::counters::SPEC_COUNTER_ID,
        Gcs::CounterId as u32,
        "wire::counters::SPEC_COUNTER_ID"
    );
    assert_eq!(
        wire::counters::SPEC_NAME,
        Gcs::Name as u32,
        "wire::counters::SPEC_NAME"
    );
    assert_eq!(
        wire::counters::SPEC_DESCRIPTION,
        Gcs::Description as u32,
        "wire::counters::SPEC_DESCRIPTION"
    );
    assert_eq!(
        wire::counters::SPEC_NUM_UNITS,
        Gcs::NumeratorUnits as u32,
        "wire::counters::SPEC_NUM_UNITS"
    );
    assert_eq!(
        wire::counters::SPEC_DEN_UNITS,
        Gcs::DenominatorUnits as u32,
        "wire::counters::SPEC_DEN_UNITS"
    );
    assert_eq!(
        wire::counters::SPEC_GROUPS,
        Gcs::Groups as u32,
        "wire::counters::SPEC_GROUPS"
    );
    assert_eq!(
        wire::counters::SPEC_VALUE_DIRECTION,
        Gcs::ValueDirection as u32,
        "wire::counters::SPEC_VALUE_DIRECTION"
    );
    assert_eq!(
        wire::gpu_info::GPUS,
        Gi::Gpus as u32,
        "wire::gpu_info::GPUS"
    );
    assert_eq!(
        wire::gpu_info::NAME,
        Gg::Name as u32,
        "wire::gpu_info::NAME"
    );
    assert_eq!(
        wire::gpu_info::VENDOR,
        Gg::Vendor as u32,
        "wire::gpu_info::VENDOR"
    );
    assert_eq!(
        wire::gpu_info::MODEL,
        Gg::Model as u32,
        "wire::gpu_info::MODEL"
    );
    assert_eq!(
        wire::gpu_info::ARCHITECTURE,
        Gg::Architecture as u32,
        "wire::gpu_info::ARCHITECTURE"
    );
    assert_eq!(
        wire::gpu_info::UUID,
        Gg::Uuid as u32,
        "wire::gpu_info::UUID"
    );
    assert_eq!(
        wire::gpu_info::PCI_BDF,
        Gg::PciBdf as u32,
        "wire::gpu_info::PCI_BDF"
    );
    assert_eq!(
        wire::gpu_info::EXTRA_INFO,
        Gg::ExtraInfo as u32,
        "wire::gpu_info::EXTRA_INFO"
    );
    assert_eq!(wire::gpu_info::KEY, Kv::Key as u32, "wire::gpu_info::KEY");
    assert_eq!(
        wire::gpu_info::VALUE,
        Kv::Value as u32,
        "wire::gpu_info::VALUE"
    );
    assert_eq!(
        wire::gpu_log::SEVERITY,
        Gl::Severity as u32,
        "wire::gpu_log::SEVERITY"
    );
    assert_eq!(wire::gpu_log::TAG, Gl::Tag as u32, "wire::gpu_log::TAG");
    assert_eq!(
        wire::gpu_log::MESSAGE,
        Gl::LogMessage as u32,
        "wire::gpu_log::MESSAGE"
    );
    assert_eq!(
        wire::track_event::TYPE,
        Te::Type as u32,
        "wire::track_event::TYPE"
    );
    assert_eq!(
        wire::track_event::TRACK_UUID,
        Te::TrackUuid as u32,
        "wire::track_event::TRACK_UUID"
    );
    assert_eq!(
        wire::track_event::NAME_IID,
        Te::NameIid as u32,
        "wire::track_event::NAME_IID"
    );
    assert_eq!(
        wire::track_event::NAME,
        Te::Name as u32,
        "wire::track_event::NAME"
    );
    assert_eq!(
        wire::track_event::DEBUG_ANNOTATIONS,
        Te::DebugAnnotations as u32,
        "wire::track_event::DEBUG_ANNOTATIONS"
    );
    assert_eq!(
        wire::track_event::GPU_CORRELATION,
        TeX::GpuCorrelation as u32,
        "wire::track_event::GPU_CORRELATION"
    );
    assert_eq!(
        wire::track_event::GPU_API,
        TeX::GpuApi as u32,
        "wire::track_event::GPU_API"
    );
    assert_eq!(
        wire::track_event::SUBMISSION_IDS,
        Corr::RenderStageSubmissionEventIds as u32,
        "wire::track_event::SUBMISSION_IDS"
    );
    assert_eq!(
        wire::track_event::WAIT_IDS,
        Corr::RenderStageWaitEventIds as u32,
        "wire::track_event::WAIT_IDS"
    );
    assert_eq!(
        wire::debug_annotation::NAME,
        Da::Name as u32,
        "wire::debug_annotation::NAME"
    );
    assert_eq!(
        wire::debug_annotation::UINT,
        Da::UintValue as u32,
        "wire::debug_annotation::UINT"
    );
    assert_eq!(
        wire::debug_annotation::INT,
        Da::IntValue as u32,
        "wire::debug_annotation::INT"
    );
    assert_eq!(
        wire::debug_annotation::STRING,
        Da::StringValue as u32,
        "wire::debug_annotation::STRING"
    );
    assert_eq!(
        wire::track_descriptor::UUID,
        Td::Uuid as u32,
        "wire::track_descriptor::UUID"
    );
    assert_eq!(
        wire::track_descriptor::PARENT_UUID,
        Td::ParentUuid as u32,
        "wire::track_descriptor::PARENT_UUID"
    );
    assert_eq!(
        wire::track_descriptor::NAME,
        Td::Name as u32,
        "wire::track_descriptor::NAME"
    );
    assert_eq!(
        wire::track_descriptor::PROCESS,
        Td::Process as u32,
        "wire::track_descriptor::PROCESS"
    );
    assert_eq!(
        wire::track_descriptor::THREAD,
        Td::Thread as u32,
        "wire::track_descriptor::THREAD"
    );
    assert_eq!(
        wire::track_descriptor::PROCESS_PID,
        Pd::Pid as u32,
        "wire::track_descriptor::PROCESS_PID"
    );
    assert_eq!(
        wire::track_descriptor::PROCESS_NAME,
        Pd::ProcessName as u32,
        "wire::track_descriptor::PROCESS_NAME"
    );
    assert_eq!(
        wire::track_descriptor::PROCESS_LABELS,
        Pd::ProcessLabels as u32,
        "wire::track_descriptor::PROCESS_LABELS"
    );
    assert_eq!(
        wire::track_descriptor::THREAD_PID,
        Thd::Pid as u32,
        "wire::track_descriptor::THREAD_PID"
    );
    assert_eq!(
        wire::track_descriptor::THREAD_TID,
        Thd::Tid as u32,
        "wire::track_descriptor::THREAD_TID"
    );
    assert_eq!(
        wire::track_descriptor::THREAD_NAME,
        Thd::ThreadName as u32,
        "wire::track_descriptor::THREAD_NAME"
    );
    assert_eq!(
        wire::config::BUFFERS,
        Tc::Buffers as u32,
        "wire::config::BUFFERS"
    );
    assert_eq!(
        wire::config::DATA_SOURCES,
        Tc::DataSources as u32,
        "wire::config::DATA_SOURCES"
    );
    assert_eq!(
        wire::config::WRITE_INTO_FILE,
        Tc::WriteIntoFile as u32,
        "wire::config::WRITE_INTO_FILE"
    );
    assert_eq!(
        wire::config::OUTPUT_PATH,
        Tc::OutputPath as u32,
        "wire::config::OUTPUT_PATH"
    );
    assert_eq!(
        wire::config::FILE_WRITE_PERIOD_MS,
        Tc::FileWritePeriodMs as u32,
        "wire::config::FILE_WRITE_PERIOD_MS"
    );
    assert_eq!(
        wire::config::FLUSH_PERIOD_MS,
        Tc::FlushPeriodMs as u32,
        "wire::config::FLUSH_PERIOD_MS"
    );
    assert_eq!(
        wire::config::WRITE_FLUSH_MODE,
        Tc::WriteFlushMode as u32,
        "wire::config::WRITE_FLUSH_MODE"
    );
    assert_eq!(
        wire::config::FLUSH_TIMEOUT_MS,
        Tc::FlushTimeoutMs as u32,
        "wire::config::FLUSH_TIMEOUT_MS"
    );
    assert_eq!(
        wire::config::DATA_SOURCE_STOP_TIMEOUT_MS,
        Tc::DataSourceStopTimeoutMs as u32,
        "wire::config::DATA_SOURCE_STOP_TIMEOUT_MS"
    );
    assert_eq!(
        wire::config::UNIQUE_SESSION_NAME,
        Tc::UniqueSessionName as u32,
        "wire::config::UNIQUE_SESSION_NAME"
    );
    assert_eq!(
        wire::config::INCREMENTAL_STATE_CONFIG,
        Tc::IncrementalStateConfig as u32,
        "wire::config::INCREMENTAL_STATE_CONFIG"
    );
    assert_eq!(
        wire::config::INCREMENTAL_CLEAR_PERIOD_MS,
        Isc::ClearPeriodMs as u32,
        "wire::config::INCREMENTAL_CLEAR_PERIOD_MS"
    );
    assert_eq!(
        wire::config::BUFFER_SIZE_KB,
        Buf::SizeKb as u32,
        "wire::config::BUFFER_SIZE_KB"
    );
    assert_eq!(
        wire::config::BUFFER_FILL_POLICY,
        Buf::FillPolicy as u32,
        "wire::config::BUFFER_FILL_POLICY"
    );
    assert_eq!(
        wire::config::BUILTIN_DATA_SOURCES,
        Tc::BuiltinDataSources as u32,
        "wire::config::BUILTIN_DATA_SOURCES"
    );
    assert_eq!(
        wire::config::BUILTIN_SNAPSHOT_INTERVAL_MS,
        Bds::SnapshotIntervalMs as u32,
        "wire::config::BUILTIN_SNAPSHOT_INTERVAL_MS"
    );
    assert_eq!(
        wire::config::BUILTIN_DISABLE_SERVICE_EVENTS,
        Bds::DisableServiceEvents as u32,
        "wire::config::BUILTIN_DISABLE_SERVICE_EVENTS"
    );
    assert_eq!(
        wire::config::DS_CONFIG,
        TcDs::Config as u32,
        "wire::config::DS_CONFIG"
    );
    assert_eq!(
        wire::config::DSC_NAME,
        Dsc::Name as u32,
        "wire::config::DSC_NAME"
    );
    assert_eq!(
        wire::config::DSC_TARGET_BUFFER,
        Dsc::TargetBuffer as u32,
        "wire::config::DSC_TARGET_BUFFER"
    );
    assert_eq!(
        wire::config::DSC_TRACK_EVENT_CONFIG,
        Dsc::TrackEventConfig as u32,
        "wire::config::DSC_TRACK_EVENT_CONFIG"
    );
    assert_eq!(
        wire::config::DSC_GPU_COUNTER_CONFIG,
        DscX::GpuCounterConfig as u32,
        "wire::config::DSC_GPU_COUNTER_CONFIG"
    );
    assert_eq!(
        wire::config::TE_ENABLED_CATEGORIES,
        Tec::EnabledCategories as u32,
        "wire::config::TE_ENABLED_CATEGORIES"
    );
    assert_eq!(
        wire::config::TE_DISABLED_CATEGORIES,
        Tec::DisabledCategories as u32,
        "wire::config::TE_DISABLED_CATEGORIES"
    );
    assert_eq!(
        wire::config::GCC_COUNTER_NAMES,
        Gcc::CounterNames as u32,
        "wire::config::GCC_COUNTER_NAMES"
    );
    assert_eq!(
        wire::config::GCC_INSTRUMENTED_SAMPLING,
        Gcc::InstrumentedSampling as u32,
        "wire::config::GCC_INSTRUMENTED_SAMPLING"
    );
    assert_eq!(
        wire::config::GCC_INSTRUMENTED_SAMPLING_CONFIG,
        Gcc::InstrumentedSamplingConfig as u32,
        "wire::config::GCC_INSTRUMENTED_SAMPLING_CONFIG"
    );
    assert_eq!(wire::rse::X, D3::X as u32, "wire::rse::X");
    assert_eq!(wire::rse::Y, D3::Y as u32, "wire::rse::Y");
    assert_eq!(wire::rse::Z, D3::Z as u32, "wire::rse::Z");
}

#[test]
fn memory_and_counter_track_field_numbers_match_the_sdk() {
    use perfetto_sdk::protos::trace::track_event::counter_descriptor::CounterDescriptorFieldNumber as Cd;
    use perfetto_sdk_protos_gpu::protos::trace::gpu::gpu_mem_event::GpuMemTotalEventFieldNumber as Gm;
    assert_eq!(
        wire::packet::GPU_MEM_TOTAL_EVENT,
        TpX::GpuMemTotalEvent as u32
    );
    assert_eq!(wire::gpu_mem_total::GPU_ID, Gm::GpuId as u32);
    assert_eq!(wire::gpu_mem_total::PID, Gm::Pid as u32);
    assert_eq!(wire::gpu_mem_total::SIZE, Gm::Size as u32);
    assert_eq!(
        wire::track_event::DOUBLE_COUNTER_VALUE,
        Te::DoubleCounterValue as u32
    );
    assert_eq!(wire::track_descriptor::COUNTER, Td::Counter as u32);
    assert_eq!(
        wire::track_descriptor::COUNTER_UNIT_NAME,
        Cd::UnitName as u32
    );
}
