//! Every environment variable gpu-trace reads, in one table: its default,
//! what it accepts and what it does. The reference page of the docs
//! (`docs/src/reference/environment.md`) is generated from it, and a test
//! fails when a variable the code reads is missing here, or listed here and
//! read nowhere.

/// Which programs read a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scope {
    /// Both injection libraries (CUDA and HIP).
    Both,
    /// The CUDA injection only.
    Cuda,
    /// The HIP injection only.
    Hip,
    /// The `gpu-trace` command.
    Cli,
}

impl Scope {
    /// As the reference page names it.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Both => "CUDA, HIP",
            Scope::Cuda => "CUDA",
            Scope::Hip => "HIP",
            Scope::Cli => "gpu-trace",
        }
    }
}

/// One variable.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Variable {
    /// Its name.
    pub name: &'static str,
    /// Which programs read it.
    pub scope: Scope,
    /// The value used when it is unset.
    pub default: &'static str,
    /// What it accepts, and what it does (Markdown).
    pub meaning: &'static str,
    /// The `gpu-trace record` option that sets it, if any.
    pub option: Option<&'static str>,
}

/// The table, in the order the reference page lists it: output, what is
/// recorded, counters, windows, telemetry, buffers, system mode, libraries.
pub const VARIABLES: &[Variable] = &[
    Variable {
        name: "INJECTION_OUTPUT",
        scope: Scope::Both,
        default: "`%n-%p.pftrace`",
        meaning: "Output path or pattern: `%p` pid, `%n` program (the script for `python x.py`), `%h` host, `%q{VAR}` the value of environment variable `VAR` (e.g. `%q{RANK}`; unset, the pattern is refused), `%%`. A directory (or a trailing `/`) gets the default name inside it; a name without an extension gets `.pftrace`. An existing file is never overwritten: `name.1.pftrace`, `name.2.pftrace` ... is used and announced. A `%q{VAR}` value is cleaned as `%n` is (any character but letters, digits, `.`, `_` and `-` becomes `_`). An unwritable place falls back to the working directory, then to `gpu-trace-<uid>` (mode 0700) in the temporary directory, with a message.",
        option: Some("-o, --output"),
    },
    Variable {
        name: "INJECTION_MODE",
        scope: Scope::Both,
        default: "`file`",
        meaning: "`file`: the process writes its own file. `system`: register with a running `traced` and let its trace config decide what is recorded. `both`.",
        option: Some("--mode"),
    },
    Variable {
        name: "INJECTION_TRACE",
        scope: Scope::Both,
        default: "`gpu,api,markers,telemetry`",
        meaning: "What standalone mode records, a list of: `gpu` (kernels, copies, memsets, and each engine's busy %), `api` (runtime/driver calls, and each thread's GPU wait %), `markers` (NVTX/roctx ranges; `nvtx` and `roctx` are aliases whatever the backend), `counters` (per-kernel hardware counters), `telemetry` (GPU clocks, power, utilisation ...), `uvm` (CUDA: unified-memory migrations and faults), `memory` (CUDA: device memory in use per GPU), `python` (the Python call stack of each launch, copy, set and synchronisation made by a Python thread (holding the GIL, or having released it as PyTorch's operators do), on its API slice, for `stats --report python`; off unless named, see the guide's Python call sites page), or `all`. A list that leaves `telemetry` out switches it off.",
        option: Some("-t, --trace"),
    },
    Variable {
        name: "INJECTION_API_LAYER",
        scope: Scope::Cuda,
        default: "`driver`",
        meaning: "Which layer's calls become API slices. `driver`: every call that reaches the GPU, named as the driver names it (`cuLaunchKernel`), whoever made it. `runtime`: runtime calls under their runtime names (`cudaLaunchKernel`), plus driver calls made directly; a runtime call then costs twice the CUPTI callbacks.",
        option: Some("--api-layer"),
    },
    Variable {
        name: "INJECTION_VERBOSE",
        scope: Scope::Both,
        default: "off",
        meaning: "`1`, `true`, `yes`, `on`: log what the tool does to stderr (never stdout), each line starting with `gpu-trace:`. `0`, `false`, `no`, `off` or empty: not. Anything else is one line naming it, and verbose stays off.",
        option: Some("-v, --verbose"),
    },
    Variable {
        name: "INJECTION_METRICS",
        scope: Scope::Both,
        default: "the tool's defaults",
        meaning: "Per-kernel metrics, split on `,` and `;`, trimmed, de-duplicated. Naming metrics turns counters on. Each unusable name is reported alone, with the nearest valid names; the rest are kept.",
        option: Some("-m, --metrics"),
    },
    Variable {
        name: "INJECTION_KERNEL_FILTER",
        scope: Scope::Both,
        default: "every kernel",
        meaning: "Counters only for kernels whose name matches one of these comma-separated globs (`*`, `?`): the mangled or the demangled name, or with a prefix only the `mangled:`, `demangled:` or `function:` name.",
        option: Some("--kernels"),
    },
    Variable {
        name: "INJECTION_KERNEL_NVTX_INCLUDE",
        scope: Scope::Both,
        default: "any range",
        meaning: "Counters only for launches inside an NVTX/roctx push/pop range (on the launching thread, at any depth) that one of these comma-separated globs matches.",
        option: Some("--nvtx-include"),
    },
    Variable {
        name: "INJECTION_KERNEL_NVTX_EXCLUDE",
        scope: Scope::Both,
        default: "none",
        meaning: "No counters for launches inside a push/pop range that one of these globs matches; wins over the include globs.",
        option: Some("--nvtx-exclude"),
    },
    Variable {
        name: "INJECTION_KERNEL_SKIP",
        scope: Scope::Both,
        default: "`0`",
        meaning: "Counters: leave out the first N launches that pass the name and range filters.",
        option: Some("--kernel-skip"),
    },
    Variable {
        name: "INJECTION_KERNEL_COUNT",
        scope: Scope::Both,
        default: "no limit",
        meaning: "Counters: profile N such launches after the skipped ones.",
        option: Some("--kernel-count"),
    },
    Variable {
        name: "INJECTION_COUNTERS_REPLAY",
        scope: Scope::Cuda,
        default: "`auto`",
        meaning: "`auto` (user replay for one-pass metric sets, kernel replay otherwise), `kernel` (always CUPTI's kernel replay: exact instruction counts), `user`.",
        option: None,
    },
    Variable {
        name: "INJECTION_COUNTERS_BATCH",
        scope: Scope::Cuda,
        default: "`128`",
        meaning: "Counters under user replay: profiled kernels per profiler session (1–1024).",
        option: None,
    },
    Variable {
        name: "INJECTION_PAUSED",
        scope: Scope::Both,
        default: "`0`",
        meaning: "`1`: start with recording off until a window opens (`gpu-trace start`, a delay).",
        option: Some("--paused"),
    },
    Variable {
        name: "INJECTION_DELAY",
        scope: Scope::Both,
        default: "none",
        meaning: "Open the first recording window after this delay (`500ms`, `30s`, `2m`).",
        option: Some("--delay"),
    },
    Variable {
        name: "INJECTION_DURATION",
        scope: Scope::Both,
        default: "none",
        meaning: "Close the first recording window after this long.",
        option: Some("--duration"),
    },
    Variable {
        name: "INJECTION_WINDOW",
        scope: Scope::Both,
        default: "none",
        meaning: "Duty cycle: record a window of this length every `INJECTION_EVERY`.",
        option: Some("--window"),
    },
    Variable {
        name: "INJECTION_EVERY",
        scope: Scope::Both,
        default: "none",
        meaning: "Duty cycle: the period of the windows of `INJECTION_WINDOW`.",
        option: Some("--every"),
    },
    Variable {
        name: "INJECTION_CAPTURE_RANGE",
        scope: Scope::Cuda,
        default: "`none`",
        meaning: "`nvtx:NAME`: record only inside NVTX ranges named NAME. `cudaProfilerApi`: record only between the application's `cudaProfilerStart`/`cuProfilerStart` and the matching stop (`torch.cuda.profiler.start()`/`stop()`), any number of ranges. Everything submitted inside a range is in the trace, including work still running when it closes; nothing outside is. A range that never opens is said at exit.",
        option: Some("--capture-range"),
    },
    Variable {
        name: "INJECTION_CAPTURE_COUNT",
        scope: Scope::Cuda,
        default: "every range",
        meaning: "With a capture range: record this many ranges, then stop. Without one it is said and ignored.",
        option: Some("--capture-count"),
    },
    Variable {
        name: "INJECTION_CONTROL",
        scope: Scope::Both,
        default: "`on`",
        meaning: "`off`: no control socket, so `gpu-trace start`/`stop`/`status` cannot reach the process.",
        option: None,
    },
    Variable {
        name: "INJECTION_DETACH",
        scope: Scope::Cuda,
        default: "`on`",
        meaning: "Detach CUPTI (`cuptiFinalize`) while no window records, so that a paused process pays nothing for it, at most 1,000 times a run (CUPTI keeps some memory at each detach); `N` (1–1000000) sets that limit; `off` keeps it attached.",
        option: None,
    },
    Variable {
        name: "INJECTION_TELEMETRY_PERIOD",
        scope: Scope::Both,
        default: "`10ms`",
        meaning: "How often GPU telemetry is sampled: `500us`, `10ms`, `1s` (a bare number is ms), clamped to 1 ms–10 s with a message naming the value; `off` switches telemetry off.",
        option: Some("--telemetry-period, --no-telemetry"),
    },
    Variable {
        name: "INJECTION_TELEMETRY_SLOW_PERIOD",
        scope: Scope::Cuda,
        default: "`off`",
        meaning: "The slow NVML readings (PCIe throughput, which blocks about 21 ms a call, and total energy) on their own thread at this period (100 ms–60 s), so that they never delay the fast ones.",
        option: None,
    },
    Variable {
        name: "INJECTION_TELEMETRY_LOCK_DIR",
        scope: Scope::Both,
        default: "`$XDG_RUNTIME_DIR/gpu-trace`, else `<tmp>/gpu-trace-<uid>`",
        meaning: "Where the per-GPU lock files are that let one process of a job sample each GPU: an absolute path to a folder of this user's own (mode 0700, made if missing, checked through its descriptor). A folder another user made, one others can write to, or a link is refused with one line, and GPUs are sampled without a lock. `XDG_RUNTIME_DIR` counts only when it is an existing folder of this user's, mode 0700; `<tmp>` is `TMPDIR` when it is an absolute folder, else `/tmp`.",
        option: None,
    },
    Variable {
        name: "INJECTION_BUFFER_SIZE",
        scope: Scope::Both,
        default: "`64M`",
        meaning: "The buffer of the in-process Perfetto service (`65536` KiB, `64M`, `1G`; 1M–4G), when the file is written through it (mode `both`, `INJECTION_FILE_WRITER=service`): a ring read into the file whenever an eighth of it has filled. A larger one only makes the writes rarer. It also bounds the writer's batches (an eighth of it).",
        option: Some("--buffer-size"),
    },
    Variable {
        name: "INJECTION_FILE_WRITER",
        scope: Scope::Both,
        default: "`direct`",
        meaning: "How the standalone file is written: `direct`, the encoded packets straight into the file, or `service`, through the Perfetto SDK's in-process tracing service as before (slower, more CPU, one more thread). Internal: for comparisons and as a fallback.",
        option: None,
    },
    Variable {
        name: "INJECTION_FLUSH_PERIOD_MS",
        scope: Scope::Both,
        default: "`1000`",
        meaning: "The longest time between two writes of the file, and how often the vendor's records are collected (100–600000). The file is first written at once and again 100 ms later, then every period, so that a process that is killed, or replaces its program with `exec` (which runs no exit handler), leaves a valid trace up to the last write.",
        option: Some("--flush-period-ms"),
    },
    Variable {
        name: "INJECTION_QUEUE_SIZE",
        scope: Scope::Both,
        default: "`32M`",
        meaning: "Memory for recorded events waiting for the writer (64K–1G). Application threads may fill an eighth of it, the vendor's delivery thread all of it.",
        option: None,
    },
    Variable {
        name: "INJECTION_QUEUE_FULL",
        scope: Scope::Both,
        default: "`wait`",
        meaning: "What a thread does when the queue is full: `wait` for the writer (at most 500 ms per event; the program then runs at the writer's pace instead of losing events), or `drop` the event at once (counted, and said at exit).",
        option: None,
    },
    Variable {
        name: "INJECTION_DATA_SOURCE_NAME_SUFFIX",
        scope: Scope::Both,
        default: "`nv` / `amd`",
        meaning: "The suffix of the data-source names (`gpu.renderstages.<suffix>`, `gpu.counters.<suffix>`, `gpu.telemetry.<suffix>`).",
        option: None,
    },
    Variable {
        name: "RANK",
        scope: Scope::Both,
        default: "none",
        meaning: "Set by launchers such as torchrun: the process's name in the trace gets ` [rank N/W]` and its descriptor the label `rank=N`. Not a whole number: one line, and ignored.",
        option: None,
    },
    Variable {
        name: "LOCAL_RANK",
        scope: Scope::Both,
        default: "none",
        meaning: "With `RANK`: the label `local_rank=M`.",
        option: None,
    },
    Variable {
        name: "WORLD_SIZE",
        scope: Scope::Both,
        default: "none",
        meaning: "With `RANK`: the label `world_size=W`; a rank not below it is ignored.",
        option: None,
    },
    Variable {
        name: "GPU_TRACE_CUPTI_PATH",
        scope: Scope::Cuda,
        default: "searched",
        meaning: "The CUPTI to load: a file, or a folder holding `libcupti.so*`. Unset, gpu-trace looks for a CUPTI already loaded, next to the loaded CUDA runtime and driver, through the loader's path, under `$CUDA_HOME` and `/usr/local/cuda`, and in the `nvidia-cuda-cupti` wheels of the Python environment; CUPTI older than 13 is skipped.",
        option: None,
    },
    Variable {
        name: "GPU_TRACE_NVML_PATH",
        scope: Scope::Cuda,
        default: "`libnvidia-ml.so.1`",
        meaning: "The NVML to load for telemetry: a file, or a folder holding `libnvidia-ml.so.1`. When set, nothing else is tried.",
        option: None,
    },
    Variable {
        name: "GPU_TRACE_SYSFS_ROOT",
        scope: Scope::Hip,
        default: "`/sys`",
        meaning: "Where the amdgpu sysfs tree is, for AMD telemetry (tests point it at a fake one).",
        option: None,
    },
    Variable {
        name: "GPU_TRACE_LIB_DIR",
        scope: Scope::Cli,
        default: "searched",
        meaning: "The folder holding `libgpu_trace_cuda.so` and `libgpu_trace_hip.so`, and then only that one. Unset, `gpu-trace` looks beside itself, then in `../lib/gpu-trace` and `../lib` from it.",
        option: Some("--lib-dir"),
    },
    Variable {
        name: "GPU_TRACE_RECORD_LOG",
        scope: Scope::Both,
        default: "none",
        meaning: "Set by `gpu-trace record` for the processes it runs: a file to which each appends the path of its trace, or why it runs untraced, for the launcher's summary. Not meant to be set by hand.",
        option: None,
    },
];

/// The variable named `name`, if the table has it.
pub fn find(name: &str) -> Option<&'static Variable> {
    VARIABLES.iter().find(|v| v.name == name)
}

/// The reference page: one section per variable, in the table's order.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Environment variables\n\n\
         <!-- Generated from gpu-trace-agent/src/environment.rs by \
         `GPU_TRACE_BLESS=1 cargo test -p gpu-trace-agent --test reference`; \
         do not edit. -->\n\n\
         `gpu-trace record` sets these for the program it runs, from its \
         options; without the launcher, set them yourself. Each is read once, \
         when the injection starts. A bad value gets one line on stderr \
         naming the variable, the value and what was expected, and the \
         default is used: the application always runs. In a program that \
         runs setuid, setgid or with file capabilities none is read: \
         gpu-trace stays off there (see [Security](../security.md)).\n\n\
         | variable | read by | default | `record` option |\n|---|---|---|---|\n",
    );
    for v in VARIABLES {
        out.push_str(&format!(
            "| [`{}`](#{}) | {} | {} | {} |\n",
            v.name,
            v.name.to_ascii_lowercase(),
            v.scope.name(),
            v.default,
            v.option.map(|o| format!("`{o}`")).unwrap_or_default()
        ));
    }
    for v in VARIABLES {
        out.push_str(&format!(
            "\n## {}\n\nRead by {}. Default: {}.{}\n\n{}\n",
            v.name,
            v.scope.name(),
            v.default,
            v.option
                .map(|o| format!(" Set by `gpu-trace record {o}`."))
                .unwrap_or_default(),
            v.meaning
        ));
    }
    out
}
