//! HIP runtime calls and roctx markers, from callback tracing on the application's threads.
//!
//! This is the per-call hot path. ENTER stores a timestamp in the SDK's per-call slot; EXIT
//! builds an [`ApiCall`] from ids and copies it into the thread's buffer. Only calls that
//! launch, copy, set, allocate, free, synchronise or record events are subscribed. Which GPU
//! work a synchronisation waited for comes from the model's [`Correlator`].

use gpu_trace_agent::callsites::CallSites;
use gpu_trace_model::Recorder;
use gpu_trace_model::clock::boottime_ns;
use gpu_trace_model::correlate::{Correlator, StreamKey, Wait};
use gpu_trace_model::model::{ApiCall, Marker, NameId};
use gpu_trace_model::names::Names;
use rocprofiler::{CallbackEvent, HipCall, MarkerOp, Payload, Phase};
use smallvec::SmallVec;
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};

thread_local! {
    // HIP starts every thread on device 0; hipSetDevice changes it.
    static CURRENT_DEVICE: Cell<i32> = const { Cell::new(0) };
}

fn current_device() -> i32 {
    CURRENT_DEVICE.try_with(Cell::get).unwrap_or(0)
}

/// What a HIP call does, as far as the trace is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// Launches kernels (their dispatch records carry its correlation id).
    Launch,
    /// Copies memory.
    Copy,
    /// Sets memory.
    Set,
    /// `hipStreamSynchronize`.
    SyncStream,
    /// `hipDeviceSynchronize`, `hipCtxSynchronize`.
    SyncDevice,
    /// `hipEventSynchronize`.
    SyncEvent,
    /// `hipEventRecord`.
    EventRecord,
    /// `hipSetDevice`: followed to know each thread's device, not drawn.
    SetDevice,
    /// Drawn, nothing else (allocations, stream creation, stream waits).
    Plain,
}

impl Class {
    fn submits(self) -> bool {
        matches!(self, Class::Launch | Class::Copy | Class::Set)
    }
}

/// Which HIP calls are traced, by name. Ids are not hard-coded: the SDK names them.
pub(crate) fn classify(name: &str) -> Option<Class> {
    let starts = |p: &[&str]| p.iter().any(|p| name.starts_with(p));
    Some(match name {
        "hipSetDevice" => Class::SetDevice,
        "hipDeviceSynchronize" | "hipCtxSynchronize" => Class::SyncDevice,
        "hipEventSynchronize" => Class::SyncEvent,
        // Runs a host function: no GPU record carries its correlation id.
        "hipLaunchHostFunc" | "hipLaunchHostFunc_spt" => return None,
        _ if starts(&["hipStreamSynchronize"]) => Class::SyncStream,
        _ if starts(&["hipEventRecord"]) => Class::EventRecord,
        _ if starts(&[
            "hipLaunch",
            "hipModuleLaunch",
            "hipExtLaunch",
            "hipExtModuleLaunchKernel",
            "hipHccModuleLaunchKernel",
            "hipGraphLaunch",
        ]) =>
        {
            Class::Launch
        }
        _ if starts(&["hipMemcpy"]) => Class::Copy,
        _ if starts(&["hipMemset"]) => Class::Set,
        _ if starts(&[
            "hipMalloc",
            "hipFree",
            "hipHostMalloc",
            "hipHostFree",
            "hipHostAlloc",
            "hipExtMallocWithFlags",
            "hipStreamCreate",
            "hipStreamDestroy",
            "hipStreamWaitEvent",
        ]) =>
        {
            Class::Plain
        }
        _ => return None,
    })
}

struct Op {
    name: &'static str,
    class: Class,
    /// Runs on the null stream when the call has no stream argument (synchronous copies and
    /// sets).
    null_stream: bool,
    /// Interned name id + 1; 0 until first use.
    interned: AtomicU32,
}

/// The traced HIP operations, indexed by operation id.
pub(crate) struct OpTable {
    ops: Vec<Option<Op>>,
}

impl OpTable {
    /// From the SDK's `(operation, name)` list.
    pub(crate) fn new(all: &[(i32, &'static str)]) -> Self {
        let max = all.iter().map(|(op, _)| *op).max().unwrap_or(-1);
        let mut ops: Vec<Option<Op>> = (0..=max.max(0)).map(|_| None).collect();
        for &(op, name) in all {
            if let (Ok(i), Some(class)) = (usize::try_from(op), classify(name)) {
                ops[i] = Some(Op {
                    name,
                    class,
                    null_stream: matches!(class, Class::Copy | Class::Set)
                        && !name.contains("Async"),
                    interned: AtomicU32::new(0),
                });
            }
        }
        Self { ops }
    }

    /// Operation ids to subscribe to.
    pub(crate) fn traced(&self) -> Vec<i32> {
        self.ops
            .iter()
            .enumerate()
            .filter(|(_, o)| o.is_some())
            .map(|(i, _)| i as i32)
            .collect()
    }

    fn get(&self, op: i32) -> Option<&Op> {
        usize::try_from(op)
            .ok()
            .and_then(|i| self.ops.get(i))
            .and_then(Option::as_ref)
    }
}

/// A stream as the correlator keys it. Stream handles are process-wide, except the null stream
/// (0), which each device has its own of.
fn stream_key(device: i32, stream: u64) -> StreamKey {
    // Device ids are small and never negative: `u64::MAX` is no device's space.
    let space = if stream == 0 { device as u64 } else { u64::MAX };
    StreamKey::new(space, stream)
}

/// Everything the HIP and roctx callbacks share.
pub(crate) struct ApiState {
    recorder: Recorder,
    names: std::sync::Arc<Names>,
    ops: OpTable,
    /// Which work each synchronisation waited for.
    correlate: Correlator,
    /// The Python stacks of the calls that run or wait for GPU work, when
    /// the process runs Python and they are asked for.
    callsites: Option<CallSites>,
}

impl ApiState {
    pub(crate) fn new(
        recorder: Recorder,
        names: std::sync::Arc<Names>,
        ops: OpTable,
        callsites: Option<CallSites>,
    ) -> Self {
        Self {
            recorder,
            names,
            ops,
            callsites,
            correlate: Correlator::default(),
        }
    }

    fn name(&self, op: &Op) -> NameId {
        match op.interned.load(Ordering::Relaxed) {
            0 => {
                let id = self.names.intern(op.name);
                op.interned.store(id.0 + 1, Ordering::Relaxed);
                id
            }
            v => NameId(v - 1),
        }
    }

    /// A HIP runtime call entering or leaving.
    pub(crate) fn on_hip(&self, ev: &mut CallbackEvent<'_>) {
        let Some(op) = self.ops.get(ev.operation()) else {
            return;
        };
        match ev.phase() {
            Phase::Enter if op.class != Class::SetDevice => ev.set_user_data(boottime_ns()),
            Phase::Exit => {
                let end = boottime_ns();
                let Payload::Hip(call) = ev.payload() else {
                    return;
                };
                if op.class == Class::SetDevice {
                    if call.hip_error() == 0
                        && let Some(d) = call.set_device()
                    {
                        let _ = CURRENT_DEVICE.try_with(|c| c.set(d));
                    }
                    return;
                }
                crate::failpoint::maybe_panic("hip", op.name == "hipLaunchKernel");
                // Our entry callback leaves the start here. None: the call
                // began before API tracing was on (a session started during
                // it); its start is unknown and its GPU work may not be
                // recorded, so it is left out, as on CUDA.
                let start = match ev.user_data() {
                    0 => return,
                    s => s.min(end),
                };
                self.record(ev, op, &call, start, end);
            }
            _ => {}
        }
    }

    fn record(&self, ev: &CallbackEvent<'_>, op: &Op, call: &HipCall<'_>, start: u64, end: u64) {
        let status = call.hip_error();
        let ok = status == 0;
        let corr = ev.correlation_id().internal;
        let device = current_device();
        let submits = ok && op.class.submits();
        // A device-wide synchronisation covers the work submitted on its device.
        let scope = device as u64;
        let waits = match op.class {
            _ if submits => {
                // A call whose stream argument is not bound here is not remembered.
                if let Some(s) = call.stream().or(op.null_stream.then_some(0)) {
                    self.correlate
                        .submitted(stream_key(device, s), scope, corr, end);
                }
                SmallVec::new()
            }
            Class::SyncStream => call
                .stream()
                .map(|s| {
                    self.correlate
                        .waits(Wait::Stream(stream_key(device, s)), start)
                })
                .unwrap_or_default(),
            Class::SyncDevice => self.correlate.waits(Wait::Scope(scope), start),
            Class::EventRecord if ok => {
                if let Some((event, stream)) = call.event_record() {
                    self.correlate
                        .event_recorded(event, stream_key(device, stream), start);
                }
                SmallVec::new()
            }
            Class::SyncEvent => call
                .synchronized_event()
                .map(|e| self.correlate.waits(Wait::Event(e), start))
                .unwrap_or_default(),
            _ => SmallVec::new(),
        };
        let mut call = ApiCall::new(self.name(op), ev.thread_id() as u32, start, end, corr);
        call.submits = submits;
        call.waits = waits;
        call.status = status;
        if let Some(c) = &self.callsites
            && matches!(
                op.class,
                Class::Launch
                    | Class::Copy
                    | Class::Set
                    | Class::SyncStream
                    | Class::SyncDevice
                    | Class::SyncEvent
            )
        {
            call.callstack = c.capture();
        } else if let Some(c) = &self.callsites {
            // Other calls only feed the layout self-check, should they be
            // the only ones made with the GIL (a library's start-up).
            c.check_layout();
        }
        self.recorder.api(call);
    }
}

/// A roctx call. Marks, pushes, pops and stops are placed at entry; a start at exit,
/// where its range id is known, with the time of its entry. `markers`: record it; pushes
/// and pops also go to the counters filter's range tracking
/// ([`gpu_trace_model::filter::tx`]).
pub(crate) fn on_marker(r: &Recorder, ev: &mut CallbackEvent<'_>, markers: bool) {
    use gpu_trace_model::filter::tx;
    let Payload::Marker(m) = ev.payload() else {
        return;
    };
    let text = || m.message().map(|s| s.to_string_lossy()).unwrap_or_default();
    match (m.op(), ev.phase()) {
        (MarkerOp::RangePush, Phase::Enter) if tx::is_on() => tx::push(0, &text()),
        (MarkerOp::RangePop, Phase::Enter) => tx::pop(0),
        _ => {}
    }
    if !markers {
        return;
    }
    let thread = ev.thread_id() as u32;
    match (m.op(), ev.phase()) {
        (MarkerOp::Mark, Phase::Enter) => {
            r.marker(thread, boottime_ns(), &text(), |text| Marker::Mark {
                domain: None,
                text,
            });
        }
        (MarkerOp::RangePush, Phase::Enter) => {
            r.marker(thread, boottime_ns(), &text(), |text| Marker::Push {
                domain: None,
                text,
            });
        }
        (MarkerOp::RangePop, Phase::Enter) => {
            r.marker(thread, boottime_ns(), "", |_| Marker::Pop { domain: None });
        }
        (MarkerOp::RangeStart, Phase::Enter) => ev.set_user_data(boottime_ns()),
        (MarkerOp::RangeStart, Phase::Exit) => {
            if let Some(id) = m.range_id() {
                let ts = match ev.user_data() {
                    0 => boottime_ns(),
                    t => t,
                };
                r.marker(thread, ts, &text(), |text| Marker::Start {
                    id,
                    domain: None,
                    text,
                });
            }
        }
        (MarkerOp::RangeStop, Phase::Enter) => {
            if let Some(id) = m.range_id() {
                r.marker(thread, boottime_ns(), "", |_| Marker::End { id });
            }
        }
        _ => {}
    }
}

/// roctx operations that become markers.
pub(crate) fn marker_ops() -> [i32; 5] {
    type M = rocprofiler::sys::rocprofiler_marker_core_api_id_t;
    [
        M::roctxMarkA.0,
        M::roctxRangePushA.0,
        M::roctxRangePop.0,
        M::roctxRangeStartA.0,
        M::roctxRangeStop.0,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        for (name, class) in [
            ("hipLaunchKernel", Some(Class::Launch)),
            ("hipLaunchKernel_spt", Some(Class::Launch)),
            ("hipModuleLaunchKernel", Some(Class::Launch)),
            ("hipExtModuleLaunchKernel", Some(Class::Launch)),
            ("hipGraphLaunch", Some(Class::Launch)),
            ("hipLaunchHostFunc", None),
            ("hipMemcpyAsync", Some(Class::Copy)),
            ("hipMemcpyPeer", Some(Class::Copy)),
            ("hipMemsetD32Async", Some(Class::Set)),
            ("hipStreamSynchronize", Some(Class::SyncStream)),
            ("hipStreamSynchronize_spt", Some(Class::SyncStream)),
            ("hipDeviceSynchronize", Some(Class::SyncDevice)),
            ("hipEventSynchronize", Some(Class::SyncEvent)),
            ("hipEventRecord", Some(Class::EventRecord)),
            ("hipSetDevice", Some(Class::SetDevice)),
            ("hipMalloc", Some(Class::Plain)),
            ("hipFreeAsync", Some(Class::Plain)),
            ("hipGetDevice", None),
            ("hipGetLastError", None),
            ("hipSetDeviceFlags", None),
        ] {
            assert_eq!(classify(name), class, "{name}");
        }
    }

    #[test]
    fn op_table_subscribes_only_traced_calls() {
        let t = OpTable::new(&[
            (102, "hipGetDevice"),
            (214, "hipLaunchKernel"),
            (327, "hipSetDevice"),
            (-1, "NONE"),
        ]);
        assert_eq!(t.traced(), vec![214, 327]);
        assert!(t.get(102).is_none() && t.get(-1).is_none() && t.get(9999).is_none());
        assert_eq!(t.get(214).map(|o| o.class), Some(Class::Launch));
        let t = OpTable::new(&[
            (259, "hipMemcpy"),
            (268, "hipMemcpyAsync"),
            (214, "hipLaunchKernel"),
        ]);
        let null = |op| t.get(op).map(|o| o.null_stream);
        assert_eq!(
            (null(259), null(268), null(214)),
            (Some(true), Some(false), Some(false))
        );
    }

    #[test]
    fn the_null_stream_is_per_device() {
        assert_ne!(stream_key(0, 0), stream_key(1, 0));
        assert_eq!(stream_key(0, 0x5000), stream_key(1, 0x5000));
    }
}
