//! The characters that must not reach a terminal as they are, one set for
//! everything gpu-trace prints: its own lines on the application's stderr
//! ([`crate::log`]) and what `gpu-trace` prints of traces.

/// Characters that must not reach a terminal as they are: control
/// characters (C0, DEL and C1: escape sequences start with them, and a
/// newline or carriage return would forge or hide lines), and the Unicode
/// format characters that reorder or hide text (zero-width characters,
/// the line and paragraph separators, bidirectional marks, embeddings,
/// overrides and isolates, the byte-order mark). The tool's own lines
/// ([`crate::log`]) and the reader's printing of traces
/// (`gpu_trace_reader::text`) escape the same characters.
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{feff}'
        )
}
