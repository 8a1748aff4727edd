//! The CUDA backend's own settings, parsed and reported with the helpers of
//! [`crate::config`], next to the shared [`Config`](crate::Config). They live
//! here, not in the CUDA injection, so that `gpu-trace record` refuses a bad
//! value with the injection's own message before the program starts.

use crate::config::{Problem, env_lookup, parse_choice, parse_var};

/// Environment variable names.
pub mod vars {
    /// Which CUDA API layer becomes slices: `driver` or `runtime`.
    pub const API_LAYER: &str = "INJECTION_API_LAYER";
    /// When recording runs: `none` (all the time) or `cudaProfilerApi`.
    pub const CAPTURE_RANGE: &str = "INJECTION_CAPTURE_RANGE";
    /// How profiled kernels are replayed for counters: `auto`, `kernel` or
    /// `user`.
    pub const COUNTERS_REPLAY: &str = "INJECTION_COUNTERS_REPLAY";
    /// Profiled kernels collected per profiler session under user replay.
    pub const COUNTERS_BATCH: &str = "INJECTION_COUNTERS_BATCH";
    /// How many capture ranges are recorded (then recording stops).
    pub const CAPTURE_COUNT: &str = "INJECTION_CAPTURE_COUNT";
    /// Whether CUPTI is detached while no window records: `on`, `off`, or
    /// the most detaches in a run.
    pub const DETACH: &str = "INJECTION_DETACH";
}

/// How the range profiler gets every pass of a profiled kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CountersReplay {
    /// User replay when the metric set needs one pass (the kernel runs
    /// once, as the application launched it: nothing is saved, restored or
    /// replayed, and consecutive profiled kernels share one session),
    /// kernel replay otherwise.
    #[default]
    Auto,
    /// Always kernel replay: CUPTI saves the kernel's memory, runs it once
    /// per pass and restores it, one session per kernel.
    Kernel,
    /// User replay; a metric set that needs more than one pass falls back to
    /// kernel replay, with a line saying so.
    User,
}

/// Most profiled kernels in one user-replay session (the counter-data image
/// grows with it, about a few KiB per range).
pub const MAX_COUNTERS_BATCH: usize = 1024;
/// Default profiled kernels per user-replay session.
pub const DEFAULT_COUNTERS_BATCH: usize = 128;
/// Most detaches in a run by default. CUPTI keeps memory at each: on the
/// H200, 300 detach cycles of a bare injection grew the process by 55-85 kB
/// each, steadily; 1,000 hold that under ~85 MB, and CUPTI stays
/// attached afterwards.
pub const DEFAULT_MAX_DETACHES: u32 = 1000;
/// Largest limit `INJECTION_DETACH` takes.
pub const MAX_DETACHES: u32 = 1_000_000;

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
    /// Only inside NVTX ranges named [`CudaConfig::capture_nvtx`]
    /// (`nvtx:NAME`), as `nsys --capture-range=nvtx`: pushed/popped ranges
    /// on the thread that opened one, or start/end ranges.
    Nvtx,
}

/// The CUDA backend's validated settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CudaConfig {
    /// Which API layer becomes slices.
    pub api_layer: ApiLayer,
    /// When recording runs.
    pub capture_range: CaptureRange,
    /// The NVTX range name of [`CaptureRange::Nvtx`].
    pub capture_nvtx: Option<String>,
    /// Capture ranges recorded before recording stops (`None`: all).
    pub capture_count: Option<u32>,
    /// How profiled kernels are replayed.
    pub counters_replay: CountersReplay,
    /// Profiled kernels per user-replay session (1 to [`MAX_COUNTERS_BATCH`]).
    pub counters_batch: usize,
    /// Detach CUPTI (`cuptiFinalize`) while no recording window is open, so
    /// that a paused process pays nothing for it, at most this many times a
    /// run (then CUPTI stays attached); 0: never.
    pub max_detaches: u32,
}

impl Default for CudaConfig {
    fn default() -> Self {
        Self {
            api_layer: ApiLayer::default(),
            capture_range: CaptureRange::default(),
            capture_nvtx: None,
            capture_count: None,
            counters_replay: CountersReplay::default(),
            counters_batch: DEFAULT_COUNTERS_BATCH,
            max_detaches: DEFAULT_MAX_DETACHES,
        }
    }
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
            "none, cudaProfilerApi or nvtx:NAME",
            "none (the whole run)",
            |v| match v.trim().split_once(':') {
                Some((kind, name))
                    if kind.eq_ignore_ascii_case("nvtx") && !name.trim().is_empty() =>
                {
                    Some((CaptureRange::Nvtx, Some(name.trim().to_owned())))
                }
                _ => parse_choice(v, &ranges).map(|r| (r, None)),
            },
        ) {
            Ok(v) => (c.capture_range, c.capture_nvtx) = v.unwrap_or_default(),
            Err(p) => problems.push(p),
        }
        match parse_var(
            &get,
            vars::CAPTURE_COUNT,
            "a whole number of ranges from 1",
            "every range",
            |v| v.trim().parse::<u32>().ok().filter(|&n| n > 0),
        ) {
            Ok(v) => c.capture_count = v,
            Err(p) => problems.push(p),
        }
        // A count of nothing would be a setting accepted and not used.
        if c.capture_count.is_some() && c.capture_range == CaptureRange::Whole {
            c.capture_count = None;
            problems.push(Problem {
                var: vars::CAPTURE_COUNT,
                value: get(vars::CAPTURE_COUNT).unwrap_or_default(),
                expected: format!(
                    "a capture range to count ({}=cudaProfilerApi or nvtx:NAME), and none is set",
                    vars::CAPTURE_RANGE
                ),
                using: "the whole run".to_owned(),
            });
        }
        let replays = [
            ("auto", CountersReplay::Auto),
            ("", CountersReplay::Auto),
            ("kernel", CountersReplay::Kernel),
            ("user", CountersReplay::User),
        ];
        match parse_var(
            &get,
            vars::COUNTERS_REPLAY,
            "auto, kernel or user",
            "auto",
            |v| parse_choice(v, &replays),
        ) {
            Ok(v) => c.counters_replay = v.unwrap_or_default(),
            Err(p) => problems.push(p),
        }
        let expected = format!("a whole number of kernels from 1 to {MAX_COUNTERS_BATCH}");
        let default = DEFAULT_COUNTERS_BATCH.to_string();
        match parse_var(&get, vars::COUNTERS_BATCH, &expected, &default, |v| {
            v.trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_COUNTERS_BATCH).contains(n))
        }) {
            Ok(v) => c.counters_batch = v.unwrap_or(DEFAULT_COUNTERS_BATCH),
            Err(p) => problems.push(p),
        }
        // `on`, `off`, or a limit.
        let onoff = [
            ("on", DEFAULT_MAX_DETACHES),
            ("", DEFAULT_MAX_DETACHES),
            ("off", 0),
        ];
        let expected = format!(
            "on, off, or the most detaches in a run, a whole number from 1 to {MAX_DETACHES}"
        );
        match parse_var(&get, vars::DETACH, &expected, "on", |v| {
            parse_choice(v, &onoff).or_else(|| {
                let n = v.trim().parse::<u32>().ok()?;
                (1..=MAX_DETACHES).contains(&n).then_some(n)
            })
        }) {
            Ok(v) => c.max_detaches = v.unwrap_or(DEFAULT_MAX_DETACHES),
            Err(p) => problems.push(p),
        }
        (c, problems)
    }
}

/// The CUDA backend's settings, each refused here in one line when set to anything but the
/// values that ask for nothing: HIP has no such calls to follow or layers to choose.
const IGNORED_BY_HIP: [(&str, &[&str], &str); 6] = [
    (
        vars::CAPTURE_RANGE,
        &["", "none"],
        "capture ranges are CUDA-only for now; recording the whole run",
    ),
    (
        vars::CAPTURE_COUNT,
        &[""],
        "capture ranges are CUDA-only for now",
    ),
    (
        vars::API_LAYER,
        &[""],
        "HIP has one API layer, whose runtime calls are recorded",
    ),
    (
        vars::COUNTERS_REPLAY,
        &[""],
        "counters are collected by rocprofiler's dispatch counting, without replay",
    ),
    (
        vars::COUNTERS_BATCH,
        &[""],
        "counters are collected by rocprofiler's dispatch counting, without replay",
    ),
    (
        vars::DETACH,
        &["", "on"],
        "between windows the SDK's contexts are stopped; there is nothing to detach",
    ),
];

/// Lines for the CUDA-only settings set in the environment (through
/// `get`) to anything but what asks for nothing: the HIP backend refuses
/// each in one line rather than ignoring it silently.
pub(crate) fn ignored_by_hip(get: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let mut out = Vec::new();
    for (var, inert, why) in IGNORED_BY_HIP {
        if let Some(v) = get(var)
            && !inert.contains(&v.trim().to_ascii_lowercase().as_str())
        {
            out.push(format!(
                "{var}={} is ignored: it is a CUDA setting ({why})",
                crate::log::quoted(&v)
            ));
        }
    }
    out
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
            "INJECTION_CAPTURE_RANGE=\"nvtx\": expected none, cudaProfilerApi or nvtx:NAME; using none (the whole run)"
        );
        let (c, p) = cfg(&[
            (vars::CAPTURE_RANGE, "nvtx: step 100 "),
            (vars::CAPTURE_COUNT, "2"),
        ]);
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(
            (c.capture_range, c.capture_nvtx.as_deref(), c.capture_count),
            (CaptureRange::Nvtx, Some("step 100"), Some(2))
        );
        let (_, p) = cfg(&[
            (vars::CAPTURE_RANGE, "cudaProfilerApi"),
            (vars::CAPTURE_COUNT, "0"),
        ]);
        assert_eq!(
            p[0].to_string(),
            "INJECTION_CAPTURE_COUNT=\"0\": expected a whole number of ranges from 1; using every range"
        );
        let (c, p) = cfg(&[
            (vars::CAPTURE_RANGE, "cudaProfilerApi"),
            (vars::CAPTURE_COUNT, "3"),
        ]);
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(c.capture_count, Some(3));
        // A count without a range to count.
        for range in [None, Some("none")] {
            let mut set = vec![(vars::CAPTURE_COUNT, "3")];
            set.extend(range.map(|r| (vars::CAPTURE_RANGE, r)));
            let (c, p) = cfg(&set);
            assert_eq!(c.capture_count, None);
            assert_eq!(
                p.iter().map(ToString::to_string).collect::<Vec<_>>(),
                [
                    "INJECTION_CAPTURE_COUNT=\"3\": expected a capture range to count (INJECTION_CAPTURE_RANGE=cudaProfilerApi or nvtx:NAME), and none is set; using the whole run"
                ]
            );
        }
    }

    #[test]
    fn counters_replay_and_batch_are_checked() {
        let (c, p) = cfg(&[]);
        assert!(p.is_empty());
        assert_eq!(c.counters_replay, CountersReplay::Auto);
        assert_eq!(c.counters_batch, DEFAULT_COUNTERS_BATCH);
        assert_eq!(c.max_detaches, DEFAULT_MAX_DETACHES);
        let (c, p) = cfg(&[
            (vars::COUNTERS_REPLAY, "kernel"),
            (vars::COUNTERS_BATCH, "1"),
        ]);
        assert!(p.is_empty());
        assert_eq!(
            (c.counters_replay, c.counters_batch),
            (CountersReplay::Kernel, 1)
        );
        let (c, p) = cfg(&[(vars::COUNTERS_REPLAY, "app"), (vars::COUNTERS_BATCH, "0")]);
        assert_eq!(
            (c.counters_replay, c.counters_batch),
            (CountersReplay::Auto, DEFAULT_COUNTERS_BATCH)
        );
        assert_eq!(
            p[0].to_string(),
            "INJECTION_COUNTERS_REPLAY=\"app\": expected auto, kernel or user; using auto"
        );
        assert_eq!(
            p[1].to_string(),
            "INJECTION_COUNTERS_BATCH=\"0\": expected a whole number of kernels from 1 to 1024; using 128"
        );
    }

    #[test]
    fn detach_is_on_off_or_a_limit() {
        assert_eq!(cfg(&[(vars::DETACH, "off")]).0.max_detaches, 0);
        let (c, _) = cfg(&[(vars::DETACH, "ON")]);
        assert_eq!(c.max_detaches, DEFAULT_MAX_DETACHES);
        let (c, p) = cfg(&[(vars::DETACH, " 25 ")]);
        assert!(p.is_empty());
        assert_eq!(c.max_detaches, 25);
        for bad in ["sometimes", "0", "-3", "1000001"] {
            let (c, p) = cfg(&[(vars::DETACH, bad)]);
            assert_eq!(c.max_detaches, DEFAULT_MAX_DETACHES);
            assert_eq!(
                p[0].to_string(),
                format!(
                    "INJECTION_DETACH=\"{bad}\": expected on, off, or the most detaches in a run, a whole number from 1 to 1000000; using on"
                )
            );
        }
    }
}
