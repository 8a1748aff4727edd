//! Text from a trace (or from anyone else) made safe to print for people.
//!
//! Kernel, range, process and thread names, log messages and every other
//! string in a trace are whatever the traced program, or whoever wrote the
//! file, put there. Printed raw, an escape sequence in a kernel name would
//! reach the terminal (recolour it, move the cursor, set its title, or
//! write over lines), and a newline would forge a line of our own output.
//! Human output goes through [`escape`] or [`printable`]; CSV and JSON
//! keep the text as it is (their quoting and escaping make it safe).

use std::borrow::Cow;
use std::fmt::Write as _;

pub use gpu_trace_model::text::needs_escape;

/// Appends `c` to `out`, escaped if it must be (`\n`, `\t`, `\r`, `\x1b`,
/// `\u{202e}`).
fn push(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if !needs_escape(c) => out.push(c),
        c if (c as u32) < 0x100 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// `s` with every character that could act on a terminal written as an
/// escape (see [`needs_escape`]): one line, that shows what is there. Text
/// without such characters comes back as it is, without a copy.
///
/// ```
/// use gpu_trace_reader::text::escape;
/// assert_eq!(escape("vadd"), "vadd");
/// assert_eq!(escape("a\x1b[2Jb\nc"), "a\\x1b[2Jb\\nc");
/// ```
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    s.chars().for_each(|c| push(&mut out, c));
    Cow::Owned(out)
}

/// [`escape`], but for newlines: for text of several lines (a whole
/// report) whose every part from a trace was escaped already, as a last
/// guard.
pub fn escape_but_newlines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && needs_escape(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c == '\n' {
            out.push(c);
        } else {
            push(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// [`escape`]d `s`, cut to `max` characters where it is longer; the cut
/// says how long the value was: `…(N bytes)`, N the bytes of `s`. A cut
/// falls between escapes, never inside one. `max` 0: never cut.
///
/// ```
/// use gpu_trace_reader::text::printable;
/// assert_eq!(printable("kernel", 10), "kernel");
/// assert_eq!(printable("abcdefgh", 4), "abcd…(8 bytes)");
/// assert_eq!(printable("ab\x1b[31m", 4), "ab…(7 bytes)");
/// ```
pub fn printable(s: &str, max: usize) -> Cow<'_, str> {
    cut(s, max, max, |out| {
        let _ = write!(out, "…({} bytes)", s.len());
    })
}

/// [`escape`]d `s`, cut to `width` characters where it is longer, the last
/// of them an ellipsis: for names in the columns of a table. `width` 0:
/// never cut.
///
/// ```
/// use gpu_trace_reader::text::clip;
/// assert_eq!(clip("abcdef", 4), "abc…");
/// assert_eq!(clip("a\tb", 0), "a\\tb");
/// ```
pub fn clip(s: &str, width: usize) -> Cow<'_, str> {
    cut(s, width, width.saturating_sub(1), |out| out.push('…'))
}

/// Escapes `s` and, where that is longer than `max` characters (0:
/// never), keeps `keep` of them and ends with what `end` appends.
fn cut(s: &str, max: usize, keep: usize, end: impl FnOnce(&mut String)) -> Cow<'_, str> {
    let e = escape(s);
    if max == 0 || e.chars().nth(max).is_none() {
        return e;
    }
    let max = keep;
    let mut out = String::with_capacity(max + 16);
    let mut piece = String::new();
    let mut n = 0;
    for c in s.chars() {
        piece.clear();
        push(&mut piece, c);
        let k = piece.chars().count();
        if n + k > max {
            break;
        }
        out.push_str(&piece);
        n += k;
    }
    end(&mut out);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_are_escaped_and_plain_text_is_not_copied() {
        assert!(matches!(escape("void k<int>(float*)"), Cow::Borrowed(_)));
        assert_eq!(escape("äöü µs"), "äöü µs");
        assert_eq!(
            escape("\x1b]0;pwned\x07\r\n\t\x7f\u{9b}x"),
            "\\x1b]0;pwned\\x07\\r\\n\\t\\x7f\\x9bx"
        );
        assert_eq!(escape("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(escape("a\u{2028}b\u{feff}"), "a\\u{2028}b\\u{feff}");
        assert_eq!(escape_but_newlines("a\nb\x1bc"), "a\nb\\x1bc");
    }

    #[test]
    fn long_values_are_cut_between_escapes_and_say_their_length() {
        let long = "k".repeat(1000);
        assert_eq!(printable(&long, 5), "kkkkk…(1000 bytes)");
        assert_eq!(printable(&long, 0), long);
        assert_eq!(printable("ab\ncd", 3), "ab…(5 bytes)");
        assert_eq!(printable("ab\ncd", 4), "ab\\n…(5 bytes)");
        assert_eq!(printable("ab\ncd", 6), "ab\\ncd");
        assert_eq!(clip("äöüßxyz", 3), "äö…");
        assert_eq!(clip("abcd", 4), "abcd");
        assert_eq!(clip("a\x1bbcd", 4), "a…");
    }
}
