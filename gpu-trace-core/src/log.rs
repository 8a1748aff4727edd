//! Diagnostics on stderr, never stdout: the application owns stdout.
//!
//! Errors and warnings that the user must act on are always printed, once.
//! Everything else needs `INJECTION_VERBOSE`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static VERBOSE: AtomicBool = AtomicBool::new(false);
static ONCE: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// Turns verbose logging on or off for the process.
pub fn set_verbose(on: bool) {
    VERBOSE.store(on, Ordering::Relaxed);
}

/// Whether verbose logging is on.
pub fn verbose() -> bool {
    VERBOSE.load(Ordering::Relaxed)
}

/// Prints one line to stderr with the tool's prefix.
pub fn line(msg: std::fmt::Arguments<'_>) {
    // A closed stderr must not take the application down.
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "gpu-trace: {msg}");
}

/// Prints a line once per `key` for the life of the process.
pub fn once(key: &'static str, msg: std::fmt::Arguments<'_>) {
    let first = match ONCE.lock() {
        Ok(mut seen) if !seen.contains(&key) => {
            seen.push(key);
            true
        }
        Ok(_) => false,
        Err(_) => true,
    };
    if first {
        line(msg);
    }
}

/// Logs when `INJECTION_VERBOSE` is on.
#[macro_export]
macro_rules! verbose {
    ($($arg:tt)*) => {
        if $crate::log::verbose() {
            $crate::log::line(format_args!($($arg)*));
        }
    };
}

/// Logs unconditionally: something the user must know.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)*) => {
        $crate::log::line(format_args!($($arg)*))
    };
}

/// Logs unconditionally, once per call site.
#[macro_export]
macro_rules! warn_once {
    ($($arg:tt)*) => {
        $crate::log::once(concat!(file!(), ":", line!()), format_args!($($arg)*))
    };
}
