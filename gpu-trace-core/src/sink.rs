//! Perfetto glue: producer initialisation, data-source and category
//! registration, the in-process file session, and packet sinks over the
//! SDK's trace contexts.
//!
//! Data sources can be registered once per process and must live forever,
//! so the registration is process-global. Its callbacks reach the running
//! tracer through [`ROUTE`], which [`crate::Tracer`] sets and clears.

use crate::emit::{CtrSeq, PacketSink, RsSeq, TrackEventSink};
use crate::tracer::Inner;
use arc_swap::ArcSwapOption;
use perfetto_sdk::data_source::{
    DataSource, DataSourceArgsBuilder, DataSourceBufferExhaustedPolicy, TraceContext,
};
use perfetto_sdk::producer::{Backends, Producer, ProducerInitArgsBuilder};
use perfetto_sdk::protos::trace::interned_data::interned_data::InternedDataFieldNumber;
use perfetto_sdk::tracing_session::TracingSession;
use perfetto_sdk::track_event::TrackEvent;
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

perfetto_sdk::track_event_categories! {
    pub(crate) mod te {
        ("cuda", "CUDA runtime and driver API calls on CPU threads", []),
        ("nvtx", "NVTX ranges and marks", []),
        ("hip", "HIP runtime API calls on CPU threads", []),
        ("roctx", "roctx ranges and marks", []),
    }
}

/// Category indices in [`te`].
pub(crate) mod cat {
    pub(crate) const CUDA: usize = 0;
    pub(crate) const NVTX: usize = 1;
    pub(crate) const HIP: usize = 2;
    pub(crate) const ROCTX: usize = 3;
    pub(crate) const NAMES: [&str; 4] = ["cuda", "nvtx", "hip", "roctx"];
}

pub(crate) struct Registry {
    pub(crate) rs: &'static DataSource<'static, RsSeq>,
    pub(crate) ctr: &'static DataSource<'static, CtrSeq>,
    pub(crate) suffix: String,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();
pub(crate) static ROUTE: ArcSwapOption<Inner> = ArcSwapOption::const_empty();

/// Data-source names for `suffix`.
pub fn data_source_names(suffix: &str) -> (String, String) {
    (
        format!("gpu.renderstages.{suffix}"),
        format!("gpu.counters.{suffix}"),
    )
}

/// Registration failures.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    /// The process already registered its data sources under another suffix.
    #[error("data sources are already registered with suffix {registered:?}, not {wanted:?}")]
    SuffixMismatch {
        /// Suffix in use.
        registered: String,
        /// Suffix asked for.
        wanted: String,
    },
    /// The SDK refused a registration.
    #[error("Perfetto refused to register {0}")]
    Refused(String),
}

/// Initialises the producer and registers everything, once per process.
pub(crate) fn register(
    suffix: &str,
    backends: Backends,
) -> Result<&'static Registry, RegisterError> {
    if let Some(r) = REGISTRY.get() {
        // A later tracer may add the system backend; init is idempotent.
        Producer::init(ProducerInitArgsBuilder::new().backends(backends).build());
        return if r.suffix == suffix {
            Ok(r)
        } else {
            Err(RegisterError::SuffixMismatch {
                registered: r.suffix.clone(),
                wanted: suffix.to_owned(),
            })
        };
    }
    Producer::init(
        ProducerInitArgsBuilder::new()
            .backends(backends)
            .shmem_size_hint_kb(16 * 1024)
            .build(),
    );
    TrackEvent::init();
    let _ = te::register();
    for i in 0..cat::NAMES.len() {
        te::set_category_callback(i, |_inst, _enabled, _global| {
            crate::guard::catch("category callback", || with_route(|r| r.wake()));
        });
    }
    let (rs_name, ctr_name) = data_source_names(suffix);

    let mut rs: DataSource<'static, RsSeq> = DataSource::new_with_incremental_state_type();
    rs.register(
        &rs_name,
        DataSourceArgsBuilder::new()
            // Only the emitter thread writes, so a stall never reaches the
            // application; it turns into back-pressure on the collector,
            // whose drops are counted (Perfetto's default drops silently).
            .buffer_exhausted_policy(DataSourceBufferExhaustedPolicy::StallAndDrop)
            .buffer_exhausted_policy_configurable(true)
            .will_notify_on_stop(true)
            .handles_incremental_state_clear(true)
            .on_start(|_inst, _args| {
                crate::guard::catch("data source start", || with_route(|r| r.wake()));
            })
            .on_stop(|_inst, args| {
                let guard = args.postpone();
                crate::guard::catch("data source stop", move || match ROUTE.load_full() {
                    Some(r) => r.request_stop_cycle(Box::new(move || drop(guard))),
                    None => drop(guard),
                });
            })
            .on_flush(|_inst, args| {
                let guard = args.postpone();
                crate::guard::catch("data source flush", move || match ROUTE.load_full() {
                    Some(r) => r.request_flush_cycle(Box::new(move || drop(guard))),
                    None => drop(guard),
                });
            })
            .build(),
    )
    .map_err(|_| RegisterError::Refused(rs_name.clone()))?;

    let mut ctr: DataSource<'static, CtrSeq> = DataSource::new_with_incremental_state_type();
    ctr.register(
        &ctr_name,
        DataSourceArgsBuilder::new()
            // Only the emitter thread writes, so a stall never reaches the
            // application; it turns into back-pressure on the collector,
            // whose drops are counted (Perfetto's default drops silently).
            .buffer_exhausted_policy(DataSourceBufferExhaustedPolicy::StallAndDrop)
            .buffer_exhausted_policy_configurable(true)
            .will_notify_on_stop(true)
            .handles_incremental_state_clear(true)
            .on_setup(|inst, cfg, _args| {
                let req = parse_counter_config(cfg);
                crate::guard::catch("counter setup", || {
                    with_route(|r| r.set_counter_request(inst, Some(req)))
                });
            })
            .on_start(|_inst, _args| {
                crate::guard::catch("counter start", || with_route(|r| r.wake()));
            })
            .on_stop(|inst, args| {
                let guard = args.postpone();
                crate::guard::catch("counter stop", move || match ROUTE.load_full() {
                    Some(r) => {
                        r.set_counter_request(inst, None);
                        r.request_stop_cycle(Box::new(move || drop(guard)))
                    }
                    None => drop(guard),
                });
            })
            .build(),
    )
    .map_err(|_| RegisterError::Refused(ctr_name.clone()))?;

    let reg = Registry {
        rs: Box::leak(Box::new(rs)),
        ctr: Box::leak(Box::new(ctr)),
        suffix: suffix.to_owned(),
    };
    Ok(REGISTRY.get_or_init(|| reg))
}

pub(crate) fn registry() -> Option<&'static Registry> {
    REGISTRY.get()
}

fn with_route(f: impl FnOnce(&Inner)) {
    if let Some(r) = ROUTE.load_full() {
        f(&r);
    }
}

/// What a counters session asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterRequest {
    /// `GpuCounterConfig.counter_names`; empty means the tool's defaults.
    pub names: Vec<String>,
    /// Whether per-kernel (instrumented) sampling was asked for.
    pub instrumented: bool,
}

/// Reads `GpuCounterConfig` out of a `DataSourceConfig`.
pub fn parse_counter_config(cfg: &[u8]) -> CounterRequest {
    use crate::pb::Fields;
    use crate::wire::config as c;
    let mut req = CounterRequest::default();
    for f in Fields::new(cfg).map_while(Result::ok) {
        if f.0 != c::DSC_GPU_COUNTER_CONFIG {
            continue;
        }
        let Some(body) = f.1.as_bytes() else { continue };
        for (n, v) in Fields::new(body).map_while(Result::ok) {
            match n {
                c::GCC_COUNTER_NAMES => match v.as_str() {
                    Some(s) => {
                        let (good, bad) = crate::config::parse_metric_list(s);
                        for b in bad {
                            crate::warn!(
                                "trace config counter_names {b:?}: expected a metric name of letters, digits, '_', '.', ':' or '-'; ignored"
                            );
                        }
                        for g in good {
                            if !req.names.contains(&g) {
                                req.names.push(g);
                            }
                        }
                    }
                    None => {
                        crate::warn!("trace config counter_names: expected UTF-8 text; ignored")
                    }
                },
                c::GCC_INSTRUMENTED_SAMPLING => req.instrumented = v.as_u64() == Some(1),
                c::GCC_INSTRUMENTED_SAMPLING_CONFIG => req.instrumented = true,
                _ => {}
            }
        }
    }
    req
}

/// A data-source sequence as a [`PacketSink`].
pub(crate) struct DsSink<'a, 'b, S: perfetto_sdk::data_source::Clear>(
    pub(crate) &'a mut TraceContext<'b, S>,
);

impl<S: perfetto_sdk::data_source::Clear> PacketSink for DsSink<'_, '_, S> {
    fn packet(&mut self, bytes: &[u8]) {
        self.0.add_packet(|p| p.msg.append_bytes(bytes));
    }
}

/// A track-event sequence as a [`TrackEventSink`].
pub(crate) struct TeSink<'a>(pub(crate) &'a mut perfetto_sdk::track_event::TraceContext);

impl PacketSink for TeSink<'_> {
    fn packet(&mut self, bytes: &[u8]) {
        self.0.add_packet(|p| p.msg.append_bytes(bytes));
    }
}

impl TrackEventSink for TeSink<'_> {
    fn intern_name(&mut self, name: &[u8]) -> (u64, bool) {
        self.0.intern(InternedDataFieldNumber::EventNames, name)
    }

    fn track_seen(&mut self, uuid: u64) -> bool {
        self.0.track_seen(uuid)
    }

    fn instance(&self) -> u32 {
        self.0.instance_index()
    }
}

/// The standalone session. The SDK's session handle cannot leave the thread
/// that made it, so a small thread owns it and takes commands.
pub(crate) struct FileSession {
    tx: mpsc::Sender<mpsc::SyncSender<()>>,
}

/// Session start failures.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The SDK could not create a session.
    #[error("Perfetto could not create an in-process session")]
    Create,
    /// The session thread did not answer.
    #[error("the tracing session did not start within {0:?}")]
    Timeout(Duration),
    /// No thread could be spawned.
    #[error("could not start the session thread: {0}")]
    Thread(std::io::Error),
}

impl FileSession {
    pub(crate) fn start(config: Vec<u8>) -> Result<FileSession, SessionError> {
        let (tx, rx) = mpsc::channel::<mpsc::SyncSender<()>>();
        let (started_tx, started_rx) = mpsc::sync_channel::<Result<(), SessionError>>(1);
        std::thread::Builder::new()
            .name("gpu-trace-session".into())
            .spawn(move || {
                crate::guard::catch("session thread", move || {
                    let mut s = match TracingSession::in_process() {
                        Ok(s) => s,
                        Err(_) => {
                            let _ = started_tx.send(Err(SessionError::Create));
                            return;
                        }
                    };
                    s.setup(&config);
                    s.start_blocking();
                    let _ = started_tx.send(Ok(()));
                    // Runs until told to stop, or until the tracer is gone.
                    let reply = rx.recv().ok();
                    s.flush_blocking(Duration::from_secs(5));
                    s.stop_blocking();
                    drop(s);
                    if let Some(r) = reply {
                        let _ = r.send(());
                    }
                });
            })
            .map_err(SessionError::Thread)?;
        let limit = Duration::from_secs(10);
        match started_rx.recv_timeout(limit) {
            Ok(r) => r.map(|()| FileSession { tx }),
            Err(_) => Err(SessionError::Timeout(limit)),
        }
    }

    /// Flushes and stops the session, which finalises the file.
    pub(crate) fn stop(self, limit: Duration) -> bool {
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        if self.tx.send(reply_tx).is_err() {
            return false;
        }
        reply_rx.recv_timeout(limit).is_ok()
    }
}

/// The in-process session's `TraceConfig`.
pub(crate) fn file_trace_config(
    path: &str,
    suffix: &str,
    buffer_kb: u32,
    period: Duration,
    categories: &[&str],
    counters: bool,
) -> Vec<u8> {
    use crate::wire::config as c;
    let (rs, ctr) = data_source_names(suffix);
    let period_ms = period.as_millis().clamp(100, u32::MAX as u128) as u64;
    let mut w = crate::pb::Writer::new();
    w.nested(c::BUFFERS, |b| {
        b.varint(c::BUFFER_SIZE_KB, buffer_kb as u64)
            .varint(c::BUFFER_FILL_POLICY, c::FILL_POLICY_DISCARD);
    });
    if !categories.is_empty() {
        w.nested(c::DATA_SOURCES, |d| {
            d.nested(c::DS_CONFIG, |cfg| {
                cfg.string(c::DSC_NAME, "track_event");
                cfg.nested(c::DSC_TRACK_EVENT_CONFIG, |te| {
                    te.string(c::TE_DISABLED_CATEGORIES, "*");
                    for cat in categories {
                        te.string(c::TE_ENABLED_CATEGORIES, cat);
                    }
                });
            });
        });
    }
    w.nested(c::DATA_SOURCES, |d| {
        d.nested(c::DS_CONFIG, |cfg| {
            cfg.string(c::DSC_NAME, &rs);
        });
    });
    if counters {
        w.nested(c::DATA_SOURCES, |d| {
            d.nested(c::DS_CONFIG, |cfg| {
                cfg.string(c::DSC_NAME, &ctr);
                cfg.nested(c::DSC_GPU_COUNTER_CONFIG, |g| {
                    g.bool(c::GCC_INSTRUMENTED_SAMPLING, true);
                });
            });
        });
    }
    w.bool(c::WRITE_INTO_FILE, true)
        .string(c::OUTPUT_PATH, path)
        .varint(c::FILE_WRITE_PERIOD_MS, period_ms)
        // Flush producers before every write, so that a killed process
        // leaves everything up to the last write (AUTO flushes every 5 s).
        .varint(c::WRITE_FLUSH_MODE, c::WRITE_FLUSH_ENABLED)
        .varint(c::FLUSH_TIMEOUT_MS, 5000)
        // After a loss the trace processor ignores a sequence until its
        // interned data is described again: have it re-described regularly.
        .nested(c::INCREMENTAL_STATE_CONFIG, |i| {
            i.varint(c::INCREMENTAL_CLEAR_PERIOD_MS, 10_000);
        })
        .varint(c::DATA_SOURCE_STOP_TIMEOUT_MS, 5000)
        .string(
            c::UNIQUE_SESSION_NAME,
            &format!("gpu-trace-{}", std::process::id()),
        );
    w.as_bytes().to_vec()
}

/// Convenience for the tracer.
pub(crate) fn set_route(inner: Option<Arc<Inner>>) {
    ROUTE.store(inner);
}
