//! Static names the SDK hands out (kinds, operations, statuses).

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::OnceLock;

use rocprofiler_sys::{self as sys, CEnum};

/// HIP runtime operations the simulator emits and can name.
pub(crate) fn hip_ops() -> &'static [(&'static str, i64)] {
    sys::rocprofiler_hip_runtime_api_id_t::CONSTANTS
}

fn leak(s: &str) -> &'static CStr {
    Box::leak(CString::new(s).expect("no NUL").into_boxed_c_str())
}

fn strip<'a>(name: &'a str, prefix: &str) -> &'a str {
    name.strip_prefix(prefix).unwrap_or(name)
}

#[derive(Hash, PartialEq, Eq, Clone, Copy)]
pub(crate) enum Space {
    Callback,
    Buffer,
}

struct Names {
    kinds: HashMap<(Space, u32), &'static CStr>,
    ops: HashMap<(Space, u32, i32), &'static CStr>,
    status_name: HashMap<u32, &'static CStr>,
    status_text: HashMap<u32, &'static CStr>,
}

fn names() -> &'static Names {
    static N: OnceLock<Names> = OnceLock::new();
    N.get_or_init(|| {
        let mut n = Names {
            kinds: HashMap::new(),
            ops: HashMap::new(),
            status_name: HashMap::new(),
            status_text: HashMap::new(),
        };
        for (name, v) in sys::rocprofiler_callback_tracing_kind_t::CONSTANTS {
            if !name.ends_with("_NONE") && !name.ends_with("_LAST") {
                n.kinds.insert(
                    (Space::Callback, *v as u32),
                    leak(strip(name, "ROCPROFILER_CALLBACK_TRACING_")),
                );
            }
        }
        for (name, v) in sys::rocprofiler_buffer_tracing_kind_t::CONSTANTS {
            if !name.ends_with("_NONE") && !name.ends_with("_LAST") {
                n.kinds.insert(
                    (Space::Buffer, *v as u32),
                    leak(strip(name, "ROCPROFILER_BUFFER_TRACING_")),
                );
            }
        }
        let hip_cb = sys::rocprofiler_callback_tracing_kind_t::HIP_RUNTIME_API.0;
        let hip_buf = sys::rocprofiler_buffer_tracing_kind_t::HIP_RUNTIME_API.0;
        for (name, v) in hip_ops() {
            if *v >= 0 {
                let s = leak(strip(name, "ROCPROFILER_HIP_RUNTIME_API_ID_"));
                n.ops.insert((Space::Callback, hip_cb, *v as i32), s);
                n.ops.insert((Space::Buffer, hip_buf, *v as i32), s);
            }
        }
        let marker = sys::rocprofiler_callback_tracing_kind_t::MARKER_CORE_API.0;
        for (name, v) in sys::rocprofiler_marker_core_api_id_t::CONSTANTS {
            if *v >= 0 && !name.ends_with("_LAST") {
                n.ops.insert(
                    (Space::Callback, marker, *v as i32),
                    leak(strip(name, "ROCPROFILER_MARKER_CORE_API_ID_")),
                );
            }
        }
        let co = sys::rocprofiler_callback_tracing_kind_t::CODE_OBJECT.0;
        for (name, v) in sys::rocprofiler_code_object_operation_t::CONSTANTS {
            if *v > 0 && !name.ends_with("_LAST") {
                n.ops.insert(
                    (Space::Callback, co, *v as i32),
                    leak(strip(name, "ROCPROFILER_")),
                );
            }
        }
        let kd = sys::rocprofiler_buffer_tracing_kind_t::KERNEL_DISPATCH.0;
        for (name, v) in sys::rocprofiler_kernel_dispatch_operation_t::CONSTANTS {
            if *v > 0 && !name.ends_with("_LAST") {
                n.ops.insert(
                    (Space::Buffer, kd, *v as i32),
                    leak(strip(name, "ROCPROFILER_")),
                );
            }
        }
        let mc = sys::rocprofiler_buffer_tracing_kind_t::MEMORY_COPY.0;
        for (name, v) in sys::rocprofiler_memory_copy_operation_t::CONSTANTS {
            if *v > 0 && !name.ends_with("_LAST") {
                n.ops.insert(
                    (Space::Buffer, mc, *v as i32),
                    leak(strip(name, "ROCPROFILER_")),
                );
            }
        }
        for (name, v) in sys::rocprofiler_status_t::CONSTANTS {
            n.status_name.insert(*v as u32, leak(name));
            let text = strip(strip(name, "ROCPROFILER_STATUS_"), "ERROR_")
                .replace('_', " ")
                .to_lowercase();
            n.status_text
                .insert(*v as u32, leak(&format!("{text} (rocprofiler-sim)")));
        }
        n
    })
}

pub(crate) fn kind_name(space: Space, kind: u32) -> Option<&'static CStr> {
    names().kinds.get(&(space, kind)).copied()
}

pub(crate) fn op_name(space: Space, kind: u32, op: i32) -> Option<&'static CStr> {
    names().ops.get(&(space, kind, op)).copied()
}

/// Operations of a kind, sorted.
pub(crate) fn ops_of(space: Space, kind: u32) -> Vec<i32> {
    let mut v: Vec<i32> = names()
        .ops
        .keys()
        .filter(|(s, k, _)| *s == space && *k == kind)
        .map(|(_, _, o)| *o)
        .collect();
    v.sort_unstable();
    v
}

pub(crate) fn kinds_of(space: Space) -> Vec<u32> {
    let mut v: Vec<u32> = names()
        .kinds
        .keys()
        .filter(|(s, _)| *s == space)
        .map(|(_, k)| *k)
        .collect();
    v.sort_unstable();
    v
}

pub(crate) fn status_name(s: sys::rocprofiler_status_t) -> Option<&'static CStr> {
    names().status_name.get(&s.0).copied()
}

pub(crate) fn status_text(s: sys::rocprofiler_status_t) -> Option<&'static CStr> {
    names().status_text.get(&s.0).copied()
}

/// `KIND` text for reports.
pub(crate) fn kind_str(space: Space, kind: u32) -> String {
    kind_name(space, kind)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|| format!("KIND_{kind}"))
}

/// Operation text for reports.
pub(crate) fn op_str(space: Space, kind: u32, op: i32) -> String {
    op_name(space, kind, op)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|| format!("OP_{op}"))
}
