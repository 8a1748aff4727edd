//! Clock snapshots (the delta clock, a custom GPU clock) and GpuLog lines.

use super::{ClockSpec, DELTA_CLOCK, Encoder, PacketSink, RsSeq};
use gpu_trace_reader::pb::Writer;
use gpu_trace_reader::wire;

impl Encoder {
    /// A GpuLog line on a render-stage sequence, now.
    pub(crate) fn write_log(
        &mut self,
        seq: &mut RsSeq,
        warning: bool,
        message: &str,
        sink: &mut dyn PacketSink,
    ) {
        self.write_log_at(seq, crate::clock::boottime_ns(), warning, message, sink);
    }

    /// The GpuLog lines recorded in `batches`, in time order.
    pub(crate) fn write_logs(
        &mut self,
        seq: &mut RsSeq,
        batches: &[crate::collector::Batch],
        sink: &mut dyn PacketSink,
    ) {
        let mut lines: Vec<(u64, bool, std::borrow::Cow<'_, str>)> = batches
            .iter()
            .flat_map(|b| {
                b.events.iter().filter_map(move |e| match e {
                    crate::model::Event::Log(l) => Some((l.ts, l.warning, b.text(l.text))),
                    _ => None,
                })
            })
            .collect();
        lines.sort_by_key(|l| l.0);
        for (ts, warning, text) in lines {
            self.write_log_at(seq, ts, warning, &text, sink);
        }
    }

    /// A GpuLog line at `ts`.
    pub(crate) fn write_log_at(
        &mut self,
        seq: &mut RsSeq,
        now: u64,
        warning: bool,
        message: &str,
        sink: &mut dyn PacketSink,
    ) {
        self.start_rs_sequence(seq, now, sink);
        let p = &mut self.pkt;
        p.clear();
        absolute_timestamp(p, now);
        p.nested(wire::packet::GPU_LOG, |l| {
            l.varint(
                wire::gpu_log::SEVERITY,
                if warning {
                    wire::gpu_log::WARNING
                } else {
                    wire::gpu_log::INFO
                },
            )
            .string(wire::gpu_log::TAG, "gpu-trace")
            .string(wire::gpu_log::MESSAGE, message);
        });
        sink.packet(p.as_bytes());
    }

    /// A clock snapshot pairing the custom GPU clock with BOOTTIME.
    pub(crate) fn write_clock_snapshot(&mut self, gpu: u64, boot: u64, sink: &mut dyn PacketSink) {
        let ClockSpec::Custom(id) = self.clock else {
            return;
        };
        let p = &mut self.pkt;
        p.clear();
        p.varint(wire::packet::TIMESTAMP, boot);
        p.varint(
            wire::packet::TIMESTAMP_CLOCK_ID,
            wire::clock::BOOTTIME as u64,
        );
        p.nested(wire::packet::CLOCK_SNAPSHOT, |cs| {
            cs.nested(wire::clock_snapshot::CLOCKS, |c| {
                c.varint(wire::clock_snapshot::CLOCK_ID, id as u64)
                    .varint(wire::clock_snapshot::TIMESTAMP, gpu);
            });
            cs.nested(wire::clock_snapshot::CLOCKS, |c| {
                c.varint(wire::clock_snapshot::CLOCK_ID, wire::clock::BOOTTIME as u64)
                    .varint(wire::clock_snapshot::TIMESTAMP, boot);
            });
        });
        sink.packet(p.as_bytes());
    }
}

/// An absolute BOOTTIME timestamp, explicit because our sequences default
/// to the delta clock.
pub(super) fn absolute_timestamp(p: &mut Writer, ts: u64) {
    p.varint(wire::packet::TIMESTAMP, ts);
    p.varint(
        wire::packet::TIMESTAMP_CLOCK_ID,
        wire::clock::BOOTTIME as u64,
    );
}

/// Declares the delta clock at `t0` (BOOTTIME).
pub(super) fn write_delta_clock_snapshot(p: &mut Writer, t0: u64) {
    p.nested(wire::packet::CLOCK_SNAPSHOT, |cs| {
        cs.nested(wire::clock_snapshot::CLOCKS, |c| {
            c.varint(wire::clock_snapshot::CLOCK_ID, DELTA_CLOCK as u64)
                .varint(wire::clock_snapshot::TIMESTAMP, t0)
                .bool(wire::clock_snapshot::IS_INCREMENTAL, true);
        });
        cs.nested(wire::clock_snapshot::CLOCKS, |c| {
            c.varint(wire::clock_snapshot::CLOCK_ID, wire::clock::BOOTTIME as u64)
                .varint(wire::clock_snapshot::TIMESTAMP, t0);
        });
    });
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{Fixture, Packets, all, s, u};
    use super::*;
    use wire::clock_snapshot as Cs;

    #[test]
    fn a_log_line_starts_the_sequence_and_carries_its_severity() {
        let mut f = Fixture::new(ClockSpec::Boottime);
        let mut seq = RsSeq::default();
        let mut sink = Packets::default();
        f.enc.write_log(&mut seq, true, "queue full", &mut sink);
        f.enc.write_log(&mut seq, false, "done", &mut sink);
        assert_eq!(sink.0.len(), 3, "sequence start, then two lines");
        assert_eq!(
            u(&sink.0[0], &[wire::packet::SEQUENCE_FLAGS]),
            Some(wire::packet::SEQ_INCREMENTAL_STATE_CLEARED)
        );
        let log = |p: &[u8]| {
            (
                u(p, &[wire::packet::GPU_LOG, wire::gpu_log::SEVERITY]),
                s(p, &[wire::packet::GPU_LOG, wire::gpu_log::TAG]).map(str::to_owned),
                s(p, &[wire::packet::GPU_LOG, wire::gpu_log::MESSAGE]).map(str::to_owned),
            )
        };
        assert_eq!(
            log(&sink.0[1]),
            (
                Some(wire::gpu_log::WARNING),
                Some("gpu-trace".into()),
                Some("queue full".into())
            )
        );
        assert_eq!(log(&sink.0[2]).0, Some(wire::gpu_log::INFO));
    }

    #[test]
    fn a_custom_clock_snapshot_pairs_it_with_boottime() {
        let mut sink = Packets::default();
        // Nothing to pair on the trace clock itself.
        Fixture::new(ClockSpec::Boottime)
            .enc
            .write_clock_snapshot(5, 9, &mut sink);
        assert!(sink.0.is_empty());
        Fixture::new(ClockSpec::Custom(200))
            .enc
            .write_clock_snapshot(5, 9, &mut sink);
        assert_eq!(sink.0.len(), 1);
        let p = &sink.0[0];
        assert_eq!(u(p, &[wire::packet::TIMESTAMP]), Some(9));
        let clocks: Vec<_> = all(
            all(p, wire::packet::CLOCK_SNAPSHOT)[0].as_bytes().unwrap(),
            Cs::CLOCKS,
        )
        .iter()
        .map(|c| {
            let c = c.as_bytes().unwrap();
            (
                u(c, &[Cs::CLOCK_ID]).unwrap(),
                u(c, &[Cs::TIMESTAMP]).unwrap(),
            )
        })
        .collect();
        assert_eq!(clocks, [(200, 5), (wire::clock::BOOTTIME as u64, 9)]);
    }
}
