#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

use perfetto_sdk::track_event::{CategoryCallback, TraceContext, TrackEvent, TrackEventCategory};
use std::ffi::{CString, NulError};

/// A registered category, for the rest of the process.
pub struct Category {
    name: &'static str,
    category: &'static TrackEventCategory,
}

// SAFETY: after `register` returns, the category is only read: `is_enabled`
// is one atomic load of the SDK's enabled flag, and `trace` walks the
// SDK's data-source instances through its thread-safe iteration
// (`PerfettoTeLlImplBegin`/`Next`, which every tracing thread calls). The
// descriptor strings and the callback it points at are leaked and never
// change.
unsafe impl Send for Category {}
// SAFETY: as above; `&Category` allows only those two reads.
unsafe impl Sync for Category {}

impl std::fmt::Debug for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Category").field(&self.name).finish()
    }
}

impl Category {
    /// Makes the category `name` (described as `description` to the tracing
    /// service), registers it with the SDK (after `TrackEvent::init`), and
    /// has the SDK call `on_change(instance, enabled, global_change)` when a
    /// session enables or disables it. Its memory is leaked: the SDK keeps
    /// pointers into it for the life of the process. Call [`publish`] once
    /// the categories of a batch are registered.
    ///
    /// # Errors
    ///
    /// When `name` or `description` holds a NUL byte.
    pub fn register(
        name: &str,
        description: &str,
        on_change: impl FnMut(u32, bool, bool) + Send + Sync + 'static,
    ) -> Result<&'static Category, NulError> {
        let c_name: &'static CString = Box::leak(Box::new(CString::new(name)?));
        let c_desc: &'static CString = Box::leak(Box::new(CString::new(description)?));
        // SAFETY: `tags` is empty (a constant, promoted to 'static), so every
        // one of its entries is a NUL-terminated string; the name and the
        // description are leaked, so they outlive the category.
        let category = unsafe { TrackEventCategory::new(c_name, c_desc, &[]) };
        // Leaked before it is registered: the SDK keeps a pointer to its
        // descriptor, so it never moves.
        let category: &'static mut TrackEventCategory = Box::leak(Box::new(category));
        category.register();
        // `set_callback` hands the SDK the address of the callback's closure
        // (`&raw mut **callback`), and the SDK's trampoline reads what is
        // there as a `CategoryCallback`. So the closure it is given is itself
        // a `CategoryCallback`, boxed once more: its data is the inner box,
        // which the trampoline finds and calls.
        let inner: CategoryCallback = Box::new(on_change);
        let outer: CategoryCallback = Box::new(inner);
        let callback: &'static mut CategoryCallback = Box::leak(Box::new(outer));
        // SAFETY: the callback is leaked, so it is alive for as long as the
        // category (the whole process); the category was registered above;
        // the address the SDK keeps holds a `CategoryCallback` (see above).
        unsafe { category.set_callback(callback) };
        Ok(Box::leak(Box::new(Category {
            name: Box::leak(name.to_owned().into_boxed_str()),
            category,
        })))
    }

    /// Its name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether a session records it: one relaxed load.
    pub fn is_enabled(&self) -> bool {
        self.category.is_enabled()
    }

    /// Calls `f` with the trace context of every session that records it.
    pub fn trace(&self, f: impl FnMut(&mut TraceContext)) {
        self.category.trace(f)
    }
}

/// Tells the tracing service about the categories registered so far.
pub fn publish() {
    TrackEvent::publish_categories();
}
