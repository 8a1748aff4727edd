//! A minimal rocprofiler-sdk tool built on the safe `rocprofiler` crate: it subscribes to
//! everything, counts what arrives and writes the counts as JSON to `$COUNT_TOOL_OUT` from its
//! `finalize`. The simulator tests compare those counts with the scenario.
//!
//! Knobs (environment): `COUNT_TOOL_BUFFER=size,watermark` (bytes), `COUNT_TOOL_PANIC=hip`
//! (panic in the first HIP callback), `COUNT_TOOL_MARKER_CONTROL=1` (roctx marks
//! `gpu-trace:stop`/`gpu-trace:start` stop/start the tracing context), `COUNT_TOOL_MODE=buffered`
//! (HIP API and counters through buffers), `COUNT_TOOL_POLICY=discard`.
//!
//! All `unsafe` is the exported entry point in [`ffi`], as it will be in the injection library.
#![deny(unsafe_code)]

mod counts;
#[allow(unsafe_code)]
pub mod ffi;

use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::{Arc, Mutex, OnceLock};

use rocprofiler::{
    Buffer, BufferOptions, BufferRecord, BufferTracingKind, CallbackTracingKind, Context,
    CounterConfig, CounterId, MarkerOp, MemoryCopyDirection, Payload, Phase, Policy, Runtime, Tool,
};

use counts::Counts;

/// The tool.
pub struct CountTool {
    counts: Arc<Mutex<Counts>>,
    out: Option<String>,
    buffer: (usize, usize),
    panic_in_hip: bool,
    marker_control: bool,
    buffered: bool,
    discard: bool,
}

/// What `initialize` creates.
pub struct Session {
    buffer: Arc<Buffer>,
    count_buffer: Option<Buffer>,
    _contexts: Vec<Arc<Context>>,
    _configs: Arc<HashMap<u64, CounterConfig>>,
}

static PANICKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn lock(c: &Mutex<Counts>) -> std::sync::MutexGuard<'_, Counts> {
    c.lock().unwrap_or_else(|e| e.into_inner())
}

impl Tool for CountTool {
    const NAME: &'static CStr = c"rocprofiler-count-tool";
    type Session = Session;

    fn configure(info: &rocprofiler::ConfigureInfo) -> Option<Self> {
        let buffer = std::env::var("COUNT_TOOL_BUFFER")
            .ok()
            .and_then(|v| {
                let (a, b) = v.split_once(',')?;
                Some((a.parse().ok()?, b.parse().ok()?))
            })
            .unwrap_or((64 << 10, 16 << 10));
        let counts = Counts {
            sdk_version: info.version.to_string(),
            priority: info.priority,
            ..Default::default()
        };
        Some(CountTool {
            counts: Arc::new(Mutex::new(counts)),
            out: std::env::var("COUNT_TOOL_OUT").ok(),
            buffer,
            panic_in_hip: std::env::var("COUNT_TOOL_PANIC").is_ok_and(|v| v == "hip"),
            marker_control: std::env::var("COUNT_TOOL_MARKER_CONTROL").is_ok_and(|v| v == "1"),
            buffered: std::env::var("COUNT_TOOL_MODE").is_ok_and(|v| v == "buffered"),
            discard: std::env::var("COUNT_TOOL_POLICY").is_ok_and(|v| v == "discard"),
        })
    }

    fn initialize(&self, rt: &Runtime) -> rocprofiler::Result<Session> {
        let counts = self.counts.clone();

        // Agents and counters: one config per GPU with everything it supports.
        let mut configs = HashMap::new();
        let mut counter_names: HashMap<CounterId, String> = HashMap::new();
        for agent in rt.agents()? {
            lock(&counts).agents.push(format!(
                "{:?}:{}:{}",
                agent.kind, agent.name, agent.logical_node_type_id
            ));
            if !agent.is_gpu() {
                continue;
            }
            let ids = rt.supported_counters(agent.id)?;
            for id in &ids {
                let info = rt.counter_info(*id)?;
                let dims = rt.counter_dimensions(*id)?;
                let n = rt.counter_instance_count(agent.id, *id)?;
                if dims.iter().map(|d| d.instances).product::<usize>() != n {
                    lock(&counts).errors.push(format!(
                        "{}: dimensions disagree with instance count",
                        info.name
                    ));
                }
                counter_names.insert(*id, info.name);
            }
            configs.insert(agent.id.0, rt.create_counter_config(agent.id, &ids)?);
        }
        let configs = Arc::new(configs);
        let counter_names = Arc::new(counter_names);

        // Utility context: code objects, HIP API, markers.
        let util = Arc::new(Context::new(rt)?);
        let trace = Arc::new(Context::new(rt)?);
        let count_ctx = Arc::new(Context::new(rt)?);

        let c = counts.clone();
        util.configure_callback_tracing(CallbackTracingKind::CODE_OBJECT, &[], move |ev| {
            let mut c = lock(&c);
            match (ev.payload(), ev.phase()) {
                (Payload::CodeObject(_), Phase::Enter) => c.code_objects_loaded += 1,
                (Payload::CodeObject(_), Phase::Exit) => c.code_objects_unloaded += 1,
                (Payload::KernelSymbol(k), Phase::Enter) => {
                    c.symbols_registered += 1;
                    let info = k.to_info();
                    c.symbols.insert(info.kernel_id, info.into());
                }
                (Payload::KernelSymbol(_), Phase::Exit) => c.symbols_unregistered += 1,
                _ => c.errors.push(format!(
                    "unexpected code-object event {:?}",
                    ev.operation_name()
                )),
            }
        })?;

        let c = counts.clone();
        let panic_in_hip = self.panic_in_hip;
        let rt2 = rt.clone();
        util.configure_callback_tracing(CallbackTracingKind::HIP_RUNTIME_API, &[], move |ev| {
            if panic_in_hip && !PANICKED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                panic!("count tool: deliberate panic in a HIP callback");
            }
            let name = ev.operation_name().unwrap_or("?").to_owned();
            let tid = ev.thread_id();
            let corr = ev.correlation_id();
            let phase = ev.phase();
            let payload = ev.payload();
            let now = rt2.timestamp().unwrap_or(0);
            match phase {
                Phase::Enter => ev.set_user_data(now),
                _ => {
                    if ev.user_data() == 0 || ev.user_data() > now {
                        lock(&c)
                            .errors
                            .push(format!("{name}: user data not kept from ENTER to EXIT"));
                    }
                }
            }
            let first = {
                let mut c = lock(&c);
                c.hip_thread_ids.insert(tid);
                let first = c.hip_enter.is_empty() && phase == Phase::Enter;
                let map = if phase == Phase::Enter {
                    &mut c.hip_enter
                } else {
                    &mut c.hip_exit
                };
                *map.entry(name).or_default() += 1;
                if let Payload::Hip(h) = payload {
                    if phase == Phase::Exit && h.hip_error() != 0 {
                        c.errors.push(format!("hip error {}", h.hip_error()));
                    }
                    if let (Some(l), Phase::Enter) = (h.launch(), phase) {
                        c.launches.insert(corr.internal, (l.grid_blocks, l.block));
                    }
                    if let (Some(m), Phase::Enter) = (h.memcpy(), phase) {
                        c.memcpy_call_bytes += m.bytes;
                    }
                } else {
                    c.errors.push("HIP callback without a HIP payload".into());
                }
                first
            };
            // Configuration is locked once initialize has returned.
            if first {
                let err = Context::new(&rt2).err().and_then(|e| e.status());
                lock(&c).late_context_status = Some(format!("{err:?}"));
            }
        })?;

        let c = counts.clone();
        let trace2 = trace.clone();
        let marker_control = self.marker_control;
        util.configure_callback_tracing(CallbackTracingKind::MARKER_CORE_API, &[], move |ev| {
            let Payload::Marker(m) = ev.payload() else {
                lock(&c)
                    .errors
                    .push("marker callback without a marker payload".into());
                return;
            };
            if ev.phase() != Phase::Exit {
                return;
            }
            let msg = m.message().map(|s| s.to_string_lossy().into_owned());
            {
                let mut c = lock(&c);
                *c.marker_calls
                    .entry(ev.operation_name().unwrap_or("?").to_owned())
                    .or_default() += 1;
                if let Some(msg) = &msg {
                    c.marker_messages.insert(msg.clone());
                }
                match m.op() {
                    MarkerOp::RangeStart => {
                        c.range_ids_started.insert(m.range_id().unwrap_or(0));
                    }
                    MarkerOp::RangeStop => {
                        c.range_ids_stopped.insert(m.range_id().unwrap_or(0));
                    }
                    _ => {}
                }
            }
            if marker_control {
                match msg.as_deref() {
                    Some("gpu-trace:stop") => {
                        let _ = trace2.stop();
                    }
                    Some("gpu-trace:start") => {
                        let _ = trace2.start();
                    }
                    _ => {}
                }
            }
        })?;

        // Tracing context: kernels and copies into one buffer.
        let c = counts.clone();
        let this_buffer: Arc<OnceLock<Arc<Buffer>>> = Arc::default();
        let me = this_buffer.clone();
        let buffer = Buffer::new(
            &trace,
            BufferOptions {
                size: self.buffer.0,
                watermark: self.buffer.1,
                policy: if self.discard {
                    Policy::Discard
                } else {
                    Policy::Lossless
                },
            },
            move |batch| {
                let mut guard = lock(&c);
                guard.buffer_batches += 1;
                guard.dropped += batch.drop_count();
                for r in batch.records() {
                    count_record(&mut guard, batch.runtime(), r);
                }
                let probe = guard.flush_in_callback.is_none();
                drop(guard);
                // Flushing a buffer from inside its own callback must be refused, not deadlock.
                if let (true, Some(b)) = (probe, me.get()) {
                    let status = b.flush().err().and_then(|e| e.status());
                    lock(&c).flush_in_callback = Some(format!("{status:?}"));
                }
            },
        )?;
        let buffer = Arc::new(buffer);
        let _ = this_buffer.set(buffer.clone());
        trace.configure_buffer_tracing(&buffer, BufferTracingKind::KERNEL_DISPATCH, &[])?;
        trace.configure_buffer_tracing(&buffer, BufferTracingKind::MEMORY_COPY, &[])?;
        if self.buffered {
            trace.configure_buffer_tracing(&buffer, BufferTracingKind::HIP_RUNTIME_API, &[])?;
        }

        // Counting context: callbacks, or (buffered mode) a buffer on its own SDK thread.
        let c = counts.clone();
        let cfgs = configs.clone();
        let dispatch = move |req: &mut rocprofiler::DispatchCountingRequest<'_>| {
            lock(&c).counting_requests += 1;
            let Some(d) = req.dispatch() else { return };
            if let Some(cfg) = cfgs.get(&d.agent_id.0) {
                req.set_config(cfg);
                req.set_user_data(d.dispatch_id);
            }
        };
        let c2 = counts.clone();
        let names = counter_names.clone();
        let count_buffer = if self.buffered {
            let b = Buffer::new(&count_ctx, BufferOptions::default(), move |batch| {
                let mut c = lock(&c2);
                for r in batch.records() {
                    match r {
                        BufferRecord::CountingDispatch(_) => c.counted_dispatches += 1,
                        BufferRecord::Counter(v) => match batch
                            .runtime()
                            .record_counter_id(v.instance_id)
                        {
                            Ok(id) => {
                                let name =
                                    names.get(&id).cloned().unwrap_or_else(|| format!("{id:?}"));
                                if v.user_data != v.dispatch_id {
                                    c.errors.push("counting user data lost".into());
                                }
                                *c.counter_records.entry(name.clone()).or_default() += 1;
                                *c.counter_sums.entry(name.clone()).or_default() += v.value;
                                let m = c.counter_max.entry(name).or_insert(f64::MIN);
                                *m = m.max(v.value);
                            }
                            Err(e) => c.errors.push(format!("counter id: {e}")),
                        },
                        other => c
                            .errors
                            .push(format!("unexpected counting record {other:?}")),
                    }
                }
            })?;
            b.assign_callback_thread(rt.create_callback_thread()?)?;
            count_ctx.configure_buffer_dispatch_counting(&b, dispatch)?;
            Some(b)
        } else {
            count_ctx.configure_dispatch_counting(dispatch, move |res| {
                let mut c = lock(&c2);
                c.counted_dispatches += 1;
                if res.dispatch().map(|d| d.dispatch_id) != Some(res.user_data()) {
                    c.errors.push("counting user data lost".into());
                }
                match res.aggregate() {
                    Ok(agg) => {
                        for (id, a) in agg {
                            let name = names.get(&id).cloned().unwrap_or_else(|| format!("{id:?}"));
                            *c.counter_records.entry(name.clone()).or_default() += a.count as u64;
                            *c.counter_sums.entry(name.clone()).or_default() += a.sum;
                            let m = c.counter_max.entry(name).or_insert(f64::MIN);
                            *m = m.max(a.max);
                        }
                    }
                    Err(e) => c.errors.push(format!("aggregate: {e}")),
                }
            })?;
            None
        };

        util.start()?;
        trace.start()?;
        count_ctx.start()?;
        Ok(Session {
            buffer,
            count_buffer,
            _contexts: vec![util, trace, count_ctx],
            _configs: configs,
        })
    }

    fn finalize(&self, _rt: &Runtime, session: Session) {
        let flushed = session
            .buffer
            .flush()
            .and(session.count_buffer.as_ref().map_or(Ok(()), Buffer::flush));
        let mut c = lock(&self.counts);
        c.finalized = true;
        if let Err(e) = flushed {
            c.errors.push(format!("flush at finalize: {e}"));
        }
        if let Some(out) = &self.out {
            let _ = std::fs::write(out, serde_json::to_vec_pretty(&*c).unwrap_or_default());
        }
    }
}

fn count_record(c: &mut Counts, rt: &Runtime, r: BufferRecord) {
    match r {
        BufferRecord::KernelDispatch(k) => {
            c.kernel_dispatches += 1;
            if k.start_ns == 0 || k.end_ns < k.start_ns {
                c.bad_timestamps += 1;
            }
            let sym = c
                .symbols
                .get(&k.info.kernel_id)
                .map(|s| s.name.clone())
                .unwrap_or_else(|| "<unknown>".into());
            *c.dispatches_by_symbol.entry(sym).or_default() += 1;
            match c.launches.get(&k.correlation_id.internal).copied() {
                Some((grid, block)) => {
                    c.correlated_dispatches += 1;
                    let items = rocprofiler::Dim3 {
                        x: grid.x * block.x,
                        y: grid.y * block.y,
                        z: grid.z * block.z,
                    };
                    if k.info.grid_size != items
                        || k.info.workgroup_size != block
                        || k.info.grid_in_workgroups() != grid
                    {
                        c.grid_mismatches += 1;
                    }
                }
                None => c.uncorrelated += 1,
            }
        }
        BufferRecord::MemoryCopy(m) => {
            let dir = match m.direction {
                MemoryCopyDirection::HostToDevice => "HOST_TO_DEVICE",
                MemoryCopyDirection::DeviceToHost => "DEVICE_TO_HOST",
                MemoryCopyDirection::DeviceToDevice => "DEVICE_TO_DEVICE",
                _ => "OTHER",
            };
            *c.memory_copies.entry(dir.to_owned()).or_default() += 1;
            c.memory_copy_bytes += m.bytes;
            if m.start_ns == 0 || m.end_ns < m.start_ns {
                c.bad_timestamps += 1;
            }
        }
        BufferRecord::HipApi(h) => {
            let name = rt.buffer_operation_name(h.kind, h.operation).unwrap_or("?");
            *c.hip_buffered.entry(name.to_owned()).or_default() += 1;
            if h.end_ns < h.start_ns || !c.hip_thread_ids.contains(&h.thread_id) {
                c.errors
                    .push(format!("buffered {name}: bad timestamps or thread"));
            }
        }
        other => c.errors.push(format!("unexpected buffer record {other:?}")),
    }
}
