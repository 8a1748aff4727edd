//! Test-only fault injection. With the `failpoints` feature (this crate's own tests turn it
//! on), `GPU_TRACE_HIP_FAILPOINT` lists faults, comma-separated:
//!
//! - `panic:hip` — panic in the HIP API callback (at the exit of the first `hipLaunchKernel`);
//! - `panic:buffer` — panic in the buffer callback;
//! - `missing:<symbol>` — the SDK function `<symbol>` is treated as absent.
//!
//! Without the feature every check is a constant `false` and the variable is never read.

/// The variable listing the faults.
#[cfg_attr(not(feature = "failpoints"), allow(dead_code))]
pub(crate) const VAR: &str = "GPU_TRACE_HIP_FAILPOINT";

#[cfg(feature = "failpoints")]
fn faults() -> &'static [String] {
    static F: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    F.get_or_init(|| {
        std::env::var(VAR)
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    })
}

/// Panics if `panic:<site>` is set and `when` holds.
#[cfg(feature = "failpoints")]
pub(crate) fn maybe_panic(site: &str, when: bool) {
    if when
        && faults()
            .iter()
            .any(|f| f.strip_prefix("panic:") == Some(site))
    {
        panic!("failpoint panic:{site}");
    }
}

/// Never panics without the `failpoints` feature.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn maybe_panic(_site: &str, _when: bool) {}

/// SDK functions to treat as missing.
#[cfg(feature = "failpoints")]
pub(crate) fn hidden_symbols() -> Vec<String> {
    faults()
        .iter()
        .filter_map(|f| f.strip_prefix("missing:").map(str::to_owned))
        .collect()
}
