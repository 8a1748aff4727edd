//! The NVTX / roctx push/pop ranges open on each thread, for the kernel
//! filter's range globs (`INJECTION_KERNEL_NVTX_INCLUDE`, a session's
//! `activity_tx_include_globs`).
//!
//! Nothing is kept until a filter with range globs exists ([`start`]);
//! until then a push or pop costs one relaxed load. From then on each
//! thread keeps its open ranges: their names side by side in one string
//! that is reused (a push allocates only while the thread's deepest nesting
//! grows), and per range its domain and, once a filter has asked, whether
//! it matches that filter's globs. A launch then looks at its thread's few
//! open ranges without allocating. Tracking never stops once started, so a
//! later session's filter finds the ranges already open.
//!
//! Push/pop ranges nest per thread and per domain: a pop closes the newest
//! open range of its domain. Start/end ranges (`nvtxRangeStart`) may end on
//! another thread and are not kept.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static TRACKING: AtomicBool = AtomicBool::new(false);
/// Identifies a set of globs, so that a range's cached match is redone
/// when another filter asks.
static NEXT_GLOBS: AtomicU64 = AtomicU64::new(1);

/// Ranges a thread keeps; deeper ones are counted, match nothing, and are
/// popped first.
const MAX_DEPTH: usize = 256;
/// Bytes of range names a thread keeps.
const MAX_TEXT: usize = 64 << 10;

/// Starts keeping the ranges each thread opens (idempotent). Ranges opened
/// before are unknown to the filter.
pub fn start() {
    if !TRACKING.swap(true, Ordering::AcqRel) {
        crate::verbose!("keeping the NVTX/roctx ranges open on each thread for the kernel filter");
    }
}

/// Whether ranges are kept (a backend needs range callbacks then).
#[inline]
pub fn is_on() -> bool {
    TRACKING.load(Ordering::Relaxed)
}

/// A push/pop range named `name` opened on this thread in `domain` (0:
/// the default domain).
#[inline]
pub fn push(domain: u64, name: &str) {
    if is_on() {
        with_open(|o| o.push(domain, name));
    }
}

/// The newest open range of `domain` on this thread closed.
#[inline]
pub fn pop(domain: u64) {
    if is_on() {
        with_open(|o| o.pop(domain));
    }
}

/// How many ranges this thread has open (kept or not).
#[cfg(test)]
fn depth() -> usize {
    with_open(|o| o.ranges.len() + o.hidden).unwrap_or(0)
}

thread_local! {
    static OPEN: RefCell<Open> = const { RefCell::new(Open::new()) };
}

fn with_open<R>(f: impl FnOnce(&mut Open) -> R) -> Option<R> {
    OPEN.try_with(|o| o.try_borrow_mut().ok().map(|mut o| f(&mut o)))
        .ok()
        .flatten()
}

struct Range {
    domain: u64,
    /// The name: `text[start..end]`.
    start: u32,
    end: u32,
    /// The globs `matched` was found for (0: none yet).
    globs: u64,
    matched: Match,
}

#[derive(Clone, Copy, Default)]
struct Match {
    include: bool,
    exclude: bool,
}

struct Open {
    text: String,
    ranges: Vec<Range>,
    /// Ranges open beyond the limits.
    hidden: usize,
}

impl Open {
    const fn new() -> Self {
        Open {
            text: String::new(),
            ranges: Vec::new(),
            hidden: 0,
        }
    }

    fn push(&mut self, domain: u64, name: &str) {
        if self.hidden > 0
            || self.ranges.len() >= MAX_DEPTH
            || self.text.len() + name.len() > MAX_TEXT
        {
            self.hidden += 1;
            return;
        }
        let start = self.text.len() as u32;
        self.text.push_str(name);
        self.ranges.push(Range {
            domain,
            start,
            end: self.text.len() as u32,
            globs: 0,
            matched: Match::default(),
        });
    }

    fn pop(&mut self, domain: u64) {
        if self.hidden > 0 {
            self.hidden -= 1;
            return;
        }
        // A pop with nothing open of its domain (opened before tracking
        // started) changes nothing.
        let Some(i) = self.ranges.iter().rposition(|r| r.domain == domain) else {
            return;
        };
        self.ranges.remove(i);
        // A range closed under newer ones of other domains leaves its name
        // in place until those close too.
        self.text
            .truncate(self.ranges.last().map_or(0, |r| r.end as usize));
    }
}

/// Include and exclude globs over the names of the ranges open on the
/// launching thread.
#[derive(Debug)]
pub(crate) struct TxGlobs {
    include: Vec<wildmatch::WildMatch>,
    exclude: Vec<wildmatch::WildMatch>,
    id: u64,
}

impl TxGlobs {
    pub(crate) fn new(include: &[String], exclude: &[String]) -> Self {
        let compile = |v: &[String]| v.iter().map(|g| wildmatch::WildMatch::new(g)).collect();
        TxGlobs {
            include: compile(include),
            exclude: compile(exclude),
            id: NEXT_GLOBS.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Whether a launch on this thread passes: inside a range an include
    /// glob matches (or there are none), and inside none an exclude glob
    /// matches.
    pub(crate) fn passes(&self) -> bool {
        let nothing_open = self.include.is_empty();
        with_open(|o| {
            let (mut included, mut excluded) = (self.include.is_empty(), false);
            for r in &mut o.ranges {
                if r.globs != self.id {
                    let name = &o.text[r.start as usize..r.end as usize];
                    r.matched = Match {
                        include: self.include.iter().any(|g| g.matches(name)),
                        exclude: self.exclude.iter().any(|g| g.matches(name)),
                    };
                    r.globs = self.id;
                }
                included |= r.matched.include;
                excluded |= r.matched.exclude;
            }
            included && !excluded
        })
        .unwrap_or(nothing_open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(include: &[&str], exclude: &[&str]) -> TxGlobs {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        TxGlobs::new(&own(include), &own(exclude))
    }

    /// Each test runs on its own thread: its ranges are its own.
    fn on_thread(f: impl FnOnce() + Send + 'static) {
        start();
        std::thread::spawn(f).join().unwrap();
    }

    #[test]
    fn a_launch_passes_inside_an_included_range_at_any_depth() {
        on_thread(|| {
            let g = globs(&["train*"], &[]);
            assert!(!g.passes(), "nothing open");
            push(0, "epoch 1");
            assert!(!g.passes());
            push(0, "training step");
            push(0, "forward");
            assert!(g.passes(), "the outer range matches");
            pop(0);
            pop(0);
            assert!(!g.passes());
            pop(0);
            pop(0); // one too many: nothing happens
            assert_eq!(depth(), 0);
        });
    }

    #[test]
    fn excludes_win_over_includes() {
        on_thread(|| {
            let g = globs(&["train*"], &["*backward*"]);
            push(0, "training step");
            assert!(g.passes());
            push(0, "backward");
            assert!(!g.passes(), "an open excluded range wins");
            pop(0);
            assert!(g.passes());
            let only_exclude = globs(&[], &["warmup"]);
            pop(0);
            assert!(only_exclude.passes(), "no include globs: everything else");
            push(0, "warmup");
            assert!(!only_exclude.passes());
        });
    }

    #[test]
    fn pops_close_the_newest_range_of_their_domain() {
        on_thread(|| {
            let g = globs(&["io"], &[]);
            push(7, "io");
            push(0, "compute");
            assert!(g.passes());
            pop(7); // closes "io" under "compute"
            assert!(!g.passes());
            assert_eq!(depth(), 1);
            pop(0);
            push(0, "io");
            assert!(g.passes(), "the name store was reused correctly");
        });
    }

    #[test]
    fn another_filter_rematches_the_open_ranges() {
        on_thread(|| {
            push(0, "eval");
            assert!(!globs(&["train"], &[]).passes());
            assert!(globs(&["ev*"], &[]).passes());
        });
    }

    #[test]
    fn ranges_beyond_the_limit_are_counted_and_match_nothing() {
        on_thread(|| {
            let g = globs(&["deep"], &[]);
            for _ in 0..MAX_DEPTH {
                push(0, "x");
            }
            push(0, "deep");
            assert_eq!(depth(), MAX_DEPTH + 1);
            assert!(!g.passes(), "not kept");
            pop(0);
            push(0, "y");
            pop(0);
            assert_eq!(depth(), MAX_DEPTH);
            pop(0);
            push(0, "deep");
            assert!(g.passes(), "below the limit again");
        });
    }
}
