//! What the agent tells a writer, and what a writer tells the agent: the
//! contract between the two halves that run inside a traced process,
//! which know each other only through this module.
//!
//! - [`TraceSettings`]: where the trace goes and what a standalone trace
//!   records, settled from the configuration before the writer starts;
//! - [`WriterListener`]: what the agent does as sessions come and go
//!   (sample telemetry while it is recorded) and at the trace's end.

use crate::collector::Limits;
use crate::rank::Rank;
use std::path::PathBuf;
use std::time::Duration;

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

/// How the standalone trace reaches its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FileSink {
    /// The encoder's packets go straight into the file (the default).
    #[default]
    Direct,
    /// Through the Perfetto SDK's in-process tracing service, as system
    /// mode's go through `traced`: kept for comparison and as a fallback
    /// (`INJECTION_FILE_WRITER=service`). Mode `Both` always writes so.
    Service,
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
    /// Periodic device telemetry: clocks, power, utilisation
    /// (`gpu.telemetry`).
    pub telemetry: bool,
    /// Unified-memory migrations, faults and thrashing (with `gpu.renderstages`).
    pub uvm: bool,
    /// Device memory in use, from allocation and free calls.
    pub memory: bool,
    /// The Python call stacks of launches, copies and synchronisations,
    /// on their API slices (with `api`).
    pub python: bool,
}

impl Default for Recording {
    fn default() -> Self {
        Self {
            gpu: true,
            api: true,
            markers: true,
            counters: false,
            telemetry: true,
            uvm: false,
            memory: false,
            python: DEFAULT_PYTHON,
        }
    }
}

/// Whether Python call stacks are recorded unless asked otherwise.
pub const DEFAULT_PYTHON: bool = false;

impl Recording {
    /// Nothing at all.
    pub const NONE: Recording = Recording {
        gpu: false,
        api: false,
        markers: false,
        counters: false,
        telemetry: false,
        uvm: false,
        memory: false,
        python: false,
    };
    /// Everything.
    pub const ALL: Recording = Recording {
        gpu: true,
        api: true,
        markers: true,
        counters: true,
        telemetry: true,
        uvm: true,
        memory: true,
        python: true,
    };
}

/// The standalone session's buffer by default, KiB: 64 MiB
/// (`INJECTION_BUFFER_SIZE`).
pub const DEFAULT_BUFFER_KB: u32 = 64 * 1024;

/// How often the file is written and the backend flushed by default
/// (`INJECTION_FLUSH_PERIOD_MS`).
pub const DEFAULT_FLUSH_PERIOD: Duration = Duration::from_millis(1000);

/// What a writer needs of the configuration, settled before it starts.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TraceSettings {
    /// Where the trace goes.
    pub mode: Mode,
    /// The standalone trace's file, in file mode: settled (a free name in
    /// a writable folder), not yet created.
    pub output: Option<PathBuf>,
    /// Data-source name suffix; `None`: the backend's.
    pub suffix: Option<String>,
    /// The standalone session's buffer, KiB.
    pub buffer_kb: u32,
    /// How often the file is written and the backend flushed.
    pub flush_period: Duration,
    /// What the standalone trace records.
    pub recording: Recording,
    /// The counters a counters session gets when it names none.
    pub metrics: Vec<String>,
    /// The process's rank, which the trace names.
    pub rank: Option<Rank>,
    /// The recorder's buffers.
    pub limits: Limits,
    /// How the standalone file is written.
    pub file_sink: FileSink,
}

impl TraceSettings {
    /// A standalone trace into `output` with the defaults: 64 MiB of
    /// buffer, written every second, recording GPU work, API calls,
    /// markers and telemetry.
    pub fn file(output: impl Into<PathBuf>) -> Self {
        Self {
            mode: Mode::File,
            output: Some(output.into()),
            suffix: None,
            buffer_kb: DEFAULT_BUFFER_KB,
            flush_period: DEFAULT_FLUSH_PERIOD,
            recording: Recording::default(),
            metrics: Vec::new(),
            rank: None,
            limits: Limits::default(),
            file_sink: FileSink::default(),
        }
    }

    /// For a system session (`traced`'s config decides what is recorded).
    pub fn system() -> Self {
        Self {
            mode: Mode::System,
            output: None,
            ..Self::file(PathBuf::new())
        }
    }
}

/// What the agent does as the writer's sessions come and go. Called from
/// the writer's threads; implementations return quickly.
pub trait WriterListener: Send + Sync {
    /// Device telemetry is now recorded by some session (`on`), or by none.
    fn telemetry(&self, on: bool) {
        let _ = on;
    }

    /// The trace is about to end: stop what feeds it, and return lines for
    /// its log, `(warning, text)`, written with the summary.
    fn ending(&self) -> Vec<(bool, String)> {
        Vec::new()
    }
}
