//! An in-memory [`PacketSink`] and decoding helpers for the encoder's
//! unit tests.

use super::PacketSink;

/// Collects packets as written.
#[derive(Default)]
pub(super) struct Packets(pub(super) Vec<Vec<u8>>);

impl PacketSink for Packets {
    fn packet(&mut self, bytes: &[u8]) {
        self.0.push(bytes.to_vec());
    }
}
