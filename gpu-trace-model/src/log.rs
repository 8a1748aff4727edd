//! Diagnostics on stderr, never stdout: the application owns stdout.
//!
//! Errors and warnings that the user must act on are always printed, once.
//! Everything else needs `INJECTION_VERBOSE`.
//!
//! Every line is one line starting with `gpu-trace:`, whatever it quotes:
//! a value from the environment, a path or a kernel name goes through
//! [`quoted`] or [`plain`], which escape control characters (a newline
//! would split the line, an escape sequence would drive the terminal) and
//! cut a long value to [`VALUE_LIMIT`] bytes, saying how long it was. As a
//! backstop, [`line`] escapes what is left and cuts a line past
//! [`LINE_LIMIT`].

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

/// The most of one quoted value a line shows, in bytes.
pub const VALUE_LIMIT: usize = 200;

/// The longest line printed, in bytes (past the prefix); longer ones are cut.
pub const LINE_LIMIT: usize = 4096;

/// A value as a line shows it: see [`quoted`] and [`plain`].
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    value: &'a str,
    quotes: bool,
}

/// `value` in double quotes, as a line quotes an environment variable's
/// value: `"`, `\` and control characters escaped (`\n`, `\u{1b}`); past
/// [`VALUE_LIMIT`] bytes it is cut, and its whole length follows:
/// `"aaaa…aaa"…(200000 bytes)`.
pub fn quoted(value: &str) -> Shown<'_> {
    Shown {
        value,
        quotes: true,
    }
}

/// `value` as a line shows a path or a name inside a sentence: control
/// characters escaped and cut as [`quoted`] does, without quotes.
pub fn plain(value: &str) -> Shown<'_> {
    Shown {
        value,
        quotes: false,
    }
}

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let head = cut(self.value, VALUE_LIMIT);
        let mut out = String::with_capacity(head.len() + 2);
        if self.quotes {
            out.push('"');
        }
        escape_into(&mut out, head, self.quotes);
        if self.quotes {
            out.push('"');
        }
        f.write_str(&out)?;
        if head.len() < self.value.len() {
            write!(f, "…({} bytes)", self.value.len())?;
        }
        Ok(())
    }
}

/// The longest prefix of `s` of at most `limit` bytes that ends on a
/// character boundary.
fn cut(s: &str, limit: usize) -> &str {
    if s.len() <= limit {
        return s;
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Whether `c` must not reach a terminal as it is: the characters the
/// reader escapes in what it prints of traces (control characters, and
/// those that reorder or hide text), so that both say the same.
fn hidden(c: char) -> bool {
    crate::text::needs_escape(c)
}

fn escape_into(out: &mut String, s: &str, quotes: bool) {
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            '"' | '\\' if quotes => {
                out.push('\\');
                out.push(c);
            }
            c if hidden(c) => {
                use std::fmt::Write;
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
}

/// `msg` as one printable line: hidden characters escaped, cut past
/// [`LINE_LIMIT`].
fn one_line(msg: &str) -> std::borrow::Cow<'_, str> {
    if msg.len() <= LINE_LIMIT && !msg.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(msg);
    }
    let mut out = String::with_capacity(msg.len().min(LINE_LIMIT) + 24);
    escape_into(&mut out, msg, false);
    if out.len() > LINE_LIMIT {
        let n = out.len();
        out.truncate(cut(&out, LINE_LIMIT).len());
        use std::fmt::Write;
        let _ = write!(out, "…({n} bytes)");
    }
    std::borrow::Cow::Owned(out)
}

/// Prints one line to stderr with the tool's prefix.
pub fn line(msg: std::fmt::Arguments<'_>) {
    // A closed stderr must not take the application down.
    use std::io::Write;
    let text = match msg.as_str() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(msg.to_string()),
    };
    let _ = writeln!(std::io::stderr().lock(), "gpu-trace: {}", one_line(&text));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_escaped_and_cut() {
        assert_eq!(quoted("sideways").to_string(), "\"sideways\"");
        assert_eq!(
            quoted("a\nb\u{1b}[31m\"c\\").to_string(),
            r#""a\nb\u{1b}[31m\"c\\""#
        );
        assert_eq!(plain("/x\n\u{202e}y\t").to_string(), r"/x\n\u{202e}y\t");
        let long = "é".repeat(150_000);
        let q = quoted(&long).to_string();
        assert!(q.ends_with("\"…(300000 bytes)"), "{}", &q[q.len() - 40..]);
        assert!(q.len() < VALUE_LIMIT + 30, "{}", q.len());
        assert_eq!(plain("short").to_string(), "short");
    }

    #[test]
    fn a_line_is_one_line_of_bounded_length() {
        assert_eq!(one_line("plain words"), "plain words");
        assert_eq!(one_line("two\nlines\u{7}"), r"two\nlines\u{7}");
        let long = format!("x={}", "y".repeat(100_000));
        let l = one_line(&long);
        assert!(l.len() <= LINE_LIMIT + 20, "{}", l.len());
        assert!(l.ends_with("…(100002 bytes)"), "{}", &l[l.len() - 30..]);
    }
}
