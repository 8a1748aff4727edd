//! `record`'s options checked before anything runs, by the very parsers the
//! injections use (the agent's [`Config`], the kernel filter, the CUDA
//! settings): a value they would refuse stops here, naming the flag as it
//! was typed, or the variable when it came from the environment.

use gpu_trace_agent::Config;
use gpu_trace_agent::config::{Problem, env_lookup, vars};
use gpu_trace_agent::cuda_config::{self, CudaConfig};
use gpu_trace_agent::filter;
use gpu_trace_agent::windows;
use std::path::PathBuf;

/// A flag of `record` that sets an injection variable.
pub(crate) struct Flag {
    /// The variable it sets.
    pub(crate) var: &'static str,
    /// How the user typed it (`-t`, `--trace`), for messages.
    pub(crate) typed: String,
    /// Its value.
    pub(crate) value: Option<String>,
}

/// The variables `record` sets from its flags, with the flags' clap ids
/// and long names.
pub(crate) const FLAGS: [(&str, &str, &str); 20] = [
    (vars::OUTPUT, "output", "--output"),
    (vars::TRACE, "trace", "--trace"),
    (vars::METRICS, "metrics", "--metrics"),
    (vars::MODE, "mode", "--mode"),
    (vars::BUFFER_SIZE, "buffer_size", "--buffer-size"),
    (
        vars::FLUSH_PERIOD_MS,
        "flush_period_ms",
        "--flush-period-ms",
    ),
    (cuda_config::vars::API_LAYER, "api_layer", "--api-layer"),
    (
        cuda_config::vars::CAPTURE_RANGE,
        "capture_range",
        "--capture-range",
    ),
    (
        cuda_config::vars::CAPTURE_COUNT,
        "capture_count",
        "--capture-count",
    ),
    (filter::vars::KERNELS, "kernels", "--kernels"),
    (filter::vars::NVTX_INCLUDE, "nvtx_include", "--nvtx-include"),
    (filter::vars::NVTX_EXCLUDE, "nvtx_exclude", "--nvtx-exclude"),
    (filter::vars::SKIP, "kernel_skip", "--kernel-skip"),
    (filter::vars::COUNT, "kernel_count", "--kernel-count"),
    (windows::vars::PAUSED, "paused", "--paused"),
    (windows::vars::DELAY, "delay", "--delay"),
    (windows::vars::DURATION, "duration", "--duration"),
    (windows::vars::WINDOW, "window", "--window"),
    (windows::vars::EVERY, "every", "--every"),
    (
        vars::TELEMETRY_PERIOD,
        "telemetry_period",
        "--telemetry-period",
    ),
];

/// The validated settings of one `record`.
pub(crate) struct Checked {
    /// The shared configuration as the program will see it.
    pub(crate) config: Config,
    /// Variables the output pattern names (`%q{VAR}`) that are not set
    /// here: a launcher inside the command (torchrun's `RANK`) may set
    /// them for the processes it starts.
    pub(crate) unset_output_vars: Vec<String>,
    /// The variables to set in the program's environment.
    pub(crate) env: Vec<(&'static str, String)>,
}

/// Checks every setting the program will see: the flags, and the
/// injection variables already in the environment that no flag replaces.
pub(crate) fn check(flags: &[Flag], verbose: bool) -> Result<Checked, String> {
    let flag_of = |var: &str| flags.iter().find(|f| f.var == var && f.value.is_some());
    let given = |var: &str| -> Option<String> {
        if var == vars::VERBOSE && verbose {
            return Some("1".to_owned());
        }
        match flag_of(var) {
            Some(f) => f.value.clone(),
            None => env_lookup(var),
        }
    };
    let unset_output_vars: Vec<String> = given(vars::OUTPUT)
        .as_deref()
        .and_then(|o| gpu_trace_agent::output::pattern_vars(o).ok())
        .unwrap_or_default()
        .into_iter()
        .filter(|v| env_lookup(v).is_none())
        .map(str::to_owned)
        .collect();
    // Those are checked in each process, where they may be set.
    let get = |var: &str| -> Option<String> {
        if unset_output_vars.iter().any(|v| v == var) {
            return Some("unset".to_owned());
        }
        given(var)
    };
    let mut problems: Vec<Problem> = Vec::new();
    let (config, p) = Config::from_lookup(get);
    // The launcher's rank variables are not ours to refuse: each traced
    // process says once that it ignores a bad one.
    problems.extend(
        p.into_iter()
            .filter(|p| !gpu_trace_agent::rank::vars::ALL.contains(&p.var)),
    );
    problems.extend(filter::from_lookup(&get).1);
    problems.extend(CudaConfig::from_lookup(get).1);
    problems.extend(windows::Plan::from_lookup(&get).1);
    if let Some(p) = problems.first() {
        // A problem may name another variable (`--window` against
        // `INJECTION_EVERY`): as its flag, where a flag set it.
        let typed = |text: &str| {
            flags
                .iter()
                .filter(|f| f.value.is_some())
                .fold(text.to_owned(), |t, f| {
                    t.replace(&format!("{}=", f.var), &format!("{} ", f.typed))
                        .replace(f.var, &f.typed)
                })
        };
        return Err(match flag_of(p.var) {
            Some(f) => format!(
                "{} {:?}: expected {}",
                f.typed,
                typed(&p.value),
                typed(&p.expected)
            ),
            None => format!(
                "{}={:?} (from the environment): expected {}",
                p.var, p.value, p.expected
            ),
        });
    }
    let mut env: Vec<(&'static str, String)> = flags
        .iter()
        .filter_map(|f| f.value.clone().map(|v| (f.var, v)))
        .collect();
    if verbose {
        env.push((vars::VERBOSE, "1".to_owned()));
    }
    Ok(Checked {
        config,
        unset_output_vars,
        env,
    })
}

/// The trace file a pattern names before the program runs, when that can
/// be known: not with `%p` (each process's own), nor for a directory.
pub(crate) fn known_output(pattern: &str, command: &[String]) -> Result<Option<PathBuf>, String> {
    if pattern.contains("%p") {
        return Ok(None);
    }
    use gpu_trace_agent::output::{expand_with, program_name_of, wanted_path};
    let program = program_name_of(command);
    let expanded = expand_with(pattern, 0, &program, &env_lookup).map_err(|e| e.to_string())?;
    // A directory gets `<program>-<pid>.pftrace` inside it.
    if pattern.ends_with('/') || std::path::Path::new(&expanded).is_dir() {
        return Ok(None);
    }
    wanted_path(pattern, 0, &program, &env_lookup)
        .map(Some)
        .map_err(|e| e.to_string())
}
