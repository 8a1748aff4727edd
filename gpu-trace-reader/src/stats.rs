//! The tracing service's loss statistics (`TraceStats`).

use crate::pb::{DecodeError, Fields};

/// Losses reported by the tracing service in its `TraceStats` (cumulative;
/// the last such packet of a trace holds the totals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServiceLosses {
    /// Chunks discarded: a full `DISCARD` buffer, or rejected by the service.
    pub chunks_discarded: u64,
    /// Chunks overwritten before they were read (`RING_BUFFER`).
    pub chunks_overwritten: u64,
    /// Packets lost inside trace writers (the shared memory was full).
    pub writer_packet_loss: u64,
    /// Packets too large for the buffer.
    pub oversized_packets: u64,
    /// Chunks the producer wrote against the ABI, and failed patches.
    pub abi_violations: u64,
    /// Patches of fragmented packets that could not be applied.
    pub patches_failed: u64,
    /// Flushes that did not complete in time.
    pub flushes_failed: u64,
}

/// The losses as a trace's `gpu-trace dropped:` line lists them (and
/// [`crate::Trace::drop_counts`] reads them back): `key=count` for every
/// non-zero loss, the writer's by `DropKind`, the tracing service's
/// prefixed `perfetto_`.
pub fn loss_counts(
    drops: &[(gpu_trace_model::model::DropKind, u64)],
    service: Option<ServiceLosses>,
) -> Vec<String> {
    let mut out: Vec<String> = drops
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{}={n}", k.key()))
        .collect();
    if let Some(l) = service {
        out.extend(l.describe().into_iter().map(|d| format!("perfetto_{d}")));
    }
    out
}

impl ServiceLosses {
    /// Chunks and packets lost, all kinds together (failed flushes are not
    /// a loss in themselves).
    pub fn lost(&self) -> u64 {
        // Saturating: the counts are the file's, whatever they claim.
        [
            self.chunks_overwritten,
            self.writer_packet_loss,
            self.oversized_packets,
            self.abi_violations,
            self.patches_failed,
        ]
        .into_iter()
        .fold(self.chunks_discarded, u64::saturating_add)
    }

    /// `name=value` pairs of the non-zero counts, for messages.
    pub fn describe(&self) -> Vec<String> {
        self.counts()
            .into_iter()
            .map(|(k, n)| format!("{k}={n}"))
            .collect()
    }

    /// The non-zero counts by name.
    pub fn counts(&self) -> Vec<(&'static str, u64)> {
        [
            ("chunks_discarded", self.chunks_discarded),
            ("chunks_overwritten", self.chunks_overwritten),
            ("writer_packet_loss", self.writer_packet_loss),
            ("oversized_packets", self.oversized_packets),
            ("abi_violations", self.abi_violations),
            ("patches_failed", self.patches_failed),
            ("flushes_failed", self.flushes_failed),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
    }
}

/// Decodes a `TraceStats` message (trace/trace_stats.proto).
pub fn trace_stats(b: &[u8]) -> Result<ServiceLosses, DecodeError> {
    let mut l = ServiceLosses::default();
    for f in Fields::new(b) {
        let (n, v) = f?;
        match n {
            // buffer_stats
            1 => {
                for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                    let (n, v) = f?;
                    let x = v.as_u64().unwrap_or(0);
                    match n {
                        3 => l.chunks_overwritten = l.chunks_overwritten.saturating_add(x),
                        6 => l.patches_failed = l.patches_failed.saturating_add(x),
                        9 => l.abi_violations = l.abi_violations.saturating_add(x),
                        18 => l.chunks_discarded = l.chunks_discarded.saturating_add(x),
                        19 => l.writer_packet_loss = l.writer_packet_loss.saturating_add(x),
                        22 => l.oversized_packets = l.oversized_packets.saturating_add(x),
                        _ => {}
                    }
                }
            }
            // chunks_discarded, patches_discarded (service-wide)
            8 => l.chunks_discarded = l.chunks_discarded.saturating_add(v.as_u64().unwrap_or(0)),
            9 => l.patches_failed = l.patches_failed.saturating_add(v.as_u64().unwrap_or(0)),
            14 => l.flushes_failed = l.flushes_failed.saturating_add(v.as_u64().unwrap_or(0)),
            _ => {}
        }
    }
    Ok(l)
}
