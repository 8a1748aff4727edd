//! Test-only fault injection. With the `failpoints` feature (this crate's own tests turn it
//! on), `GPU_TRACE_CUDA_FAILPOINT` lists faults, comma-separated; each panics once per process,
//! the first time its site is reached:
//!
//! - `panic:api` — panic in the API callback, at the exit of the first kernel launch recorded;
//! - `panic:buffer` — panic in the activity-buffer callback;
//! - `panic:flush` — panic in the backend's flush, which the writer calls.
//!
//! Without the feature every check is a constant `false` and the variable is never read.

/// The variable listing the faults.
#[cfg(feature = "failpoints")]
const VAR: &str = "GPU_TRACE_CUDA_FAILPOINT";

/// Panics if `panic:<site>` is set, `when` holds, and no failpoint panicked yet.
#[cfg(feature = "failpoints")]
pub(crate) fn maybe_panic(site: &str, when: bool) {
    static F: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    static FIRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let faults = F.get_or_init(|| {
        std::env::var(VAR)
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    });
    if when
        && faults
            .iter()
            .any(|f| f.strip_prefix("panic:") == Some(site))
        && !FIRED.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        panic!("failpoint panic:{site}");
    }
}

/// Never panics without the `failpoints` feature.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn maybe_panic(_site: &str, _when: bool) {}
