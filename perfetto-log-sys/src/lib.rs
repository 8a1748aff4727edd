#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

// The static library must be linked in; nothing of it is named from Rust
// but the two C++ functions below.
use perfetto_sdk_sys as _;

use std::ffi::{CStr, c_char, c_int};
use std::sync::RwLock;

/// Severity of a Perfetto log line (`perfetto::base::LogLev`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// `kLogDebug`.
    Debug,
    /// `kLogInfo`: `PERFETTO_LOG`, such as "Configured tracing session".
    Info,
    /// `kLogImportant`: `PERFETTO_ILOG`.
    Important,
    /// `kLogError`: `PERFETTO_ELOG`, `PERFETTO_PLOG`.
    Error,
}

impl Level {
    fn from_raw(raw: c_int) -> Level {
        match raw {
            0 => Level::Debug,
            1 => Level::Info,
            2 => Level::Important,
            // A level added later is treated as the most severe.
            _ => Level::Error,
        }
    }
}

/// Receives each line: its level, the C++ source file and line that logged
/// it, and the formatted message.
pub type Sink = fn(Level, &str, u32, &str);

/// `perfetto::base::LogMessageCallbackArgs`, passed by value.
#[repr(C)]
struct LogMessageCallbackArgs {
    level: c_int,
    line: c_int,
    filename: *const c_char,
    message: *const c_char,
}

type LogMessageCallback = extern "C" fn(LogMessageCallbackArgs);

unsafe extern "C" {
    /// `void perfetto::base::SetLogMessageCallback(LogMessageCallback)`.
    #[link_name = "_ZN8perfetto4base21SetLogMessageCallbackEPFvNS0_22LogMessageCallbackArgsEE"]
    fn SetLogMessageCallback(callback: Option<LogMessageCallback>);

    /// `void perfetto::base::LogMessage(LogLev, const char*, int, const char*, ...)`,
    /// a printf-style logger; the tests log through it.
    #[cfg(test)]
    #[link_name = "_ZN8perfetto4base10LogMessageENS0_6LogLevEPKciS3_z"]
    fn LogMessage(level: c_int, fname: *const c_char, line: c_int, fmt: *const c_char, ...);
}

static SINK: RwLock<Option<Sink>> = RwLock::new(None);

extern "C" fn trampoline(args: LogMessageCallbackArgs) {
    let text = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: Perfetto passes NUL-terminated strings that live for
            // the call (`LogMessage`'s buffer and `__FILE__`).
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    // A panicking sink must not unwind into C++.
    let _ = std::panic::catch_unwind(|| {
        let sink = *SINK.read().unwrap_or_else(|e| e.into_inner());
        if let Some(sink) = sink {
            sink(
                Level::from_raw(args.level),
                &text(args.filename),
                u32::try_from(args.line).unwrap_or(0),
                &text(args.message),
            );
        }
    });
}

/// Sends every Perfetto log line of this process to `sink` instead of
/// stderr, from now on; a later call replaces the sink. Call it before
/// Perfetto starts (the SDK asks for that: it reads the callback without
/// synchronising with its own threads' first use).
#[doc(alias = "SetLogMessageCallback")]
pub fn set_sink(sink: Sink) {
    *SINK.write().unwrap_or_else(|e| e.into_inner()) = Some(sink);
    // SAFETY: `trampoline` has the C++ callback's signature (a
    // LogMessageCallbackArgs of two ints and two pointers, by value, which
    // the Itanium C++ ABI passes as C does) and lives for the process.
    unsafe { SetLogMessageCallback(Some(trampoline)) };
}

/// Logs `message` through Perfetto's own logger, as its code does: the
/// line reaches the sink (or Perfetto's stderr output without one). For
/// tests of the routing.
#[cfg(test)]
fn log_for_test(level: Level, file: &CStr, line: u32, message: &CStr) {
    let raw = match level {
        Level::Debug => 0,
        Level::Info => 1,
        Level::Important => 2,
        Level::Error => 3,
    };
    // SAFETY: every pointer is a NUL-terminated string valid for the call,
    // and the format "%s" takes exactly the one string argument given.
    unsafe {
        LogMessage(
            raw,
            file.as_ptr(),
            c_int::try_from(line).unwrap_or(c_int::MAX),
            c"%s".as_ptr(),
            message.as_ptr(),
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    static SEEN: Mutex<Vec<(Level, String, u32, String)>> = Mutex::new(Vec::new());

    fn record(level: Level, file: &str, line: u32, message: &str) {
        SEEN.lock()
            .unwrap()
            .push((level, file.to_owned(), line, message.to_owned()));
    }

    fn boom(_: Level, _: &str, _: u32, _: &str) {
        panic!("a sink that panics");
    }

    #[test]
    fn a_line_logged_by_perfetto_reaches_the_sink() {
        set_sink(record);
        log_for_test(
            Level::Info,
            c"tracing_service_impl.cc",
            278,
            c"Configured 1",
        );
        log_for_test(Level::Error, c"x.cc", 7, c"bad \xff byte");
        let seen = SEEN.lock().unwrap().clone();
        assert_eq!(
            seen,
            [
                (
                    Level::Info,
                    "tracing_service_impl.cc".to_owned(),
                    278,
                    "Configured 1".to_owned()
                ),
                (
                    Level::Error,
                    "x.cc".to_owned(),
                    7,
                    "bad \u{fffd} byte".to_owned()
                ),
            ]
        );
        // A panic in the sink stays on the Rust side.
        set_sink(boom);
        log_for_test(Level::Info, c"y.cc", 1, c"still alive");
        set_sink(record);
        log_for_test(Level::Debug, c"z.cc", 2, c"after");
        assert_eq!(SEEN.lock().unwrap().last().unwrap().3, "after");
    }
}
