//! Recording that opens and closes while the process runs: capture ranges
//! (`cudaProfilerStart`/`Stop`, NVTX ranges), and the agent's recording
//! windows (the control socket, a time plan). They flip one switch, which
//! the writer implements: while it is closed nothing is recorded and the
//! vendor's tracing is off.

/// A switch that opens and closes recording. Cheap to call from any
/// thread.
pub trait RecordingSwitch: Send + Sync {
    /// Opens (`true`) or closes recording. When it returns, the backend
    /// has been told: work the caller submits next is inside (or outside)
    /// the recording. Does nothing when nothing changes.
    fn set(&self, open: bool);

    /// Whether recording is open.
    fn is_open(&self) -> bool;
}
