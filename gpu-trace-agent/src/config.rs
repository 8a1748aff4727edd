//! Configuration from the environment, parsed once and validated.
//!
//! A bad value never stops the application: it gets one message that names
//! the variable, the value and what was expected, and the default is used.
//!
//! [`Config`] holds what every backend shares. A backend's own settings are
//! its own to parse, with the same helpers and the same messages:
//! [`parse_var`] (or [`parse_env`]) and [`parse_choice`].

use crate::output::NoOutput;
use gpu_trace_model::Limits;
use gpu_trace_model::writer::TraceSettings;
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
    /// What standalone mode records: `gpu`, `api`, `markers`, `counters`,
    /// `telemetry`, `uvm`, `memory`, `python` or `all`. `nvtx` and `roctx` are
    /// aliases of `markers` whatever the backend, as are
    /// `kernels`/`renderstages` of `gpu` and `metrics` of `counters`.
    pub const TRACE: &str = "INJECTION_TRACE";
    /// How often device telemetry is sampled (`10ms`, `1s`, `off`).
    pub const TELEMETRY_PERIOD: &str = "INJECTION_TELEMETRY_PERIOD";
    /// How often the slow telemetry readings (PCIe throughput, energy) are
    /// taken, on their own thread; `off` (the default) leaves them out.
    pub const TELEMETRY_SLOW_PERIOD: &str = "INJECTION_TELEMETRY_SLOW_PERIOD";
    /// Folder of the per-device lock files that let one process of a job
    /// sample each GPU: an absolute path to a folder of this user, mode
    /// 0700 (made if missing, in an existing folder). Not shared across
    /// users: another user's or a world-writable folder is refused.
    pub const TELEMETRY_LOCK_DIR: &str = "INJECTION_TELEMETRY_LOCK_DIR";
    /// Memory for recorded events waiting to be written.
    pub const QUEUE_SIZE: &str = "INJECTION_QUEUE_SIZE";
    /// What a recording thread does when that queue is full: `wait` or `drop`.
    pub const QUEUE_FULL: &str = "INJECTION_QUEUE_FULL";
    /// How the standalone file is written: `direct` (the default) or
    /// `service`, through the Perfetto SDK's in-process tracing service.
    /// Internal: for comparisons and as a fallback, not in [`ALL`].
    pub const FILE_WRITER: &str = "INJECTION_FILE_WRITER";
    /// Every variable the shared configuration reads, for diagnostics (with the launcher's
    /// rank variables, [`crate::rank::vars`]).
    pub const ALL: [&str; 16] = [
        VERBOSE,
        METRICS,
        SUFFIX,
        OUTPUT,
        MODE,
        BUFFER_SIZE,
        FLUSH_PERIOD_MS,
        TRACE,
        QUEUE_SIZE,
        QUEUE_FULL,
        TELEMETRY_PERIOD,
        TELEMETRY_SLOW_PERIOD,
        TELEMETRY_LOCK_DIR,
        crate::rank::vars::RANK,
        crate::rank::vars::LOCAL_RANK,
        crate::rank::vars::WORLD_SIZE,
    ];
}

pub use gpu_trace_model::writer::{FileSink, Mode, Recording};

/// How device telemetry is sampled.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TelemetryConfig {
    /// Period of the fast readings (clocks, utilisation, power, ...).
    pub period: Duration,
    /// Period of the slow readings (PCIe throughput, energy), on their own
    /// thread; `None`: not read.
    pub slow_period: Option<Duration>,
    /// The user asked for telemetry (`INJECTION_TRACE` named it, or a
    /// period was set), rather than getting it by default: a missing
    /// telemetry source is then said on stderr, not only in verbose mode.
    pub asked: bool,
    /// Folder of the per-device lock files, absolute; `None`: this user's
    /// runtime folder ([`crate::private_dir::runtime_dir`]).
    pub lock_dir: Option<std::path::PathBuf>,
}

/// Default telemetry period.
pub const DEFAULT_TELEMETRY_PERIOD: Duration = Duration::from_millis(10);
/// Shortest telemetry period.
pub const MIN_TELEMETRY_PERIOD: Duration = Duration::from_millis(1);
/// Longest telemetry period.
pub const MAX_TELEMETRY_PERIOD: Duration = Duration::from_secs(10);
/// Shortest slow-telemetry period: a PCIe throughput reading alone blocks
/// about 21 ms.
pub const MIN_SLOW_PERIOD: Duration = Duration::from_millis(100);
/// Longest slow-telemetry period.
pub const MAX_SLOW_PERIOD: Duration = Duration::from_secs(60);

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            period: DEFAULT_TELEMETRY_PERIOD,
            slow_period: None,
            asked: false,
            lock_dir: None,
        }
    }
}

/// The validated configuration.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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
    /// How the standalone file is written (`INJECTION_FILE_WRITER`).
    pub file_sink: FileSink,
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
    /// How device telemetry is sampled.
    pub telemetry: TelemetryConfig,
    /// The process's rank in a multi-process job (`RANK`, `LOCAL_RANK`,
    /// `WORLD_SIZE`), which its trace then names.
    pub rank: Option<crate::rank::Rank>,
}

/// Default output pattern: `<program>-<pid>.pftrace` in the working directory.
pub const DEFAULT_OUTPUT: &str = "%n-%p.pftrace";
pub use gpu_trace_model::collector::DEFAULT_QUEUE_KB;
pub use gpu_trace_model::writer::DEFAULT_BUFFER_KB;
pub use gpu_trace_model::writer::DEFAULT_FLUSH_PERIOD;
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
            file_sink: FileSink::Direct,
            buffer_kb: DEFAULT_BUFFER_KB,
            queue_kb: DEFAULT_QUEUE_KB,
            queue_full_waits: true,
            flush_period: DEFAULT_FLUSH_PERIOD,
            recording: Recording::default(),
            telemetry: TelemetryConfig::default(),
            rank: None,
        }
    }
}

/// A rejected value, with what was expected and what is used instead.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
    /// `VAR="value": expected ...; using ...`, the value quoted once,
    /// escaped and cut as [`crate::log::quoted`] does.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={}: expected {}; using {}",
            self.var,
            crate::log::quoted(&self.value),
            self.expected,
            self.using
        )
    }
}

impl Config {
    /// What the writer needs of this configuration, settled: in file mode
    /// the output pattern expanded and checked (a free name in a writable
    /// folder: see [`crate::output::resolve`], whose notes on why another
    /// file than the one asked for is used are said here, on stderr), the
    /// queue's limits from `INJECTION_QUEUE_SIZE` and `INJECTION_QUEUE_FULL`.
    ///
    /// # Errors
    ///
    /// In file mode, when no file can be written anywhere.
    pub fn trace_settings(&self) -> Result<TraceSettings, NoOutput> {
        let output = if self.mode.file() {
            let resolved = crate::output::resolve(
                &self.output,
                std::process::id(),
                &crate::output::program_name(),
            )?;
            for n in &resolved.notes {
                crate::warn!("{n}");
            }
            Some(resolved.path)
        } else {
            None
        };
        // The default limits, unless INJECTION_QUEUE_SIZE asked for other
        // sizes; a thread that finds the queue full waits for room unless
        // INJECTION_QUEUE_FULL=drop.
        let limits = if self.queue_kb == DEFAULT_QUEUE_KB {
            Limits::default()
        } else {
            Limits::for_queue_kb(self.queue_kb)
        };
        let limits = Limits {
            stall: if self.queue_full_waits {
                limits.stall
            } else {
                Duration::ZERO
            },
            ..limits
        };
        let mut s = TraceSettings::file(output.clone().unwrap_or_default());
        s.mode = self.mode;
        s.file_sink = self.file_sink;
        s.output = output;
        s.suffix = self.suffix.clone();
        s.buffer_kb = self.buffer_kb;
        s.flush_period = self.flush_period;
        s.recording = self.recording;
        s.metrics = self.metrics.clone();
        s.rank = self.rank;
        s.limits = limits;
        Ok(s)
    }

    /// The telemetry sampler's settings. A system session records telemetry
    /// only when its config names the data source: that is asking for it.
    pub fn sampler_config(&self) -> TelemetryConfig {
        let mut t = self.telemetry.clone();
        t.asked |= self.mode == Mode::System;
        t
    }

    /// Reads the process environment. Problems are returned, not printed.
    pub fn from_env() -> (Config, Vec<Problem>) {
        Self::from_lookup(env_lookup)
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
            // Anything else leaves verbose logging off: a value that is
            // not understood does not turn on output nobody asked for.
            match parse_bool(&v) {
                Some(b) => c.verbose = b,
                None => bad(
                    vars::VERBOSE,
                    &v,
                    VERBOSE_VALUES,
                    "off (no verbose logging)".into(),
                ),
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
                    "the backend's default".into(),
                );
            }
        }

        if let Some(v) = get(vars::OUTPUT) {
            match validate_output_pattern(&v).and_then(|()| output_vars_set(&v, &get)) {
                Ok(()) => {
                    c.output = v;
                    c.output_from_env = true;
                }
                Err(why) => bad(vars::OUTPUT, &v, &why, format!("{DEFAULT_OUTPUT:?}")),
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
                Err(word) => {
                    // The value is quoted once; the word that is wrong is
                    // named apart only when the list has others.
                    let which = if word == v.trim() {
                        String::new()
                    } else {
                        format!("; {} is none of these", crate::log::quoted(&word))
                    };
                    bad(
                        vars::TRACE,
                        &v,
                        &format!(
                            "a list of gpu, api, markers (also spelt nvtx or roctx), counters, telemetry, uvm, memory, python, all{which}"
                        ),
                        "gpu,api,markers,telemetry".into(),
                    )
                }
            }
            c.telemetry.asked = c.recording.telemetry;
        }
        if let Some(v) = get(vars::TELEMETRY_PERIOD) {
            match parse_period(&v) {
                Some(None) => c.recording.telemetry = false,
                Some(Some(d)) => {
                    let clamped = d.clamp(MIN_TELEMETRY_PERIOD, MAX_TELEMETRY_PERIOD);
                    if clamped != d {
                        bad(
                            vars::TELEMETRY_PERIOD,
                            &v,
                            "a period between 1ms and 10s",
                            format_period(clamped),
                        );
                    }
                    c.telemetry.period = clamped;
                    c.telemetry.asked = true;
                }
                None => bad(
                    vars::TELEMETRY_PERIOD,
                    &v,
                    "a period like 10ms, 500us or 1s (a bare number is ms), or off",
                    format_period(DEFAULT_TELEMETRY_PERIOD),
                ),
            }
        }
        if let Some(v) = get(vars::TELEMETRY_SLOW_PERIOD) {
            match parse_period(&v) {
                Some(None) => c.telemetry.slow_period = None,
                Some(Some(d)) => {
                    let clamped = d.clamp(MIN_SLOW_PERIOD, MAX_SLOW_PERIOD);
                    if clamped != d {
                        bad(
                            vars::TELEMETRY_SLOW_PERIOD,
                            &v,
                            "a period between 100ms and 60s",
                            format_period(clamped),
                        );
                    }
                    c.telemetry.slow_period = Some(clamped);
                }
                None => bad(
                    vars::TELEMETRY_SLOW_PERIOD,
                    &v,
                    "a period like 1s or 500ms, or off",
                    "off".into(),
                ),
            }
        }
        if let Some(v) = get(vars::TELEMETRY_LOCK_DIR) {
            if v.trim().is_empty() || v.contains('\0') || !v.starts_with('/') {
                bad(
                    vars::TELEMETRY_LOCK_DIR,
                    &v,
                    "an absolute folder path",
                    "$XDG_RUNTIME_DIR/gpu-trace, else $TMPDIR/gpu-trace-<uid>".into(),
                );
            } else {
                c.telemetry.lock_dir = Some(v.into());
            }
        }
        fn take<T>(problems: &mut Vec<Problem>, r: Result<Option<T>, Problem>) -> Option<T> {
            r.unwrap_or_else(|p| {
                problems.push(p);
                None
            })
        }
        let modes = [
            ("file", Mode::File),
            ("standalone", Mode::File),
            ("", Mode::File),
            ("system", Mode::System),
            ("both", Mode::Both),
        ];
        if let Some(m) = take(
            &mut problems,
            parse_var(&get, vars::MODE, "file, system or both", "file", |v| {
                parse_choice(v, &modes)
            }),
        ) {
            c.mode = m;
        }
        let sinks = [
            ("direct", FileSink::Direct),
            ("", FileSink::Direct),
            ("service", FileSink::Service),
        ];
        if let Some(w) = take(
            &mut problems,
            parse_var(
                &get,
                vars::FILE_WRITER,
                "direct or service",
                "direct",
                |v| parse_choice(v, &sinks),
            ),
        ) {
            c.file_sink = w;
        }
        let full = [("wait", true), ("", true), ("drop", false)];
        if let Some(w) = take(
            &mut problems,
            parse_var(&get, vars::QUEUE_FULL, "wait or drop", "wait", |v| {
                parse_choice(v, &full)
            }),
        ) {
            c.queue_full_waits = w;
        }
        let (rank, p) = crate::rank::from_lookup(&get);
        c.rank = rank;
        problems.extend(p);
        // Naming metrics asks for counters.
        if !c.metrics.is_empty() && get(vars::TRACE).is_none() {
            c.recording.counters = true;
        }
        (c, problems)
    }
}

/// Reads the process environment, as [`Config::from_env`] does: a value
/// that is not UTF-8 comes back lossily converted, to be reported like any
/// other bad value.
pub fn env_lookup(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) => Some(v),
        Err(std::env::VarError::NotUnicode(v)) => Some(v.to_string_lossy().into_owned()),
        Err(std::env::VarError::NotPresent) => None,
    }
}

/// Reads `var` through `get` and parses it with `parse`.
///
/// `Ok(None)` when the variable is not set, `Ok(Some(value))` when `parse`
/// takes it. Otherwise a [`Problem`] naming the variable and its value,
/// with `expected` (what `parse` takes) and `using` (what the caller falls
/// back to), so that every setting, shared or a backend's, is reported the
/// same way:
///
/// ```
/// use gpu_trace_agent::config::{parse_choice, parse_var};
/// let get = |_: &str| Some("fast".to_owned());
/// let speeds = [("slow", 1), ("quick", 2)];
/// let p = parse_var(&get, "MY_SPEED", "slow or quick", "slow", |v| parse_choice(v, &speeds));
/// assert_eq!(
///     p.unwrap_err().to_string(),
///     "MY_SPEED=\"fast\": expected slow or quick; using slow"
/// );
/// ```
///
/// # Errors
/// The [`Problem`] to report when the value is set but `parse` rejects it.
pub fn parse_var<T>(
    get: &dyn Fn(&str) -> Option<String>,
    var: &'static str,
    expected: &str,
    using: &str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<Option<T>, Problem> {
    let Some(v) = get(var) else {
        return Ok(None);
    };
    match parse(&v) {
        Some(t) => Ok(Some(t)),
        None => Err(Problem {
            var,
            value: v,
            expected: expected.to_owned(),
            using: using.to_owned(),
        }),
    }
}

/// [`parse_var`] over the process environment ([`env_lookup`]).
///
/// # Errors
/// As [`parse_var`].
pub fn parse_env<T>(
    var: &'static str,
    expected: &str,
    using: &str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<Option<T>, Problem> {
    parse_var(&env_lookup, var, expected, using, parse)
}

/// The value of the first of `choices` whose name is `v`, trimmed and
/// compared without case (`" Runtime "` is `"runtime"`).
pub fn parse_choice<T: Copy>(v: &str, choices: &[(&str, T)]) -> Option<T> {
    let v = v.trim();
    choices
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(v))
        .map(|&(_, t)| t)
}

/// What `INJECTION_VERBOSE` takes (an empty value is off too).
pub const VERBOSE_VALUES: &str = "1/0, true/false, yes/no or on/off";

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

fn is_valid_suffix(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

pub use gpu_trace_model::names::parse_metric_list;

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

const OUTPUT_ESCAPES: &str =
    "%p (pid), %n (program), %h (host), %q{VAR} (environment variable VAR) or %%";

fn validate_output_pattern(v: &str) -> Result<(), String> {
    if v.trim().is_empty() {
        return Err(format!("a file path or pattern ({OUTPUT_ESCAPES})"));
    }
    if v.contains('\0') {
        return Err("a path without NUL bytes".to_owned());
    }
    if crate::output::pattern_vars(v).is_err() {
        return Err(format!("a path whose % escapes are {OUTPUT_ESCAPES}"));
    }
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            match chars.next() {
                Some('p' | 'n' | 'h' | 'q' | '%') => {}
                _ => return Err(format!("a path whose % escapes are {OUTPUT_ESCAPES}")),
            }
        }
    }
    Ok(())
}

/// Every `%q{VAR}` of a valid pattern names a variable that is set.
fn output_vars_set(v: &str, get: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
    for var in crate::output::pattern_vars(v).unwrap_or_default() {
        if get(var).is_none() {
            return Err(format!(
                "%q{{{var}}} to name a set environment variable, and {var} is not set"
            ));
        }
    }
    Ok(())
}

/// Parses a period: a number with `ns`, `us` (`µs`), `ms` or `s` (a bare
/// number is milliseconds). `Some(None)` for `off` (also `0`, `none`,
/// `false`, `no`): the reading is switched off.
pub fn parse_period(v: &str) -> Option<Option<Duration>> {
    let t = v.trim().to_ascii_lowercase();
    if matches!(t.as_str(), "off" | "none" | "false" | "no" | "0") {
        return Some(None);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().ok()?;
    let ns_per = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "" | "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    let ns = n * ns_per;
    (ns.is_finite() && (1.0..1e18).contains(&ns)).then(|| Some(Duration::from_nanos(ns as u64)))
}

/// `10ms`, `1.5s`, `500us`: how periods are written back in messages.
pub fn format_period(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

fn parse_recording(v: &str) -> Result<Recording, String> {
    let mut r = Recording::NONE;
    for w in v
        .split([',', ';', '+'])
        .map(str::trim)
        .filter(|w| !w.is_empty())
    {
        match w.to_ascii_lowercase().as_str() {
            "gpu" | "kernels" | "renderstages" => r.gpu = true,
            "api" => r.api = true,
            // Aliases, accepted whatever the backend: people name the
            // annotation API they use.
            "markers" | "nvtx" | "roctx" => r.markers = true,
            "counters" | "metrics" => r.counters = true,
            "telemetry" => r.telemetry = true,
            "uvm" => r.uvm = true,
            "memory" => r.memory = true,
            "python" => r.python = true,
            "all" => r = Recording::ALL,
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

    /// A relative lock folder would be a different folder in each working
    /// directory, and made there.
    #[test]
    fn the_lock_folder_must_be_absolute() {
        let (c, p) = cfg(&[(vars::TELEMETRY_LOCK_DIR, "/run/job/locks")]);
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(c.telemetry.lock_dir, Some("/run/job/locks".into()));
        for bad in ["locks", "./locks", " ", ""] {
            let (c, p) = cfg(&[(vars::TELEMETRY_LOCK_DIR, bad)]);
            assert_eq!(c.telemetry.lock_dir, None, "{bad:?}");
            assert_eq!(
                p[0].to_string(),
                format!(
                    "INJECTION_TELEMETRY_LOCK_DIR={bad:?}: expected an absolute folder path; using $XDG_RUNTIME_DIR/gpu-trace, else $TMPDIR/gpu-trace-<uid>"
                )
            );
        }
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
            (vars::OUTPUT, "trace-%q{}.pftrace"),
            (vars::OUTPUT, "trace-%q{GPU_TRACE_SURELY_UNSET}.pftrace"),
            (vars::MODE, "cloud"),
            (vars::BUFFER_SIZE, "12x"),
            (vars::BUFFER_SIZE, "16"),
            (vars::BUFFER_SIZE, "99G"),
            (vars::FLUSH_PERIOD_MS, "-5"),
            (vars::QUEUE_SIZE, "4K"),
            (vars::QUEUE_SIZE, "lots"),
            (vars::QUEUE_FULL, "block"),
            (vars::FLUSH_PERIOD_MS, "10"),
            (vars::TRACE, "gpu,telemetri"),
            (vars::TELEMETRY_PERIOD, "fast"),
            (vars::TELEMETRY_PERIOD, "10 parsecs"),
            (vars::TELEMETRY_SLOW_PERIOD, "-1s"),
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
                vars::TELEMETRY_PERIOD | vars::TELEMETRY_SLOW_PERIOD => {
                    assert_eq!(c.telemetry, d.telemetry)
                }
                _ => {}
            }
        }
    }

    #[test]
    fn a_verbose_value_not_understood_leaves_verbose_off() {
        for v in ["1", "true", "YES", " on "] {
            let (c, p) = cfg(&[(vars::VERBOSE, v)]);
            assert!(c.verbose && p.is_empty(), "{v:?}: {p:?}");
        }
        for v in ["0", "false", "no", "off", ""] {
            let (c, p) = cfg(&[(vars::VERBOSE, v)]);
            assert!(!c.verbose && p.is_empty(), "{v:?}: {p:?}");
        }
        for v in ["garbage", "y", "2", "verbose"] {
            let (c, p) = cfg(&[(vars::VERBOSE, v)]);
            assert!(!c.verbose, "{v:?} turned verbose logging on");
            assert_eq!(
                p.iter().map(ToString::to_string).collect::<Vec<_>>(),
                [format!(
                    "INJECTION_VERBOSE={v:?}: expected 1/0, true/false, yes/no or on/off; using off (no verbose logging)"
                )]
            );
        }
    }

    #[test]
    fn a_bad_value_is_quoted_once_escaped_and_cut() {
        let (_, p) = cfg(&[(vars::TRACE, "telemetri")]);
        let msg = p[0].to_string();
        assert_eq!(msg.matches("telemetri").count(), 1, "{msg}");
        // In a list, the word that is wrong is named too.
        let (_, p) = cfg(&[(vars::TRACE, "gpu,telemetri")]);
        assert!(
            p[0].to_string()
                .ends_with("; \"telemetri\" is none of these; using gpu,api,markers,telemetry"),
            "{p:?}"
        );
        let long = "x".repeat(200_000);
        let (_, p) = cfg(&[(vars::TRACE, &long), (vars::MODE, "a\nb\u{1b}[2J")]);
        let msgs: Vec<String> = p.iter().map(ToString::to_string).collect();
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert!(msgs[0].len() < 600, "{}", msgs[0].len());
        assert!(
            msgs[0].starts_with(&format!(
                "INJECTION_TRACE=\"{}\"…(200000 bytes): expected a list of gpu,",
                "x".repeat(crate::log::VALUE_LIMIT)
            )),
            "{}",
            &msgs[0][..300]
        );
        assert_eq!(
            msgs[1],
            "INJECTION_MODE=\"a\\nb\\u{1b}[2J\": expected file, system or both; using file"
        );
    }

    #[test]
    fn the_file_writer_is_direct_unless_the_service_is_asked_for() {
        let (c, p) = cfg(&[]);
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(c.file_sink, FileSink::Direct);
        let (c, p) = cfg(&[(vars::FILE_WRITER, "service")]);
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(c.file_sink, FileSink::Service);
        let (c, p) = cfg(&[(vars::FILE_WRITER, "sdk")]);
        assert_eq!(c.file_sink, FileSink::Direct);
        assert_eq!(
            p[0].to_string(),
            "INJECTION_FILE_WRITER=\"sdk\": expected direct or service; using direct"
        );
    }

    #[test]
    fn output_variables_must_be_set() {
        let (c, p) = cfg(&[(vars::OUTPUT, "r-%q{RANK}.pftrace"), ("RANK", "0")]);
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(c.output, "r-%q{RANK}.pftrace");
        let (c, p) = cfg(&[(vars::OUTPUT, "r-%q{RANK}.pftrace")]);
        assert_eq!(c.output, DEFAULT_OUTPUT);
        assert_eq!(
            p[0].to_string(),
            "INJECTION_OUTPUT=\"r-%q{RANK}.pftrace\": expected %q{RANK} to name a set environment variable, and RANK is not set; using \"%n-%p.pftrace\""
        );
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
                ..Recording::NONE
            }
        );
    }

    #[test]
    fn python_call_sites_are_off_unless_named_and_all_includes_them() {
        let (c, _) = cfg(&[]);
        assert_eq!(c.recording.python, gpu_trace_model::writer::DEFAULT_PYTHON);
        assert!(!c.recording.python);
        let (c, p) = cfg(&[(vars::TRACE, "gpu,api,Python")]);
        assert!(p.is_empty(), "{p:?}");
        assert!(c.recording.python && c.recording.api && !c.recording.markers);
        let (c, _) = cfg(&[(vars::TRACE, "all")]);
        assert!(c.recording.python);
        let (_, p) = cfg(&[(vars::TRACE, "gpu,pyhton")]);
        assert!(
            p[0].to_string().contains("\"pyhton\" is none of these"),
            "{}",
            p[0]
        );
        assert!(p[0].to_string().contains("python, all"), "{}", p[0]);
    }

    #[test]
    fn uvm_and_memory_are_off_unless_named() {
        let (c, p) = cfg(&[]);
        assert!(p.is_empty() && !c.recording.uvm && !c.recording.memory);
        let (c, p) = cfg(&[(vars::TRACE, "gpu,api,uvm")]);
        assert!(p.is_empty(), "{p:?}");
        assert!(c.recording.uvm && !c.recording.memory && c.recording.gpu);
        let (c, _) = cfg(&[(vars::TRACE, "api+memory")]);
        assert!(c.recording.memory && !c.recording.uvm && !c.recording.gpu);
        let (c, _) = cfg(&[(vars::TRACE, "all")]);
        assert!(c.recording.uvm && c.recording.memory);
        let (_, p) = cfg(&[(vars::TRACE, "gpu,um")]);
        assert!(p[0].to_string().contains("uvm, memory"), "{p:?}");
    }

    #[test]
    fn marker_aliases_name_no_backend() {
        for word in ["markers", "nvtx", "roctx", "NVTX"] {
            let (c, p) = cfg(&[(vars::TRACE, word)]);
            assert!(p.is_empty(), "{word}: {p:?}");
            assert!(c.recording.markers && !c.recording.gpu, "{word}");
        }
        // Problem texts name no backend's defaults.
        let (_, p) = cfg(&[(vars::TRACE, "telemetri")]);
        assert!(
            p[0].to_string().contains("using gpu,api,markers,telemetry"),
            "{p:?}"
        );
        let (_, p) = cfg(&[(vars::SUFFIX, "a b")]);
        assert!(
            p[0].to_string().ends_with("using the backend's default"),
            "{p:?}"
        );
    }

    #[test]
    fn telemetry_is_on_by_default_and_switched_by_trace_and_period() {
        let (c, p) = cfg(&[]);
        assert!(p.is_empty());
        assert!(c.recording.telemetry && !c.telemetry.asked);
        assert_eq!(c.telemetry.period, Duration::from_millis(10));
        assert_eq!(c.telemetry.slow_period, None, "slow readings are off");
        // A list that does not name it leaves it out; naming it asks for it.
        let (c, _) = cfg(&[(vars::TRACE, "gpu,api")]);
        assert!(!c.recording.telemetry);
        let (c, _) = cfg(&[(vars::TRACE, "gpu,telemetry")]);
        assert!(c.recording.telemetry && c.telemetry.asked);
        let (c, _) = cfg(&[(vars::TRACE, "all")]);
        assert!(c.recording.telemetry && c.telemetry.asked);
        // --no-telemetry sets the period off, whatever the list says.
        let (c, p) = cfg(&[(vars::TRACE, "all"), (vars::TELEMETRY_PERIOD, "off")]);
        assert!(p.is_empty() && !c.recording.telemetry && c.recording.counters);
        let (c, p) = cfg(&[
            (vars::TELEMETRY_PERIOD, " 250us "),
            (vars::TELEMETRY_SLOW_PERIOD, "2s"),
        ]);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(
            p[0].to_string(),
            "INJECTION_TELEMETRY_PERIOD=\" 250us \": expected a period between 1ms and 10s; using 1ms"
        );
        assert_eq!(c.telemetry.period, Duration::from_millis(1), "clamped");
        assert!(c.telemetry.asked);
        assert_eq!(c.telemetry.slow_period, Some(Duration::from_secs(2)));
        let (c, p) = cfg(&[(vars::TELEMETRY_PERIOD, "1min")]);
        assert_eq!(c.telemetry.period, Duration::from_millis(10));
        assert!(p[0].to_string().contains("a bare number is ms"), "{p:?}");
        let (c, p) = cfg(&[(vars::TELEMETRY_PERIOD, "60s")]);
        assert_eq!(c.telemetry.period, Duration::from_secs(10));
        assert!(p[0].to_string().ends_with("using 10s"), "{p:?}");
    }

    #[test]
    fn periods() {
        let ms = |n| Some(Some(Duration::from_millis(n)));
        assert_eq!(parse_period("10ms"), ms(10));
        assert_eq!(parse_period("10"), ms(10));
        assert_eq!(parse_period("1.5s"), ms(1500));
        assert_eq!(
            parse_period("500us"),
            Some(Some(Duration::from_micros(500)))
        );
        assert_eq!(parse_period("OFF"), Some(None));
        assert_eq!(parse_period("0"), Some(None));
        assert_eq!(parse_period("ms"), None);
        assert_eq!(parse_period("-5ms"), None);
        assert_eq!(parse_period("5 ms"), ms(5));
        assert_eq!(format_period(Duration::from_millis(10)), "10ms");
        assert_eq!(format_period(Duration::from_secs(10)), "10s");
        assert_eq!(format_period(Duration::from_micros(1500)), "1500us");
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
