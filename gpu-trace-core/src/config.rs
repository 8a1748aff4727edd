//! Configuration from the environment, parsed once and validated.
//!
//! A bad value never stops the application: it gets one message that names
//! the variable, the value and what was expected, and the default is used.

use std::fmt;
use std::time::Duration;

/// Environment variable names.
pub mod vars {
    /// Verbose logging to stderr.
    pub const VERBOSE: &str = "INJECTION_VERBOSE";
    /// Per-kernel metrics, split on `,` and `;`.
    pub const METRICS: &str = "INJECTION_METRICS";
    /// Suffix of the data-source names (`gpu.renderstages.<suffix>`).
    pub const SUFFIX: &str = "INJECTION_DATA_SOURCE_NAME_SUFFIX";
    /// Output path pattern of standalone mode.
    pub const OUTPUT: &str = "INJECTION_OUTPUT";
    /// `file`, `system` or `both`.
    pub const MODE: &str = "INJECTION_MODE";
    /// In-process trace buffer size.
    pub const BUFFER_SIZE: &str = "INJECTION_BUFFER_SIZE";
    /// How often the trace file is written (and data flushed), ms.
    pub const FLUSH_PERIOD_MS: &str = "INJECTION_FLUSH_PERIOD_MS";
    /// What standalone mode records: `gpu`, `api`, `nvtx`, `counters`.
    pub const TRACE: &str = "INJECTION_TRACE";
    /// Which CUDA API layer becomes slices: `driver` or `runtime`.
    pub const API_LAYER: &str = "INJECTION_API_LAYER";
    /// When recording runs: `none` (all the time) or `cudaProfilerApi`.
    pub const CAPTURE_RANGE: &str = "INJECTION_CAPTURE_RANGE";
    /// Memory for recorded events waiting to be written.
    pub const QUEUE_SIZE: &str = "INJECTION_QUEUE_SIZE";
    /// What a recording thread does when that queue is full: `wait` or `drop`.
    pub const QUEUE_FULL: &str = "INJECTION_QUEUE_FULL";
    /// Every variable, for diagnostics.
    pub const ALL: [&str; 12] = [
        VERBOSE,
        METRICS,
        SUFFIX,
        OUTPUT,
        MODE,
        BUFFER_SIZE,
        FLUSH_PERIOD_MS,
        TRACE,
        API_LAYER,
        CAPTURE_RANGE,
        QUEUE_SIZE,
        QUEUE_FULL,
    ];
}

/// Where the trace goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// An in-process Perfetto session streams a `.pftrace` file (default).
    File,
    /// Register data sources with a running `traced`; its config drives us.
    System,
    /// Both at once.
    Both,
}

impl Mode {
    /// Whether the in-process file session runs.
    pub fn file(self) -> bool {
        matches!(self, Mode::File | Mode::Both)
    }

    /// Whether the system backend is connected.
    pub fn system(self) -> bool {
        matches!(self, Mode::System | Mode::Both)
    }
}

/// What standalone mode records. In system mode the trace config decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recording {
    /// Kernels, copies and memsets (`gpu.renderstages`).
    pub gpu: bool,
    /// Runtime/driver API calls on CPU threads.
    pub api: bool,
    /// NVTX / roctx ranges and marks.
    pub markers: bool,
    /// Per-kernel hardware counters (`gpu.counters`).
    pub counters: bool,
}

impl Default for Recording {
    fn default() -> Self {
        Self {
            gpu: true,
            api: true,
            markers: true,
            counters: false,
        }
    }
}

/// Which layer of a two-layer API (CUDA's runtime over its driver) is
/// recorded as API slices. Backends with one layer (HIP) ignore it.
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

/// The validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Verbose logging.
    pub verbose: bool,
    /// Metric names, trimmed, de-duplicated, in first-seen order.
    pub metrics: Vec<String>,
    /// Data-source name suffix; `None` means the backend's default.
    pub suffix: Option<String>,
    /// Output path pattern (`%p` pid, `%n` program name, `%h` host, `%%`).
    pub output: String,
    /// Whether `output` came from the environment (affects fallbacks).
    pub output_from_env: bool,
    /// Where the trace goes.
    pub mode: Mode,
    /// In-process buffer size, KiB.
    pub buffer_kb: u32,
    /// Memory for recorded events waiting for the writer, KiB.
    pub queue_kb: u32,
    /// Whether a thread that finds the queue full waits for room (briefly,
    /// per event) or drops the event at once.
    pub queue_full_waits: bool,
    /// File write and flush period.
    pub flush_period: Duration,
    /// What standalone mode records.
    pub recording: Recording,
    /// Which API layer becomes slices.
    pub api_layer: ApiLayer,
    /// When recording runs.
    pub capture_range: CaptureRange,
}

/// Default output pattern: `<program>-<pid>.pftrace` in the working directory.
pub const DEFAULT_OUTPUT: &str = "%n-%p.pftrace";
/// Default in-process buffer: 64 MiB.
pub const DEFAULT_BUFFER_KB: u32 = 64 * 1024;
/// Default flush period.
pub const DEFAULT_FLUSH_PERIOD: Duration = Duration::from_millis(1000);
/// Default queue of recorded events: 32 MiB.
pub const DEFAULT_QUEUE_KB: u32 = 32 * 1024;
const MIN_QUEUE_KB: u32 = 64;
const MAX_QUEUE_KB: u32 = 1024 * 1024;
const MIN_BUFFER_KB: u32 = 1024;
const MAX_BUFFER_KB: u32 = 4 * 1024 * 1024;
const MIN_FLUSH_MS: u64 = 100;
const MAX_FLUSH_MS: u64 = 600_000;

impl Default for Config {
    fn default() -> Self {
        Self {
            verbose: false,
            metrics: Vec::new(),
            suffix: None,
            output: DEFAULT_OUTPUT.to_owned(),
            output_from_env: false,
            mode: Mode::File,
            buffer_kb: DEFAULT_BUFFER_KB,
            queue_kb: DEFAULT_QUEUE_KB,
            queue_full_waits: true,
            flush_period: DEFAULT_FLUSH_PERIOD,
            recording: Recording::default(),
            api_layer: ApiLayer::default(),
            capture_range: CaptureRange::default(),
        }
    }
}

/// A rejected value, with what was expected and what is used instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Variable name.
    pub var: &'static str,
    /// The value as given.
    pub value: String,
    /// What was expected.
    pub expected: String,
    /// What is used instead.
    pub using: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?}: expected {}; using {}",
            self.var, self.value, self.expected, self.using
        )
    }
}

impl Config {
    /// Reads the process environment. Problems are returned, not printed.
    pub fn from_env() -> (Config, Vec<Problem>) {
        Self::from_lookup(|k| match std::env::var(k) {
            Ok(v) => Some(v),
            // Non-UTF-8 values are reported like any other bad value.
            Err(std::env::VarError::NotUnicode(v)) => Some(v.to_string_lossy().into_owned()),
            Err(std::env::VarError::NotPresent) => None,
        })
    }

    /// Reads configuration through `get`, for tests and embedders.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> (Config, Vec<Problem>) {
        let mut c = Config::default();
        let mut problems = Vec::new();
        let mut bad = |var: &'static str, value: &str, expected: &str, using: String| {
            problems.push(Problem {
                var,
                value: value.to_owned(),
                expected: expected.to_owned(),
                using,
            })
        };

        if let Some(v) = get(vars::VERBOSE) {
            match parse_bool(&v) {
                Some(b) => c.verbose = b,
                None => bad(
                    vars::VERBOSE,
                    &v,
                    "1/0, true/false, yes/no or on/off",
                    "verbose logging on".into(),
                ),
            }
            // A set but unparsable verbose flag most likely means "on".
            if parse_bool(&v).is_none() {
                c.verbose = true;
            }
        }

        if let Some(v) = get(vars::METRICS) {
            let (metrics, rejected) = parse_metric_list(&v);
            c.metrics = metrics;
            for r in rejected {
                bad(
                    vars::METRICS,
                    &r,
                    "metric names of letters, digits, '_', '.', ':' or '-'",
                    "the other metrics".into(),
                );
            }
        }

        if let Some(v) = get(vars::SUFFIX) {
            let t = v.trim();
            if is_valid_suffix(t) {
                c.suffix = Some(t.to_owned());
            } else {
                bad(
                    vars::SUFFIX,
                    &v,
                    "a non-empty name of letters, digits, '_', '-' or '.'",
                    "the backend default (nv or amd)".into(),
                );
            }
        }

        if let Some(v) = get(vars::OUTPUT) {
            match validate_output_pattern(&v) {
                Ok(()) => {
                    c.output = v;
                    c.output_from_env = true;
                }
                Err(why) => bad(vars::OUTPUT, &v, why, format!("{DEFAULT_OUTPUT:?}")),
            }
        }

        if let Some(v) = get(vars::MODE) {
            match v.trim().to_ascii_lowercase().as_str() {
                "file" | "standalone" | "" => c.mode = Mode::File,
                "system" => c.mode = Mode::System,
                "both" => c.mode = Mode::Both,
                _ => bad(vars::MODE, &v, "file, system or both", "file".into()),
            }
        }

        if let Some(v) = get(vars::BUFFER_SIZE) {
            match parse_size_kb(&v) {
                Some(kb) if (MIN_BUFFER_KB..=MAX_BUFFER_KB).contains(&kb) => c.buffer_kb = kb,
                Some(_) => bad(
                    vars::BUFFER_SIZE,
                    &v,
                    "a size between 1M and 4G",
                    "64M".into(),
                ),
                None => bad(
                    vars::BUFFER_SIZE,
                    &v,
                    "a size like 65536 (KiB), 64M or 1G",
                    "64M".into(),
                ),
            }
        }

        if let Some(v) = get(vars::QUEUE_SIZE) {
            match parse_size_kb(&v) {
                Some(kb) if (MIN_QUEUE_KB..=MAX_QUEUE_KB).contains(&kb) => c.queue_kb = kb,
                _ => bad(
                    vars::QUEUE_SIZE,
                    &v,
                    "a size between 64K and 1G, like 32M",
                    "32M".into(),
                ),
            }
        }

        if let Some(v) = get(vars::QUEUE_FULL) {
            match v.trim().to_ascii_lowercase().as_str() {
                "wait" | "" => c.queue_full_waits = true,
                "drop" => c.queue_full_waits = false,
                _ => bad(vars::QUEUE_FULL, &v, "wait or drop", "wait".into()),
            }
        }

        if let Some(v) = get(vars::FLUSH_PERIOD_MS) {
            match v.trim().parse::<u64>() {
                Ok(ms) if (MIN_FLUSH_MS..=MAX_FLUSH_MS).contains(&ms) => {
                    c.flush_period = Duration::from_millis(ms)
                }
                _ => bad(
                    vars::FLUSH_PERIOD_MS,
                    &v,
                    "milliseconds between 100 and 600000",
                    "1000".into(),
                ),
            }
        }

        if let Some(v) = get(vars::TRACE) {
            match parse_recording(&v) {
                Ok(r) => c.recording = r,
                Err(word) => bad(
                    vars::TRACE,
                    &v,
                    &format!(
                        "a list of gpu, api, nvtx (or markers), counters, all; {word:?} is none of these"
                    ),
                    "gpu,api,nvtx".into(),
                ),
            }
        }
        if let Some(v) = get(vars::API_LAYER) {
            match v.trim().to_ascii_lowercase().as_str() {
                "driver" | "" => c.api_layer = ApiLayer::Driver,
                "runtime" => c.api_layer = ApiLayer::Runtime,
                _ => bad(vars::API_LAYER, &v, "driver or runtime", "driver".into()),
            }
        }
        if let Some(v) = get(vars::CAPTURE_RANGE) {
            match v.trim().to_ascii_lowercase().as_str() {
                "none" | "" => c.capture_range = CaptureRange::Whole,
                "cudaprofilerapi" => c.capture_range = CaptureRange::CudaProfilerApi,
                _ => bad(
                    vars::CAPTURE_RANGE,
                    &v,
                    "none or cudaProfilerApi",
                    "none (the whole run)".into(),
                ),
            }
        }
        // Naming metrics asks for counters.
        if !c.metrics.is_empty() && get(vars::TRACE).is_none() {
            c.recording.counters = true;
        }
        (c, problems)
    }
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" | "y" => Some(true),
        "0" | "false" | "no" | "off" | "n" | "" => Some(false),
        _ => None,
    }
}

fn is_valid_suffix(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

/// Splits a metric list on `,` and `;`, trims, drops empties, de-duplicates
/// in first-seen order. Names with characters no metric uses are returned
/// separately so that each can be reported alone.
pub fn parse_metric_list(v: &str) -> (Vec<String>, Vec<String>) {
    let mut good: Vec<String> = Vec::new();
    let mut bad = Vec::new();
    for m in v.split([',', ';']).map(str::trim).filter(|m| !m.is_empty()) {
        let ok = m
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b));
        if !ok {
            bad.push(m.to_owned());
        } else if !good.iter().any(|g| g == m) {
            good.push(m.to_owned());
        }
    }
    (good, bad)
}

/// Parses `65536` (KiB), `64K`, `64M`, `64MB`, `64MiB`, `1G`.
pub fn parse_size_kb(v: &str) -> Option<u32> {
    let t = v.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "k" | "kb" | "kib" => 1,
        "m" | "mb" | "mib" => 1024,
        "g" | "gb" | "gib" => 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(mult).and_then(|kb| u32::try_from(kb).ok())
}

fn validate_output_pattern(v: &str) -> Result<(), &'static str> {
    if v.trim().is_empty() {
        return Err("a file path or pattern (%p pid, %n program, %h host)");
    }
    if v.contains('\0') {
        return Err("a path without NUL bytes");
    }
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            match chars.next() {
                Some('p' | 'n' | 'h' | '%') => {}
                _ => {
                    return Err(
                        "a path whose % escapes are %p (pid), %n (program), %h (host) or %%",
                    );
                }
            }
        }
    }
    Ok(())
}

fn parse_recording(v: &str) -> Result<Recording, String> {
    let mut r = Recording {
        gpu: false,
        api: false,
        markers: false,
        counters: false,
    };
    for w in v
        .split([',', ';', '+'])
        .map(str::trim)
        .filter(|w| !w.is_empty())
    {
        match w.to_ascii_lowercase().as_str() {
            "gpu" | "kernels" | "renderstages" => r.gpu = true,
            "api" => r.api = true,
            "nvtx" | "roctx" | "markers" => r.markers = true,
            "counters" | "metrics" => r.counters = true,
            "all" => {
                r = Recording {
                    gpu: true,
                    api: true,
                    markers: true,
                    counters: true,
                }
            }
            _ => return Err(w.to_owned()),
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> (Config, Vec<Problem>) {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn defaults_without_environment() {
        let (c, p) = cfg(&[]);
        assert!(p.is_empty());
        assert_eq!(c, Config::default());
        assert_eq!(c.mode, Mode::File);
        assert!(c.recording.gpu && c.recording.api && !c.recording.counters);
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

    #[test]
    fn metrics_are_split_trimmed_and_deduplicated() {
        let (c, p) = cfg(&[(
            vars::METRICS,
            " sm__throughput.avg ; dram__bytes.sum,,sm__throughput.avg , gpu__time_duration.sum;",
        )]);
        assert!(p.is_empty());
        assert_eq!(
            c.metrics,
            [
                "sm__throughput.avg",
                "dram__bytes.sum",
                "gpu__time_duration.sum"
            ]
        );
        assert!(c.recording.counters, "naming metrics asks for counters");
    }

    #[test]
    fn each_bad_metric_is_reported_alone() {
        let (c, p) = cfg(&[(vars::METRICS, "good.metric, bad metric!, also\"bad, fine")]);
        assert_eq!(c.metrics, ["good.metric", "fine"]);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].value, "bad metric!");
        assert_eq!(p[1].value, "also\"bad");
        assert!(p[0].to_string().contains("INJECTION_METRICS"));
    }

    #[test]
    fn every_variable_names_its_bad_value() {
        let cases = [
            (vars::VERBOSE, "maybe"),
            (vars::SUFFIX, "has space"),
            (vars::SUFFIX, ""),
            (vars::OUTPUT, "trace-%q.pftrace"),
            (vars::OUTPUT, "   "),
            (vars::MODE, "cloud"),
            (vars::BUFFER_SIZE, "12x"),
            (vars::BUFFER_SIZE, "16"),
            (vars::BUFFER_SIZE, "99G"),
            (vars::FLUSH_PERIOD_MS, "-5"),
            (vars::QUEUE_SIZE, "4K"),
            (vars::QUEUE_SIZE, "lots"),
            (vars::QUEUE_FULL, "block"),
            (vars::FLUSH_PERIOD_MS, "10"),
            (vars::TRACE, "gpu,telemetry"),
        ];
        for (var, value) in cases {
            let (c, p) = cfg(&[(var, value)]);
            assert_eq!(p.len(), 1, "{var}={value:?} should give one problem");
            let msg = p[0].to_string();
            assert!(msg.contains(var), "{msg}");
            assert!(msg.contains(&format!("{value:?}")), "{msg}");
            assert!(msg.contains("expected"), "{msg}");
            // The default is kept.
            let d = Config::default();
            match var {
                vars::SUFFIX => assert_eq!(c.suffix, None),
                vars::OUTPUT => assert_eq!(c.output, d.output),
                vars::MODE => assert_eq!(c.mode, d.mode),
                vars::BUFFER_SIZE => assert_eq!(c.buffer_kb, d.buffer_kb),
                vars::QUEUE_SIZE => assert_eq!(c.queue_kb, d.queue_kb),
                vars::QUEUE_FULL => assert!(c.queue_full_waits),
                vars::FLUSH_PERIOD_MS => assert_eq!(c.flush_period, d.flush_period),
                vars::TRACE => assert_eq!(c.recording, d.recording),
                _ => {}
            }
        }
    }

    #[test]
    fn good_values_are_taken() {
        let (c, p) = cfg(&[
            (vars::VERBOSE, "yes"),
            (vars::SUFFIX, "mytool"),
            (vars::OUTPUT, "traces/run-%n-%p.pftrace"),
            (vars::MODE, "System"),
            (vars::BUFFER_SIZE, "256MiB"),
            (vars::FLUSH_PERIOD_MS, "250"),
            (vars::TRACE, "gpu"),
            (vars::QUEUE_SIZE, "1M"),
            (vars::QUEUE_FULL, "Drop"),
        ]);
        assert_eq!(c.queue_kb, 1024);
        assert!(!c.queue_full_waits);
        assert!(p.is_empty(), "{p:?}");
        assert!(c.verbose);
        assert_eq!(c.suffix.as_deref(), Some("mytool"));
        assert_eq!(c.output, "traces/run-%n-%p.pftrace");
        assert!(c.output_from_env);
        assert_eq!(c.mode, Mode::System);
        assert_eq!(c.buffer_kb, 256 * 1024);
        assert_eq!(c.flush_period, Duration::from_millis(250));
        assert_eq!(
            c.recording,
            Recording {
                gpu: true,
                api: false,
                markers: false,
                counters: false
            }
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size_kb("65536"), Some(65536));
        assert_eq!(parse_size_kb("64M"), Some(65536));
        assert_eq!(parse_size_kb("1g"), Some(1 << 20));
        assert_eq!(parse_size_kb("1T"), None);
        assert_eq!(parse_size_kb("M"), None);
    }
}
