//! Splits a trace into its top-level fields (the `TracePacket`s), reading
//! the input in chunks: each packet is a slice of one reused buffer, which
//! grows only for a packet larger than it. Memory stays bounded by the
//! largest packet, however large the file.
//!
//! A packet's length is a claim of the file, not a fact: the buffer grows
//! only as its bytes arrive (doubling, a chunk at least), never to the
//! claimed length up front, and never past what is left of an input of
//! known size (a chunk more where it grew since). A claim larger than
//! what is left is a cut packet at once, without reading the rest.
//! Lengths are checked, not wrapped: a claim near 2^64 is a cut packet
//! like any other.

use std::io::{ErrorKind, Read};

const CHUNK: usize = 1 << 20;
/// A tag and a length fit in 20 bytes.
const HEADER_MAX: usize = 20;
/// The largest protobuf field number.
const MAX_FIELD: u64 = (1 << 29) - 1;

/// One top-level field.
pub(crate) enum Field<'a> {
    /// A length-delimited field: its number, its bytes and their offset
    /// in the input.
    Len(u32, &'a [u8], u64),
    /// A field of another wire type (skipped), by number.
    Other(u32),
}

/// What is wrong where a top-level field should start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrameError {
    /// Absolute byte offset of what is wrong.
    pub(crate) offset: u64,
    pub(crate) what: String,
    /// Whether the input ends there (a cut packet) rather than holding
    /// bytes that cannot start a field (damage).
    pub(crate) cut: bool,
}

pub(crate) struct Frames<R> {
    src: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Input offset of `buf[0]`.
    base: u64,
    eof: bool,
    /// The input's size, when known.
    size: Option<u64>,
    /// Bytes read at most.
    limit: u64,
    /// Whether the input holds more than `limit` bytes.
    over_limit: bool,
}

impl<R: Read> Frames<R> {
    /// Fields of `src`, of `size` bytes if known, reading at most `limit`
    /// bytes of it.
    pub(crate) fn new(src: R, size: Option<u64>, limit: u64) -> Self {
        // A small file gets a small buffer.
        let first = size.map_or(CHUNK, |s| {
            usize::try_from(s).map_or(CHUNK, |s| s.clamp(HEADER_MAX, CHUNK))
        });
        Self {
            src,
            buf: vec![0; first],
            start: 0,
            end: 0,
            base: 0,
            eof: false,
            size,
            limit,
            over_limit: false,
        }
    }

    /// Bytes consumed so far.
    pub(crate) fn position(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Whether reading stopped at the limit with more input to come.
    pub(crate) fn over_limit(&self) -> bool {
        self.over_limit
    }

    /// Makes at least `n` bytes available from `start`, unless the input
    /// ends first (or the limit is reached).
    fn fill(&mut self, n: usize) -> std::io::Result<()> {
        while self.end - self.start < n && !self.eof {
            if self.end == self.buf.len() {
                if self.start > 0 {
                    self.buf.copy_within(self.start..self.end, 0);
                    self.base += self.start as u64;
                    self.end -= self.start;
                    self.start = 0;
                }
                if self.end == self.buf.len() {
                    self.grow(n);
                }
            }
            let read = self.base + self.end as u64;
            let allowed = self.limit.saturating_sub(read);
            if allowed == 0 {
                // At the limit: one more byte says whether there is more.
                let mut probe = [0u8; 1];
                loop {
                    match self.src.read(&mut probe) {
                        Ok(k) => {
                            self.over_limit = k > 0;
                            break;
                        }
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                self.eof = true;
                break;
            }
            let room =
                (self.buf.len() - self.end).min(usize::try_from(allowed).unwrap_or(usize::MAX));
            match self.src.read(&mut self.buf[self.end..self.end + room]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.end += k,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Reads and drops what the input has up to the limit, in the buffer
    /// as it is, and whether it has more ([`Frames::over_limit`]); the
    /// buffered bytes are lost.
    fn skip_to_limit(&mut self) -> std::io::Result<()> {
        self.base += self.end as u64;
        self.start = 0;
        self.end = 0;
        while !self.eof {
            self.fill(self.buf.len())?;
            self.base += self.end as u64;
            self.end = 0;
        }
        Ok(())
    }

    /// Grows the full buffer (which starts at `start`) towards `n` bytes:
    /// doubled, by a chunk at least, but never past what is left of an
    /// input of known size (by a chunk where the input grew since).
    fn grow(&mut self, n: usize) {
        let len = self.buf.len();
        let mut want = n.min(len.saturating_add(len.max(CHUNK)));
        if let Some(size) = self.size {
            let left = usize::try_from(size.saturating_sub(self.base)).unwrap_or(usize::MAX);
            let cap = if left > len {
                left
            } else {
                len.saturating_add(CHUNK)
            };
            want = want.min(cap);
        }
        self.buf.reserve_exact(want - len);
        self.buf.resize(want, 0);
    }

    fn err(&self, at: usize, what: impl Into<String>, cut: bool) -> FrameError {
        FrameError {
            offset: self.base + at as u64,
            what: what.into(),
            cut,
        }
    }

    /// The next top-level field; `None` at the end of the input.
    pub(crate) fn next(&mut self) -> std::io::Result<Option<Result<Field<'_>, FrameError>>> {
        self.fill(HEADER_MAX)?;
        if self.start == self.end {
            return Ok(None);
        }
        let at = self.start;
        let mut pos = self.start;
        // Fewer than HEADER_MAX bytes are there only at the end of the
        // input: a varint cut short there is a cut, a longer one damage.
        let tag = match varint(&self.buf[..self.end], &mut pos) {
            Ok(v) => v,
            Err(Varint::Cut) => {
                return Ok(Some(Err(self.err(
                    at,
                    "the input ends in a field's tag",
                    true,
                ))));
            }
            Err(Varint::TooLong) => {
                return Ok(Some(Err(self.err(at, "a tag longer than 10 bytes", false))));
            }
        };
        let field = tag >> 3;
        if field == 0 {
            return Ok(Some(Err(self.err(
                at,
                format!("field number 0 (byte {tag:#04x}; a run of zero bytes?)"),
                false,
            ))));
        }
        if field > MAX_FIELD {
            return Ok(Some(Err(self.err(
                at,
                format!("field number {field}, past the largest (2^29 - 1)"),
                false,
            ))));
        }
        let field = field as u32;
        let wire = tag & 7;
        let len = match wire {
            0 => match varint(&self.buf[..self.end], &mut pos) {
                Ok(_) => {
                    self.start = pos;
                    return Ok(Some(Ok(Field::Other(field))));
                }
                Err(Varint::Cut) => {
                    return Ok(Some(Err(self.err(pos, "the input ends in a varint", true))));
                }
                Err(Varint::TooLong) => {
                    return Ok(Some(Err(self.err(
                        pos,
                        "a varint longer than 10 bytes",
                        false,
                    ))));
                }
            },
            1 => 8,
            5 => 4,
            2 => match varint(&self.buf[..self.end], &mut pos) {
                Ok(n) => n,
                Err(Varint::Cut) => {
                    return Ok(Some(Err(self.err(
                        pos,
                        "the input ends in a field's length",
                        true,
                    ))));
                }
                Err(Varint::TooLong) => {
                    return Ok(Some(Err(self.err(
                        pos,
                        "a length longer than 10 bytes",
                        false,
                    ))));
                }
            },
            w => {
                return Ok(Some(Err(self.err(
                    at,
                    format!("field {field} of wire type {w}, which no trace has"),
                    false,
                ))));
            }
        };
        let header = pos - self.start;
        let field_at = self.base + at as u64;
        let body_at = self.base + pos as u64;
        // What is left of the input, as far as it is known: its size, and
        // what this read may take.
        let left = self.size.unwrap_or(u64::MAX).saturating_sub(body_at);
        let allowed = self.limit.saturating_sub(body_at);
        let total = match usize::try_from(len)
            .ok()
            .and_then(|l| header.checked_add(l))
        {
            Some(t) if len <= left && len <= allowed => t,
            _ => {
                if len <= left {
                    // Past the limit, if the input goes on that far.
                    self.skip_to_limit()?;
                }
                return Ok(Some(Err(self.err(
                    pos,
                    format!(
                        "field {field} at byte {field_at} claims {len} bytes, {} are left",
                        left.min(allowed)
                    ),
                    true,
                ))));
            }
        };
        self.fill(total)?;
        if self.end - self.start < total {
            let got = (self.end - self.start).saturating_sub(header);
            return Ok(Some(Err(FrameError {
                offset: body_at,
                what: format!(
                    "field {field} at byte {field_at} claims {len} bytes, the input ends after {got}"
                ),
                cut: true,
            })));
        }
        let body = self.start + header;
        self.start += total;
        Ok(Some(Ok(if wire == 2 {
            Field::Len(field, &self.buf[body..body + total - header], body_at)
        } else {
            Field::Other(field)
        })))
    }
}

/// Why a varint could not be read.
enum Varint {
    /// The bytes end first.
    Cut,
    /// More than 10 bytes.
    TooLong,
}

#[inline(always)]
fn varint(b: &[u8], pos: &mut usize) -> Result<u64, Varint> {
    if let Some(&x) = b.get(*pos)
        && x < 0x80
    {
        *pos += 1;
        return Ok(x as u64);
    }
    varint_slow(b, pos)
}

#[inline(never)]
fn varint_slow(b: &[u8], pos: &mut usize) -> Result<u64, Varint> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&x) = b.get(*pos) else {
            return Err(Varint::Cut);
        };
        *pos += 1;
        v |= ((x & 0x7f) as u64) << shift;
        if x < 0x80 {
            return Ok(v);
        }
    }
    Err(Varint::TooLong)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::Writer;

    /// A reader that hands out at most `n` bytes per read, as a pipe may,
    /// and notes the largest buffer it was offered.
    struct Trickle<'a>(&'a [u8], usize, usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            self.2 = self.2.max(out.len());
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
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

    /// A whole packet, then one that claims `len` bytes and has 80.
    fn claiming(len: u64) -> Vec<u8> {
        let mut b = vec![0x0a, 0x02, 0x40, 0x01, 0x0a];
        b.extend(varint(len));
        b.extend([7u8; 80]);
        b
    }

    #[test]
    fn packets_larger_than_a_chunk_and_short_reads_come_out_whole() {
        let big = vec![7u8; CHUNK * 2 + 5];
        let mut w = Writer::new();
        w.bytes(1, b"small")
            .varint(9, 300)
            .bytes(1, &big)
            .bytes(2, b"x");
        let mut f = Frames::new(Trickle(w.as_bytes(), 1000, 0), None, u64::MAX);
        let mut got = Vec::new();
        while let Some(x) = f.next().unwrap() {
            got.push(match x.unwrap() {
                Field::Len(n, b, _) => (n, b.len(), b[0]),
                Field::Other(n) => (n, 0, 0),
            });
        }
        assert_eq!(
            got,
            vec![(1, 5, b's'), (9, 0, 0), (1, big.len(), 7), (2, 1, b'x')]
        );
        assert_eq!(f.position(), w.len() as u64);
    }

    #[test]
    fn a_cut_packet_is_an_error_at_its_offset() {
        let mut w = Writer::new();
        w.bytes(1, b"whole").bytes(1, b"cut short");
        let cut = &w.as_bytes()[..w.len() - 3];
        let mut f = Frames::new(cut, Some(cut.len() as u64), u64::MAX);
        assert!(matches!(
            f.next().unwrap(),
            Some(Ok(Field::Len(1, b"whole", 2)))
        ));
        let Some(Err(e)) = f.next().unwrap() else {
            panic!("a cut packet must be an error")
        };
        assert_eq!(
            e,
            FrameError {
                offset: 9,
                what: "field 1 at byte 7 claims 9 bytes, 6 are left".into(),
                cut: true
            }
        );
    }

    #[test]
    fn a_claim_past_the_end_of_a_file_allocates_nothing_for_it() {
        for len in [1 << 40, 3 << 30, (1 << 63) + 5, u64::MAX - 2, u64::MAX] {
            let b = claiming(len);
            let mut f = Frames::new(b.as_slice(), Some(b.len() as u64), u64::MAX);
            assert!(matches!(f.next().unwrap(), Some(Ok(Field::Len(1, _, 2)))));
            let Some(Err(e)) = f.next().unwrap() else {
                panic!("{len}: a claim past the end is an error")
            };
            assert!(e.cut, "{e:?}");
            assert!(e.what.contains(&format!("claims {len} bytes")), "{e:?}");
            assert!(f.buf.len() <= b.len(), "{len}: {} bytes held", f.buf.len());
        }
    }

    #[test]
    fn a_stream_buffers_what_arrives_not_what_a_packet_claims() {
        // 3 MiB of a packet that claims 3 GiB, from a pipe of unknown size.
        let mut b = claiming(3 << 30);
        b.resize(3 << 20, 7);
        let mut t = Trickle(&b, 64 << 10, 0);
        let mut f = Frames::new(&mut t, None, u64::MAX);
        assert!(matches!(f.next().unwrap(), Some(Ok(_))));
        let Some(Err(e)) = f.next().unwrap() else {
            panic!("a cut packet")
        };
        assert!(e.cut && e.what.contains("the input ends after"), "{e:?}");
        let held = f.buf.len();
        drop(f);
        // Doubling as the bytes come: at most twice what arrived, and
        // never a buffer larger than that offered to the reader.
        assert!(held <= 2 * b.len() + CHUNK, "{held}");
        assert!(t.2 <= 2 * b.len() + CHUNK, "{}", t.2);
    }

    #[test]
    fn zero_bytes_between_packets_are_damage_where_they_start() {
        let mut b = vec![0x0a, 0x02, 0x40, 0x01];
        b.extend([0u8; 100]);
        let mut f = Frames::new(b.as_slice(), Some(b.len() as u64), u64::MAX);
        assert!(matches!(f.next().unwrap(), Some(Ok(_))));
        let Some(Err(e)) = f.next().unwrap() else {
            panic!("zero bytes are damage")
        };
        assert_eq!((e.offset, e.cut), (4, false), "{e:?}");
        assert!(e.what.starts_with("field number 0"), "{e:?}");
    }

    #[test]
    fn reading_stops_at_the_limit_and_says_whether_there_was_more() {
        let mut w = Writer::new();
        w.bytes(1, b"first").bytes(1, b"second");
        let mut f = Frames::new(w.as_bytes(), None, 7);
        assert!(matches!(f.next().unwrap(), Some(Ok(_))));
        // Where the input seems to end, for all the frames can tell.
        assert!(f.next().unwrap().is_none());
        assert!(f.over_limit());
        let mut f = Frames::new(w.as_bytes(), None, 9);
        assert!(matches!(f.next().unwrap(), Some(Ok(_))));
        assert!(matches!(
            f.next().unwrap(),
            Some(Err(FrameError { cut: true, .. }))
        ));
        assert!(f.over_limit());
        // Exactly the limit: nothing more, so nothing over.
        let mut f = Frames::new(w.as_bytes(), None, w.len() as u64);
        while let Some(x) = f.next().unwrap() {
            x.unwrap();
        }
        assert!(!f.over_limit());
    }
}
