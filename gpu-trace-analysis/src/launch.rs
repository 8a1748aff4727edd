//! GPU work matched with the API call that submitted it, as the events
//! stream by: what the launch statistics and the idle-time breakdown need.
//!
//! A GPU event and its call meet by the call's submission ids (the
//! trace's `GpuCorrelation` arrows), in either order in the file. Each
//! waits in a map until the other comes: GPU work is mostly written a
//! little before its call, so the maps stay small. Matched, a kernel
//! gives its name's launch figures (the call's duration, the delay from
//! the call's end to the kernel's start, whether the kernel was shorter
//! than its call) and any GPU work gives its device the pair (work start,
//! call start), kept compactly for the idle breakdown.

use crate::durations::Durations;
use crate::read::{IdHash, get_varint, put_varint};
use crate::summary::Pid;
use gpu_trace_reader::Str;
use std::collections::HashMap;

/// Correlations per page of [`Pending`]: bits 22.. of an id.
const PAGE_BITS: u32 = 10;
const PAGE_MASK: u64 = ((1 << PAGE_BITS) - 1) << 22;

/// Items waiting under their GPU event id, found without hashing most of
/// the time. Ids are `correlation << 22 | pid` (and a flag bit) with
/// correlations counting up, so the ids waiting at once fill few pages of
/// consecutive correlations, and a page is mostly the last one used. A
/// page goes back to the pool when its last item leaves; any id is kept
/// exactly, whatever its layout.
struct Pending<T> {
    index: HashMap<u64, u32, IdHash>,
    /// Per page: the item index + 1 of each correlation (0: none), and
    /// how many it holds.
    pages: Vec<(Box<[u32; 1 << PAGE_BITS]>, u32)>,
    free_pages: Vec<u32>,
    items: Vec<Option<T>>,
    free_items: Vec<u32>,
    last: Option<(u64, u32)>,
    len: usize,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending {
            index: HashMap::default(),
            pages: Vec::new(),
            free_pages: Vec::new(),
            items: Vec::new(),
            free_items: Vec::new(),
            last: None,
            len: 0,
        }
    }
}

impl<T> Pending<T> {
    #[inline]
    fn split(id: u64) -> (u64, usize) {
        (id & !PAGE_MASK, ((id & PAGE_MASK) >> 22) as usize)
    }

    #[inline]
    fn page(&mut self, key: u64, create: bool) -> Option<u32> {
        if let Some((k, p)) = self.last
            && k == key
        {
            return Some(p);
        }
        let p = match self.index.get(&key) {
            Some(&p) => p,
            None if create => {
                let p = match self.free_pages.pop() {
                    Some(p) => p,
                    None => {
                        self.pages.push((Box::new([0; 1 << PAGE_BITS]), 0));
                        self.pages.len() as u32 - 1
                    }
                };
                self.index.insert(key, p);
                p
            }
            None => return None,
        };
        self.last = Some((key, p));
        Some(p)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn insert(&mut self, id: u64, v: T) {
        let (key, slot) = Self::split(id);
        let p = self.page(key, true).expect("created") as usize;
        let old = self.pages[p].0[slot];
        if old != 0 {
            // The same id again: the later one stays.
            self.items[old as usize - 1] = Some(v);
            return;
        }
        let i = match self.free_items.pop() {
            Some(i) => {
                self.items[i as usize] = Some(v);
                i
            }
            None => {
                self.items.push(Some(v));
                self.items.len() as u32 - 1
            }
        };
        self.pages[p].0[slot] = i + 1;
        self.pages[p].1 += 1;
        self.len += 1;
    }

    #[inline]
    fn remove(&mut self, id: u64) -> Option<T> {
        let (key, slot) = Self::split(id);
        let p = self.page(key, false)? as usize;
        let i = std::mem::take(&mut self.pages[p].0[slot]);
        if i == 0 {
            return None;
        }
        let v = self.items[i as usize - 1].take();
        self.free_items.push(i - 1);
        self.len -= 1;
        let page = &mut self.pages[p];
        page.1 -= 1;
        if page.1 == 0 {
            // Empty (all zero again): back to the pool.
            self.index.remove(&key);
            self.free_pages.push(p as u32);
            self.last = None;
        }
        v
    }
}

/// The group of memory operations (no kernel name).
pub(crate) const NO_GROUP: u32 = u32::MAX;

/// Works or calls waiting for their other half, at most: past that, both
/// are let go (what was in them stays unmatched) and matching starts
/// afresh. 2¹⁸ items are some 15 MiB.
pub(crate) const MAX_PENDING: usize = 1 << 18;

/// Pages of [`Pending`] in use at most (4 KiB each: 16 MiB), likewise: ids
/// scattered on purpose would take a page each.
const MAX_PAGES: usize = 1 << 12;

/// Launch-delay outliers kept per trace.
pub(crate) const OUTLIERS: usize = 10;

/// GPU work waiting for its call.
#[derive(Clone, Copy)]
pub(crate) struct Work {
    pub(crate) pid: Pid,
    pub(crate) gpu: i64,
    pub(crate) ts: u64,
    pub(crate) dur: u64,
    /// Its kernel group, or [`NO_GROUP`].
    pub(crate) group: u32,
    /// Its stream (an index into the trace's streams).
    pub(crate) stream: u32,
}

/// A call waiting for its GPU work.
#[derive(Clone)]
pub(crate) struct Call {
    pub(crate) ts: u64,
    pub(crate) dur: u64,
    pub(crate) name: Str,
    pub(crate) track: u64,
}

/// One kernel name's launches.
#[derive(Debug, Default)]
pub(crate) struct LaunchAcc {
    /// The launching calls' durations, ns.
    pub(crate) calls: Durations,
    /// From each call's end to its kernel's start, ns (0 when the kernel
    /// started before its call returned).
    pub(crate) delays: Durations,
    /// Kernels that ran shorter than their call.
    pub(crate) short: u64,
}

impl LaunchAcc {
    /// Takes `o`'s launches too.
    pub(crate) fn append(&mut self, o: LaunchAcc) {
        self.calls.append(o.calls);
        self.delays.append(o.delays);
        self.short += o.short;
    }
}

/// A kernel that waited long after its call, with the call.
#[derive(Debug, Clone)]
pub(crate) struct Outlier {
    pub(crate) delay: u64,
    pub(crate) work: Work,
    pub(crate) call: Call,
}

impl std::fmt::Debug for Work {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "work at {} on GPU {}", self.ts, self.gpu)
    }
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at {}", self.name, self.ts)
    }
}

/// (work start, call start) pairs of one device, compactly: a zigzag
/// varint of the distance from the previous work's start, then one of the
/// call's distance before its work (a few bytes a pair), in blocks.
#[derive(Debug)]
pub(crate) struct PairLog {
    blocks: Vec<Vec<u8>>,
    prev: u64,
    prev_call: u64,
    len: usize,
    /// Whether the pairs were pushed sorted (work start, then call start):
    /// they are read back as they are, without a sorted copy.
    in_order: bool,
}

impl Default for PairLog {
    fn default() -> Self {
        PairLog {
            blocks: Vec::new(),
            prev: 0,
            prev_call: 0,
            len: 0,
            in_order: true,
        }
    }
}

const BLOCK: usize = 64 << 10;

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

impl PairLog {
    fn push(&mut self, work: u64, call: u64) {
        let mut buf = [0u8; 20];
        let n = put_varint(&mut buf, 0, zigzag(work.wrapping_sub(self.prev) as i64));
        let n = put_varint(&mut buf, n, zigzag(work.wrapping_sub(call) as i64));
        if (work, call) < (self.prev, self.prev_call) {
            self.in_order = false;
        }
        self.prev = work;
        self.prev_call = call;
        self.len += 1;
        let block = match self.blocks.last_mut() {
            Some(b) if b.len() + n <= BLOCK => b,
            _ => {
                self.blocks.push(Vec::with_capacity(BLOCK));
                self.blocks.last_mut().expect("just pushed")
            }
        };
        block.extend_from_slice(&buf[..n]);
    }

    /// Every (work start, call start), in the order pushed.
    pub(crate) fn iter(&self) -> PairIter<'_> {
        PairIter {
            blocks: &self.blocks,
            block: 0,
            at: 0,
            ts: 0,
        }
    }

    /// Whether [`PairLog::iter`] comes sorted.
    pub(crate) fn in_order(&self) -> bool {
        self.in_order
    }

    /// Every (work start, call start), sorted by work start (then call).
    pub(crate) fn sorted(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.len);
        out.extend(self.iter());
        if !self.in_order {
            out.sort_unstable();
        }
        out
    }
}

/// [`PairLog::iter`]: the start of each work is the sum of the distances
/// before it, across blocks.
pub(crate) struct PairIter<'a> {
    blocks: &'a [Vec<u8>],
    block: usize,
    at: usize,
    ts: u64,
}

impl Iterator for PairIter<'_> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        let mut b = self.blocks.get(self.block)?;
        while self.at >= b.len() {
            self.block += 1;
            self.at = 0;
            b = self.blocks.get(self.block)?;
        }
        self.ts = self
            .ts
            .wrapping_add(unzigzag(get_varint(b, &mut self.at)) as u64);
        let back = unzigzag(get_varint(b, &mut self.at));
        Some((self.ts, self.ts.wrapping_sub(back as u64)))
    }
}

/// The matching and what it found, for one trace.
#[derive(Default)]
pub(crate) struct Matcher {
    works: Pending<Work>,
    calls: Pending<Call>,
    /// Whether the maps passed [`MAX_PENDING`] and were let go.
    pub(crate) overflowed: bool,
    /// Per kernel group.
    pub(crate) kernels: Vec<LaunchAcc>,
    /// Per (pid, gpu): the pairs of its matched work.
    pub(crate) devices: Vec<((Pid, i64), PairLog)>,
    last_device: usize,
    /// The longest delays, longest first.
    pub(crate) outliers: Vec<Outlier>,
    /// Works matched with their calls.
    pub(crate) matched: u64,
}

impl Matcher {
    /// GPU work with id `id` came.
    #[inline]
    pub(crate) fn work(&mut self, id: u64, w: Work) {
        if !self.calls.is_empty()
            && let Some(c) = self.calls.remove(id)
        {
            self.matched(w, c.ts, c.dur, &c.name, c.track);
            return;
        }
        if self.works.len() >= MAX_PENDING || self.works.index.len() >= MAX_PAGES {
            self.let_go();
        }
        self.works.insert(id, w);
    }

    /// A call (named `name`, on `track`, from `ts` for `dur` ns) that
    /// submitted the work `id` came.
    #[inline]
    pub(crate) fn call(&mut self, id: u64, ts: u64, dur: u64, name: &Str, track: u64) {
        if let Some(w) = self.works.remove(id) {
            self.matched(w, ts, dur, name, track);
            return;
        }
        if self.calls.len() >= MAX_PENDING || self.calls.index.len() >= MAX_PAGES {
            self.let_go();
        }
        self.calls.insert(
            id,
            Call {
                ts,
                dur,
                name: name.clone(),
                track,
            },
        );
    }

    fn let_go(&mut self) {
        self.overflowed = true;
        self.works = Pending::default();
        self.calls = Pending::default();
    }

    fn matched(&mut self, w: Work, call_ts: u64, call_dur: u64, name: &Str, track: u64) {
        self.matched += 1;
        let key = (w.pid, w.gpu);
        let i = match self.devices.get(self.last_device) {
            Some((k, _)) if *k == key => self.last_device,
            _ => match self.devices.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    self.devices.push((key, PairLog::default()));
                    self.devices.len() - 1
                }
            },
        };
        self.last_device = i;
        self.devices[i].1.push(w.ts, call_ts);
        if w.group == NO_GROUP {
            return;
        }
        let g = w.group as usize;
        if self.kernels.len() <= g {
            self.kernels.resize_with(g + 1, LaunchAcc::default);
        }
        let k = &mut self.kernels[g];
        let delay = w.ts.saturating_sub(call_ts.saturating_add(call_dur));
        k.calls.push(call_dur);
        k.delays.push(delay);
        if w.dur < call_dur {
            k.short += 1;
        }
        if self.outliers.len() < OUTLIERS || self.outliers.last().is_some_and(|o| delay > o.delay) {
            let at = self.outliers.partition_point(|o| o.delay >= delay);
            self.outliers.insert(
                at,
                Outlier {
                    delay,
                    work: w,
                    call: Call {
                        ts: call_ts,
                        dur: call_dur,
                        name: name.clone(),
                        track,
                    },
                },
            );
            self.outliers.truncate(OUTLIERS);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_come_back_sorted_whatever_their_order() {
        let mut l = PairLog::default();
        let pairs = [
            (500u64, 400u64),
            (100, 20),
            (900, 950),
            (100, 10),
            (u64::MAX / 2, 3),
        ];
        for (w, c) in pairs {
            l.push(w, c);
        }
        let mut want = pairs.to_vec();
        want.sort_unstable();
        assert_eq!(l.sorted(), want);
        assert!(!l.in_order());
        let mut l = PairLog::default();
        for (w, c) in [(1, 0), (5, 1), (5, 2), (9, 9)] {
            l.push(w, c);
        }
        assert!(l.in_order());
        assert_eq!(
            l.iter().collect::<Vec<_>>(),
            [(1, 0), (5, 1), (5, 2), (9, 9)]
        );
    }

    fn work(ts: u64, dur: u64, group: u32) -> Work {
        Work {
            pid: 1,
            gpu: 0,
            ts,
            dur,
            group,
            stream: 0,
        }
    }

    #[test]
    fn work_and_call_meet_in_either_order() {
        let name: Str = "cudaLaunchKernel".into();
        let mut m = Matcher::default();
        m.work(1, work(1_000, 50, 0));
        m.call(1, 0, 100, &name, 9);
        m.call(2, 2_000, 100, &name, 9);
        m.work(2, work(2_100, 500, 0));
        // A copy: its device's pair only.
        m.work(3, work(3_000, 10, NO_GROUP));
        m.call(3, 2_900, 10, &name, 9);
        assert_eq!(m.matched, 3);
        let k = &mut m.kernels[0];
        assert_eq!(k.short, 1);
        let r = crate::durations::row("k".into(), &mut k.delays, None);
        assert_eq!((r.min, r.max), (0, 900));
        assert_eq!(
            m.devices[0].1.sorted(),
            [(1_000, 0), (2_100, 2_000), (3_000, 2_900)]
        );
        assert_eq!(m.outliers[0].delay, 900);
    }
}

#[cfg(test)]
mod pending_tests {
    use super::*;

    #[test]
    fn pending_items_come_back_once_by_id() {
        let mut p: Pending<u64> = Pending::default();
        let ids: Vec<u64> = (0..5_000u64)
            .map(|c| c << 22 | 4242)
            .chain([0, 1, u64::MAX, 1 << 63 | 7 << 22 | 4242])
            .collect();
        for &id in &ids {
            p.insert(id, id ^ 5);
        }
        assert_eq!(p.len(), ids.len());
        for &id in ids.iter().rev() {
            assert_eq!(p.remove(id), Some(id ^ 5), "{id:#x}");
            assert_eq!(p.remove(id), None);
        }
        assert!(p.is_empty());
        // Every page went back to the pool, and is used again.
        assert!(p.index.is_empty());
        let pages = p.pages.len();
        p.insert(3 << 22, 1);
        assert_eq!(p.pages.len(), pages);
        assert_eq!(p.remove(3 << 22), Some(1));
    }
}
