//! The reader against hostile and damaged input, one case each: what
//! security review and the mutation test (`tests/mutations.rs`) found.
//! Each read must end without a panic or an abort, keep what came before
//! the damage, and say where the damage is, at its offset in the file.

use gpu_trace_reader::pb::Writer;
use gpu_trace_reader::{ProblemKind, Trace, wire};
use std::io::Read;

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/launches-1000.pftrace"
);

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

/// A whole packet (a timestamp), then one claiming `len` bytes that has
/// `rest`.
fn claiming(len: u64, rest: usize) -> Vec<u8> {
    let mut w = Writer::new();
    w.nested(wire::TRACE_PACKET, |p| {
        p.varint(wire::packet::TIMESTAMP, 1000);
    });
    let mut b = w.as_bytes().to_vec();
    b.push(0x0a);
    b.extend(varint(len));
    b.resize(b.len() + rest, 0x42);
    b
}

fn cut_at(t: &Trace) -> Option<&str> {
    t.problems
        .iter()
        .filter(|p| p.kind == ProblemKind::Cut)
        .find_map(|p| p.text.strip_prefix("trace ends mid-packet: "))
}

#[test]
fn a_tebibyte_claimed_in_a_107_byte_file_is_a_cut() {
    // Aborted: "memory allocation of 1099512676352 bytes failed".
    let b = claiming(1 << 40, 95);
    assert_eq!(b.len(), 107);
    let dir = std::env::temp_dir().join(format!("gpu-trace-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("tebibyte.pftrace");
    std::fs::write(&p, &b).unwrap();
    let t = Trace::open(&p).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(t.truncated_at, Some(5));
    assert_eq!(
        cut_at(&t),
        Some("field 1 at byte 5 claims 1099511627776 bytes, 95 are left")
    );
}

#[test]
fn claims_near_2_to_the_63_and_64_are_cuts_not_panics() {
    // Panicked: "capacity overflow", "range start index out of range".
    for len in [1 << 63, (1 << 63) + 5, u64::MAX - 2, u64::MAX] {
        let t = Trace::from_bytes(&claiming(len, 80)).unwrap();
        assert_eq!(t.truncated_at, Some(5), "{len}");
        assert!(
            cut_at(&t).is_some_and(|c| c.contains(&format!("claims {len} bytes"))),
            "{len}: {:?}",
            t.problems
        );
    }
}

/// A pipe: 64 KiB a read; notes the largest buffer it was handed.
struct Pipe<'a> {
    data: &'a [u8],
    largest: usize,
}

impl Read for Pipe<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        self.largest = self.largest.max(out.len());
        let n = self.data.len().min(out.len()).min(64 << 10);
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[test]
fn three_gib_claimed_in_two_mib_from_a_pipe_buffers_what_arrives() {
    // Took 3.15 GB of memory: the buffer was sized to the claim.
    let b = claiming(3 << 30, 2 << 20);
    let mut pipe = Pipe {
        data: &b,
        largest: 0,
    };
    let t = Trace::from_reader(&mut pipe).unwrap();
    assert_eq!(t.truncated_at, Some(5));
    assert!(
        pipe.largest <= 2 * b.len() + (1 << 20),
        "a buffer of {} bytes for {} that arrived",
        pipe.largest,
        b.len()
    );
}

#[test]
fn a_byte_changed_in_the_middle_costs_its_packet_only() {
    // Rejected the whole file: "not a Perfetto trace: malformed protobuf
    // at byte 20" (an offset in the packet, not the file).
    let good = std::fs::read(TRACE).unwrap();
    let whole = Trace::from_bytes(&good).unwrap();
    let mid = good.len() / 2;
    let mut b = good.clone();
    b[mid] ^= 0xff;
    let t = Trace::from_bytes(&b).unwrap();
    assert!(
        t.gpu_events.len() + 1 >= whole.gpu_events.len(),
        "{} of {} GPU events",
        t.gpu_events.len(),
        whole.gpu_events.len()
    );
    let line = t
        .problems
        .iter()
        .find(|p| p.kind == ProblemKind::Damaged && p.text.contains("malformed inside"))
        .map(|p| p.text.as_str())
        .unwrap_or_else(|| panic!("{:?}", t.problems));
    assert_eq!(t.damaged_packets, 1, "{line}");
    // The packet's offset and the damage's, both the file's.
    let nums: Vec<usize> = line
        .split("byte ")
        .skip(1)
        .filter_map(|r| r.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .collect();
    assert_eq!(nums.len(), 2, "{line}");
    assert!(nums[0] <= mid && mid - nums[0] < 200, "{line}");
    assert!(nums[1] >= nums[0] && nums[1] <= mid + 10, "{line}");
}

#[test]
fn zero_bytes_after_a_trace_are_damage_where_they_start() {
    // Read silently: a clean trace and a MiB of zeros had no problem.
    let good = std::fs::read(TRACE).unwrap();
    let whole = Trace::from_bytes(&good).unwrap();
    let mut b = good.clone();
    b.resize(good.len() + (1 << 20), 0);
    let t = Trace::from_bytes(&b).unwrap();
    assert_eq!(t.gpu_events.len(), whole.gpu_events.len());
    assert_eq!(t.damaged_at, Some(good.len() as u64));
    assert_eq!(
        t.problems.first().map(|p| p.text.as_str()),
        Some(
            format!(
                "the trace is damaged at byte {} (field number 0 (byte 0x00; a run of zero bytes?)): read up to there; the 1048576 bytes from there are not read",
                good.len()
            )
            .as_str()
        )
    );
    // Zero bytes alone are no trace.
    assert!(Trace::from_bytes(&[0u8; 4096]).is_err());
}

#[test]
fn a_packed_varint_longer_than_ten_bytes_is_malformed_not_an_overflow() {
    // A shift past 63 bits: "attempt to shift left with overflow" in a
    // debug build.
    let mut w = Writer::new();
    w.nested(wire::TRACE_PACKET, |p| {
        p.varint(wire::packet::TIMESTAMP, 1000);
    });
    w.nested(wire::TRACE_PACKET, |p| {
        p.varint(wire::packet::TIMESTAMP, 2000)
            .nested(wire::packet::TRACK_EVENT, |e| {
                e.varint(wire::track_event::TYPE, wire::track_event::TYPE_INSTANT)
                    .nested(wire::track_event::GPU_CORRELATION, |c| {
                        c.bytes(wire::track_event::SUBMISSION_IDS, &[0xff; 12]);
                    });
            });
    });
    let t = Trace::from_bytes(w.as_bytes()).unwrap();
    assert_eq!(t.damaged_packets, 1, "{:?}", t.problems);
}

#[test]
fn a_field_number_past_2_to_the_29_is_not_read_as_another() {
    // Tag 2^35 | 1 << 3 | 2 was field 1 once cut to 32 bits.
    let mut w = Writer::new();
    w.nested(wire::TRACE_PACKET, |p| {
        p.varint(wire::packet::TIMESTAMP, 1000);
    });
    let mut b = w.as_bytes().to_vec();
    b.extend(varint((1 << 35) | (1 << 3) | 2));
    b.extend([2, 0x40, 0x01]);
    let t = Trace::from_bytes(&b).unwrap();
    assert_eq!(t.packets, 1);
    assert_eq!(t.damaged_at, Some(5), "{:?}", t.problems);
}
