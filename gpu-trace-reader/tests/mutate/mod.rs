//! Seeded mutations of real traces, for the reader's mutation test
//! (`tests/mutations.rs`, bounded, in every `cargo test`) and for the long
//! run under a memory limit (`examples/mutation_run.rs`). A case is a
//! function of (seed, index) alone, so any case can be made again.

#![allow(dead_code, unreachable_pub)]

use gpu_trace_reader::{Trace, Visitor};

/// The committed trace: 1000 kernel launches with their API slices,
/// copies, two threads (see `tests/recorded.rs`).
pub const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/launches-1000.pftrace"
);

/// splitmix64: small, seeded, and the same everywhere.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// In `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Where each top-level field of `b` starts, and the end of the last whole
/// one.
pub fn packet_starts(b: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let start = pos;
        pos += 1; // the tag (0x0a)
        let mut len = 0usize;
        let mut shift = 0;
        loop {
            let Some(&x) = b.get(pos) else { return out };
            pos += 1;
            len |= ((x & 0x7f) as usize) << shift;
            shift += 7;
            if x < 0x80 {
                break;
            }
        }
        if pos + len > b.len() {
            break;
        }
        out.push(start);
        pos += len;
    }
    out.push(pos);
    out
}

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

/// What a mutation did, and where the bytes before it are the original's
/// (everything before `intact` is untouched).
pub struct Mutation {
    pub what: String,
    pub intact: usize,
}

/// A huge length: past the file, near 2^32, 2^63 or 2^64.
fn huge(r: &mut Rng) -> u64 {
    match r.below(5) {
        0 => 1 << 40,
        1 => (3 << 30) + r.below(1 << 20) as u64,
        2 => (1 << 63) + r.below(100) as u64,
        3 => u64::MAX - r.below(100) as u64,
        _ => r.next(),
    }
}

/// One mutation of `b`, chosen by `r`.
pub fn mutate_once(b: &mut Vec<u8>, starts: &[usize], r: &mut Rng) -> Mutation {
    let len = b.len().max(1);
    let at = r.below(len);
    // Where a packet started before the mutations so far.
    let packet = starts[r.below(starts.len().saturating_sub(1).max(1))].min(b.len() - 1);
    match r.below(10) {
        0 => {
            let n = 1 + r.below(8);
            let mut first = usize::MAX;
            for _ in 0..n {
                let i = r.below(len).min(b.len().saturating_sub(1));
                first = first.min(i);
                if let Some(x) = b.get_mut(i) {
                    *x ^= 1 << r.below(8);
                }
            }
            Mutation {
                what: format!("{n} bit flips from byte {first}"),
                intact: first,
            }
        }
        1 => {
            let x = (1 + r.below(255)) as u8;
            let i = at.min(b.len() - 1);
            b[i] ^= x;
            Mutation {
                what: format!("byte {at} ^= {x:#x}"),
                intact: at,
            }
        }
        2 => {
            let n = 1 + r.below(4096);
            let fill: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
            b.splice(at..at, fill);
            Mutation {
                what: format!("{n} random bytes inserted at {at}"),
                intact: at,
            }
        }
        3 => {
            let n = 1 + r.below(4096);
            let end = (at + n).min(b.len());
            b.drain(at..end);
            Mutation {
                what: format!("bytes {at}..{end} deleted"),
                intact: at,
            }
        }
        4 => {
            // A packet's length replaced by a huge one.
            let v = huge(r);
            let mut p = packet + 1;
            while b.get(p).is_some_and(|&x| x >= 0x80) {
                p += 1;
            }
            let end = (p + 1).min(b.len());
            b.splice(packet + 1..end, varint(v));
            Mutation {
                what: format!("the packet at {packet} claims {v} bytes"),
                intact: packet,
            }
        }
        5 => {
            // A huge length inside a packet (a nested field's).
            let v = huge(r);
            let mut w = vec![0x12];
            w.extend(varint(v));
            let i = (at + 2).min(b.len());
            b.splice(i..i, w);
            Mutation {
                what: format!("a field claiming {v} bytes inserted at {i}"),
                intact: i,
            }
        }
        6 => {
            let n = 1 + r.below(1 << 16);
            let over = r.below(2) == 0;
            if over {
                let end = (at + n).min(b.len());
                b[at..end].fill(0);
            } else {
                b.splice(at..at, std::iter::repeat_n(0, n));
            }
            Mutation {
                what: format!(
                    "{n} zero bytes {} at {at}",
                    if over { "written" } else { "inserted" }
                ),
                intact: at,
            }
        }
        7 => {
            b.truncate(at);
            Mutation {
                what: format!("cut at {at}"),
                intact: at,
            }
        }
        8 => {
            // Packets duplicated in place.
            let i = r.below(starts.len().saturating_sub(1).max(1));
            let j = (i + 1 + r.below(8)).min(starts.len() - 1);
            let (s, e) = (starts[i], starts[j]);
            if e <= b.len() && s < e {
                let copy = b[s..e].to_vec();
                b.splice(e..e, copy);
            }
            Mutation {
                what: format!("packets {s}..{e} duplicated"),
                intact: e,
            }
        }
        _ => {
            // A run of 0xff (an endless varint) inside a packet.
            let n = 10 + r.below(20);
            let i = (packet + 2 + r.below(16)).min(b.len());
            let end = (i + n).min(b.len());
            b[i..end].fill(0xff);
            Mutation {
                what: format!("0xff over {i}..{end}"),
                intact: i,
            }
        }
    }
}

/// Case `index` of `seed`: one to three mutations of `corpus`.
pub fn case(corpus: &[u8], starts: &[usize], seed: u64, index: u64) -> (Vec<u8>, Mutation) {
    let mut r = Rng(seed ^ index.wrapping_mul(0xa076_1d64_78bd_642f));
    let mut b = corpus.to_vec();
    let n = 1 + r.below(3);
    let mut what = Vec::new();
    let mut intact = usize::MAX;
    for _ in 0..n {
        if b.is_empty() {
            break;
        }
        let m = mutate_once(&mut b, starts, &mut r);
        what.push(m.what);
        intact = intact.min(m.intact);
    }
    (
        b,
        Mutation {
            what: what.join("; "),
            intact,
        },
    )
}

/// Counts what a streaming read hands over.
#[derive(Default)]
pub struct Count {
    pub gpu: u64,
    pub slices: u64,
}

impl Visitor for Count {
    fn gpu_event(&mut self, _: &gpu_trace_reader::GpuEvent) {
        self.gpu += 1;
    }
    fn slice(&mut self, _: &gpu_trace_reader::Slice, _: u32) {
        self.slices += 1;
    }
}

/// Reads a mutated trace every way the reader offers and checks what must
/// hold of any input: no panic (the caller catches it), offsets within the
/// input, few problem lines, and the GPU events of the whole packets
/// before the first mutated byte kept. `before` counts those.
pub fn check(b: &[u8], before: u64) -> Result<(), String> {
    let whole = Trace::from_bytes(b);
    let mut c = Count::default();
    let streamed = Trace::visit_bytes(b, &mut c);
    let piped = Trace::from_reader(Trickle(b, 4093));
    match (&whole, &streamed, &piped) {
        (Ok(t), Ok(_), Ok(p)) => {
            for at in [t.truncated_at, t.damaged_at].into_iter().flatten() {
                if at > b.len() as u64 {
                    return Err(format!("an offset past the input: {at}"));
                }
            }
            if t.problems.len() > 220 {
                return Err(format!("{} problem lines", t.problems.len()));
            }
            if t.gpu_events.len() as u64 != c.gpu || p.gpu_events.len() != t.gpu_events.len() {
                return Err(format!(
                    "GPU events differ: {} whole, {} streamed, {} piped",
                    t.gpu_events.len(),
                    c.gpu,
                    p.gpu_events.len()
                ));
            }
            if (t.gpu_events.len() as u64) < before {
                return Err(format!(
                    "{} GPU events kept, {before} were before the damage",
                    t.gpu_events.len()
                ));
            }
            Ok(())
        }
        (Err(_), Err(_), Err(_)) => {
            if before > 0 {
                return Err(format!(
                    "rejected whole, with {before} GPU events before the damage: {}",
                    whole.err().map(|e| e.to_string()).unwrap_or_default()
                ));
            }
            Ok(())
        }
        _ => Err(format!(
            "the ways of reading disagree: whole {:?}, streamed {:?}, piped {:?}",
            whole.as_ref().err(),
            streamed.as_ref().err(),
            piped.as_ref().err()
        )),
    }
}

/// GPU events in the whole packets of `corpus` before byte `intact`.
pub fn events_before(corpus: &[u8], starts: &[usize], intact: usize) -> u64 {
    // The last packet that ends at or before the first changed byte.
    let end = starts
        .iter()
        .copied()
        .filter(|&s| s <= intact)
        .max()
        .unwrap_or(0);
    if end == 0 {
        return 0;
    }
    Trace::from_bytes(&corpus[..end]).map_or(0, |t| t.gpu_events.len() as u64)
}

/// A pipe: a few KB a read.
pub struct Trickle<'a>(pub &'a [u8], pub usize);

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.len().min(self.1).min(out.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}
