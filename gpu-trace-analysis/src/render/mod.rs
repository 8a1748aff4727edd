//! The summary for people and programs: text tables ([`to_text`]), CSV
//! ([`to_csv`]) and JSON ([`to_json`]), each showing the tables
//! [`Options`] selects.
//!
//! Text from a trace (kernel names, messages) is escaped in the text
//! tables ([`gpu_trace_reader::text`]); CSV and JSON keep it whole.

mod csv_out;
mod diff_out;
mod json_out;
pub mod text;

use crate::{NameStyle, Row, Summary};

/// A table of the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// Where the time goes, in one paragraph with its numbers.
    Verdict,
    /// The processes side by side as the ranks of a job, with the verdict.
    Ranks,
    /// Per kernel name.
    Kernels,
    /// Per memory operation.
    Memops,
    /// Per API function.
    Api,
    /// Per NVTX / roctx range name.
    Nvtx,
    /// Per-kernel counters.
    Counters,
    /// The busy time of each device engine.
    Devices,
    /// Device telemetry.
    Telemetry,
    /// The busy time of each stream.
    Streams,
    /// Each thread's time waiting for the GPU.
    Threads,
    /// Each device's idle time by cause: host, kernel or other wait.
    Idle,
    /// Each device's time: compute, communication, memory, idle.
    Temporal,
    /// Per kernel name, its launch calls and launch delays, and the
    /// longest delays.
    Launches,
}

impl Report {
    /// Every table, in the order shown by default.
    pub const ALL: [Report; 14] = [
        Report::Verdict,
        Report::Ranks,
        Report::Kernels,
        Report::Memops,
        Report::Api,
        Report::Nvtx,
        Report::Counters,
        Report::Devices,
        Report::Idle,
        Report::Temporal,
        Report::Launches,
        Report::Telemetry,
        Report::Streams,
        Report::Threads,
    ];

    /// Its name (`--report`'s, CSV's `report` column).
    pub fn name(self) -> &'static str {
        match self {
            Report::Ranks => "ranks",
            Report::Kernels => "kernels",
            Report::Memops => "memops",
            Report::Api => "api",
            Report::Nvtx => "nvtx",
            Report::Counters => "counters",
            Report::Devices => "devices",
            Report::Telemetry => "telemetry",
            Report::Streams => "streams",
            Report::Threads => "threads",
            Report::Verdict => "verdict",
            Report::Idle => "idle",
            Report::Temporal => "temporal",
            Report::Launches => "launches",
        }
    }

    /// A comma-separated list of names (any case), in the order given,
    /// each once.
    ///
    /// # Errors
    /// A name that is none of [`Report::ALL`]'s, in a message that names it
    /// and the valid ones.
    pub fn parse_list(list: &str) -> Result<Vec<Report>, String> {
        let mut out = Vec::new();
        for w in list.split(',').map(str::trim) {
            match Report::ALL
                .iter()
                .find(|r| r.name().eq_ignore_ascii_case(w))
            {
                Some(r) if !out.contains(r) => out.push(*r),
                Some(_) => {}
                None => {
                    let names: Vec<&str> = Report::ALL.iter().map(|r| r.name()).collect();
                    return Err(format!(
                        "--report {w:?}: expected {} (comma-separated)",
                        names.join(", ")
                    ));
                }
            }
        }
        Ok(out)
    }
}

/// What the rendered summary shows.
#[derive(Debug, Clone)]
pub struct Options {
    /// The tables, in the order shown.
    pub reports: Vec<Report>,
    /// Whether the user named them: a named table that is empty says so
    /// (text), or stays as a header (CSV).
    pub explicit: bool,
    /// Only the first N rows of each table (the longest total time, the
    /// busiest, the most waiting).
    pub top: Option<usize>,
    /// Names longer than this many characters are cut, with an ellipsis,
    /// in text tables (0: never).
    pub name_width: usize,
    /// How kernels are named in text tables (CSV and JSON have every
    /// form).
    pub names: NameStyle,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            reports: Report::ALL.to_vec(),
            explicit: false,
            top: None,
            name_width: 60,
            names: NameStyle::Short,
        }
    }
}

/// The summary as text tables, every string from a trace escaped (see
/// [`text`]).
pub fn to_text(s: &Summary, o: &Options) -> String {
    text::render(s, o)
}

/// The summary as CSV: one table per report, each with its header row,
/// separated by an empty line; every row starts with
/// `report,scope,file,pid`.
pub fn to_csv(s: &Summary, o: &Options) -> String {
    csv_out::render(s, o)
}

/// The summary as one JSON document: [`Summary`]'s serialisation, with
/// the tables `o` selects and their first `o.top` rows.
pub fn to_json(s: &Summary, o: &Options) -> serde_json::Value {
    json_out::render(s, o)
}

/// A kernel row's name as `style` has it.
pub fn kernel_name(r: &Row, style: NameStyle) -> &str {
    match style {
        NameStyle::Short => r.short_name.as_deref().unwrap_or(&r.name),
        NameStyle::Base => crate::names::base_name(&r.name),
        NameStyle::Full => &r.name,
        NameStyle::Mangled => r.mangled.as_deref().unwrap_or(&r.name),
    }
}

/// A [`crate::diff::Diff`] as text tables (the options' `top`,
/// `name_width` and `names`; every string from a trace escaped).
pub fn diff_to_text(d: &crate::diff::Diff, o: &Options) -> String {
    diff_out::text(d, o)
}

/// A [`crate::diff::Diff`] as CSV: each side's idle breakdown, then one
/// table per kind, each with its header row.
pub fn diff_to_csv(d: &crate::diff::Diff, o: &Options) -> String {
    diff_out::csv(d, o)
}

/// A [`crate::diff::Diff`] as JSON.
pub fn diff_to_json(d: &crate::diff::Diff, o: &Options) -> serde_json::Value {
    diff_out::json(d, o)
}
