//! Track events: API calls and markers on thread and range tracks.

use super::clocks_logs::{absolute_timestamp, write_delta_clock_snapshot};
use super::{
    DELTA_CLOCK, Encoder, PacketSink, TE_CLOCK_SENTINEL, TE_PROCESS_SENTINEL, TrackEventSink,
    primary_event_id, range_track_uuid, thread_track_uuid,
};
use crate::collector::Batch;
use crate::model::{ApiCall, Event, Marker, MarkerEvent, NameId};
use gpu_trace_model::callstack::CallstackId;
use gpu_trace_reader::pb::Writer;
use gpu_trace_reader::wire;
use rustc_hash::FxHashMap as HashMap;

impl Encoder {
    /// Writes the API calls of `batches` to a track-event sequence, in
    /// time order.
    pub(crate) fn write_api_calls(&mut self, batches: &[Batch], sink: &mut dyn TrackEventSink) {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        for (bi, b) in batches.iter().enumerate() {
            for (ei, e) in b.events.iter().enumerate() {
                if let Event::Api(a) = e {
                    order.push((a.start, bi as u32, ei as u32, false));
                    order.push((a.end.max(a.start), bi as u32, ei as u32, true));
                }
            }
        }
        // Stable: a call's end stays after its begin, and after the previous
        // call's end when timestamps tie.
        order.sort_by_key(|o| o.0);
        self.begin_te_pass(&order, batches, sink);
        for &(ts, bi, ei, end) in &order {
            let Event::Api(a) = &batches[bi as usize].events[ei as usize] else {
                continue;
            };
            if end {
                let uuid = thread_track_uuid(self.pid, a.thread);
                self.write_end(uuid, ts, sink);
            } else {
                self.write_api(a, sink);
            }
        }
        self.order = order;
    }

    /// Writes the markers of `batches` to a track-event sequence, in time
    /// order.
    pub(crate) fn write_markers(&mut self, batches: &[Batch], sink: &mut dyn TrackEventSink) {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        for (bi, b) in batches.iter().enumerate() {
            for (ei, e) in b.events.iter().enumerate() {
                if let Event::Marker(m) = e {
                    order.push((m.ts, bi as u32, ei as u32, false));
                }
            }
        }
        order.sort_by_key(|o| o.0);
        self.begin_te_pass(&order, batches, sink);
        for &(_, bi, ei, _) in &order {
            let b = &batches[bi as usize];
            if let Event::Marker(m) = &b.events[ei as usize]
                && self.marker_is_balanced(m)
            {
                self.write_marker(m, b, sink);
            }
        }
        self.order = order;
    }

    /// Tracks push depth and open ranges; false for an end whose begin was
    /// never recorded (it happened before tracing started).
    fn marker_is_balanced(&mut self, m: &MarkerEvent) -> bool {
        match m.marker {
            Marker::Push { .. } => {
                *self.marker_depth.entry(m.thread).or_default() += 1;
                true
            }
            Marker::Pop { .. } => match self.marker_depth.get_mut(&m.thread) {
                Some(d) if *d > 0 => {
                    *d -= 1;
                    true
                }
                _ => false,
            },
            Marker::Start { id, .. } => {
                self.open_ranges.insert(id);
                true
            }
            Marker::End { id } => self.open_ranges.remove(&id),
            Marker::Mark { .. } => true,
            // A marker this writer does not know is left out.
            _ => false,
        }
    }

    /// Sets up the delta clock on a (new or reset) sequence, and describes
    /// the threads of this pass.
    fn begin_te_pass(
        &mut self,
        order: &[(u64, u32, u32, bool)],
        batches: &[Batch],
        sink: &mut dyn TrackEventSink,
    ) {
        let Some(&(t0, ..)) = order.first() else {
            return;
        };
        // The busiest thread of this pass becomes the default track.
        self.begin_te_sequence(
            t0,
            || {
                let mut count: HashMap<u32, u32> = HashMap::default();
                for &(_, bi, _, _) in order {
                    *count.entry(batches[bi as usize].thread).or_default() += 1;
                }
                count
                    .into_iter()
                    .max_by_key(|&(t, n)| (n, t))
                    .map(|(t, _)| t)
            },
            sink,
        );
        let mut seen = rustc_hash::FxHashSet::default();
        for &(_, bi, _, _) in order {
            let tid = batches[bi as usize].thread;
            if seen.insert(tid) {
                self.describe_thread(tid, sink);
            }
        }
    }

    /// Sets up the delta clock on a (new or reset) sequence from `t0` on,
    /// with the track of the thread `busiest` names as its default.
    fn begin_te_sequence(
        &mut self,
        t0: u64,
        busiest: impl FnOnce() -> Option<u32>,
        sink: &mut dyn TrackEventSink,
    ) {
        let inst = sink.instance() as usize % self.te_last.len();
        if !sink.track_seen(TE_CLOCK_SENTINEL) {
            let default_track = busiest().map(|t| thread_track_uuid(self.pid, t));
            let p = &mut self.pkt;
            p.clear();
            absolute_timestamp(p, t0);
            p.nested(wire::packet::DEFAULTS, |d| {
                d.varint(wire::packet::DEFAULTS_CLOCK_ID, DELTA_CLOCK as u64);
                if let Some(u) = default_track {
                    d.nested(wire::packet::DEFAULTS_TRACK_EVENT, |t| {
                        t.varint(wire::track_event::TRACK_UUID, u);
                    });
                }
            });
            // The snapshot never goes back on a sequence (see
            // `snapshot_floor`); events before it get absolute timestamps.
            let at = t0.max(self.snapshot_floor);
            self.snapshot_floor = at;
            write_delta_clock_snapshot(p, at);
            sink.packet(p.as_bytes());
            self.te_last[inst] = Some(at);
            self.te_default[inst] = default_track;
        }
        self.describe_process_on_reset(sink);
    }

    /// On a track-event sequence the SDK has just reset, describes the
    /// process again with its rank. Entering a reset sequence, for a write
    /// or only a flush, makes the SDK describe the process by its command
    /// line alone; the trace processor names a process after its latest
    /// descriptor, so every entry into a sequence comes here first.
    pub(crate) fn describe_process_on_reset(&mut self, sink: &mut dyn TrackEventSink) {
        if self.process.is_some() && !sink.track_seen(TE_PROCESS_SENTINEL) {
            self.describe_process(sink);
        }
    }

    /// Describes the process with its rank's name and labels, when it has
    /// a rank. The trace processor names a process after its latest
    /// descriptor, so this one is stamped now: after the SDK's, which it
    /// writes when a sequence starts or is reset, just before our packets.
    pub(super) fn describe_process(&mut self, sink: &mut dyn PacketSink) {
        let uuid = self.process_uuid.or_else(perfetto_process_uuid);
        let (Some(d), Some(uuid)) = (&self.process, uuid) else {
            return;
        };
        let p = &mut self.pkt;
        p.clear();
        absolute_timestamp(p, crate::clock::boottime_ns());
        p.nested(wire::packet::TRACK_DESCRIPTOR, |t| {
            t.varint(wire::track_descriptor::UUID, uuid);
            t.nested(wire::track_descriptor::PROCESS, |pd| {
                pd.varint(wire::track_descriptor::PROCESS_PID, self.pid as u64)
                    .string(wire::track_descriptor::PROCESS_NAME, &d.name);
                for l in &d.labels {
                    pd.string(wire::track_descriptor::PROCESS_LABELS, l);
                }
            });
        });
        sink.packet(p.as_bytes());
    }

    /// Writes each thread's "GPU wait" points (see [`super::activity`]) on
    /// a counter track under the thread's track.
    pub(crate) fn write_waits(
        &mut self,
        points: &[crate::busy::Point<u32>],
        sink: &mut dyn TrackEventSink,
    ) {
        let Some(t0) = points.iter().map(|p| p.ts).min() else {
            return;
        };
        self.begin_te_sequence(t0, || None, sink);
        let mut order: Vec<&crate::busy::Point<u32>> = points.iter().collect();
        order.sort_by_key(|p| (p.ts, p.key));
        for pt in order {
            self.describe_thread(pt.key, sink);
            let uuid = super::activity::wait_track_uuid(self.pid, pt.key);
            if !sink.track_seen(uuid) {
                let parent = thread_track_uuid(self.pid, pt.key);
                let p = &mut self.pkt;
                p.clear();
                p.nested(wire::packet::TRACK_DESCRIPTOR, |t| {
                    t.varint(wire::track_descriptor::UUID, uuid)
                        .varint(wire::track_descriptor::PARENT_UUID, parent)
                        .string(wire::track_descriptor::NAME, "GPU wait");
                    t.nested(wire::track_descriptor::COUNTER, |c| {
                        c.string(wire::track_descriptor::COUNTER_UNIT_NAME, "%");
                    });
                });
                sink.packet(p.as_bytes());
            }
            let stamp = self.te_stamp(pt.ts, sink.instance());
            let p = &mut self.pkt;
            p.clear();
            te_header(p, stamp, None, false, &[]);
            p.nested(wire::packet::TRACK_EVENT, |t| {
                t.varint(wire::track_event::TYPE, wire::track_event::TYPE_COUNTER)
                    .varint(wire::track_event::TRACK_UUID, uuid)
                    .double(wire::track_event::DOUBLE_COUNTER_VALUE, pt.percent);
            });
            sink.packet(p.as_bytes());
        }
    }

    /// The timestamp of a track-event packet: a delta on our clock when in
    /// order, else absolute BOOTTIME.
    fn te_stamp(&mut self, ts: u64, inst: u32) -> Stamp {
        let slot = &mut self.te_last[inst as usize % 8];
        match *slot {
            Some(last) if ts >= last => {
                *slot = Some(ts);
                Stamp::Delta(ts - last)
            }
            _ => Stamp::Absolute(ts),
        }
    }

    fn describe_thread(&mut self, tid: u32, sink: &mut dyn TrackEventSink) {
        let uuid = thread_track_uuid(self.pid, tid);
        if sink.track_seen(uuid) {
            return;
        }
        let pid = self.pid;
        let known = &self.known_thread_names;
        let name = self
            .thread_names
            .entry(tid)
            .or_insert_with(|| thread_name(pid, tid, known))
            .clone();
        let p = &mut self.pkt;
        p.clear();
        p.nested(wire::packet::TRACK_DESCRIPTOR, |t| {
            t.varint(wire::track_descriptor::UUID, uuid);
            t.nested(wire::track_descriptor::THREAD, |th| {
                th.varint(wire::track_descriptor::THREAD_PID, pid as u64)
                    .varint(wire::track_descriptor::THREAD_TID, tid as u64)
                    .string(wire::track_descriptor::THREAD_NAME, &name);
            });
        });
        sink.packet(p.as_bytes());
    }

    fn write_api(&mut self, a: &ApiCall, sink: &mut dyn TrackEventSink) {
        let uuid = thread_track_uuid(self.pid, a.thread);
        let name = self.names.get(a.name);
        let (iid, seen) = sink.intern_name(name.as_bytes());
        let gpu_api = self.backend.gpu_api;
        let pid = self.pid;
        let stack = a.callstack.and_then(|id| self.intern_stack(id, sink));
        let stamp = self.te_stamp(a.start, sink.instance());
        let uuid = self.explicit_track(uuid, sink.instance());
        let p = &mut self.pkt;
        p.clear();
        te_header(
            p,
            stamp,
            (!seen).then_some((iid, &*name)),
            true,
            self.stack_interned.as_bytes(),
        );
        p.nested(wire::packet::TRACK_EVENT, |t| {
            t.varint(wire::track_event::TYPE, wire::track_event::TYPE_SLICE_BEGIN);
            if let Some(u) = uuid {
                t.varint(wire::track_event::TRACK_UUID, u);
            }
            t.varint(wire::track_event::NAME_IID, iid);
            if let Some(s) = stack {
                t.varint(wire::track_event::CALLSTACK_IID, s);
            }
            let submits = a.submits && a.correlation_id != 0;
            if submits || !a.waits.is_empty() {
                t.nested(wire::track_event::GPU_CORRELATION, |c| {
                    if submits {
                        c.varint(
                            wire::track_event::SUBMISSION_IDS,
                            primary_event_id(pid, a.correlation_id),
                        );
                    }
                    for &w in &a.waits {
                        c.varint(wire::track_event::WAIT_IDS, primary_event_id(pid, w));
                    }
                });
            }
            t.varint(wire::track_event::GPU_API, gpu_api);
            if a.status != 0 {
                t.nested(wire::track_event::DEBUG_ANNOTATIONS, |d| {
                    d.string(wire::debug_annotation::NAME, "status")
                        .int(wire::debug_annotation::INT, a.status as i64);
                });
            }
        });
        sink.packet(p.as_bytes());
    }

    /// The iid of stack `id` on this sequence; what the sequence has not
    /// seen yet (the stack, its frames, their names, the one mapping) is
    /// left in `stack_interned` for the packet that uses it. `None`: an
    /// unknown id.
    fn intern_stack(&mut self, id: CallstackId, sink: &mut dyn TrackEventSink) -> Option<u64> {
        self.stack_interned.clear();
        let frames = self.callstacks.get_stack(id)?;
        let (iid, seen) = sink.intern_callsite(&callsite_key(b'S', id.get()));
        if seen {
            return Some(iid);
        }
        let out = &mut self.stack_interned;
        // Frames belong to a mapping in the trace processor's model: one
        // for all, named after the language.
        let (mapping, seen) = sink.intern_callsite(b"M");
        if !seen {
            let (path, _) = sink.intern_callsite(b"Mpython");
            out.nested(wire::interned::MAPPING_PATHS, |s| {
                s.varint(wire::interned::STRING_IID, path)
                    .string(wire::interned::STRING_STR, "python");
            });
            out.nested(wire::interned::MAPPINGS, |m| {
                m.varint(wire::mapping::IID, mapping)
                    .varint(wire::mapping::PATH_STRING_IDS, path);
            });
        }
        let mut ids: smallvec::SmallVec<[u64; 32]> = smallvec::SmallVec::new();
        for &f in frames.iter() {
            let (fiid, seen) = sink.intern_callsite(&callsite_key(b'F', f.0));
            ids.push(fiid);
            if seen {
                continue;
            }
            let Some(frame) = self.callstacks.get_frame(f) else {
                continue;
            };
            let mut string = |kind: u8, field: u32, name: NameId, out: &mut Writer| {
                let (iid, seen) = sink.intern_callsite(&callsite_key(kind, name.0));
                if !seen {
                    let text = self.names.get(name);
                    out.nested(field, |s| {
                        s.varint(wire::interned::STRING_IID, iid)
                            .string(wire::interned::STRING_STR, &text);
                    });
                }
                iid
            };
            let function = string(b'N', wire::interned::FUNCTION_NAMES, frame.function, out);
            let file = string(b'P', wire::interned::SOURCE_PATHS, frame.file, out);
            out.nested(wire::interned::FRAMES, |w| {
                w.varint(wire::frame::IID, fiid)
                    .varint(wire::frame::FUNCTION_NAME_ID, function)
                    .varint(wire::frame::MAPPING_ID, mapping)
                    // Distinct per frame: the trace processor tells frames
                    // of one mapping apart by their pc.
                    .varint(wire::frame::REL_PC, fiid)
                    .varint(wire::frame::SOURCE_PATH_IID, file)
                    .varint(wire::frame::LINE_NUMBER, frame.line as u64);
            });
        }
        out.nested(wire::interned::CALLSTACKS, |c| {
            c.varint(wire::callstack::IID, iid);
            for &f in &ids {
                c.varint(wire::callstack::FRAME_IDS, f);
            }
        });
        Some(iid)
    }

    fn write_end(&mut self, uuid: u64, ts: u64, sink: &mut dyn TrackEventSink) {
        let stamp = self.te_stamp(ts, sink.instance());
        let uuid = self.explicit_track(uuid, sink.instance());
        let p = &mut self.pkt;
        p.clear();
        te_header(p, stamp, None, false, &[]);
        p.nested(wire::packet::TRACK_EVENT, |t| {
            t.varint(wire::track_event::TYPE, wire::track_event::TYPE_SLICE_END);
            if let Some(u) = uuid {
                t.varint(wire::track_event::TRACK_UUID, u);
            }
        });
        sink.packet(p.as_bytes());
    }

    /// `Some(uuid)` unless it is the sequence's default track.
    fn explicit_track(&self, uuid: u64, inst: u32) -> Option<u64> {
        (self.te_default[inst as usize % 8] != Some(uuid)).then_some(uuid)
    }

    fn write_marker(&mut self, m: &MarkerEvent, b: &Batch, sink: &mut dyn TrackEventSink) {
        let thread_uuid = thread_track_uuid(self.pid, m.thread);
        let (ty, uuid, text, domain) = match m.marker {
            Marker::Push { domain, text } => (
                wire::track_event::TYPE_SLICE_BEGIN,
                thread_uuid,
                Some(text),
                domain,
            ),
            Marker::Pop { .. } => (wire::track_event::TYPE_SLICE_END, thread_uuid, None, None),
            Marker::Mark { domain, text } => (
                wire::track_event::TYPE_INSTANT,
                thread_uuid,
                Some(text),
                domain,
            ),
            Marker::Start { id, domain, text } => {
                let uuid = range_track_uuid(self.pid, id);
                self.describe_range_track(uuid, domain, sink);
                (
                    wire::track_event::TYPE_SLICE_BEGIN,
                    uuid,
                    Some(text),
                    domain,
                )
            }
            Marker::End { id } => {
                let uuid = range_track_uuid(self.pid, id);
                self.describe_range_track(uuid, None, sink);
                (wire::track_event::TYPE_SLICE_END, uuid, None, None)
            }
            _ => return,
        };
        let text = text.map(|t| b.text(t));
        let interned = text.as_deref().map(|s| {
            let (iid, seen) = sink.intern_name(s.as_bytes());
            (iid, seen)
        });
        let domain = domain.map(|d| self.names.get(d));
        let stamp = self.te_stamp(m.ts, sink.instance());
        let uuid = self.explicit_track(uuid, sink.instance());
        let p = &mut self.pkt;
        p.clear();
        match (&interned, &text) {
            (Some((iid, false)), Some(s)) => te_header(p, stamp, Some((*iid, s)), true, &[]),
            _ => te_header(p, stamp, None, interned.is_some(), &[]),
        }
        p.nested(wire::packet::TRACK_EVENT, |t| {
            t.varint(wire::track_event::TYPE, ty);
            if let Some(u) = uuid {
                t.varint(wire::track_event::TRACK_UUID, u);
            }
            if let Some((iid, _)) = interned {
                t.varint(wire::track_event::NAME_IID, iid);
            }
            if let Some(d) = &domain {
                t.nested(wire::track_event::DEBUG_ANNOTATIONS, |a| {
                    a.string(wire::debug_annotation::NAME, "domain")
                        .string(wire::debug_annotation::STRING, d);
                });
            }
        });
        sink.packet(p.as_bytes());
    }

    fn describe_range_track(
        &mut self,
        uuid: u64,
        domain: Option<NameId>,
        sink: &mut dyn TrackEventSink,
    ) {
        if sink.track_seen(uuid) {
            return;
        }
        let name = match domain {
            Some(d) => format!("Ranges ({})", self.names.get(d)),
            None => "Ranges".to_owned(),
        };
        let parent = self.process_uuid.or_else(perfetto_process_uuid);
        let p = &mut self.pkt;
        p.clear();
        p.nested(wire::packet::TRACK_DESCRIPTOR, |t| {
            t.varint(wire::track_descriptor::UUID, uuid);
            if let Some(parent) = parent {
                t.varint(wire::track_descriptor::PARENT_UUID, parent);
            }
            t.string(wire::track_descriptor::NAME, &name);
        });
        sink.packet(p.as_bytes());
    }
}

/// A packet timestamp on a sequence with the delta clock as default.
#[derive(Debug, Clone, Copy)]
enum Stamp {
    Delta(u64),
    Absolute(u64),
}

/// The key of a call-site item for [`TrackEventSink::intern_callsite`].
fn callsite_key(kind: u8, id: u32) -> [u8; 5] {
    let b = id.to_le_bytes();
    [kind, b[0], b[1], b[2], b[3]]
}

/// Packet header of a track event: its timestamp, the event name to intern,
/// whether the packet refers to interned data (slice ends do not), and
/// more interned data, encoded.
fn te_header(
    p: &mut Writer,
    stamp: Stamp,
    new_name: Option<(u64, &str)>,
    needs_state: bool,
    more_interned: &[u8],
) {
    match stamp {
        Stamp::Delta(d) => {
            p.varint(wire::packet::TIMESTAMP, d);
        }
        Stamp::Absolute(ts) => absolute_timestamp(p, ts),
    }
    if needs_state {
        p.varint(
            wire::packet::SEQUENCE_FLAGS,
            wire::packet::SEQ_NEEDS_INCREMENTAL_STATE,
        );
    }
    // One interned_data per packet: the trace processor reads only the
    // last of several.
    if new_name.is_some() || !more_interned.is_empty() {
        p.nested(wire::packet::INTERNED_DATA, |i| {
            if let Some((iid, name)) = new_name {
                i.nested(wire::interned::EVENT_NAMES, |e| {
                    e.varint(wire::interned::IID, iid)
                        .string(wire::interned::NAME, name);
                });
            }
            i.raw(more_interned);
        });
    }
}

/// The thread's name now, or as it was when it first recorded if it has
/// exited since.
fn thread_name(pid: u32, tid: u32, known: &crate::collector::ThreadNames) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .map(|s| s.trim_end().to_owned())
        .ok()
        .or_else(|| known.get(tid))
        .unwrap_or_else(|| format!("thread {tid}"))
}

/// The name the SDK gives the process: the first word of its command line.
pub(super) fn sdk_process_name() -> String {
    std::fs::read("/proc/self/cmdline")
        .ok()
        .and_then(|b| {
            b.split(|&c| c == 0)
                .next()
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
        })
        .unwrap_or_else(gpu_trace_model::process::program_name)
}

/// The SDK's process track, parent of process-wide range tracks.
pub(super) fn perfetto_process_uuid() -> Option<u64> {
    // Zero until track events are initialised (unit tests).
    Some(perfetto_sdk::track_event::TrackEventTrack::process_track_uuid()).filter(|&u| u != 0)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{PID, TePackets, all, at, s, u};
    use super::super::{ClockSpec, Encoder};
    use super::*;
    use crate::model::TextRef;
    use wire::packet as P;
    use wire::track_event as T;

    fn batch(thread: u32, events: Vec<Event>, text: &[u8]) -> Batch {
        Batch {
            thread,
            events,
            text: text.to_vec(),
        }
    }

    fn events(packets: &[Vec<u8>]) -> Vec<&[u8]> {
        packets
            .iter()
            .filter_map(|p| at(p, &[P::TRACK_EVENT]).and_then(|v| v.as_bytes()))
            .collect()
    }

    fn write(enc: &mut Encoder, batches: &[Batch], api: bool) -> TePackets {
        let mut sink = TePackets::default();
        if api {
            enc.write_api_calls(batches, &mut sink);
        } else {
            enc.write_markers(batches, &mut sink);
        }
        sink
    }

    #[test]
    fn a_call_stack_is_interned_once_with_its_frames_and_named_by_iid() {
        use gpu_trace_model::callstack::SourceFrame;
        let mut f = super::super::test_support::Fixture::new(ClockSpec::Boottime);
        let name = f.names.intern("cuLaunchKernel");
        let frame = |func: &str, line| SourceFrame {
            function: f.names.intern(func),
            file: f.names.intern("train.py"),
            line,
        };
        let (outer, inner) = (frame("<module>", 9), frame("Model.forward", 42));
        let ids = [f.callstacks.frame(outer), f.callstacks.frame(inner)];
        let stack = f.callstacks.stack(&ids);
        let call = |start| {
            let mut c = ApiCall::new(name, 7, start, start + 100, start);
            c.callstack = Some(stack);
            Event::Api(c)
        };
        let sink = write(
            &mut f.enc,
            &[batch(7, vec![call(1_000), call(2_000)], b"")],
            true,
        );
        let begins: Vec<&Vec<u8>> = sink
            .packets
            .iter()
            .filter(|p| u(p, &[P::TRACK_EVENT, T::TYPE]) == Some(T::TYPE_SLICE_BEGIN))
            .collect();
        assert_eq!(begins.len(), 2);
        let iid = |p: &[u8]| u(p, &[P::TRACK_EVENT, T::CALLSTACK_IID]);
        assert!(iid(begins[0]).is_some());
        assert_eq!(iid(begins[0]), iid(begins[1]));
        let interned = |p: &[u8], field| -> Vec<Vec<u8>> {
            all(p, P::INTERNED_DATA)
                .iter()
                .flat_map(|i| all(i.as_bytes().unwrap(), field))
                .map(|v| v.as_bytes().unwrap().to_vec())
                .collect()
        };
        use wire::interned as I;
        // Everything the first packet needs comes with it; nothing again.
        for field in [
            I::CALLSTACKS,
            I::FRAMES,
            I::FUNCTION_NAMES,
            I::SOURCE_PATHS,
            I::MAPPINGS,
        ] {
            assert!(!interned(begins[0], field).is_empty(), "field {field}");
            assert!(interned(begins[1], field).is_empty(), "field {field} again");
        }
        let strings = |field| -> HashMap<u64, String> {
            interned(begins[0], field)
                .iter()
                .map(|m| {
                    (
                        u(m, &[I::STRING_IID]).unwrap(),
                        s(m, &[I::STRING_STR]).unwrap().to_owned(),
                    )
                })
                .collect()
        };
        let (functions, paths) = (strings(I::FUNCTION_NAMES), strings(I::SOURCE_PATHS));
        let frames: HashMap<u64, (String, String, u64)> = interned(begins[0], I::FRAMES)
            .iter()
            .map(|m| {
                let g = |f| u(m, &[f]).unwrap();
                (
                    g(wire::frame::IID),
                    (
                        functions[&g(wire::frame::FUNCTION_NAME_ID)].clone(),
                        paths[&g(wire::frame::SOURCE_PATH_IID)].clone(),
                        g(wire::frame::LINE_NUMBER),
                    ),
                )
            })
            .collect();
        let cs = &interned(begins[0], I::CALLSTACKS)[0];
        assert_eq!(u(cs, &[wire::callstack::IID]), iid(begins[0]));
        let order: Vec<_> = all(cs, wire::callstack::FRAME_IDS)
            .iter()
            .map(|v| frames[&v.as_u64().unwrap()].clone())
            .collect();
        assert_eq!(
            order,
            [
                ("<module>".into(), "train.py".into(), 9),
                ("Model.forward".into(), "train.py".into(), 42)
            ]
        );
    }

    #[test]
    fn an_api_call_is_a_slice_that_points_at_its_gpu_work() {
        let mut f = super::super::test_support::Fixture::new(ClockSpec::Boottime);
        let name = f.names.intern("cudaLaunchKernel");
        let sync = f.names.intern("cudaStreamSynchronize");
        let call = |name, start, corr, submits, waits: &[u64], status| {
            let mut call = ApiCall::new(name, 7, start, start + 100, corr);
            call.submits = submits;
            call.waits = waits.iter().copied().collect();
            call.status = status;
            Event::Api(call)
        };
        let b = [batch(
            7,
            vec![
                call(name, 1_000, 5, true, &[], 0),
                call(sync, 2_000, 6, false, &[5], 3),
            ],
            b"",
        )];
        let sink = write(&mut f.enc, &b, true);
        let ev = events(&sink.packets);
        let types: Vec<_> = ev.iter().map(|e| u(e, &[T::TYPE]).unwrap()).collect();
        assert_eq!(
            types,
            [
                T::TYPE_SLICE_BEGIN,
                T::TYPE_SLICE_END,
                T::TYPE_SLICE_BEGIN,
                T::TYPE_SLICE_END
            ]
        );
        let launch = ev[0];
        assert_eq!(
            u(launch, &[T::GPU_CORRELATION, T::SUBMISSION_IDS]),
            Some(primary_event_id(PID, 5))
        );
        assert_eq!(
            u(launch, &[T::GPU_API]),
            Some(gpu_trace_testkit::BACKEND.gpu_api)
        );
        let wait = ev[2];
        assert_eq!(u(wait, &[T::GPU_CORRELATION, T::SUBMISSION_IDS]), None);
        assert_eq!(
            u(wait, &[T::GPU_CORRELATION, T::WAIT_IDS]),
            Some(primary_event_id(PID, 5))
        );
        assert_eq!(
            at(wait, &[T::DEBUG_ANNOTATIONS, wire::debug_annotation::INT]).and_then(|v| v.as_u64()),
            Some(3)
        );
        // Each name is interned once, with the packet that first uses it.
        let interned: Vec<_> = sink
            .packets
            .iter()
            .flat_map(|p| {
                all(p, P::INTERNED_DATA)
                    .into_iter()
                    .flat_map(|i| all(i.as_bytes().unwrap(), wire::interned::EVENT_NAMES))
                    .map(|e| s(e.as_bytes().unwrap(), &[wire::interned::NAME]).unwrap())
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(interned, ["cudaLaunchKernel", "cudaStreamSynchronize"]);
        // The thread's track is described once.
        let threads = sink
            .packets
            .iter()
            .filter(|p| {
                u(p, &[P::TRACK_DESCRIPTOR, wire::track_descriptor::UUID])
                    == Some(thread_track_uuid(PID, 7))
            })
            .count();
        assert_eq!(threads, 1);
    }

    #[test]
    fn markers_keep_their_text_and_drop_ends_that_began_before_tracing() {
        let mut f = super::super::test_support::Fixture::new(ClockSpec::Boottime);
        let text = TextRef { offset: 0, len: 4 };
        let m = |ts, marker| Event::Marker(MarkerEvent::new(9, ts, marker));
        let b = [batch(
            9,
            vec![
                m(10, Marker::Pop { domain: None }),
                m(20, Marker::Push { domain: None, text }),
                m(30, Marker::Pop { domain: None }),
                m(40, Marker::End { id: 77 }),
            ],
            b"step",
        )];
        let sink = write(&mut f.enc, &b, false);
        let ev = events(&sink.packets);
        let types: Vec<_> = ev.iter().map(|e| u(e, &[T::TYPE]).unwrap()).collect();
        assert_eq!(types, [T::TYPE_SLICE_BEGIN, T::TYPE_SLICE_END]);
        let name = sink.packets.iter().find_map(|p| {
            s(
                p,
                &[
                    P::INTERNED_DATA,
                    wire::interned::EVENT_NAMES,
                    wire::interned::NAME,
                ],
            )
        });
        assert_eq!(name, Some("step"));
    }

    /// The process descriptors of `packets`: (packet timestamp, pid, name,
    /// labels).
    fn process_descriptors(packets: &[Vec<u8>]) -> Vec<(Option<u64>, u64, String, Vec<String>)> {
        use super::super::test_support::all;
        use wire::track_descriptor as D;
        packets
            .iter()
            .filter_map(|p| {
                let pd = at(p, &[P::TRACK_DESCRIPTOR, D::PROCESS])?.as_bytes()?;
                let labels = all(pd, D::PROCESS_LABELS)
                    .iter()
                    .map(|v| v.as_str().unwrap().to_owned())
                    .collect();
                Some((
                    u(p, &[P::TIMESTAMP]),
                    u(pd, &[D::PROCESS_PID])?,
                    s(pd, &[D::PROCESS_NAME])?.to_owned(),
                    labels,
                ))
            })
            .collect()
    }

    #[test]
    fn a_rank_names_the_process_on_every_new_sequence_after_the_sdk() {
        let mut f = super::super::test_support::Fixture::new(ClockSpec::Boottime);
        let name = f.names.intern("cudaLaunchKernel");
        let b = [batch(
            7,
            vec![Event::Api(ApiCall::new(name, 7, 1_000, 1_100, 5))],
            b"",
        )];
        // Without a rank the SDK's descriptor stands alone.
        assert!(process_descriptors(&write(&mut f.enc, &b, true).packets).is_empty());

        f.enc.process_uuid = Some(0xabc);
        f.enc.set_rank(Some(gpu_trace_model::rank::Rank {
            rank: 1,
            local_rank: Some(0),
            world_size: Some(2),
        }));
        let before = crate::clock::boottime_ns();
        let mut sink = TePackets::default();
        f.enc.write_api_calls(&b, &mut sink);
        let d = process_descriptors(&sink.packets);
        assert_eq!(d.len(), 1, "one descriptor on a new sequence");
        let (ts, pid, name, labels) = &d[0];
        assert!(ts.unwrap() >= before, "stamped when written: {ts:?}");
        assert_eq!(*pid, PID as u64);
        assert!(name.ends_with(" [rank 1/2]"), "{name}");
        assert_eq!(labels, &["rank=1", "local_rank=0", "world_size=2"]);
        // A sequence that already has it does not get it again.
        f.enc.write_api_calls(&b, &mut sink);
        assert_eq!(process_descriptors(&sink.packets).len(), 1);
        // Entering a sequence the service has cleared, only to flush it
        // (the SDK describes the process by its command line on entry),
        // describes it again, once.
        let mut flushed = TePackets::default();
        f.enc.describe_process_on_reset(&mut flushed);
        f.enc.describe_process_on_reset(&mut flushed);
        let d = process_descriptors(&flushed.packets);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].2.ends_with(" [rank 1/2]"), "{d:?}");
        // A render-stage sequence gets it when it starts.
        let mut rs = super::super::test_support::Packets::default();
        let mut seq = super::super::RsSeq::default();
        f.enc.start_rs_sequence(&mut seq, 1_000, &mut rs);
        assert_eq!(process_descriptors(&rs.0).len(), 1);
    }
}
