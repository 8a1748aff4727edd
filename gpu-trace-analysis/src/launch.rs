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

/// The group of memory operations (no kernel name).
pub(crate) const NO_GROUP: u32 = u32::MAX;

/// Works or calls waiting for their other half, at most: past that, both
/// maps are let go (what was in them stays unmatched) and matching starts
/// afresh. 2¹⁸ entries are some 15 MiB.
pub(crate) const MAX_PENDING: usize = 1 << 18;

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
#[derive(Debug, Default)]
pub(crate) struct PairLog {
    blocks: Vec<Vec<u8>>,
    prev: u64,
    len: usize,
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
        self.prev = work;
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

    /// Every (work start, call start), sorted by work start (then call).
    pub(crate) fn sorted(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.len);
        let mut ts = 0u64;
        for b in &self.blocks {
            let mut at = 0;
            while at < b.len() {
                ts = ts.wrapping_add(unzigzag(get_varint(b, &mut at)) as u64);
                let back = unzigzag(get_varint(b, &mut at));
                out.push((ts, ts.wrapping_sub(back as u64)));
            }
        }
        out.sort_unstable();
        out
    }
}

/// The matching and what it found, for one trace.
#[derive(Default)]
pub(crate) struct Matcher {
    works: HashMap<u64, Work, IdHash>,
    calls: HashMap<u64, Call, IdHash>,
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
            && let Some(c) = self.calls.remove(&id)
        {
            self.matched(w, &c);
            return;
        }
        if self.works.len() >= MAX_PENDING {
            self.let_go();
        }
        self.works.insert(id, w);
    }

    /// A call that submitted the work `id` came.
    #[inline]
    pub(crate) fn call(&mut self, id: u64, c: impl FnOnce() -> Call) {
        if let Some(w) = self.works.remove(&id) {
            self.matched(w, &c());
            return;
        }
        if self.calls.len() >= MAX_PENDING {
            self.let_go();
        }
        self.calls.insert(id, c());
    }

    fn let_go(&mut self) {
        self.overflowed = true;
        self.works = HashMap::default();
        self.calls = HashMap::default();
    }

    fn matched(&mut self, w: Work, c: &Call) {
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
        self.devices[i].1.push(w.ts, c.ts);
        if w.group == NO_GROUP {
            return;
        }
        let g = w.group as usize;
        if self.kernels.len() <= g {
            self.kernels.resize_with(g + 1, LaunchAcc::default);
        }
        let k = &mut self.kernels[g];
        let delay = w.ts.saturating_sub(c.ts.saturating_add(c.dur));
        k.calls.push(c.dur);
        k.delays.push(delay);
        if w.dur < c.dur {
            k.short += 1;
        }
        if self.outliers.len() < OUTLIERS || self.outliers.last().is_some_and(|o| delay > o.delay) {
            let at = self.outliers.partition_point(|o| o.delay >= delay);
            self.outliers.insert(
                at,
                Outlier {
                    delay,
                    work: w,
                    call: c.clone(),
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

    fn call(ts: u64, dur: u64) -> Call {
        Call {
            ts,
            dur,
            name: "cudaLaunchKernel".into(),
            track: 9,
        }
    }

    #[test]
    fn work_and_call_meet_in_either_order() {
        let mut m = Matcher::default();
        m.work(1, work(1_000, 50, 0));
        m.call(1, || call(0, 100));
        m.call(2, || call(2_000, 100));
        m.work(2, work(2_100, 500, 0));
        // A copy: its device's pair only.
        m.work(3, work(3_000, 10, NO_GROUP));
        m.call(3, || call(2_900, 10));
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
