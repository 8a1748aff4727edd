//! The CUDA backend's own settings, parsed and reported with the helpers of
//! [`crate::config`], next to core's [`Config`](crate::Config). They live
//! here, not in the CUDA injection, so that `gpu-trace record` refuses a bad
//! value with the injection's own message before the program starts.

use crate::config::{Problem, env_lookup, parse_choice, parse_var};

/// Environment variable names.
pub mod vars {
    /// Which CUDA API layer becomes slices: `driver` or `runtime`.
    pub const API_LAYER: &str = "INJECTION_API_LAYER";
    /// When recording runs: `none` (all the time) or `cudaProfilerApi`.
    pub const CAPTURE_RANGE: &str = "INJECTION_CAPTURE_RANGE";
}

/// Which layer of CUDA (the runtime over its driver) is recorded as API
/// slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApiLayer {
    /// Driver calls only (`cuLaunchKernel`, `cuStreamSynchronize`): every
    /// call that reaches the GPU, whether the application, the runtime or a
    /// library made it, at half the callbacks of [`ApiLayer::Runtime`] (a
    /// runtime call fires its driver call's callbacks as well).
    #[default]
    Driver,
    /// Runtime calls under their runtime names (`cudaLaunchKernel`), plus
    /// driver calls made directly (cuBLAS launches through the driver).
    Runtime,
}

/// When recording runs, within what the session (standalone or system) asks
/// for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CaptureRange {
    /// From start to exit.
    #[default]
    Whole,
    /// Only between the application's `cudaProfilerStart` / `cuProfilerStart`
    /// and the matching stop (`torch.cuda.profiler.start()` / `stop()`), as
    /// `nsys --capture-range=cudaProfilerApi`; any number of ranges. Outside
    /// them nothing is enabled in CUPTI but the two profiler callbacks.
    CudaProfilerApi,
}

/// The CUDA backend's validated settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CudaConfig {
    /// Which API layer becomes slices.
    pub api_layer: ApiLayer,
    /// When recording runs.
    pub capture_range: CaptureRange,
}

impl CudaConfig {
    /// Reads the process environment. Problems are returned, not printed.
    pub fn from_env() -> (CudaConfig, Vec<Problem>) {
        Self::from_lookup(env_lookup)
    }

    /// Reads the settings through `get`, for tests.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> (CudaConfig, Vec<Problem>) {
        let mut c = CudaConfig::default();
        let mut problems = Vec::new();
        let layers = [
            ("driver", ApiLayer::Driver),
            ("", ApiLayer::Driver),
            ("runtime", ApiLayer::Runtime),
        ];
        match parse_var(&get, vars::API_LAYER, "driver or runtime", "driver", |v| {
            parse_choice(v, &layers)
        }) {
            Ok(v) => c.api_layer = v.unwrap_or_default(),
            Err(p) => problems.push(p),
        }
        let ranges = [
            ("none", CaptureRange::Whole),
            ("", CaptureRange::Whole),
            ("cudaProfilerApi", CaptureRange::CudaProfilerApi),
        ];
        match parse_var(
            &get,
            vars::CAPTURE_RANGE,
            "none or cudaProfilerApi",
            "none (the whole run)",
            |v| parse_choice(v, &ranges),
        ) {
            Ok(v) => c.capture_range = v.unwrap_or_default(),
            Err(p) => problems.push(p),
        }
        (c, problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> (CudaConfig, Vec<Problem>) {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        CudaConfig::from_lookup(move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn api_layer_is_driver_unless_runtime_is_asked_for() {
        assert_eq!(cfg(&[]).0.api_layer, ApiLayer::Driver);
        let (c, p) = cfg(&[(vars::API_LAYER, " Runtime ")]);
        assert!(p.is_empty());
        assert_eq!(c.api_layer, ApiLayer::Runtime);
        let (c, p) = cfg(&[(vars::API_LAYER, "both")]);
        assert_eq!(c.api_layer, ApiLayer::Driver);
        assert_eq!(
            p[0].to_string(),
            "INJECTION_API_LAYER=\"both\": expected driver or runtime; using driver"
        );
    }

    #[test]
    fn capture_range_is_the_whole_run_unless_the_profiler_api_is_asked_for() {
        assert_eq!(cfg(&[]).0.capture_range, CaptureRange::Whole);
        let (c, p) = cfg(&[(vars::CAPTURE_RANGE, "cudaProfilerApi")]);
        assert!(p.is_empty());
        assert_eq!(c.capture_range, CaptureRange::CudaProfilerApi);
        let (c, p) = cfg(&[(vars::CAPTURE_RANGE, "nvtx")]);
        assert_eq!(c.capture_range, CaptureRange::Whole);
        assert_eq!(
            p[0].to_string(),
            "INJECTION_CAPTURE_RANGE=\"nvtx\": expected none or cudaProfilerApi; using none (the whole run)"
        );
    }
}
