//! What is wrong with a trace: [`crate::Trace::problems`], each a kind to
//! act on and a line to show.

use std::fmt;

/// What kind of problem a [`Problem`] is: what a reader of the summary
/// acts on, where the line says it in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemKind {
    /// The file ends in the middle of a packet (cut short: a process
    /// killed, a file copied while written).
    Cut,
    /// Bytes that are not a valid packet stream, or packets malformed
    /// inside: read up to the damage.
    Damaged,
    /// Something left out at one of this reader's limits.
    OverLimit,
    /// A clock snapshot that goes back, or a clock used without one.
    Clock,
    /// Packets the trace processor would not sort in (out of its window).
    Order,
    /// A packet sequence's state: packets lost by the service, or packets
    /// without the incremental state they need.
    Sequence,
    /// A reference to an interned entry that is not there.
    Unresolved,
    /// Slices begun and never ended, or ended without a begin.
    Unpaired {
        /// How many slices the line is about.
        slices: u64,
    },
    /// API calls whose arrows point at GPU work the trace does not have.
    Dangling,
    /// Fields that contradict each other or are missing (an event without
    /// its timestamp, counter values without their kernel).
    Malformed,
}

/// One problem of a trace: its kind, the line that says it, and how many
/// times it came up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// What kind it is.
    pub kind: ProblemKind,
    /// What is wrong, in one line (without the count).
    pub text: String,
    /// How many times it came up (1 or more).
    pub count: u64,
}

impl Problem {
    /// A problem seen once.
    pub fn new(kind: ProblemKind, text: impl Into<String>) -> Self {
        Self {
            kind,
            text: text.into(),
            count: 1,
        }
    }
}

impl fmt::Display for Problem {
    /// The line, a repeated one with its count (`... (×3)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)?;
        if self.count > 1 {
            write!(f, " (×{})", self.count)?;
        }
        Ok(())
    }
}
