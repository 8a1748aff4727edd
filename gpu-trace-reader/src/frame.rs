//! Splits a trace into its top-level fields (the `TracePacket`s), reading
//! the input in chunks: each packet is a slice of one reused buffer, which
//! grows only for a packet larger than it. Memory stays bounded by the
//! largest packet, however large the file.

use crate::pb::DecodeError;
use std::io::{ErrorKind, Read};

const CHUNK: usize = 1 << 20;
/// A tag and a length fit in 20 bytes.
const HEADER_MAX: usize = 20;

/// One top-level field.
pub(crate) enum Field<'a> {
    /// A length-delimited field: its number and bytes.
    Len(u32, &'a [u8]),
    /// A field of another wire type (skipped), by number.
    Other(u32),
}

pub(crate) struct Frames<R> {
    src: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Input offset of `buf[0]`.
    base: u64,
    eof: bool,
}

impl<R: Read> Frames<R> {
    pub(crate) fn new(src: R) -> Self {
        Self {
            src,
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            base: 0,
            eof: false,
        }
    }

    /// Bytes consumed so far.
    pub(crate) fn position(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Makes at least `n` bytes available from `start`, unless the input
    /// ends first.
    fn fill(&mut self, n: usize) -> std::io::Result<()> {
        if self.end - self.start >= n || self.eof {
            return Ok(());
        }
        if self.start + n > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.start = 0;
            if n > self.buf.len() {
                self.buf.resize(n.next_multiple_of(CHUNK), 0);
            }
        }
        while self.end - self.start < n {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(k) => self.end += k,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn err(&self, at: usize, what: &'static str) -> DecodeError {
        DecodeError {
            offset: (self.base + at as u64) as usize,
            what,
        }
    }

    /// The next top-level field; `None` at the end of the input.
    pub(crate) fn next(&mut self) -> std::io::Result<Option<Result<Field<'_>, DecodeError>>> {
        self.fill(HEADER_MAX)?;
        if self.start == self.end {
            return Ok(None);
        }
        let mut pos = self.start;
        let tag = match varint(&self.buf[..self.end], &mut pos) {
            Ok(v) => v,
            Err(what) => return Ok(Some(Err(self.err(pos, what)))),
        };
        let field = (tag >> 3) as u32;
        let len = match tag & 7 {
            0 => match varint(&self.buf[..self.end], &mut pos) {
                Ok(_) => {
                    self.start = pos;
                    return Ok(Some(Ok(Field::Other(field))));
                }
                Err(what) => return Ok(Some(Err(self.err(pos, what)))),
            },
            1 => 8,
            5 => 4,
            2 => match varint(&self.buf[..self.end], &mut pos) {
                Ok(n) => n as usize,
                Err(what) => return Ok(Some(Err(self.err(pos, what)))),
            },
            _ => return Ok(Some(Err(self.err(pos, "unsupported wire type")))),
        };
        let header = pos - self.start;
        let Some(total) = header.checked_add(len) else {
            return Ok(Some(Err(self.err(pos, "field runs past the end"))));
        };
        self.fill(total)?;
        let body = self.start + header;
        if self.end - self.start < total {
            return Ok(Some(Err(self.err(body, "field runs past the end"))));
        }
        self.start += total;
        Ok(Some(Ok(if tag & 7 == 2 {
            Field::Len(field, &self.buf[body..body + len])
        } else {
            Field::Other(field)
        })))
    }
}

#[inline(always)]
fn varint(b: &[u8], pos: &mut usize) -> Result<u64, &'static str> {
    if let Some(&x) = b.get(*pos)
        && x < 0x80
    {
        *pos += 1;
        return Ok(x as u64);
    }
    varint_slow(b, pos)
}

#[inline(never)]
fn varint_slow(b: &[u8], pos: &mut usize) -> Result<u64, &'static str> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&x) = b.get(*pos) else {
            return Err("truncated varint");
        };
        *pos += 1;
        v |= ((x & 0x7f) as u64) << shift;
        if x < 0x80 {
            return Ok(v);
        }
    }
    Err("varint longer than 10 bytes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::Writer;

    /// A reader that hands out at most `n` bytes per read, as a pipe may.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn packets_larger_than_a_chunk_and_short_reads_come_out_whole() {
        let big = vec![7u8; CHUNK * 2 + 5];
        let mut w = Writer::new();
        w.bytes(1, b"small")
            .varint(9, 300)
            .bytes(1, &big)
            .bytes(2, b"x");
        let mut f = Frames::new(Trickle(w.as_bytes(), 1000));
        let mut got = Vec::new();
        while let Some(x) = f.next().unwrap() {
            got.push(match x.unwrap() {
                Field::Len(n, b) => (n, b.len(), b[0]),
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
        let mut f = Frames::new(cut);
        assert!(matches!(
            f.next().unwrap(),
            Some(Ok(Field::Len(1, b"whole")))
        ));
        let Some(Err(e)) = f.next().unwrap() else {
            panic!("a cut packet must be an error")
        };
        assert_eq!((e.offset, e.what), (9, "field runs past the end"));
    }
}
