//! A backend's two track-event categories (API calls, markers) as the
//! Perfetto SDK knows them: registered once per process from the plain
//! names of its `BackendInfo`.

use gpu_trace_model::backend::Categories;
use perfetto_category_sys::Category;
use perfetto_sdk::track_event::TraceContext;

/// Index of the API-call category.
pub(crate) const API: usize = 0;
/// Index of the marker category.
pub(crate) const MARKERS: usize = 1;

/// The registered categories.
#[derive(Debug)]
pub(crate) struct SdkCategories {
    declared: Categories,
    sdk: [&'static Category; 2],
}

impl SdkCategories {
    /// Registers both (after `TrackEvent::init`), each calling `on_change`
    /// when a session enables or disables it, and publishes them.
    ///
    /// # Errors
    ///
    /// The name of a category the SDK cannot take (it holds a NUL).
    pub(crate) fn register(
        declared: &Categories,
        on_change: fn(),
    ) -> Result<SdkCategories, String> {
        let mut sdk = Vec::with_capacity(2);
        for c in [declared.api, declared.markers] {
            let cat = Category::register(c.name, c.description, move |_inst, _enabled, _global| {
                on_change()
            })
            .map_err(|_| c.name.to_owned())?;
            sdk.push(cat);
        }
        perfetto_category_sys::publish();
        Ok(SdkCategories {
            declared: *declared,
            sdk: [sdk[0], sdk[1]],
        })
    }

    /// What they were registered from.
    pub(crate) fn declared(&self) -> &Categories {
        &self.declared
    }

    /// One relaxed load.
    pub(crate) fn enabled(&self, i: usize) -> bool {
        self.sdk[i].is_enabled()
    }

    /// Runs `f` on every session's trace context of category `i`.
    pub(crate) fn trace(&self, i: usize, f: &mut dyn FnMut(&mut TraceContext)) {
        self.sdk[i].trace(f)
    }
}
