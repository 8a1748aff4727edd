//! The union of time intervals: busy time, where overlapping work counts
//! once.
//!
//! One type, [`Intervals`]: half-open `[start, end)` intervals in ns are
//! added in any order ([`Intervals::add`]), unions of unions are taken
//! ([`Intervals::union`]), and the covered time is read whole
//! ([`Intervals::total`]), inside a window ([`Intervals::within`]) or as the
//! disjoint stretches themselves ([`Intervals::stretches`]). The semantics
//! are those of a set of points on the line: an empty or reversed interval
//! adds nothing, overlapping intervals count once, and intervals that touch
//! (`[0, 10)` and `[10, 20)`) become one stretch.
//!
//! The writer's busy counters (`gpu-trace-perfetto`'s `busy` module) take the
//! same union per fixed 10 ms interval and forget it once written; this
//! type keeps the whole union of a trace, exactly, for a summary.

/// A union of `[start, end)` intervals, in ns, built as events stream by.
///
/// Kept exact: memory holds one interval per stretch of busy time (16
/// bytes per gap between them), not one per event. Events mostly come in
/// time order: back-to-back or overlapping work extends the open stretch,
/// and stretches closed in order are appended as they are. What comes out
/// of order is sorted in batches and merged into the stretches from the
/// earliest one it reaches (mostly only the last few), so a merge costs
/// the batch, not the whole history.
#[derive(Debug, Clone)]
pub struct Intervals {
    /// Disjoint, sorted, none touching another.
    merged: Vec<(u64, u64)>,
    /// Added since the last merge.
    pending: Vec<(u64, u64)>,
    /// Whether `pending` is sorted, disjoint and untouching (it holds only
    /// stretches closed in order).
    in_order: bool,
    /// The stretch being extended; empty (start > end) at first.
    open: (u64, u64),
    /// How many pending intervals make a merge: a batch, or as many as
    /// the last merge rewrote (intervals far out of order then cost
    /// amortised time, not a rewrite of the history per batch).
    limit: usize,
}

impl Default for Intervals {
    fn default() -> Self {
        Intervals {
            merged: Vec::new(),
            pending: Vec::new(),
            in_order: true,
            open: (u64::MAX, 0),
            limit: 0,
        }
    }
}

/// Intervals gathered before a merge.
const BATCH: usize = 4096;

impl Intervals {
    /// An empty union.
    pub fn new() -> Intervals {
        Intervals::default()
    }

    /// Adds `[start, end)`; an empty or reversed interval adds nothing.
    /// Amortised constant time for intervals in time order.
    #[inline]
    pub fn add(&mut self, start: u64, end: u64) {
        if end <= start {
            return;
        }
        let open = &mut self.open;
        if start >= open.0 && start <= open.1 {
            open.1 = open.1.max(end);
            return;
        }
        if open.0 > open.1 {
            *open = (start, end);
            return;
        }
        if start > open.1 {
            // The open stretch is done; this one comes after it.
            self.pending.push(std::mem::replace(open, (start, end)));
        } else {
            self.pending.push((start, end));
            self.in_order = false;
        }
        if self.pending.len() >= self.limit.max(BATCH) {
            self.merge();
        }
    }

    fn merge(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        if self.in_order
            && self
                .merged
                .last()
                .is_none_or(|last| self.pending[0].0 > last.1)
        {
            self.merged.extend_from_slice(&self.pending);
            self.pending.clear();
            self.limit = 0;
            return;
        }
        self.pending.sort_unstable();
        // The stretches that end before the batch begins stay as they are.
        let first = self.pending[0].0;
        let keep = self.merged.partition_point(|iv| iv.1 < first);
        let tail: Vec<(u64, u64)> = self.merged.drain(keep..).collect();
        self.limit = tail.len();
        let (mut a, mut b) = (tail.iter().peekable(), self.pending.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.0 <= y.0 => a.next(),
                (Some(_), Some(_)) | (None, Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, None) => break,
            };
            let &(s, e) = next.expect("peeked");
            match self.merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => self.merged.push((s, e)),
            }
        }
        self.pending.clear();
        self.in_order = true;
    }

    /// Everything merged, the open stretch too.
    fn settle(&mut self) {
        if self.open.0 <= self.open.1 {
            // After every in-order stretch, but maybe before one that came
            // out of order.
            self.pending.push(self.open);
            self.open = (u64::MAX, 0);
        }
        self.merge();
    }

    /// Adds `other`'s intervals (the union of the two unions).
    pub fn union(&mut self, mut other: Intervals) {
        self.settle();
        other.settle();
        self.pending.extend(other.merged);
        self.in_order = false;
        self.merge();
    }

    /// The time covered, ns.
    pub fn total(&mut self) -> u64 {
        self.stretches().iter().map(|(s, e)| e - s).sum()
    }

    /// The union as disjoint `[start, end)` stretches in time order, none
    /// touching another.
    pub fn stretches(&mut self) -> &[(u64, u64)] {
        self.settle();
        &self.merged
    }

    /// Whether nothing was added (or only empty intervals).
    pub fn is_empty(&self) -> bool {
        self.merged.is_empty() && self.pending.is_empty() && self.open.0 > self.open.1
    }

    /// The time covered within `[start, end)`, ns.
    pub fn within(&mut self, start: u64, end: u64) -> u64 {
        self.settle();
        self.merged
            .iter()
            .map(|&(s, e)| e.min(end).saturating_sub(s.max(start)))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_reversed_intervals_add_nothing() {
        let mut i = Intervals::new();
        i.add(5, 5);
        i.add(9, 3);
        assert!(i.is_empty());
        assert_eq!(i.total(), 0);
        assert_eq!(i.stretches(), []);
        i.add(3, 4);
        assert!(!i.is_empty());
    }

    #[test]
    fn touching_intervals_become_one_stretch_and_gaps_stay() {
        let mut i = Intervals::new();
        for (s, e) in [(10, 20), (0, 10), (30, 40), (20, 25), (50, 60), (39, 45)] {
            i.add(s, e);
        }
        assert_eq!(i.stretches(), [(0, 25), (30, 45), (50, 60)]);
        assert_eq!(i.total(), 25 + 15 + 10);
        // A stretch inside one already there changes nothing.
        i.add(31, 44);
        assert_eq!(i.stretches(), [(0, 25), (30, 45), (50, 60)]);
    }

    #[test]
    fn the_union_of_unions_is_the_union_of_all_their_intervals() {
        let (mut a, mut b, mut c) = (Intervals::new(), Intervals::new(), Intervals::new());
        for (s, e) in [(0, 5), (20, 30)] {
            a.add(s, e);
            c.add(s, e);
        }
        for (s, e) in [(3, 8), (40, 50), (30, 31)] {
            b.add(s, e);
            c.add(s, e);
        }
        a.union(b);
        assert_eq!(a.stretches(), c.stretches());
        assert_eq!(a.stretches(), [(0, 8), (20, 31), (40, 50)]);
        // With an empty union: itself.
        a.union(Intervals::new());
        assert_eq!(a.total(), 8 + 11 + 10);
    }

    #[test]
    fn the_time_within_a_span_counts_only_its_overlap() {
        let mut i = Intervals::default();
        i.add(0, 10);
        i.add(20, 30);
        i.add(40, 50);
        assert_eq!(i.within(5, 45), 5 + 10 + 5);
        assert_eq!(i.within(10, 20), 0);
        assert_eq!(i.within(0, 100), i.total());
        assert_eq!(i.within(60, 50), 0);
    }

    #[test]
    fn overlapping_and_touching_intervals_count_once() {
        let mut i = Intervals::default();
        for (s, e) in [
            (0, 10),
            (5, 15),
            (15, 20),
            (30, 40),
            (2, 3),
            (35, 50),
            (60, 60),
        ] {
            i.add(s, e);
        }
        assert_eq!(i.total(), 20 + 20);
        let mut j = Intervals::default();
        j.add(45, 70);
        j.add(100, 101);
        i.union(j);
        assert_eq!(i.total(), 20 + 40 + 1);
    }

    #[test]
    fn late_intervals_merge_into_the_stretches_they_reach() {
        let mut i = Intervals::default();
        for k in 0..(3 * BATCH as u64) {
            i.add(10 * k, 10 * k + 5);
        }
        i.merge();
        // One late interval bridging three old stretches, one before all.
        i.add(12, 31);
        i.add(0, 1);
        assert_eq!(i.total(), 3 * BATCH as u64 * 5 + 10);
        assert_eq!(&i.merged[..2], [(0, 5), (10, 35)]);
    }

    #[test]
    fn out_of_order_intervals_past_a_batch_merge_exactly() {
        // Disjoint unit intervals two apart, added backwards, then the gaps
        // filled: one stretch in the end.
        let n = 3 * BATCH as u64;
        let mut i = Intervals::default();
        for k in (0..n).rev() {
            i.add(2 * k, 2 * k + 1);
        }
        assert_eq!(i.total(), n);
        assert!(i.merged.len() as u64 == n);
        for k in 0..n {
            i.add(2 * k + 1, 2 * k + 2);
        }
        assert_eq!(i.total(), 2 * n);
        assert_eq!(i.merged, [(0, 2 * n)]);
    }

    /// The union the slow way.
    fn brute(v: &[(u64, u64)]) -> u64 {
        let mut v: Vec<(u64, u64)> = v.iter().copied().filter(|(s, e)| e > s).collect();
        v.sort_unstable();
        let (mut total, mut cur) = (0, None::<(u64, u64)>);
        for (s, e) in v {
            match &mut cur {
                Some(c) if s <= c.1 => c.1 = c.1.max(e),
                _ => {
                    total += cur.map_or(0, |c| c.1 - c.0);
                    cur = Some((s, e));
                }
            }
        }
        total + cur.map_or(0, |c| c.1 - c.0)
    }

    #[test]
    fn the_union_is_exact_whatever_the_order() {
        // Mostly in time order with jitter, some far back, some empty,
        // some overlapping: as GPU work from several streams comes.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for round in 0..20 {
            let mut v = Vec::new();
            let mut t = 0;
            for _ in 0..(3 * BATCH as u64 + rnd(5000)) {
                t += rnd(100);
                let start = match rnd(50) {
                    0 => t.saturating_sub(rnd(1_000_000)),
                    1..=10 => t.saturating_sub(rnd(300)),
                    _ => t,
                };
                v.push((start, start + rnd(if round % 2 == 0 { 120 } else { 40 })));
            }
            let mut i = Intervals::default();
            let (a, b) = v.split_at(v.len() / 3);
            for &(s, e) in a {
                i.add(s, e);
            }
            let mut j = Intervals::default();
            for &(s, e) in b {
                j.add(s, e);
            }
            i.union(j);
            assert_eq!(i.total(), brute(&v), "round {round}");
        }
    }
}
