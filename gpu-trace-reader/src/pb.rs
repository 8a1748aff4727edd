//! A small protobuf wire-format encoder and decoder.
//!
//! The perfetto-sdk builders allocate an `Rc` for every nested message and a
//! `String` for every string field. Packets are built on the emitter thread
//! into one reused buffer instead, then handed to the SDK as raw bytes. The
//! decoder serves the trace reader, so that reading needs no Perfetto at all.

/// Protobuf wire types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireType {
    /// Base-128 varint.
    Varint = 0,
    /// Little-endian 8 bytes.
    Fixed64 = 1,
    /// Length-delimited bytes.
    Len = 2,
    /// Little-endian 4 bytes.
    Fixed32 = 5,
}

/// Appends fields to a byte buffer.
#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Forgets the content and keeps the allocation.
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// Number of bytes written.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    #[inline]
    fn raw_varint(&mut self, mut v: u64) {
        // Room for the longest varint first: the pushes then never grow
        // the buffer (a slice copy instead calls memcpy for a few bytes).
        self.buf.reserve(10);
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    #[inline]
    fn tag(&mut self, field: u32, wt: WireType) {
        self.raw_varint(((field as u64) << 3) | wt as u64);
    }

    /// A varint field (`uint32`, `uint64`, `int32` ≥ 0, `bool`, enums).
    #[inline]
    pub fn varint(&mut self, field: u32, v: u64) -> &mut Self {
        self.tag(field, WireType::Varint);
        self.raw_varint(v);
        self
    }

    /// An `int64`/`int32` field; negative values take ten bytes, as in C++.
    #[inline]
    pub fn int(&mut self, field: u32, v: i64) -> &mut Self {
        self.varint(field, v as u64)
    }

    /// A `bool` field.
    #[inline]
    pub fn bool(&mut self, field: u32, v: bool) -> &mut Self {
        self.varint(field, v as u64)
    }

    /// A `fixed64` field.
    #[inline]
    pub fn fixed64(&mut self, field: u32, v: u64) -> &mut Self {
        self.tag(field, WireType::Fixed64);
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A `double` field.
    #[inline]
    pub fn double(&mut self, field: u32, v: f64) -> &mut Self {
        self.fixed64(field, v.to_bits())
    }

    /// A `bytes` field.
    #[inline]
    pub fn bytes(&mut self, field: u32, v: &[u8]) -> &mut Self {
        self.tag(field, WireType::Len);
        self.raw_varint(v.len() as u64);
        self.buf.extend_from_slice(v);
        self
    }

    /// Bytes already encoded as fields of this message.
    pub fn raw(&mut self, encoded: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(encoded);
        self
    }

    /// A `string` field.
    #[inline]
    pub fn string(&mut self, field: u32, v: &str) -> &mut Self {
        self.bytes(field, v.as_bytes())
    }

    /// A nested message written by `f`.
    ///
    /// One byte is reserved for the length; longer messages shift their body
    /// once, which is cheaper than protozero's four-byte redundant varints
    /// when most nested messages are short.
    pub fn nested(&mut self, field: u32, f: impl FnOnce(&mut Self)) -> &mut Self {
        self.tag(field, WireType::Len);
        let len_at = self.buf.len();
        self.buf.push(0);
        f(self);
        let body = self.buf.len() - len_at - 1;
        if body < 0x80 {
            self.buf[len_at] = body as u8;
        } else {
            let mut tmp = [0u8; 10];
            let n = encode_varint(body as u64, &mut tmp);
            self.buf
                .splice(len_at..len_at + 1, tmp[..n].iter().copied());
        }
        self
    }
}

fn encode_varint(mut v: u64, out: &mut [u8; 10]) -> usize {
    let mut i = 0;
    while v >= 0x80 {
        out[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

/// Number of bytes `v` takes as a varint.
pub fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// A decoded field value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// A varint.
    Varint(u64),
    /// Eight little-endian bytes.
    Fixed64(u64),
    /// Length-delimited bytes (string, bytes or nested message).
    Len(&'a [u8]),
    /// Four little-endian bytes.
    Fixed32(u32),
}

impl<'a> Value<'a> {
    /// The value as an integer, for varint and fixed fields.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Varint(v) | Value::Fixed64(v) => Some(v),
            Value::Fixed32(v) => Some(v as u64),
            Value::Len(_) => None,
        }
    }

    /// The value as a double (`double` fields are fixed64 on the wire).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Fixed64(v) => Some(f64::from_bits(v)),
            Value::Fixed32(v) => Some(f32::from_bits(v) as f64),
            _ => None,
        }
    }

    /// The value as bytes, for length-delimited fields.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match *self {
            Value::Len(b) => Some(b),
            _ => None,
        }
    }

    /// The value as UTF-8 text (lossy replacement is left to callers).
    pub fn as_str(&self) -> Option<&'a str> {
        self.as_bytes().and_then(|b| std::str::from_utf8(b).ok())
    }
}

/// A malformed protobuf input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed protobuf at byte {offset}: {what}")]
pub struct DecodeError {
    /// Offset in the buffer being decoded.
    pub offset: usize,
    /// What was wrong.
    pub what: &'static str,
    /// The address of the byte at `offset`, to find it in a buffer that
    /// holds the one decoded (a nested message's error in its packet).
    addr: usize,
}

/// The largest protobuf field number.
const MAX_FIELD: u64 = (1 << 29) - 1;

impl DecodeError {
    /// An error at byte `offset` of `data`.
    pub(crate) fn at(data: &[u8], offset: usize, what: &'static str) -> DecodeError {
        DecodeError {
            offset,
            what,
            addr: (data.as_ptr() as usize).wrapping_add(offset.min(data.len())),
        }
    }

    /// Where the error is in `outer`, when the bytes decoded were part of
    /// it (a message nested in `outer`, at any depth): the offset of the
    /// same byte from the start of `outer`. Addresses are only compared,
    /// as numbers.
    pub fn offset_in(&self, outer: &[u8]) -> Option<usize> {
        self.addr
            .checked_sub(outer.as_ptr() as usize)
            .filter(|&o| o <= outer.len())
    }
}

/// Iterates over the fields of one message.
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    data: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> Fields<'a> {
    /// Fields of the message encoded in `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self {
            data,
            pos: 0,
            failed: false,
        }
    }

    /// Most varints in a trace (tags, small ids, lengths) are one byte.
    #[inline(always)]
    fn read_varint(&mut self) -> Result<u64, DecodeError> {
        if let Some(&b) = self.data.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return Ok(b as u64);
        }
        self.read_varint_slow()
    }

    /// Longer varints (timestamps, event ids): one bounds check for all
    /// their bytes.
    #[inline]
    fn read_varint_slow(&mut self) -> Result<u64, DecodeError> {
        let p = self.pos;
        let rest = &self.data[p.min(self.data.len())..];
        let s = &rest[..rest.len().min(10)];
        let mut v = 0u64;
        for (i, &x) in s.iter().enumerate() {
            v |= ((x & 0x7f) as u64) << (7 * i);
            if x < 0x80 {
                self.pos = p + i + 1;
                return Ok(v);
            }
        }
        self.pos = p + s.len();
        Err(self.err(if s.len() == 10 {
            "varint longer than 10 bytes"
        } else {
            "truncated varint"
        }))
    }

    #[inline(always)]
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| self.err("field runs past the end"))?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    #[cold]
    fn err(&self, what: &'static str) -> DecodeError {
        DecodeError::at(self.data, self.pos, what)
    }

    #[inline(always)]
    fn next_field(&mut self) -> Result<(u32, Value<'a>), DecodeError> {
        let start = self.pos;
        let tag = self.read_varint()?;
        // Field 0 (zero bytes) and numbers past the largest are not
        // protobuf: taken as another field's number (cut to 32 bits) they
        // would read damage as data.
        if !(1..=MAX_FIELD).contains(&(tag >> 3)) {
            self.pos = start;
            return Err(self.err("invalid field number (0, or past 2^29 - 1)"));
        }
        let field = (tag >> 3) as u32;
        let value = match tag & 7 {
            0 => Value::Varint(self.read_varint()?),
            1 => Value::Fixed64(u64::from_le_bytes(self.take(8)?.try_into().unwrap())),
            2 => {
                let n = self.read_varint()? as usize;
                Value::Len(self.take(n)?)
            }
            5 => Value::Fixed32(u32::from_le_bytes(self.take(4)?.try_into().unwrap())),
            _ => return Err(self.err("unsupported wire type")),
        };
        Ok((field, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), DecodeError>;

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.data.len() {
            return None;
        }
        let r = self.next_field();
        self.failed = r.is_err();
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_all_wire_types() {
        let mut w = Writer::new();
        w.varint(1, 300)
            .string(2, "kernel")
            .fixed64(3, u64::MAX)
            .double(4, 87.5)
            .int(6, -1);
        w.nested(5, |n| {
            n.varint(1, 7);
        });
        let got: Vec<_> = Fields::new(w.as_bytes()).map(Result::unwrap).collect();
        assert_eq!(got[0], (1, Value::Varint(300)));
        assert_eq!(got[1].1.as_str(), Some("kernel"));
        assert_eq!(got[2], (3, Value::Fixed64(u64::MAX)));
        assert_eq!(got[3].1.as_f64(), Some(87.5));
        assert_eq!(got[4].1.as_u64(), Some(-1i64 as u64));
        let inner: Vec<_> = Fields::new(got[5].1.as_bytes().unwrap())
            .map(Result::unwrap)
            .collect();
        assert_eq!(inner, vec![(1, Value::Varint(7))]);
    }

    #[test]
    fn long_nested_message_gets_a_two_byte_length() {
        let mut w = Writer::new();
        let long = "x".repeat(200);
        w.nested(7, |n| {
            n.string(1, &long);
        })
        .varint(8, 1);
        let fields: Vec<_> = Fields::new(w.as_bytes()).map(Result::unwrap).collect();
        assert_eq!(fields.len(), 2);
        let inner: Vec<_> = Fields::new(fields[0].1.as_bytes().unwrap())
            .map(Result::unwrap)
            .collect();
        assert_eq!(inner[0].1.as_str(), Some(long.as_str()));
        assert_eq!(fields[1], (8, Value::Varint(1)));
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        let mut w = Writer::new();
        w.string(1, "hello");
        let bytes = &w.as_bytes()[..4];
        let r: Vec<_> = Fields::new(bytes).collect();
        assert_eq!(r.len(), 1);
        assert!(r[0].is_err());
    }

    #[test]
    fn field_number_zero_is_an_error_where_it_starts() {
        let bytes = [0x08, 0x01, 0x00, 0x00];
        let r: Vec<_> = Fields::new(&bytes).collect();
        assert_eq!(r.len(), 2);
        let e = r[1].clone().unwrap_err();
        assert_eq!(e.offset, 2);
        // Found again from a buffer that holds this one.
        let outer = [[0xaa; 3].as_slice(), &bytes].concat();
        let e = Fields::new(&outer[3..]).nth(1).unwrap().unwrap_err();
        assert_eq!(e.offset_in(&outer), Some(5));
        assert_eq!(e.offset_in(&bytes), None, "not a part of that buffer");
    }

    #[test]
    fn varint_len_matches_encoding() {
        for v in [0u64, 1, 127, 128, 16383, 16384, u32::MAX as u64, u64::MAX] {
            let mut w = Writer::new();
            w.raw_varint(v);
            assert_eq!(w.len(), varint_len(v), "{v}");
        }
    }
}
