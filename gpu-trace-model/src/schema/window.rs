//! The recording-window markers of the trace's GPU log: every kind of
//! window (the control socket's, a time plan's, a capture range's) leaves
//! one line where it opens and one where it closes, and readers (`gpu-trace
//! stats`) find the windows back from them.

use std::fmt;

/// How window lines in the trace's GPU log begin: `recording window N
/// opened (why)` and `recording window N closed (why)`.
pub const WINDOW_LOG: &str = "recording window";

/// One opening or closing of a recording window, as its log line says.
///
/// ```
/// use gpu_trace_model::schema::RecordingWindow;
/// let w = RecordingWindow::opened(2, "cudaProfilerStart");
/// assert_eq!(w.to_string(), "recording window 2 opened (cudaProfilerStart)");
/// assert_eq!(RecordingWindow::parse(&w.to_string()), Some(w));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordingWindow {
    /// The window's number in the process, from 1.
    pub id: u32,
    /// Whether it opens (else it closes).
    pub opened: bool,
    /// What opened or closed it: `cudaProfilerStart`, `control socket`,
    /// `delay`, `nvtx:step`, ...
    pub reason: String,
}

impl RecordingWindow {
    /// Window `id` opens, because of `reason`.
    pub fn opened(id: u32, reason: impl Into<String>) -> Self {
        Self {
            id,
            opened: true,
            reason: reason.into(),
        }
    }

    /// Window `id` closes, because of `reason`.
    pub fn closed(id: u32, reason: impl Into<String>) -> Self {
        Self {
            id,
            opened: false,
            reason: reason.into(),
        }
    }

    /// The marker a log line holds, if it is one. A line of an older
    /// writer without a reason (`recording window 3 closed`) has an empty
    /// one.
    pub fn parse(line: &str) -> Option<Self> {
        let rest = line.strip_prefix(WINDOW_LOG)?.trim_start();
        let (id, rest) = rest.split_once(' ')?;
        let id = id.parse().ok()?;
        let (what, reason) = rest.split_once(' ').unwrap_or((rest, ""));
        let opened = match what {
            "opened" => true,
            "closed" => false,
            _ => return None,
        };
        let reason = reason
            .trim()
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or(reason.trim());
        Some(Self {
            id,
            opened,
            reason: reason.to_owned(),
        })
    }
}

impl fmt::Display for RecordingWindow {
    /// The log line: `recording window N opened (why)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.opened { "opened" } else { "closed" };
        write!(f, "{WINDOW_LOG} {} {what} ({})", self.id, self.reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_other_lines_are_not_windows() {
        for w in [
            RecordingWindow::opened(1, "control socket"),
            RecordingWindow::closed(12, "duration (2s)"),
        ] {
            assert_eq!(RecordingWindow::parse(&w.to_string()), Some(w));
        }
        assert_eq!(
            RecordingWindow::parse("recording window 3 closed"),
            Some(RecordingWindow::closed(3, ""))
        );
        assert_eq!(
            RecordingWindow::parse("recording window x opened (a)"),
            None
        );
        assert_eq!(
            RecordingWindow::parse("recording window 1 paused (a)"),
            None
        );
        assert_eq!(RecordingWindow::parse("gpu-trace summary: kernels=1"), None);
    }
}
