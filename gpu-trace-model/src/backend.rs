//! Who a backend is: the data that makes a trace CUDA's or HIP's.
//!
//! The writer keeps no list of vendors. A backend describes itself once, in
//! a [`BackendInfo`]: its API's name, its two track-event categories (API
//! calls and markers, each a name and a description), Perfetto's number for
//! its API, and its data-source suffix. Plain data: describing a backend
//! needs no Perfetto SDK; the writer registers the categories with the SDK
//! when it starts.
//!
//! ```
//! use gpu_trace_model::backend::{BackendInfo, Categories, Category};
//! static BACKEND: BackendInfo = BackendInfo::new(
//!     "SYCL",
//!     Categories {
//!         api: Category::new("sycl", "SYCL runtime calls on CPU threads"),
//!         markers: Category::new("itt", "ITT ranges and marks"),
//!     },
//!     0, // Perfetto's number for the API; 0 is "undefined".
//!     "intel",
//! );
//! assert_eq!(BACKEND.categories.names(), ["sycl", "itt"]);
//! ```

/// A track-event category: its name (what a trace config enables) and its
/// description (what the tracing service lists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Category {
    /// The name: `cuda`, `nvtx`.
    pub name: &'static str,
    /// What it holds, for people.
    pub description: &'static str,
}

impl Category {
    /// A category named `name`.
    pub const fn new(name: &'static str, description: &'static str) -> Self {
        Self { name, description }
    }
}

/// A backend's two track-event categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Categories {
    /// API calls on CPU threads.
    pub api: Category,
    /// Ranges and marks (NVTX, roctx).
    pub markers: Category,
}

impl Categories {
    /// The API-call category's name, then the markers'.
    pub const fn names(&self) -> [&'static str; 2] {
        [self.api.name, self.markers.name]
    }
}

/// A backend's identity, as the trace shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackendInfo {
    /// The API as people read it in descriptions: "CUDA", "HIP".
    pub name: &'static str,
    /// Track-event categories of API calls and of markers.
    pub categories: Categories,
    /// Perfetto's number for the API, in `InternedGraphicsContext.Api` and
    /// in the track event's `gpu_api` (both number CUDA 4, HIP 5).
    pub gpu_api: u64,
    /// Data-source suffix (`gpu.renderstages.<suffix>`) unless
    /// `INJECTION_DATA_SOURCE_NAME_SUFFIX` says otherwise: "nv", "amd".
    pub suffix: &'static str,
}

impl BackendInfo {
    /// A backend named `name`.
    pub const fn new(
        name: &'static str,
        categories: Categories,
        gpu_api: u64,
        suffix: &'static str,
    ) -> Self {
        Self {
            name,
            categories,
            gpu_api,
            suffix,
        }
    }
}
