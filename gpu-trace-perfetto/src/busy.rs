//! Busy time per fixed interval, from intervals that arrive out of order
//! and late: how much of each [`INTERVAL`] a GPU engine ran (kernels, one
//! copy direction), or a thread waited for the GPU.
//!
//! Intervals are added as they reach the emitter, in any order: CUPTI
//! delivers each stream's records in its own buffers, and a flush hands
//! them over in bursts. An interval is split at interval boundaries and
//! kept, per track, as the union of what has arrived: overlapping kernels
//! count once. An interval can change only until the arrival watermark
//! passes its end ([`Busy::advance`]: no record of work that ended before
//! the watermark will arrive any more); it is then turned into counter
//! points and forgotten. So memory holds only the intervals between the
//! watermark and the newest record, and any run of wholly busy intervals
//! as one range however long (a kernel of an hour costs three entries, not
//! 360,000). Adding costs a push: an interval's stretches are sorted and
//! merged when it is written, or when it has gathered 2 × [`MAX_PIECES`].
//!
//! Values are exact. Memory is bounded twice, for pathological floods:
//! past [`MAX_PIECES`] separate stretches in one interval (one every
//! 0.6 µs), the shortest quarter of the gaps between them are merged and
//! count as busy; and a track holding more than [`TRACK_BUDGET`]
//! stretches writes its oldest intervals before the watermark passes them.
//! Both are counted. A record that arrives after its interval was written
//! is counted ([`Busy::late`]), not drawn.
//!
//! Points are written only where the value changes: a busy kernel loop
//! gives one point when it starts and one when it stops, not one per
//! interval, and a track falls back to 0 at the end of its last busy
//! interval.

use gpu_trace_model::intervals;
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;
use std::hash::Hash;

pub(crate) use gpu_trace_model::schema::busy::{ENGINE_COUNTERS, INTERVAL};

/// Most disjoint busy stretches kept for one interval of one track (one
/// every 0.6 µs of a 10 ms interval, far more kernels than any stream
/// launches). Past it the shortest quarter of the gaps between them are
/// merged (those gaps then count as busy).
pub(crate) const MAX_PIECES: usize = 16_384;

/// Most stretches one track holds across its pending intervals, 16 bytes
/// each (1 MiB); past it the oldest intervals are written early.
pub(crate) const TRACK_BUDGET: usize = 65_536;

/// A counter value at a point in time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Point<K> {
    /// The track.
    pub(crate) key: K,
    /// Start of the interval the value holds from, ns.
    pub(crate) ts: u64,
    /// Share of each interval from `ts` on that was busy, percent.
    pub(crate) percent: f64,
}

/// One track's pending intervals and what was last written for it.
#[derive(Debug, Default)]
struct Track {
    /// Interval index → busy stretches in it (unsorted until normalised).
    partial: BTreeMap<u64, Vec<(u64, u64)>>,
    /// Stretches held in `partial`.
    held: usize,
    /// Runs of wholly busy intervals `[first, end)`, disjoint and sorted.
    full: Vec<(u64, u64)>,
    /// Value of the last point written.
    last: f64,
    /// First interval not written yet.
    next: u64,
}

/// Busy time of many tracks (keys), see the module docs.
#[derive(Debug)]
pub(crate) struct Busy<K> {
    width: u64,
    max_pieces: usize,
    budget: usize,
    tracks: HashMap<K, Track>,
    /// Intervals before this index are written for every track.
    written: u64,
    /// Points a track over its budget wrote early, for the next call.
    ready: Vec<Point<K>>,
    late: u64,
    merged: u64,
    early: u64,
}

impl<K: Copy + Eq + Hash + Ord> Default for Busy<K> {
    fn default() -> Self {
        Self::with_limits(INTERVAL, MAX_PIECES, TRACK_BUDGET)
    }
}

impl<K: Copy + Eq + Hash + Ord> Busy<K> {
    /// Intervals of `width` ns, with other bounds than [`MAX_PIECES`] and
    /// [`TRACK_BUDGET`] (tests use small ones).
    pub(crate) fn with_limits(width: u64, max_pieces: usize, budget: usize) -> Self {
        Self {
            width: width.max(1),
            max_pieces: max_pieces.max(4),
            budget: budget.max(8),
            tracks: HashMap::default(),
            written: 0,
            ready: Vec::new(),
            late: 0,
            merged: 0,
            early: 0,
        }
    }

    /// Records that track `key` was busy from `start` to `end`.
    pub(crate) fn add(&mut self, key: K, start: u64, end: u64) {
        if end <= start {
            return;
        }
        let w = self.width;
        let written = self.written;
        let t = self.tracks.entry(key).or_insert_with(|| Track {
            next: written,
            ..Track::default()
        });
        let floor = t.next.saturating_mul(w);
        if end <= floor {
            self.late += 1;
            return;
        }
        let start = if start < floor {
            // Its beginning was written already: keep what is not.
            self.late += 1;
            floor
        } else {
            start
        };
        let (first, last) = (start / w, (end - 1) / w);
        let max = self.max_pieces;
        if first == last {
            self.merged += push(t, first, start, end, max);
        } else {
            self.merged += push(t, first, start, (first + 1) * w, max);
            if last > first + 1 {
                intervals::insert(&mut t.full, first + 1, last);
            }
            self.merged += push(t, last, last * w, end, max);
        }
        if t.held > self.budget {
            self.shed(key);
        }
    }

    /// Brings track `key` back under half its budget: its intervals are
    /// merged, and if that is not enough its oldest are written now.
    fn shed(&mut self, key: K) {
        let (w, max, budget) = (self.width, self.max_pieces, self.budget);
        let Some(t) = self.tracks.get_mut(&key) else {
            return;
        };
        t.held = 0;
        for v in t.partial.values_mut() {
            self.merged += intervals::union_at_most(v, max) as u64;
            t.held += v.len();
        }
        let mut runs = Vec::new();
        while t.held > budget / 2 {
            let Some(&oldest) = t.partial.keys().next() else {
                break;
            };
            self.early += 1;
            write_track(
                key,
                t,
                oldest + 1,
                w,
                max,
                &mut runs,
                &mut self.ready,
                &mut self.merged,
            );
        }
    }

    /// Writes every interval that ends at or before `watermark` (ns): no
    /// interval ending after it is touched. Points come in time order per
    /// track.
    pub(crate) fn advance(&mut self, watermark: u64) -> Vec<Point<K>> {
        let limit = watermark / self.width;
        self.write_until(limit)
    }

    /// Writes everything pending (the session stops or the process exits).
    pub(crate) fn finish(&mut self) -> Vec<Point<K>> {
        let end = self
            .tracks
            .values()
            .map(|t| {
                let p = t.partial.keys().next_back().map_or(0, |&b| b + 1);
                let f = t.full.last().map_or(0, |r| r.1);
                p.max(f).max(t.next)
            })
            .max()
            .unwrap_or(self.written);
        // One interval more, so that each track's last value returns to 0.
        self.write_until(end + 1)
    }

    /// Records that arrived after (part of) their interval was written.
    pub(crate) fn late(&self) -> u64 {
        self.late
    }

    /// Times an interval held more than [`MAX_PIECES`] stretches and had
    /// its shortest gaps merged.
    #[cfg(test)]
    pub(crate) fn merged(&self) -> u64 {
        self.merged
    }

    /// Intervals a track over its budget wrote before the watermark.
    #[cfg(test)]
    pub(crate) fn early(&self) -> u64 {
        self.early
    }

    /// Entries held, for the memory bound's tests.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.tracks
            .values()
            .map(|t| t.full.len() + t.partial.values().map(Vec::len).sum::<usize>())
            .sum()
    }

    fn write_until(&mut self, limit: u64) -> Vec<Point<K>> {
        let mut out = std::mem::take(&mut self.ready);
        if limit <= self.written {
            return out;
        }
        self.written = limit;
        let (w, max) = (self.width, self.max_pieces);
        let mut keys: Vec<K> = self.tracks.keys().copied().collect();
        keys.sort_unstable();
        let mut runs = Vec::new();
        for key in keys {
            if let Some(t) = self.tracks.get_mut(&key) {
                write_track(key, t, limit, w, max, &mut runs, &mut out, &mut self.merged);
            }
        }
        // A track that has said everything it had costs nothing more.
        self.tracks
            .retain(|_, t| t.last != 0.0 || !t.partial.is_empty() || !t.full.is_empty());
        out
    }
}

/// Writes the intervals of track `key` before `limit` into `out` and
/// forgets them. `runs` is scratch.
#[allow(clippy::too_many_arguments)]
fn write_track<K: Copy>(
    key: K,
    t: &mut Track,
    limit: u64,
    w: u64,
    max: usize,
    runs: &mut Vec<(u64, u64, f64)>,
    out: &mut Vec<Point<K>>,
    merged: &mut u64,
) {
    if limit <= t.next {
        return;
    }
    runs.clear();
    // Wholly busy runs up to the limit; the rest of a run stays.
    let mut keep = Vec::new();
    for &(a, b) in &t.full {
        if a < limit {
            runs.push((a, b.min(limit), 100.0));
        }
        if b > limit {
            keep.push((a.max(limit), b));
        }
    }
    t.full = keep;
    let rest = t.partial.split_off(&limit);
    let done = std::mem::replace(&mut t.partial, rest);
    for (b, mut pieces) in done {
        t.held -= pieces.len().min(t.held);
        if runs.iter().any(|&(a, e, _)| a <= b && b < e) {
            continue;
        }
        *merged += intervals::union_at_most(&mut pieces, max) as u64;
        let busy: u64 = pieces.iter().map(|(s, e)| e - s).sum();
        runs.push((b, b + 1, busy as f64 * 100.0 / w as f64));
    }
    runs.sort_by_key(|r| r.0);
    for &(a, b, v) in runs.iter() {
        if a > t.next && t.last != 0.0 {
            out.push(Point {
                key,
                ts: t.next * w,
                percent: 0.0,
            });
            t.last = 0.0;
        }
        if v != t.last {
            out.push(Point {
                key,
                ts: a * w,
                percent: v,
            });
            t.last = v;
        }
        t.next = b;
    }
    if t.next < limit && t.last != 0.0 {
        out.push(Point {
            key,
            ts: t.next * w,
            percent: 0.0,
        });
        t.last = 0.0;
    }
    t.next = t.next.max(limit);
}

/// Adds `[s, e)` to interval `b` of `t`. Returns 1 when the interval's
/// stretches had to be merged past `max`.
fn push(t: &mut Track, b: u64, s: u64, e: u64, max: usize) -> u64 {
    let v = t.partial.entry(b).or_default();
    v.push((s, e));
    t.held += 1;
    if v.len() < 2 * max {
        return 0;
    }
    let before = v.len();
    let merged = intervals::union_at_most(v, max);
    t.held -= before - v.len();
    merged as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: u64 = 1_000;

    /// Intervals of `width` ns, the default bounds scaled down (256
    /// stretches an interval, 1,024 a track).
    fn busy<K: Copy + Eq + std::hash::Hash + Ord>(width: u64) -> Busy<K> {
        Busy::with_limits(width, SMALL, 4 * SMALL)
    }

    const SMALL: usize = 256;

    fn pts(p: &[Point<u32>]) -> Vec<(u32, u64, f64)> {
        p.iter().map(|p| (p.key, p.ts, p.percent)).collect()
    }

    #[test]
    fn overlapping_intervals_count_once() {
        let mut b = busy(W);
        // Two streams: [100, 400) and [300, 600) overlap in [300, 400);
        // the union is [100, 600) = 50% of the first interval.
        b.add(1u32, 100, 400);
        b.add(1, 300, 600);
        // Inside the union: nothing changes.
        b.add(1, 150, 250);
        // Interval 0 is final, but not yet the one after it, where the
        // value returns to 0.
        assert_eq!(pts(&b.advance(W)), [(1, 0, 50.0)]);
        assert_eq!(pts(&b.advance(2 * W)), [(1, W, 0.0)]);
    }

    #[test]
    fn an_interval_spanning_boundaries_fills_each_part() {
        let mut b = busy(W);
        // [750, 3250): 25% of interval 0, all of 1 and 2, 25% of 3.
        b.add(7u32, 750, 3_250);
        assert_eq!(
            pts(&b.advance(10 * W)),
            [
                (7, 0, 25.0),
                (7, W, 100.0),
                (7, 3 * W, 25.0),
                (7, 4 * W, 0.0)
            ]
        );
    }

    #[test]
    fn out_of_order_arrival_gives_the_same_union() {
        // Kernels on three streams, their union known: [0,200) ∪ [150,300)
        // ∪ [500,900) ∪ [1_100,1_400) ∪ [1_200,2_500) ∪ [2_900,3_000).
        let intervals = [
            (0, 200),
            (150, 300),
            (500, 900),
            (1_100, 1_400),
            (1_200, 2_500),
            (2_900, 3_000),
        ];
        // Per interval: 0 → 300+400 = 70%; 1 → [1100,2000) = 90%;
        // 2 → [2000,2500)+[2900,3000) = 60%.
        let want = [
            (3u32, 0, 70.0),
            (3, W, 90.0),
            (3, 2 * W, 60.0),
            (3, 3 * W, 0.0),
        ];
        // Every order of arrival (a few permutations, reversed included).
        let orders: [[usize; 6]; 4] = [
            [0, 1, 2, 3, 4, 5],
            [5, 4, 3, 2, 1, 0],
            [2, 5, 0, 4, 1, 3],
            [4, 0, 5, 1, 3, 2],
        ];
        for order in orders {
            let mut b = busy(W);
            for i in order {
                b.add(3u32, intervals[i].0, intervals[i].1);
            }
            assert_eq!(pts(&b.advance(5 * W)), want, "order {order:?}");
        }
    }

    #[test]
    fn nothing_is_written_before_the_watermark_passes_and_late_records_are_counted() {
        let mut b = busy(W);
        b.add(1u32, 100, 300);
        b.add(1, 1_500, 1_600);
        // The watermark inside interval 1: only interval 0 is final.
        assert_eq!(pts(&b.advance(1_700)), [(1, 0, 20.0)]);
        // A record of interval 1 arriving now still counts.
        b.add(1, 1_000, 1_100);
        // One of interval 0 is late: counted, not drawn.
        b.add(1, 200, 900);
        assert_eq!(b.late(), 1);
        // Straddling the boundary: its written part is late, the rest counts.
        b.add(1, 900, 1_200);
        assert_eq!(b.late(), 2);
        // Interval 1: [1000,1200) ∪ [1500,1600) = 30%.
        assert_eq!(pts(&b.advance(2 * W)), [(1, W, 30.0)]);
        assert_eq!(pts(&b.finish()), [(1, 2 * W, 0.0)]);
    }

    #[test]
    fn points_are_written_only_where_the_value_changes() {
        let mut b = busy(W);
        for i in 0..5 {
            b.add(2u32, i * W, i * W + 500);
        }
        // Idle for two intervals, then busy again.
        b.add(2, 7 * W, 7 * W + 500);
        assert_eq!(
            pts(&b.advance(20 * W)),
            [
                (2, 0, 50.0),
                (2, 5 * W, 0.0),
                (2, 7 * W, 50.0),
                (2, 8 * W, 0.0)
            ]
        );
        // A later advance with nothing new writes nothing.
        assert!(b.advance(30 * W).is_empty());
    }

    #[test]
    fn a_track_over_its_budget_writes_its_oldest_intervals_early() {
        let mut b = busy(W);
        // 200 separate stretches in each of 20 intervals: 4,000, over the
        // track's budget (1,024).
        for i in 0..20u64 {
            for k in 0..200u64 {
                b.add(1u32, i * W + k * 5, i * W + k * 5 + 2);
            }
        }
        assert!(b.held() <= 4 * SMALL, "{}", b.held());
        assert!(b.early() > 0);
        // What was written early is exact (40%), and a record for it now
        // is late.
        let p = b.advance(0);
        assert_eq!(pts(&p[..1]), [(1, 0, 40.0)]);
        b.add(1, 3, 4);
        assert_eq!(b.late(), 1);
        // The rest comes out whole: one value, then back to 0.
        let rest = b.finish();
        assert_eq!(pts(&rest), [(1, 20 * W, 0.0)]);
    }

    #[test]
    fn tracks_are_separate() {
        let mut b = busy(W);
        b.add(1u32, 0, 500);
        b.add(2u32, 0, 250);
        let mut p = pts(&b.finish());
        p.sort_by(|a, b| a.partial_cmp(b).unwrap());
        assert_eq!(p, [(1, 0, 50.0), (1, W, 0.0), (2, 0, 25.0), (2, W, 0.0)]);
    }

    #[test]
    fn a_long_interval_costs_a_few_entries_and_runs_on_across_advances() {
        let mut b = busy(W);
        // An hour at 1 µs intervals is 3.6e9 intervals: three entries.
        let hour = 3_600_000_000_000u64 / 1_000;
        b.add(1u32, 500, hour * W + 500);
        assert_eq!(b.held(), 3);
        // Written in parts, the run stays one value.
        assert_eq!(pts(&b.advance(10 * W)), [(1, 0, 50.0), (1, W, 100.0)]);
        assert!(b.advance(1_000 * W).is_empty());
        assert_eq!(
            pts(&b.finish()),
            [(1, hour * W, 50.0), (1, (hour + 1) * W, 0.0)]
        );
        assert_eq!(b.held(), 0);
    }

    /// `n` stretches of 100 ns whose gaps grow (the gap before stretch i
    /// is 1,000 + 7 i ns), in a shuffled order.
    fn spread(n: u64) -> Vec<(u64, u64)> {
        let mut starts = vec![0u64];
        for i in 1..n {
            starts.push(starts[i as usize - 1] + 100 + 1_000 + 7 * i);
        }
        let mut order: Vec<u64> = (0..n).collect();
        order.sort_by_key(|&i| (i * 7919) % n);
        order
            .into_iter()
            .map(|i| (starts[i as usize], starts[i as usize] + 100))
            .collect()
    }

    #[test]
    fn up_to_max_pieces_separate_stretches_are_exact() {
        let mut b = busy(10_000_000);
        let n = SMALL as u64;
        for (s, e) in spread(n) {
            b.add(1u32, s, e);
            // Overlapping duplicates are no new stretches.
            b.add(1u32, s + 10, e - 10);
        }
        let want = (n * 100) as f64 * 100.0 / 10_000_000.0;
        assert_eq!(pts(&b.finish()), [(1, 0, want), (1, 10_000_000, 0.0)]);
        assert_eq!(b.merged(), 0);
    }

    #[test]
    fn too_many_stretches_merge_their_shortest_gaps() {
        let mut b = busy(10_000_000);
        // One stretch more than MAX_PIECES: the shortest quarter of the
        // gaps (the first ones) count as busy.
        let n = SMALL as u64 + 1;
        for (s, e) in spread(n) {
            b.add(1u32, s, e);
        }
        let p = b.finish();
        assert_eq!(b.merged(), 1);
        let q = (SMALL / 4) as u64;
        let merged_gaps: u64 = (1..=q).map(|i| 1_000 + 7 * i).sum();
        let want = (n * 100 + merged_gaps) as f64 * 100.0 / 10_000_000.0;
        assert_eq!(pts(&p), [(1, 0, want), (1, 10_000_000, 0.0)]);
    }

    #[test]
    fn a_flood_of_separate_stretches_keeps_memory_bounded() {
        let mut b = busy(10_000_000);
        // Eight streams of 500 ns kernels every 6 µs, interleaved and
        // apart: 12,000 separate stretches in one interval.
        for i in 0..1_500u64 {
            for t in 0..8u64 {
                let s = t * 700 + i * 6_000;
                b.add(1u32, s, s + 500);
            }
        }
        assert!(b.held() <= 4 * SMALL, "{}", b.held());
        assert!(b.merged() > 0);
        assert_eq!(b.early(), 0, "one interval never outgrows the budget");
        let p = b.finish();
        // Never below the exact union (gaps only ever count as busy).
        let mut exact = vec![false; 9_001_000];
        for i in 0..1_500usize {
            for t in 0..8usize {
                let s = t * 700 + i * 6_000;
                exact[s..s + 500].iter_mut().for_each(|x| *x = true);
            }
        }
        let busy = exact.iter().filter(|x| **x).count() as f64 * 100.0 / 10_000_000.0;
        assert!(
            p[0].percent >= busy && p[0].percent <= 100.0,
            "{p:?} vs {busy}"
        );
    }
}
