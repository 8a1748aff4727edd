//! What tests and benches of this workspace share, from the test kit; and a
//! backend descriptor for tests. Not an API.

pub use gpu_trace_testkit::*;

#[cfg(feature = "perfetto")]
crate::track_categories! {
    pub static TEST_CATEGORIES = {
        api: ("cuda", "API calls of the tests' simulated CUDA-like backend"),
        markers: ("nvtx", "Markers of the tests' simulated CUDA-like backend"),
    };
}

/// A backend for tests and benches that mimics the CUDA one (its category
/// names, `gpu_api` 4 and suffix "nv"), so that their trace configs and
/// checks read like real ones. Core itself names no backend.
#[cfg(feature = "perfetto")]
pub static BACKEND: crate::BackendInfo = crate::BackendInfo {
    name: "CUDA",
    categories: &TEST_CATEGORIES,
    gpu_api: 4,
    suffix: "nv",
};
