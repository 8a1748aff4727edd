//! ABI test in the spirit of git2's systest: every bound struct's size, alignment and field
//! offsets, every constant and every prototype, compared with the ABI table measured from the
//! real rocprofiler-sdk headers (`abi/rocprofiler-sdk.json.gz`, a copy of
//! `shared/abi/rocprofiler-sdk.json`).
//!
//! The ROCm 7.0 row must match exactly. The other rows check the claims made about them:
//! SDK 0.x (ROCm 6.x) must be refused because the structs a tool touches first differ, and the
//! develop (7.1) row differs only where documented.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::mem::{align_of, offset_of, size_of};

use rocprofiler_sys as sys;
use serde_json::Value;
use sys::CEnum;

fn table() -> Value {
    let dir = env!("CARGO_MANIFEST_DIR");
    let gz = std::fs::read(format!("{dir}/abi/rocprofiler-sdk.json.gz")).expect("ABI table copy");
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .expect("gunzip ABI table");
    // When the project-provided original is next to the checkout, the copy must be identical.
    if let Ok(orig) =
        std::fs::read_to_string(format!("{dir}/../../shared/abi/rocprofiler-sdk.json"))
    {
        assert!(
            orig == text,
            "abi/rocprofiler-sdk.json.gz is stale: refresh it from shared/abi (see abi/README.md)"
        );
    }
    serde_json::from_str(&text).expect("ABI table is JSON")
}

/// One release's rows.
struct Release<'a> {
    label: &'a str,
    types: &'a Value,
    functions: &'a Value,
    macros: &'a Value,
}

fn release<'a>(t: &'a Value, label: &'a str) -> Release<'a> {
    let row = if label == "rocm-7.0" {
        t
    } else {
        &t["other_releases"][label]
    };
    assert!(row.is_object(), "no release {label} in the table");
    Release {
        label,
        types: &row["types"],
        functions: &row["functions"],
        macros: &row["macros"],
    }
}

// ---------------------------------------------------------------------------------------------
// Rust-side facts

struct Field {
    rust: &'static str,
    key: &'static str,
    offset: usize,
    size: usize,
}

struct Bits {
    rust: &'static str,
    key: &'static str,
    bit_offset: usize,
    bit_size: usize,
}

struct Layout {
    name: &'static str,
    size: usize,
    align: usize,
    fields: Vec<Field>,
    bits: Vec<Bits>,
    /// JSON members deliberately not bound, with the reason.
    skip: Vec<(&'static str, &'static str)>,
    /// A per-API argument union of which only some members are bound.
    partial: bool,
}

fn pointee_size<T, F>(_: fn(*const T) -> *const F) -> usize {
    size_of::<F>()
}

macro_rules! key {
    ($default:expr) => {
        $default
    };
    ($default:expr, $key:literal) => {
        $key
    };
}

macro_rules! layout {
    (
        $ty:ident $(partial $partial:tt)? {
            $( $f:ident $(. $g:ident)* $(=> $key:literal)? ),* $(,)?
        }
        $( bits { $( $bf:ident [$bo:literal ; $bs:literal] => $bkey:literal ),* $(,)? } )?
        $( skip { $( $skey:literal : $why:literal ),* $(,)? } )?
    ) => {
        Layout {
            name: stringify!($ty),
            size: size_of::<sys::$ty>(),
            align: align_of::<sys::$ty>(),
            fields: vec![$(
                Field {
                    rust: stringify!($f $(. $g)*),
                    key: key!(stringify!($f $(. $g)*) $(, $key)?),
                    offset: offset_of!(sys::$ty, $f $(. $g)*),
                    // SAFETY: never called; only its type is used.
                    size: pointee_size(|p: *const sys::$ty| unsafe { core::ptr::addr_of!((*p).$f $(. $g)*) }),
                },
            )*],
            bits: vec![$($(
                Bits {
                    rust: stringify!($bf),
                    key: $bkey,
                    bit_offset: offset_of!(sys::$ty, $bf) * 8 + $bo,
                    bit_size: $bs,
                },
            )*)?],
            skip: vec![$($(($skey, $why)),*)?],
            partial: false $(|| { let _ = stringify!($partial); true })?,
        }
    };
}

fn layouts() -> Vec<Layout> {
    vec![
        // ids
        layout!(rocprofiler_context_id_t { handle }),
        layout!(rocprofiler_buffer_id_t { handle }),
        layout!(rocprofiler_agent_id_t { handle }),
        layout!(rocprofiler_queue_id_t { handle }),
        layout!(rocprofiler_counter_id_t { handle }),
        layout!(rocprofiler_counter_config_id_t { handle }),
        layout!(rocprofiler_callback_thread_t { handle }),
        layout!(rocprofiler_stream_id_t { handle }),
        layout!(hsa_agent_t { handle }),
        // common
        layout!(rocprofiler_user_data_t { value, ptr }),
        layout!(rocprofiler_address_t { handle, value, ptr }),
        layout!(rocprofiler_uuid_t { value, bytes }),
        layout!(rocprofiler_correlation_id_t {
            internal,
            external,
            ancestor
        }),
        layout!(rocprofiler_async_correlation_id_t { internal, external }),
        layout!(rocprofiler_dim3_t { x, y, z }),
        layout!(rocprofiler_version_triplet_t {
            major,
            minor,
            patch
        }),
        layout!(rocprofiler_record_header_t {
            u => "~union@0",
            u.ck => "~union@0~struct@0",
            u.ck.category => "category",
            u.ck.kind => "kind",
            u.hash => "hash",
            payload,
        }),
        layout!(rocprofiler_kernel_dispatch_info_t {
            size,
            agent_id,
            queue_id,
            kernel_id,
            dispatch_id,
            private_segment_size,
            group_segment_size,
            workgroup_size,
            grid_size,
            reserved_padding,
        }),
        // registration
        layout!(rocprofiler_client_id_t { size, name, handle }),
        layout!(rocprofiler_tool_configure_result_t {
            size,
            initialize,
            finalize,
            tool_data
        }),
        // buffer tracing
        layout!(rocprofiler_buffer_tracing_kernel_dispatch_record_t {
            size,
            kind,
            operation,
            correlation_id,
            thread_id,
            start_timestamp,
            end_timestamp,
            dispatch_info,
        }),
        layout!(rocprofiler_buffer_tracing_memory_copy_record_t {
            size,
            kind,
            operation,
            correlation_id,
            thread_id,
            start_timestamp,
            end_timestamp,
            dst_agent_id,
            src_agent_id,
            bytes,
            dst_address,
            src_address,
        }),
        layout!(rocprofiler_buffer_tracing_hip_api_record_t {
            size,
            kind,
            operation,
            correlation_id,
            start_timestamp,
            end_timestamp,
            thread_id,
        }),
        // callback tracing
        layout!(rocprofiler_callback_tracing_record_t {
            context_id,
            thread_id,
            correlation_id,
            kind,
            operation,
            phase,
            payload,
        }),
        layout!(rocprofiler_callback_tracing_hip_api_data_t { size, args, retval }),
        layout!(rocprofiler_callback_tracing_marker_api_data_t { size, args, retval }),
        layout!(rocprofiler_callback_tracing_code_object_load_data_t {
            size, code_object_id,
            agent_id => "~union@16",
            agent_id => "agent_id",
            hsa_agent, uri, load_base, load_size, load_delta, storage_type,
            storage => "~union@72",
            storage.file => "~union@72~struct@72",
            storage.file.storage_file => "storage_file",
            storage.memory => "~union@72~struct@72#2",
            storage.memory.memory_base => "memory_base",
            storage.memory.memory_size => "memory_size",
        } skip {
            "rocp_agent": "pre-6.4 name of the same union member as agent_id",
        }),
        layout!(
            rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t {
                size,
                kernel_id,
                code_object_id,
                kernel_name,
                kernel_object,
                kernarg_segment_size,
                kernarg_segment_alignment,
                group_segment_size,
                private_segment_size,
                sgpr_count,
                arch_vgpr_count,
                accum_vgpr_count,
                kernel_code_entry_byte_offset,
                kernel_address,
            }
        ),
        // HIP
        layout!(rocprofiler_hip_api_args_t partial + {
            hipLaunchKernel,
            hipLaunchKernel.function_address => "hipLaunchKernel.function_address",
            hipLaunchKernel.numBlocks => "hipLaunchKernel.numBlocks",
            hipLaunchKernel.dimBlocks => "hipLaunchKernel.dimBlocks",
            hipLaunchKernel.args => "hipLaunchKernel.args",
            hipLaunchKernel.sharedMemBytes => "hipLaunchKernel.sharedMemBytes",
            hipLaunchKernel.stream => "hipLaunchKernel.stream",
            hipExtLaunchKernel,
            hipExtLaunchKernel.function_address => "hipExtLaunchKernel.function_address",
            hipExtLaunchKernel.numBlocks => "hipExtLaunchKernel.numBlocks",
            hipExtLaunchKernel.dimBlocks => "hipExtLaunchKernel.dimBlocks",
            hipExtLaunchKernel.args => "hipExtLaunchKernel.args",
            hipExtLaunchKernel.sharedMemBytes => "hipExtLaunchKernel.sharedMemBytes",
            hipExtLaunchKernel.stream => "hipExtLaunchKernel.stream",
            hipExtLaunchKernel.startEvent => "hipExtLaunchKernel.startEvent",
            hipExtLaunchKernel.stopEvent => "hipExtLaunchKernel.stopEvent",
            hipExtLaunchKernel.flags => "hipExtLaunchKernel.flags",
            hipModuleLaunchKernel,
            hipModuleLaunchKernel.func => "hipModuleLaunchKernel.func",
            hipModuleLaunchKernel.gridDimX => "hipModuleLaunchKernel.gridDimX",
            hipModuleLaunchKernel.gridDimY => "hipModuleLaunchKernel.gridDimY",
            hipModuleLaunchKernel.gridDimZ => "hipModuleLaunchKernel.gridDimZ",
            hipModuleLaunchKernel.blockDimX => "hipModuleLaunchKernel.blockDimX",
            hipModuleLaunchKernel.blockDimY => "hipModuleLaunchKernel.blockDimY",
            hipModuleLaunchKernel.blockDimZ => "hipModuleLaunchKernel.blockDimZ",
            hipModuleLaunchKernel.sharedMemBytes => "hipModuleLaunchKernel.sharedMemBytes",
            hipModuleLaunchKernel.stream => "hipModuleLaunchKernel.stream",
            hipModuleLaunchKernel.kernelParams => "hipModuleLaunchKernel.kernelParams",
            hipModuleLaunchKernel.extra => "hipModuleLaunchKernel.extra",
            hipMemcpy,
            hipMemcpy.dst => "hipMemcpy.dst",
            hipMemcpy.src => "hipMemcpy.src",
            hipMemcpy.sizeBytes => "hipMemcpy.sizeBytes",
            hipMemcpy.kind => "hipMemcpy.kind",
            hipMemcpyAsync,
            hipMemcpyAsync.dst => "hipMemcpyAsync.dst",
            hipMemcpyAsync.src => "hipMemcpyAsync.src",
            hipMemcpyAsync.sizeBytes => "hipMemcpyAsync.sizeBytes",
            hipMemcpyAsync.kind => "hipMemcpyAsync.kind",
            hipMemcpyAsync.stream => "hipMemcpyAsync.stream",
            hipMalloc,
            hipMalloc.ptr => "hipMalloc.ptr",
            hipMalloc.size => "hipMalloc.size",
            hipFree,
            hipFree.ptr => "hipFree.ptr",
            hipMemsetAsync,
            hipMemsetAsync.dst => "hipMemsetAsync.dst",
            hipMemsetAsync.value => "hipMemsetAsync.value",
            hipMemsetAsync.sizeBytes => "hipMemsetAsync.sizeBytes",
            hipMemsetAsync.stream => "hipMemsetAsync.stream",
            hipStreamSynchronize,
            hipStreamSynchronize.stream => "hipStreamSynchronize.stream",
            hipEventRecord,
            hipEventRecord.event => "hipEventRecord.event",
            hipEventRecord.stream => "hipEventRecord.stream",
            hipEventSynchronize,
            hipSetDevice,
        }),
        layout!(rocprofiler_hip_api_retval_t {
            uint64_t_retval,
            int_retval,
            const_charp_retval,
            hipError_t_retval,
            hipChannelFormatDesc_retval,
            voidpp_retval,
        }),
        layout!(hipChannelFormatDesc { x, y, z, w, f }),
        // markers: the table lists member sizes only (sub-fields come from the header text)
        layout!(rocprofiler_marker_api_args_t {
            roctxMarkA,
            roctxRangePushA,
            roctxRangePop,
            roctxRangeStartA,
            roctxRangeStop,
            roctxGetThreadId,
            roctxProfilerPause,
            roctxProfilerResume,
            roctxNameOsThread,
            roctxNameHsaAgent,
            roctxNameHipDevice,
            roctxNameHipStream,
            roctxThreadRangeA,
            roctxProcessRangeA,
        }),
        layout!(rocprofiler_marker_api_retval_t {
            int32_t_retval,
            int64_t_retval,
            roctx_range_id_t_retval,
        }),
        // agents
        layout!(rocprofiler_agent_v0_t {
            size, id, r#type => "type", cpu_cores_count, simd_count, mem_banks_count,
            caches_count, io_links_count, cpu_core_id_base, simd_id_base, max_waves_per_simd,
            lds_size_in_kb, gds_size_in_kb, num_gws, wave_front_size, num_xcc, cu_count,
            array_count, num_shader_banks, simd_arrays_per_engine, cu_per_simd_array,
            simd_per_cu, max_slots_scratch_cu, gfx_target_version, vendor_id, device_id,
            location_id, domain, drm_render_minor, num_sdma_engines, num_sdma_xgmi_engines,
            num_sdma_queues_per_engine, num_cp_queues, max_engine_clk_ccompute,
            max_engine_clk_fcompute, sdma_fw_version, fw_version, capability, cu_per_engine,
            max_waves_per_cu, family_id, workgroup_max_size, grid_max_size, local_mem_size,
            hive_id, gpu_id, workgroup_max_dim, grid_max_dim, mem_banks, caches, io_links, name,
            vendor_name, product_name, model_name, node_id, logical_node_id,
            logical_node_type_id, runtime_visibility, uuid,
        }),
        layout!(HSA_ENGINE_VERSION { Value } skip {
            "~struct@0": "bitfield view of Value",
            "uCodeSDMA": "bitfield view of Value",
            "uCodeRes": "bitfield view of Value",
            "Reserved": "bitfield view of Value",
        }),
        layout!(HSA_ENGINE_ID { Value } skip {
            "ui32": "bitfield view of Value",
        }),
        layout!(HSA_CAPABILITY { Value } skip {
            "ui32": "bitfield view of Value",
        }),
        layout!(rocprofiler_agent_runtime_visiblity_t {} bits {
            bits[0; 1] => "hsa",
            bits[1; 1] => "hip",
            bits[2; 1] => "rccl",
            bits[3; 1] => "rocdecode",
            bits[4; 28] => "reserved",
        }),
        // counters
        layout!(rocprofiler_counter_info_v0_t { id, name, description, block, expression } bits {
            flags[0; 1] => "is_constant",
            flags[1; 1] => "is_derived",
        }),
        layout!(rocprofiler_counter_info_v1_t {
            id, name, description, block, expression, dimensions_count, dimensions,
            instance_ids_count, instance_ids,
        } bits {
            flags[0; 1] => "is_constant",
            flags[1; 1] => "is_derived",
        }),
        layout!(rocprofiler_counter_record_dimension_info_t {
            name,
            instance_size,
            id
        }),
        layout!(rocprofiler_counter_record_t {
            id,
            counter_value,
            dispatch_id,
            user_data,
            agent_id
        }),
        layout!(rocprofiler_dispatch_counting_service_data_t {
            size,
            correlation_id,
            start_timestamp,
            end_timestamp,
            dispatch_info,
        }),
        layout!(rocprofiler_dispatch_counting_service_record_t {
            size,
            num_records,
            correlation_id,
            start_timestamp,
            end_timestamp,
            dispatch_info,
        }),
    ]
}

/// Aliases whose target must have the same size in the table.
fn aliases() -> Vec<(&'static str, usize)> {
    vec![
        (
            "rocprofiler_profile_config_id_t",
            size_of::<sys::rocprofiler_profile_config_id_t>(),
        ),
        (
            "rocprofiler_kernel_id_t",
            size_of::<sys::rocprofiler_kernel_id_t>(),
        ),
        (
            "rocprofiler_dispatch_id_t",
            size_of::<sys::rocprofiler_dispatch_id_t>(),
        ),
        (
            "rocprofiler_counter_instance_id_t",
            size_of::<sys::rocprofiler_counter_instance_id_t>(),
        ),
        (
            "rocprofiler_counter_dimension_id_t",
            size_of::<sys::rocprofiler_counter_dimension_id_t>(),
        ),
        (
            "rocprofiler_thread_id_t",
            size_of::<sys::rocprofiler_thread_id_t>(),
        ),
        (
            "rocprofiler_timestamp_t",
            size_of::<sys::rocprofiler_timestamp_t>(),
        ),
        (
            "rocprofiler_tracing_operation_t",
            size_of::<sys::rocprofiler_tracing_operation_t>(),
        ),
        ("rocprofiler_agent_t", size_of::<sys::rocprofiler_agent_t>()),
        (
            "rocprofiler_record_counter_t",
            size_of::<sys::rocprofiler_record_counter_t>(),
        ),
        (
            "rocprofiler_record_dimension_info_t",
            size_of::<sys::rocprofiler_record_dimension_info_t>(),
        ),
        ("hipStream_t", size_of::<sys::hipStream_t>()),
        ("hipEvent_t", size_of::<sys::hipEvent_t>()),
        ("hipFunction_t", size_of::<sys::hipFunction_t>()),
        ("hipError_t", size_of::<sys::hipError_t>()),
        ("hipMemcpyKind", size_of::<sys::hipMemcpyKind>()),
    ]
}

struct EnumFacts {
    name: &'static str,
    size: usize,
    constants: &'static [(&'static str, i64)],
    /// Only some enumerators are bound on purpose.
    partial: bool,
}

fn enum_facts<T: CEnum>(partial: bool) -> EnumFacts {
    EnumFacts {
        name: T::C_NAME,
        size: size_of::<T>(),
        constants: T::CONSTANTS,
        partial,
    }
}

fn enums() -> Vec<EnumFacts> {
    vec![
        enum_facts::<sys::rocprofiler_status_t>(false),
        enum_facts::<sys::rocprofiler_buffer_category_t>(false),
        enum_facts::<sys::rocprofiler_buffer_policy_t>(false),
        enum_facts::<sys::rocprofiler_buffer_tracing_kind_t>(false),
        enum_facts::<sys::rocprofiler_callback_tracing_kind_t>(false),
        enum_facts::<sys::rocprofiler_callback_phase_t>(false),
        enum_facts::<sys::rocprofiler_code_object_operation_t>(false),
        enum_facts::<sys::rocprofiler_code_object_storage_type_t>(false),
        enum_facts::<sys::rocprofiler_kernel_dispatch_operation_t>(false),
        enum_facts::<sys::rocprofiler_memory_copy_operation_t>(false),
        enum_facts::<sys::rocprofiler_agent_type_t>(false),
        enum_facts::<sys::rocprofiler_agent_version_t>(false),
        enum_facts::<sys::rocprofiler_counter_info_version_id_t>(false),
        enum_facts::<sys::rocprofiler_counter_record_kind_t>(false),
        enum_facts::<sys::rocprofiler_counter_flag_t>(false),
        enum_facts::<sys::rocprofiler_runtime_library_t>(false),
        // `..._LAST` and most ids depend on the HIP headers the SDK was built with.
        enum_facts::<sys::rocprofiler_hip_runtime_api_id_t>(true),
    ]
}

// ---------------------------------------------------------------------------------------------
// Table side

/// Flattens a type's fields into keys: named members by their C access path (`a.b`, anonymous
/// levels are transparent as in C), anonymous aggregates as `~kind@offset` chained under their
/// anonymous parents (`#n` when several share a key).
fn flatten(fields: &Value, named: &str, anon: &str, out: &mut BTreeMap<String, Value>) {
    let Some(list) = fields.as_array() else {
        return;
    };
    for f in list {
        match f["name"].as_str() {
            Some(name) => {
                let key = format!("{named}{name}");
                out.insert(key.clone(), f.clone());
                flatten(&f["fields"], &format!("{key}."), &key, out);
            }
            None => {
                let base = format!(
                    "{anon}~{}@{}",
                    f["kind"].as_str().unwrap_or("?"),
                    f["offset"].as_u64().unwrap_or(u64::MAX)
                );
                let mut key = base.clone();
                let mut n = 2;
                while out.contains_key(&key) {
                    key = format!("{base}#{n}");
                    n += 1;
                }
                out.insert(key.clone(), f.clone());
                flatten(&f["fields"], named, &key, out);
            }
        }
    }
}

#[derive(Default)]
struct Tally {
    structs: usize,
    fields: usize,
    constants: usize,
    functions: usize,
}

fn check_layouts(rel: &Release<'_>, tally: &mut Tally) -> Vec<String> {
    let mut errs = Vec::new();
    for l in layouts() {
        let ty = &rel.types[l.name];
        if !ty.is_object() {
            errs.push(format!("{}: type `{}` not in the table", rel.label, l.name));
            continue;
        }
        tally.structs += 1;
        if ty["size"].as_u64() != Some(l.size as u64) {
            errs.push(format!(
                "{}: sizeof({}) = {} in Rust, {} in C",
                rel.label, l.name, l.size, ty["size"]
            ));
        }
        if ty["align"].as_u64() != Some(l.align as u64) {
            errs.push(format!(
                "{}: alignof({}) = {} in Rust, {} in C",
                rel.label, l.name, l.align, ty["align"]
            ));
        }
        let mut c = BTreeMap::new();
        flatten(&ty["fields"], "", "", &mut c);
        let mut covered = BTreeSet::new();
        for f in &l.fields {
            tally.fields += 1;
            let Some(cf) = c.get(f.key) else {
                errs.push(format!(
                    "{}: {}.{}: no C member `{}`",
                    rel.label, l.name, f.rust, f.key
                ));
                continue;
            };
            covered.insert(f.key.to_owned());
            if cf["offset"].as_u64() != Some(f.offset as u64) {
                errs.push(format!(
                    "{}: offsetof({}, {}) = {} in Rust, {} in C (`{}`)",
                    rel.label, l.name, f.rust, f.offset, cf["offset"], f.key
                ));
            }
            if cf["size"].as_u64() != Some(f.size as u64) {
                errs.push(format!(
                    "{}: sizeof({}.{}) = {} in Rust, {} in C (`{}`)",
                    rel.label, l.name, f.rust, f.size, cf["size"], f.key
                ));
            }
        }
        for b in &l.bits {
            tally.fields += 1;
            let Some(cf) = c.get(b.key) else {
                errs.push(format!(
                    "{}: {}: no C bitfield `{}`",
                    rel.label, l.name, b.key
                ));
                continue;
            };
            covered.insert(b.key.to_owned());
            if cf["bit_offset"].as_u64() != Some(b.bit_offset as u64)
                || cf["bit_size"].as_u64() != Some(b.bit_size as u64)
            {
                errs.push(format!(
                    "{}: {}.{}: bits {}+{} in Rust (`{}`), {}+{} in C",
                    rel.label,
                    l.name,
                    b.rust,
                    b.bit_offset,
                    b.bit_size,
                    b.key,
                    cf["bit_offset"],
                    cf["bit_size"]
                ));
            }
        }
        for (key, _why) in &l.skip {
            covered.insert((*key).to_owned());
        }
        for (key, cf) in &c {
            if covered.contains(key) {
                continue;
            }
            // Members below a skipped key are skipped with it.
            if l.skip.iter().any(|(s, _)| {
                key.starts_with(&format!("{s}.")) || key.starts_with(&format!("{s}~"))
            }) {
                continue;
            }
            let nested_in_unbound_member =
                key.contains('.') && !covered.contains(key.split('.').next().unwrap());
            if l.partial && (!key.contains('.') || nested_in_unbound_member) {
                continue;
            }
            // Bitfields inside a skipped anonymous struct.
            if cf.get("bitfield").is_some() && l.skip.iter().any(|(s, _)| s.starts_with('~')) {
                continue;
            }
            errs.push(format!(
                "{}: {}: C member `{}` is not bound",
                rel.label, l.name, key
            ));
        }
    }
    for (name, size) in aliases() {
        let ty = &rel.types[name];
        if ty["size"].as_u64() != Some(size as u64) {
            errs.push(format!(
                "{}: sizeof({name}) = {size} in Rust, {} in C",
                rel.label, ty["size"]
            ));
        }
        tally.structs += 1;
    }
    errs
}

fn check_enums(rel: &Release<'_>, tally: &mut Tally) -> Vec<String> {
    let mut errs = Vec::new();
    for e in enums() {
        let ty = &rel.types[e.name];
        let Some(cs) = ty["constants"].as_array() else {
            errs.push(format!("{}: enum `{}` not in the table", rel.label, e.name));
            continue;
        };
        if ty["size"].as_u64() != Some(e.size as u64) {
            errs.push(format!(
                "{}: sizeof({}) = {} in Rust, {} in C",
                rel.label, e.name, e.size, ty["size"]
            ));
        }
        let c: BTreeMap<&str, i64> = cs
            .iter()
            .map(|c| (c["name"].as_str().unwrap(), c["value"].as_i64().unwrap()))
            .collect();
        for (name, value) in e.constants {
            tally.constants += 1;
            match c.get(name) {
                None => errs.push(format!(
                    "{}: {}::{name} is not in the C enum",
                    rel.label, e.name
                )),
                Some(v) if v != value => errs.push(format!(
                    "{}: {}::{name} = {value} in Rust, {v} in C",
                    rel.label, e.name
                )),
                Some(_) => {}
            }
        }
        if !e.partial {
            for name in c.keys() {
                if !e.constants.iter().any(|(n, _)| n == name) {
                    errs.push(format!(
                        "{}: {}::{name} exists in C but is not bound",
                        rel.label, e.name
                    ));
                }
            }
        }
    }
    errs
}

/// Rust type text (as `stringify!` writes it) to C type text without spaces.
fn rust_to_c(t: &str) -> String {
    let t = t.replace(' ', "");
    if let Some(rest) = t.strip_prefix("*mut") {
        return format!("{}*", rust_to_c(rest));
    }
    if let Some(rest) = t.strip_prefix("*const") {
        let inner = rust_to_c(rest);
        return if inner.ends_with('*') {
            format!("{inner}const*")
        } else {
            format!("const{inner}*")
        };
    }
    match t.as_str() {
        "" | "()" => "void",
        "u8" => "uint8_t",
        "u16" => "uint16_t",
        "u32" => "uint32_t",
        "u64" => "uint64_t",
        "i32" => "int32_t",
        "i64" => "int64_t",
        "usize" => "size_t",
        "f64" => "double",
        "c_int" => "int",
        "c_uint" => "unsignedint",
        "c_char" => "char",
        "c_void" => "void",
        other => other,
    }
    .to_owned()
}

/// C type text without spaces and without a top-level `const` on the value itself.
fn c_norm(t: &str) -> String {
    let t = t.replace(' ', "");
    t.strip_suffix("const").map(str::to_owned).unwrap_or(t)
}

fn check_signature(rel: &Release<'_>, what: &str, sig: &sys::Signature, c: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let ret = rust_to_c(sig.ret);
    if c_norm(c["return"].as_str().unwrap_or("?")) != ret {
        errs.push(format!(
            "{}: {what} {}: returns `{}` in Rust, `{}` in C",
            rel.label, sig.name, sig.ret, c["return"]
        ));
    }
    let params = c["params"].as_array().cloned().unwrap_or_default();
    if params.len() != sig.params.len() {
        errs.push(format!(
            "{}: {what} {}: {} parameters in Rust, {} in C",
            rel.label,
            sig.name,
            sig.params.len(),
            params.len()
        ));
        return errs;
    }
    for (i, (r, p)) in sig.params.iter().zip(&params).enumerate() {
        let ct = c_norm(p["type"].as_str().unwrap_or("?"));
        if rust_to_c(r) != ct {
            errs.push(format!(
                "{}: {what} {}: parameter {i} (`{}`) is `{r}` in Rust, `{}` in C",
                rel.label,
                sig.name,
                p["name"].as_str().unwrap_or("?"),
                p["type"]
            ));
        }
    }
    errs
}

fn check_functions(rel: &Release<'_>, tally: &mut Tally) -> Vec<String> {
    let mut errs = Vec::new();
    for sig in sys::Api::SIGNATURES {
        tally.functions += 1;
        let f = &rel.functions[sig.name];
        if !f.is_object() {
            errs.push(format!(
                "{}: function {} does not exist",
                rel.label, sig.name
            ));
            continue;
        }
        if let Some(l) = f.get("linkage") {
            errs.push(format!(
                "{}: function {} is not exported ({l})",
                rel.label, sig.name
            ));
        }
        errs.extend(check_signature(rel, "function", sig, f));
    }
    for sig in sys::FN_TYPE_SIGNATURES {
        tally.functions += 1;
        let t = &rel.types[sig.name];
        if t["kind"].as_str() != Some("function_pointer") {
            errs.push(format!(
                "{}: typedef {} is not a function pointer in C",
                rel.label, sig.name
            ));
            continue;
        }
        errs.extend(check_signature(rel, "typedef", sig, t));
    }
    // The tool-defined entry point has the typedef's prototype.
    let configure = sys::FN_TYPE_SIGNATURES
        .iter()
        .find(|s| s.name == "rocprofiler_configure_func_t")
        .unwrap();
    let entry = sys::Signature {
        name: "rocprofiler_configure",
        ..*configure
    };
    errs.extend(check_signature(
        rel,
        "function",
        &entry,
        &rel.functions["rocprofiler_configure"],
    ));
    errs
}

fn check_macros(rel: &Release<'_>, tally: &mut Tally) -> Vec<String> {
    let ours: [(&str, u64); 7] = [
        (
            "ROCPROFILER_CONTEXT_NONE",
            sys::ROCPROFILER_CONTEXT_NONE.handle,
        ),
        (
            "ROCPROFILER_CORRELATION_ID_INTERNAL_NONE",
            sys::ROCPROFILER_CORRELATION_ID_INTERNAL_NONE,
        ),
        (
            "ROCPROFILER_CORRELATION_ID_ANCESTOR_NONE",
            sys::ROCPROFILER_CORRELATION_ID_ANCESTOR_NONE,
        ),
        (
            "ROCPROFILER_CODE_OBJECT_ID_NONE",
            sys::ROCPROFILER_CODE_OBJECT_ID_NONE,
        ),
        (
            "ROCPROFILER_SDK_BETA_COMPAT",
            sys::ROCPROFILER_SDK_BETA_COMPAT.into(),
        ),
        (
            "ROCPROFILER_VERSION_MAJOR",
            sys::ROCPROFILER_VERSION_MAJOR.into(),
        ),
        (
            "ROCPROFILER_VERSION_MINOR",
            sys::ROCPROFILER_VERSION_MINOR.into(),
        ),
    ];
    let mut errs = Vec::new();
    for (name, value) in ours {
        tally.constants += 1;
        if rel.macros[name].as_u64() != Some(value) {
            errs.push(format!(
                "{}: {name} = {value} in Rust, {} in C",
                rel.label, rel.macros[name]
            ));
        }
    }
    errs
}

fn check_all(rel: &Release<'_>, tally: &mut Tally) -> Vec<String> {
    let mut errs = check_layouts(rel, tally);
    errs.extend(check_enums(rel, tally));
    errs.extend(check_functions(rel, tally));
    errs.extend(check_macros(rel, tally));
    errs
}

// ---------------------------------------------------------------------------------------------

#[test]
fn bindings_match_rocm_7_0() {
    let t = table();
    assert_eq!(t["primary_release"], "rocm-7.0");
    assert_eq!(t["sdk_version"], "1.0.0");
    let mut tally = Tally::default();
    let errs = check_all(&release(&t, "rocm-7.0"), &mut tally);
    eprintln!(
        "checked {} types, {} fields, {} constants, {} prototypes against rocm-7.0",
        tally.structs, tally.fields, tally.constants, tally.functions
    );
    assert!(
        errs.is_empty(),
        "{} ABI mismatches:\n{}",
        errs.len(),
        errs.join("\n")
    );
    assert!(
        tally.structs >= 60
            && tally.fields >= 300
            && tally.constants >= 180
            && tally.functions >= 60
    );
}

#[test]
fn the_checker_catches_a_missing_ancestor() {
    // The bug of the earlier hand-written binding: a 16-byte correlation id. The 6.2.2 row has
    // exactly that layout, so checking our 24-byte struct against it must report the field.
    let t = table();
    let errs = check_layouts(&release(&t, "rocm-6.2.2"), &mut Tally::default());
    assert!(
        errs.iter()
            .any(|e| e.contains("sizeof(rocprofiler_correlation_id_t) = 24 in Rust, 16 in C")),
        "{errs:#?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("rocprofiler_correlation_id_t.ancestor: no C member `ancestor`")),
        "{errs:#?}"
    );
}

/// The decision: SDK 0.x (ROCm 6.2–6.4) is refused in `rocprofiler_configure`. These are the
/// differences that make supporting it a second binding, not a flag.
#[test]
fn sdk_0x_must_be_refused() {
    let t = table();
    for label in ["rocm-6.2.2", "rocm-6.3-approx", "rocm-6.4-approx"] {
        let rel = release(&t, label);
        let errs = check_all(&rel, &mut Tally::default());
        let has = |needle: &str| errs.iter().any(|e| e.contains(needle));
        // The very struct `rocprofiler_configure` writes into: name moved 0 -> 8.
        assert!(
            has("offsetof(rocprofiler_client_id_t, name) = 8 in Rust, 0 in C"),
            "{label}: {errs:#?}"
        );
        // Passed by value to every callback-tracing callback.
        assert!(
            has("sizeof(rocprofiler_callback_tracing_record_t) = 64 in Rust, 56 in C"),
            "{label}"
        );
        assert!(
            has("offsetof(rocprofiler_callback_tracing_record_t, kind) = 40 in Rust, 32 in C"),
            "{label}"
        );
        // Memory-copy records are 16 bytes shorter.
        assert!(
            has("sizeof(rocprofiler_buffer_tracing_memory_copy_record_t) = 96 in Rust, 80 in C"),
            "{label}"
        );
        // Counter configuration has another exported name.
        assert!(
            has("function rocprofiler_create_counter_config does not exist"),
            "{label}"
        );
        eprintln!("{label}: {} differences from the 1.x bindings", errs.len());
    }
    // 6.2 also numbers statuses differently (CONTEXT_ID_NOT_ZERO was inserted in 0.5.0).
    let errs = check_enums(&release(&t, "rocm-6.2.2"), &mut Tally::default());
    assert!(
        errs.iter()
            .any(|e| e
                .contains("ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED = 16 in Rust, 15 in C")),
        "{errs:#?}"
    );
}

/// Refusing is safe in every release: the entry point's prototype and the result struct never
/// changed, so reading `version` and returning NULL before touching `client_id` works everywhere.
#[test]
fn refusal_path_is_abi_stable() {
    let t = table();
    let configure = sys::FN_TYPE_SIGNATURES
        .iter()
        .find(|s| s.name == "rocprofiler_configure_func_t")
        .unwrap();
    let entry = sys::Signature {
        name: "rocprofiler_configure",
        ..*configure
    };
    for label in [
        "rocm-6.2.2",
        "rocm-6.3-approx",
        "rocm-6.4-approx",
        "rocm-7.0",
        "develop-2025-08",
    ] {
        let rel = release(&t, label);
        let errs = check_signature(
            &rel,
            "function",
            &entry,
            &rel.functions["rocprofiler_configure"],
        );
        assert!(errs.is_empty(), "{errs:#?}");
        let result = rel.types["rocprofiler_tool_configure_result_t"].clone();
        assert_eq!(
            result, t["types"]["rocprofiler_tool_configure_result_t"],
            "{label}"
        );
        let sdk = rel.types.get("rocprofiler_status_t").and(Some(()));
        assert!(sdk.is_some());
    }
    assert!(!sys::abi_supported(400) && !sys::abi_supported(600) && !sys::abi_supported(20000));
    assert!(sys::abi_supported(10000) && sys::abi_supported(10203));
}

/// 1.x minors are accepted. Against the develop (7.1 line) row the bindings differ only where
/// the README says so.
#[test]
fn develop_row_differs_only_where_documented() {
    let t = table();
    let errs = check_all(&release(&t, "develop-2025-08"), &mut Tally::default());
    let documented = [
        // uuid widened from 8 to 16 bytes at the end of the agent: we read its first 8.
        "sizeof(rocprofiler_agent_v0_t) = 304 in Rust, 312 in C",
        "sizeof(rocprofiler_agent_v0_t.uuid) = 8 in Rust, 16 in C",
        "sizeof(rocprofiler_uuid_t) = 8 in Rust, 16 in C",
        "alignof(rocprofiler_uuid_t) = 8 in Rust, 1 in C",
        "rocprofiler_uuid_t.value: no C member `value`",
        "sizeof(rocprofiler_uuid_t.bytes) = 8 in Rust, 16 in C",
        "sizeof(rocprofiler_agent_t) = 304 in Rust, 312 in C",
        // counter info v1 was rearranged: the safe crate uses v0 only.
        "rocprofiler_counter_info_v1_t",
        // CONTEXT_NONE became 0: never used to mean "no context" by the safe crate.
        "ROCPROFILER_CONTEXT_NONE",
    ];
    let unexpected: Vec<_> = errs
        .iter()
        .filter(|e| !documented.iter().any(|d| e.contains(d)))
        .collect();
    assert!(
        unexpected.is_empty(),
        "undocumented develop differences: {unexpected:#?}"
    );
    assert!(
        !errs.is_empty(),
        "the develop row is expected to differ somewhere"
    );
}
