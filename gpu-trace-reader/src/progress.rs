//! A progress line on stderr while a large trace is read.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Files smaller than this read in about a second: no bar.
pub const MIN_BYTES: u64 = 64 << 20;

/// A one-line progress bar on stderr, redrawn at most ten times a second
/// and erased when dropped.
#[derive(Debug)]
pub struct Bar {
    label: String,
    total: u64,
    last: Option<Instant>,
    started: Instant,
}

impl Bar {
    /// A bar for reading `total` bytes, when that is at least [`MIN_BYTES`]
    /// and stderr is a terminal (never into a log). `label` starts the line,
    /// e.g. `gpu-trace: reading x.pftrace`.
    pub fn stderr(label: impl Into<String>, total: u64) -> Option<Bar> {
        (total >= MIN_BYTES && std::io::stderr().is_terminal()).then(|| Bar {
            label: label.into(),
            total,
            last: None,
            started: Instant::now(),
        })
    }

    /// Shows that `done` bytes of the total are read.
    pub fn update(&mut self, done: u64) {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(now);
        let frac = (done as f64 / self.total.max(1) as f64).min(1.0);
        let width = 30;
        let filled = (frac * width as f64) as usize;
        let secs = now.duration_since(self.started).as_secs_f64().max(1e-3);
        let _ = write!(
            std::io::stderr().lock(),
            "\r{} [{}{}] {:>3.0}% {}/{} MiB {:.0} MB/s\x1b[K",
            self.label,
            "#".repeat(filled),
            " ".repeat(width - filled),
            frac * 100.0,
            done >> 20,
            self.total >> 20,
            done as f64 / secs / 1e6
        );
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if self.last.is_some() {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
        }
    }
}
