//! GPU counters: per-kernel values (`gpu.counters`) and periodic telemetry
//! (`gpu.telemetry`), each on its own data source, the counters derived
//! from the activity (busy %) on the render stages' sequences, the per-GPU
//! counter descriptors they intern, and the GPU frequency track.

use super::{ClockSpec, CtrSeq, Encoder, PacketSink, RsSeq};
use crate::collector::Batch;
use crate::model::{CounterSpec, Event, Unit};
use gpu_trace_reader::pb::Writer;
use gpu_trace_reader::wire;

impl Encoder {
    /// Writes the per-kernel counter values of `batches` to one sequence of
    /// the counters data source.
    ///
    /// Per-kernel values are written at the kernel's start and return to
    /// zero at its end, so that each value covers exactly its kernel.
    pub(crate) fn write_counters(
        &mut self,
        seq: &mut CtrSeq,
        batches: &[Batch],
        sink: &mut dyn PacketSink,
    ) {
        let mut specs: Option<Vec<CounterSpec>> = None;
        for b in batches {
            for e in &b.events {
                if let Event::KernelCounters(c) = e {
                    for (ts, zero) in [(c.start, false), (c.end, true)] {
                        let point = CounterPoint {
                            stream: Stream::Kernel,
                            device: c.device,
                            ts,
                            values: &c.values,
                            zero,
                        };
                        self.write_counter_point(SeqRef::Ctr(seq), &point, &mut specs, sink);
                    }
                }
            }
        }
    }

    /// Writes the telemetry samples of `batches` to one sequence of the
    /// telemetry data source: each value holds until the GPU's next sample
    /// (forwards-looking), and a sample with the shader clock also moves the
    /// GPU's frequency track (`GenericGpuFrequencyEvent`). Telemetry is read
    /// on the host: its timestamps are CLOCK_BOOTTIME whatever GPU clock the
    /// backend declared.
    pub(crate) fn write_telemetry(
        &mut self,
        seq: &mut CtrSeq,
        batches: &[Batch],
        sink: &mut dyn PacketSink,
    ) {
        let mut specs: Option<Vec<CounterSpec>> = None;
        for b in batches {
            for e in &b.events {
                if let Event::Counters(c) = e {
                    let point = CounterPoint {
                        stream: Stream::Telemetry,
                        device: c.device,
                        ts: c.ts,
                        values: &c.values,
                        zero: false,
                    };
                    self.write_counter_point(SeqRef::Ctr(seq), &point, &mut specs, sink);
                    if let Some(khz) = c.frequency_khz {
                        let p = &mut self.pkt;
                        p.clear();
                        p.varint(wire::packet::TIMESTAMP, c.ts);
                        p.nested(wire::packet::GENERIC_GPU_FREQUENCY_EVENT, |f| {
                            f.varint(wire::gpu_frequency::GPU_ID, c.device as u64)
                                .varint(wire::gpu_frequency::FREQUENCY_KHZ, khz as u64);
                        });
                        sink.packet(p.as_bytes());
                    }
                }
            }
        }
    }

    /// Writes one value per counter of `point`, describing the GPU's
    /// counters on `seq` first if they changed since it last did. On a
    /// render-stage sequence (`SeqRef::Rs`) the sequence must be started.
    pub(super) fn write_counter_point(
        &mut self,
        seq: SeqRef<'_>,
        point: &CounterPoint<'_>,
        specs: &mut Option<Vec<CounterSpec>>,
        sink: &mut dyn PacketSink,
    ) {
        // A GPU's descriptor lists the counters that GPU has reported:
        // listing every registered counter would draw empty tracks for the
        // counters another GPU offers and this one does not. Each counter
        // family (per-kernel, telemetry, activity) is described apart, on
        // its own sequences.
        let offered = self.device_counters[point.stream as usize]
            .entry(point.device)
            .or_default();
        for (id, _) in point.values {
            if !offered.1.contains(&id.0) {
                offered.1.push(id.0);
                offered.0 += 1;
            }
        }
        let version = offered.0;
        let iid = self.counter_descriptor_iid(point.device, version);
        let p = &mut self.pkt;
        p.clear();
        let (first, described) = match seq {
            SeqRef::Ctr(seq) => {
                let first = !seq.started;
                seq.started = true;
                p.varint(wire::packet::TIMESTAMP, point.ts);
                // Telemetry is read on the host: CLOCK_BOOTTIME whatever the GPU's.
                if let (ClockSpec::Custom(id), Stream::Kernel) = (self.clock, point.stream) {
                    p.varint(wire::packet::TIMESTAMP_CLOCK_ID, id as u64);
                }
                p.varint(
                    wire::packet::SEQUENCE_FLAGS,
                    if first {
                        wire::packet::SEQ_INCREMENTAL_STATE_CLEARED
                    } else {
                        wire::packet::SEQ_NEEDS_INCREMENTAL_STATE
                    },
                );
                (first, &mut seq.described)
            }
            SeqRef::Rs(seq) => {
                super::render_stages::rs_timestamp(p, seq, point.ts);
                p.varint(
                    wire::packet::SEQUENCE_FLAGS,
                    wire::packet::SEQ_NEEDS_INCREMENTAL_STATE,
                );
                (false, &mut seq.counters_described)
            }
        };
        let describe = described.get(&point.device) != Some(&version);
        if describe {
            described.insert(point.device, version);
        }
        if first || describe {
            let specs = specs.get_or_insert_with(|| self.counters.snapshot());
            let ids = &self.device_counters[point.stream as usize][&point.device].1;
            let per_kernel = point.stream == Stream::Kernel;
            p.nested(wire::packet::INTERNED_DATA, |i| {
                i.nested(wire::interned::GPU_COUNTER_DESCRIPTORS, |d| {
                    d.varint(wire::counters::IDESC_IID, iid)
                        .varint(wire::counters::IDESC_GPU_ID, point.device as u64);
                    d.nested(wire::counters::IDESC_DESCRIPTOR, |cd| {
                        write_counter_descriptor(cd, specs, ids, per_kernel)
                    });
                });
            });
        }
        p.nested(wire::packet::GPU_COUNTER_EVENT, |ev| {
            ev.varint(wire::counters::DESCRIPTOR_IID, iid);
            for (id, v) in point.values {
                ev.nested(wire::counters::COUNTERS, |c| {
                    c.varint(wire::counters::COUNTER_ID, id.0 as u64).double(
                        wire::counters::DOUBLE_VALUE,
                        if point.zero { 0.0 } else { *v },
                    );
                });
            }
        });
        sink.packet(p.as_bytes());
    }

    fn counter_descriptor_iid(&self, device: u32, version: u32) -> u64 {
        ((version as u64) << 16) | (device as u64 + 1)
    }
}

/// The sequence a counter value goes to, with its interning state.
pub(super) enum SeqRef<'a> {
    /// A counters or telemetry data-source sequence.
    Ctr(&'a mut CtrSeq),
    /// A render-stage sequence (counters derived from the GPU activity).
    Rs(&'a mut RsSeq),
}

/// Which family a counter belongs to: each is described on its own
/// sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stream {
    /// Per-kernel values (`gpu.counters`).
    Kernel = 0,
    /// Periodic telemetry (`gpu.telemetry`).
    Telemetry = 1,
    /// Busy % derived from the activity (`gpu.renderstages`).
    Activity = 2,
}

/// How many [`Stream`]s there are.
pub(super) const COUNTER_STREAMS: usize = 3;

pub(super) struct CounterPoint<'a> {
    pub(super) stream: Stream,
    pub(super) device: u32,
    pub(super) ts: u64,
    pub(super) values: &'a [(crate::model::CounterId, f64)],
    pub(super) zero: bool,
}

/// Describes the counters `ids` (`CounterId`s: index into `specs` + 1);
/// `per_kernel`: values are sampled per kernel (instrumented), not over time.
fn write_counter_descriptor(cd: &mut Writer, specs: &[CounterSpec], ids: &[u32], per_kernel: bool) {
    for (i, s) in specs.iter().enumerate() {
        if !ids.contains(&(i as u32 + 1)) {
            continue;
        }
        cd.nested(wire::counters::DESC_SPECS, |sp| {
            sp.varint(wire::counters::SPEC_COUNTER_ID, i as u64 + 1)
                .string(wire::counters::SPEC_NAME, &s.name);
            if !s.description.is_empty() {
                sp.string(wire::counters::SPEC_DESCRIPTION, &s.description);
            }
            if s.unit != Unit::None {
                sp.varint(
                    wire::counters::SPEC_NUM_UNITS,
                    wire::counters::unit_code(s.unit),
                );
            }
            if let Some(per) = s.per {
                sp.varint(
                    wire::counters::SPEC_DEN_UNITS,
                    wire::counters::unit_code(per),
                );
            }
            sp.varint(
                wire::counters::SPEC_GROUPS,
                wire::counters::group_code(s.group),
            )
            .varint(
                wire::counters::SPEC_VALUE_DIRECTION,
                wire::counters::FORWARDS_LOOKING,
            );
        });
    }
    cd.bool(wire::counters::DESC_SUPPORTS_INSTRUMENTED, per_kernel)
        .bool(wire::counters::DESC_SUPPORTS_NAMES, true);
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{Fixture, Packets, all, at, u};
    use super::*;
    use crate::model::{CounterGroup, CounterId, KernelCounters};
    use wire::counters as C;

    #[test]
    fn per_kernel_values_cover_their_kernel_and_are_described_once() {
        let mut f = Fixture::new(ClockSpec::Boottime);
        let spec = |name: &str| CounterSpec::new(name, Unit::Percent, CounterGroup::Compute);
        let a = f.counters.register(spec("sm__throughput"));
        let _unused = f.counters.register(spec("dram__bytes"));
        assert_eq!(a, CounterId(1));
        let kc = |start| {
            Event::KernelCounters(KernelCounters::new(
                1,
                3,
                start,
                start + 50,
                vec![(a, 87.5)].into(),
            ))
        };
        let b = [Batch {
            thread: 1,
            events: vec![kc(100), kc(200)],
            text: vec![],
        }];
        let mut seq = CtrSeq::default();
        let mut sink = Packets::default();
        f.enc.write_counters(&mut seq, &b, &mut sink);
        let p = &sink.0;
        assert_eq!(p.len(), 4, "a value at each start, a zero at each end");
        let ts: Vec<_> = p
            .iter()
            .map(|p| u(p, &[wire::packet::TIMESTAMP]).unwrap())
            .collect();
        assert_eq!(ts, [100, 150, 200, 250]);
        let values: Vec<_> = p
            .iter()
            .map(|p| {
                at(
                    p,
                    &[
                        wire::packet::GPU_COUNTER_EVENT,
                        C::COUNTERS,
                        C::DOUBLE_VALUE,
                    ],
                )
                .and_then(|v| v.as_f64())
                .unwrap()
            })
            .collect();
        assert_eq!(values, [87.5, 0.0, 87.5, 0.0]);
        // Only the first packet describes GPU 1's counters, and only the
        // counter it reported.
        let described: Vec<_> = p
            .iter()
            .map(|p| at(p, &[wire::packet::INTERNED_DATA]).is_some())
            .collect();
        assert_eq!(described, [true, false, false, false]);
        let desc = at(
            &p[0],
            &[
                wire::packet::INTERNED_DATA,
                wire::interned::GPU_COUNTER_DESCRIPTORS,
            ],
        )
        .and_then(|v| v.as_bytes())
        .unwrap();
        assert_eq!(u(desc, &[C::IDESC_GPU_ID]), Some(1));
        let specs = all(
            at(desc, &[C::IDESC_DESCRIPTOR])
                .unwrap()
                .as_bytes()
                .unwrap(),
            C::DESC_SPECS,
        );
        assert_eq!(specs.len(), 1);
        assert_eq!(
            u(specs[0].as_bytes().unwrap(), &[C::SPEC_COUNTER_ID]),
            Some(1)
        );
        assert_eq!(
            u(specs[0].as_bytes().unwrap(), &[C::SPEC_NUM_UNITS]),
            Some(wire::counters::unit_code(Unit::Percent))
        );
        let iid = u(desc, &[C::IDESC_IID]);
        assert!(
            p.iter()
                .all(|p| u(p, &[wire::packet::GPU_COUNTER_EVENT, C::DESCRIPTOR_IID]) == iid)
        );
    }

    #[test]
    fn telemetry_holds_its_value_moves_the_frequency_track_and_stays_on_boottime() {
        use crate::model::CounterSample;
        use gpu_trace_model::telemetry::Metric;
        // A custom GPU clock applies to GPU events, never to host readings.
        let mut f = Fixture::new(ClockSpec::Custom(0x8000_1234));
        let kernel_counter = f.counters.register(CounterSpec::new(
            "sm__throughput",
            Unit::Percent,
            CounterGroup::Compute,
        ));
        let clock = f.counters.register(Metric::SmClock.spec());
        let mem = f.counters.register(Metric::MemoryUsed.spec());
        let mut s = CounterSample::new(0, 1_000, vec![(clock, 1980.0), (mem, 4096.0)].into());
        s.frequency_khz = Some(1_980_000);
        let b = [Batch {
            thread: 1,
            events: vec![
                Event::Counters(s),
                Event::KernelCounters(KernelCounters::new(
                    0,
                    7,
                    1_100,
                    1_200,
                    vec![(kernel_counter, 50.0)].into(),
                )),
                Event::Counters(CounterSample::new(0, 2_000, vec![(mem, 8192.0)].into())),
            ],
            text: vec![],
        }];
        let mut seq = CtrSeq::default();
        let mut sink = Packets::default();
        f.enc.write_telemetry(&mut seq, &b, &mut sink);
        let p = &sink.0;
        assert_eq!(p.len(), 3, "two samples and one frequency event");
        for x in p {
            assert_eq!(u(x, &[wire::packet::TIMESTAMP_CLOCK_ID]), None);
        }
        assert_eq!(u(&p[0], &[wire::packet::TIMESTAMP]), Some(1_000));
        use wire::gpu_frequency as F;
        let freq = wire::packet::GENERIC_GPU_FREQUENCY_EVENT;
        assert_eq!(u(&p[1], &[freq, F::FREQUENCY_KHZ]), Some(1_980_000));
        assert_eq!(u(&p[1], &[freq, F::GPU_ID]), Some(0));
        assert_eq!(u(&p[1], &[wire::packet::TIMESTAMP]), Some(1_000));
        assert_eq!(u(&p[2], &[wire::packet::TIMESTAMP]), Some(2_000));
        // The descriptor lists the telemetry counters only, with units and
        // groups, for periodic (not instrumented) sampling.
        let desc = at(
            &p[0],
            &[
                wire::packet::INTERNED_DATA,
                wire::interned::GPU_COUNTER_DESCRIPTORS,
                C::IDESC_DESCRIPTOR,
            ],
        )
        .and_then(|v| v.as_bytes())
        .unwrap();
        let specs = all(desc, C::DESC_SPECS);
        let spec = |i: usize, f: u32| u(specs[i].as_bytes().unwrap(), &[f]);
        assert_eq!(specs.len(), 2);
        assert_eq!(
            spec(0, C::SPEC_NUM_UNITS),
            Some(wire::counters::unit_code(Unit::Megahertz))
        );
        assert_eq!(spec(0, C::SPEC_GROUPS), Some(C::GROUP_SYSTEM));
        assert_eq!(
            spec(1, C::SPEC_NUM_UNITS),
            Some(wire::counters::unit_code(Unit::Byte))
        );
        assert_eq!(spec(1, C::SPEC_GROUPS), Some(C::GROUP_MEMORY));
        assert_eq!(spec(1, C::SPEC_VALUE_DIRECTION), Some(C::FORWARDS_LOOKING));
        assert_eq!(u(desc, &[C::DESC_SUPPORTS_INSTRUMENTED]), Some(0));
        // The per-kernel sequence keeps its own descriptor and clock.
        let mut kseq = CtrSeq::default();
        let mut ksink = Packets::default();
        f.enc.write_counters(&mut kseq, &b, &mut ksink);
        assert_eq!(ksink.0.len(), 2, "start and end of the one kernel");
        assert_eq!(
            u(&ksink.0[0], &[wire::packet::TIMESTAMP_CLOCK_ID]),
            Some(0x8000_1234)
        );
        let kdesc = at(
            &ksink.0[0],
            &[
                wire::packet::INTERNED_DATA,
                wire::interned::GPU_COUNTER_DESCRIPTORS,
                C::IDESC_DESCRIPTOR,
            ],
        )
        .and_then(|v| v.as_bytes())
        .unwrap();
        assert_eq!(all(kdesc, C::DESC_SPECS).len(), 1);
    }
}
