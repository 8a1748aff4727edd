//! Who the backend is: the data that makes a trace CUDA's or HIP's.
//!
//! Core keeps no list of vendors. A backend describes itself once, in a
//! [`BackendInfo`] given in [`crate::TracerOptions`]: its API's name, its
//! track-event categories (declared with [`crate::track_categories!`], as
//! Perfetto registers categories from static data), Perfetto's number for
//! its API, and its data-source suffix.

use perfetto_sdk::track_event::{CategoryCallback, TraceContext, TrackEventError};

/// A backend's identity, as the trace shows it.
#[derive(Debug, Clone, Copy)]
pub struct BackendInfo {
    /// The API as people read it in descriptions: "CUDA", "HIP".
    pub name: &'static str,
    /// Track-event categories of API calls and of markers.
    pub categories: &'static Categories,
    /// Perfetto's number for the API, in `InternedGraphicsContext.Api` and
    /// in the track event's `gpu_api` (both number CUDA 4, HIP 5).
    pub gpu_api: u64,
    /// Data-source suffix (`gpu.renderstages.<suffix>`) unless
    /// `INJECTION_DATA_SOURCE_NAME_SUFFIX` says otherwise: "nv", "amd".
    pub suffix: &'static str,
}

/// Index of the API-call category in [`Categories`].
pub(crate) const API: usize = 0;
/// Index of the marker category in [`Categories`].
pub(crate) const MARKERS: usize = 1;

/// Runs a closure on every session's trace context of one category.
type TraceFn = fn(usize, &mut dyn FnMut(&mut TraceContext));

/// A backend's two track-event categories, API calls and markers. Made by
/// [`crate::track_categories!`] only.
pub struct Categories {
    names: [&'static str; 2],
    register: fn() -> Result<(), TrackEventError>,
    enabled: fn(usize) -> bool,
    set_callback: fn(usize, CategoryCallback),
    trace: TraceFn,
}

impl std::fmt::Debug for Categories {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Categories").field(&self.names).finish()
    }
}

impl Categories {
    #[doc(hidden)]
    pub const fn __new(
        names: [&'static str; 2],
        register: fn() -> Result<(), TrackEventError>,
        enabled: fn(usize) -> bool,
        set_callback: fn(usize, CategoryCallback),
        trace: TraceFn,
    ) -> Self {
        Self {
            names,
            register,
            enabled,
            set_callback,
            trace,
        }
    }

    /// The API-call category's name, then the markers'.
    pub fn names(&self) -> [&'static str; 2] {
        self.names
    }

    pub(crate) fn name(&self, i: usize) -> &'static str {
        self.names[i]
    }

    /// Registers both, once per process (a second call does nothing).
    pub(crate) fn register(&self) {
        let _ = (self.register)();
    }

    /// One relaxed load.
    pub(crate) fn enabled(&self, i: usize) -> bool {
        (self.enabled)(i)
    }

    pub(crate) fn set_callback(&self, i: usize, cb: CategoryCallback) {
        (self.set_callback)(i, cb)
    }

    pub(crate) fn trace(&self, i: usize, f: &mut dyn FnMut(&mut TraceContext)) {
        (self.trace)(i, f)
    }
}

/// Declares a backend's track-event categories, for [`BackendInfo`]:
///
/// ```
/// gpu_trace_core::track_categories! {
///     pub static CATEGORIES = {
///         api: ("sycl", "SYCL runtime calls on CPU threads"),
///         markers: ("itt", "ITT ranges and marks"),
///     };
/// }
/// assert_eq!(CATEGORIES.names(), ["sycl", "itt"]);
/// ```
#[macro_export]
macro_rules! track_categories {
    (
        $vis:vis static $name:ident = {
            api: ($api:literal, $api_desc:literal),
            markers: ($markers:literal, $markers_desc:literal) $(,)?
        };
    ) => {
        $vis static $name: $crate::backend::Categories = {
            $crate::__perfetto::track_event_categories! {
                pub(super) mod te {
                    ($api, $api_desc, []),
                    ($markers, $markers_desc, []),
                }
            }
            fn set_callback(i: usize, cb: $crate::__perfetto::track_event::CategoryCallback) {
                te::set_category_callback(i, cb)
            }
            fn trace(
                i: usize,
                f: &mut dyn FnMut(&mut $crate::__perfetto::track_event::TraceContext),
            ) {
                te::trace(i, f)
            }
            $crate::backend::Categories::__new(
                [$api, $markers],
                te::register,
                te::is_category_enabled,
                set_callback,
                trace,
            )
        };
    };
}
