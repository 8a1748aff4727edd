//! Perfetto glue: producer initialisation, data-source and category
//! registration, the in-process file session, and packet sinks over the
//! SDK's trace contexts.
//!
//! Data sources can be registered once per process and must live forever,
//! so the registration is process-global. Its callbacks reach the running
//! tracer through [`ROUTE`], which [`crate::Tracer`] sets and clears.

use crate::categories::{API, MARKERS, SdkCategories};
use crate::emit::{CtrSeq, PacketSink, RsSeq, TrackEventSink};
use crate::trace_config::{NEXT_SESSION, parse_counter_config};
use crate::tracer::Inner;
use arc_swap::ArcSwapOption;
use gpu_trace_model::backend::Categories;
use gpu_trace_reader::ServiceLosses;
use perfetto_sdk::data_source::{
    DataSource, DataSourceArgsBuilder, DataSourceBufferExhaustedPolicy, TraceContext,
};
use perfetto_sdk::producer::{Backends, Producer, ProducerInitArgsBuilder};
use perfetto_sdk::protos::trace::interned_data::interned_data::InternedDataFieldNumber;
use perfetto_sdk::tracing_session::TracingSession;
use perfetto_sdk::track_event::TrackEvent;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

pub(crate) struct Registry {
    pub(crate) rs: &'static DataSource<'static, RsSeq>,
    pub(crate) ctr: &'static DataSource<'static, CtrSeq>,
    pub(crate) tel: &'static DataSource<'static, CtrSeq>,
    pub(crate) suffix: String,
    pub(crate) categories: SdkCategories,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// Shared memory between our writers and the tracing service, KiB.
pub(crate) const SHMEM_KB: u32 = 8 * 1024;
pub(crate) static ROUTE: ArcSwapOption<Inner> = ArcSwapOption::const_empty();

/// Data-source names for `suffix`.
pub(crate) fn data_source_names(suffix: &str) -> (String, String) {
    (
        format!("gpu.renderstages.{suffix}"),
        format!("gpu.counters.{suffix}"),
    )
}

/// The telemetry data source's name for `suffix`.
pub(crate) fn telemetry_source_name(suffix: &str) -> String {
    format!("gpu.telemetry.{suffix}")
}

/// Registration failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// The process already registered its data sources under another suffix.
    #[error("data sources are already registered with suffix {registered:?}, not {wanted:?}")]
    SuffixMismatch {
        /// Suffix in use.
        registered: String,
        /// Suffix asked for.
        wanted: String,
    },
    /// The process already registered another backend's track-event
    /// categories.
    #[error("track-event categories {registered:?} are already registered, not {wanted:?}")]
    CategoriesMismatch {
        /// Categories in use.
        registered: [&'static str; 2],
        /// Categories asked for.
        wanted: [&'static str; 2],
    },
    /// The SDK refused a registration.
    #[error("Perfetto refused to register {0}")]
    Refused(String),
}

/// A line of the Perfetto SDK's own log: in the verbose log, under our
/// prefix, and nowhere otherwise.
fn perfetto_log(_level: perfetto_log_sys::Level, file: &str, line: u32, message: &str) {
    crate::verbose!("perfetto: {file}:{line} {message}");
}

/// Initialises the producer and registers everything, once per process.
pub(crate) fn register(
    suffix: &str,
    categories: &Categories,
    backends: Backends,
) -> Result<&'static Registry, RegisterError> {
    if let Some(r) = REGISTRY.get() {
        // A later tracer may add the system backend; init is idempotent.
        crate::thread::with_signals_blocked(|| {
            Producer::init(ProducerInitArgsBuilder::new().backends(backends).build());
        });
        return if r.categories.declared() != categories {
            Err(RegisterError::CategoriesMismatch {
                registered: r.categories.declared().names(),
                wanted: categories.names(),
            })
        } else if r.suffix == suffix {
            Ok(r)
        } else {
            Err(RegisterError::SuffixMismatch {
                registered: r.suffix.clone(),
                wanted: suffix.to_owned(),
            })
        };
    }
    // Perfetto's service runs in the application: its log lines would land
    // on the application's stderr. They are ours to show, when verbose.
    perfetto_log_sys::set_sink(perfetto_log);
    // Perfetto's threads (its task runner, the in-process service) inherit
    // the blocked mask: the application's signals are not delivered there.
    crate::thread::with_signals_blocked(|| {
        Producer::init(
            ProducerInitArgsBuilder::new()
                .backends(backends)
                .shmem_size_hint_kb(SHMEM_KB)
                .build(),
        );
        TrackEvent::init();
    });
    let categories = SdkCategories::register(categories, || {
        crate::guard::run("category callback", || with_route(|r| r.wake()));
    })
    .map_err(RegisterError::Refused)?;
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
                crate::guard::run("data source start", || with_route(|r| r.wake()));
            })
            .on_stop(|_inst, args| {
                let guard = args.postpone();
                crate::guard::run("data source stop", move || match ROUTE.load_full() {
                    Some(r) => r.request_stop_cycle(Box::new(move || drop(guard))),
                    None => drop(guard),
                });
            })
            .on_flush(|_inst, args| {
                let guard = args.postpone();
                crate::guard::run("data source flush", move || match ROUTE.load_full() {
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
                crate::guard::run("counter setup", || {
                    let mut req = parse_counter_config(cfg);
                    req.session = NEXT_SESSION.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    with_route(|r| r.set_counter_request(inst, Some(req)))
                });
            })
            .on_start(|_inst, _args| {
                crate::guard::run("counter start", || with_route(|r| r.wake()));
            })
            .on_stop(|inst, args| {
                let guard = args.postpone();
                crate::guard::run("counter stop", move || match ROUTE.load_full() {
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

    let tel_name = telemetry_source_name(suffix);
    let mut tel: DataSource<'static, CtrSeq> = DataSource::new_with_incremental_state_type();
    tel.register(
        &tel_name,
        DataSourceArgsBuilder::new()
            // Only the emitter thread writes (see above).
            .buffer_exhausted_policy(DataSourceBufferExhaustedPolicy::StallAndDrop)
            .buffer_exhausted_policy_configurable(true)
            .will_notify_on_stop(true)
            .handles_incremental_state_clear(true)
            .on_start(|_inst, _args| {
                crate::guard::run("telemetry start", || with_route(|r| r.wake()));
            })
            .on_stop(|_inst, args| {
                let guard = args.postpone();
                crate::guard::run("telemetry stop", move || match ROUTE.load_full() {
                    Some(r) => r.request_stop_cycle(Box::new(move || drop(guard))),
                    None => drop(guard),
                });
            })
            .build(),
    )
    .map_err(|_| RegisterError::Refused(tel_name.clone()))?;

    let reg = Registry {
        rs: Box::leak(Box::new(rs)),
        ctr: Box::leak(Box::new(ctr)),
        tel: Box::leak(Box::new(tel)),
        suffix: suffix.to_owned(),
        categories,
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

/// Bytes of packets written through our sinks, all sequences together. Only
/// the emitter writes, so this is the producer side of the emitter's pacing
/// (see `tracer::Pacer`).
static WRITTEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub(crate) fn bytes_written() -> u64 {
    WRITTEN.load(std::sync::atomic::Ordering::Relaxed)
}

fn count(n: usize) {
    WRITTEN.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
}

/// Commits the emitter's open chunks on every sequence (our data sources and
/// the track-event categories `cats`); the returned [`Acks`] completes when
/// the service has taken them, so that the shared memory those chunks used
/// is free again.
///
/// The SDK's track-event writers drop packets, unannounced, when the shared
/// memory is full (their policy cannot be configured); pacing the emitter
/// with these acknowledgements keeps it from ever filling.
///
/// `on_entry` sees each track-event sequence first: entering one the
/// service has cleared makes the SDK describe it again (see
/// [`crate::emit::Encoder::describe_process_on_reset`]).
pub(crate) fn flush_writers(
    cats: &SdkCategories,
    on_entry: &mut dyn FnMut(&mut dyn crate::emit::TrackEventSink),
) -> Acks {
    let acks = Acks(Arc::new((Mutex::new(0usize), std::sync::Condvar::new())));
    let Some(reg) = registry() else { return acks };
    let ack = |acks: &Acks| {
        *acks.0.0.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        let p = acks.0.clone();
        // Runs on Perfetto's thread, where a panic would abort: nothing
        // here can panic.
        move || {
            let mut n = p.0.lock().unwrap_or_else(|e| e.into_inner());
            *n = n.saturating_sub(1);
            p.1.notify_all();
        }
    };
    reg.rs.trace(|ctx| ctx.flush(ack(&acks)));
    reg.ctr.trace(|ctx| ctx.flush(ack(&acks)));
    reg.tel.trace(|ctx| ctx.flush(ack(&acks)));
    for c in [API, MARKERS] {
        cats.trace(c, &mut |ctx| {
            on_entry(&mut TeSink(ctx));
            ctx.flush(ack(&acks))
        });
    }
    acks
}

/// Outstanding acknowledgements of one [`flush_writers`].
#[derive(Clone)]
pub(crate) struct Acks(Arc<(Mutex<usize>, std::sync::Condvar)>);

impl Acks {
    /// Waits, at most `limit`, for every acknowledgement. False on a timeout.
    pub(crate) fn wait(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut n = self.0.0.lock().unwrap_or_else(|e| e.into_inner());
        while *n > 0 {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            n = self
                .0
                .1
                .wait_timeout(n, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}

/// A data-source sequence as a [`PacketSink`].
pub(crate) struct DsSink<'a, 'b, S: perfetto_sdk::data_source::Clear>(
    pub(crate) &'a mut TraceContext<'b, S>,
);

impl<S: perfetto_sdk::data_source::Clear> PacketSink for DsSink<'_, '_, S> {
    fn packet(&mut self, bytes: &[u8]) {
        count(bytes.len());
        self.0.add_packet(|p| p.msg.append_bytes(bytes));
    }
}

/// A track-event sequence as a [`TrackEventSink`].
pub(crate) struct TeSink<'a>(pub(crate) &'a mut perfetto_sdk::track_event::TraceContext);

impl PacketSink for TeSink<'_> {
    fn packet(&mut self, bytes: &[u8]) {
        count(bytes.len());
        self.0.add_packet(|p| p.msg.append_bytes(bytes));
    }
}

impl TrackEventSink for TeSink<'_> {
    fn intern_name(&mut self, name: &[u8]) -> (u64, bool) {
        self.0.intern(InternedDataFieldNumber::EventNames, name)
    }

    fn intern_callsite(&mut self, key: &[u8]) -> (u64, bool) {
        // The SDK's Rust API names only some interned types, and keeps
        // per-sequence state by type number alone; histogram names are
        // never written by us, so their slot keys our call-site items (the
        // iids are ours to write under the right types).
        self.0.intern(InternedDataFieldNumber::HistogramNames, key)
    }

    fn track_seen(&mut self, uuid: u64) -> bool {
        self.0.track_seen(uuid)
    }

    fn instance(&self) -> u32 {
        self.0.instance_index()
    }
}

/// Session start failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// The trace file could not be created.
    #[error("cannot create {}: {source}", path.display())]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What the standalone session reports when it ends.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionReport {
    /// The tracing service's last `TraceStats`, if one was read.
    pub(crate) losses: Option<ServiceLosses>,
    /// Bytes written into the file.
    pub(crate) bytes: u64,
    /// The first write error, after which nothing more was written.
    pub(crate) error: Option<String>,
}

enum Cmd {
    /// Read the buffer into the file now, then answer.
    Read(mpsc::SyncSender<()>),
    /// Make sure the service's statistics are current and read them.
    Sync(mpsc::SyncSender<Option<ServiceLosses>>),
    /// Flush, stop, read the rest, close the file.
    Stop(mpsc::SyncSender<SessionReport>),
    /// A flush this thread started has completed.
    Flushed,
}

/// The file and what has been learnt while writing it. Perfetto calls the
/// read callback on its own thread, hence the lock.
struct Out {
    file: std::fs::File,
    bytes: u64,
    error: Option<String>,
    losses: Option<ServiceLosses>,
    /// A `TraceStats` packet was seen since the last [`Cmd::Sync`].
    fresh_stats: bool,
}

impl Out {
    fn write(&mut self, data: &[u8], last: bool) {
        use std::io::Write;
        if self.error.is_some() || data.is_empty() {
            return;
        }
        if last {
            self.scan(data);
        }
        match self.file.write_all(data) {
            Ok(()) => self.bytes += data.len() as u64,
            Err(e) => self.error = Some(e.to_string()),
        }
    }

    /// Picks up the service's `TraceStats`: when a read emits them, they are
    /// its very last packet, so only the last packet of a read's last piece
    /// is looked at (each piece holds whole `Trace.packet` fields).
    fn scan(&mut self, data: &[u8]) {
        use gpu_trace_reader::pb::Fields;
        let Some(p) = Fields::new(data)
            .map_while(Result::ok)
            .filter(|(n, _)| *n == gpu_trace_model::schema::TRACE_PACKET)
            .last()
            .and_then(|(_, v)| v.as_bytes())
        else {
            return;
        };
        for (f, v) in Fields::new(p).map_while(Result::ok) {
            if f == gpu_trace_model::schema::packet::TRACE_STATS
                && let Some(b) = v.as_bytes()
                && let Ok(l) = gpu_trace_reader::trace_stats(b)
            {
                self.losses = Some(l);
                self.fresh_stats = true;
            }
        }
    }
}

/// The standalone session. The SDK's session handle cannot leave the thread
/// that made it, so a small thread owns it and takes commands.
///
/// The session does not use the service's `write_into_file`: that drains
/// the central buffer only on a timer, and its `DISCARD` buffer stops
/// accepting anything for the rest of the run once it filled between two
/// writes. Instead the buffer is a ring, read into our own file on a timer
/// *and* whenever the emitter has committed an eighth of the buffer
/// ([`FileSession::read_now`]), before it writes more. Nothing is
/// overwritten unread, and a killed process leaves a valid trace up to the
/// last read.
pub(crate) struct FileSession {
    tx: mpsc::Sender<Cmd>,
}

/// How often the service marks its statistics for the next read (and
/// snapshots clocks); the stop sequence waits this long once so that the
/// file ends with current statistics.
const STATS_PERIOD: Duration = Duration::from_millis(100);

/// When the buffer is read into the file a second time, whatever the
/// period (the first read is at once). A process that replaces its program
/// (`exec`) runs no exit handler, so its file holds what the last read
/// wrote, as a killed process's does; one that did so within the first
/// period left an empty file.
const EARLY_READ: Duration = Duration::from_millis(100);

impl FileSession {
    /// Creates `path` (it must not exist) and starts the session.
    pub(crate) fn start(
        config: Vec<u8>,
        path: &std::path::Path,
        period: Duration,
    ) -> Result<FileSession, SessionError> {
        let file = create_trace_file(path)?;
        let out = Arc::new(Mutex::new(Out {
            file,
            bytes: 0,
            error: None,
            losses: None,
            fresh_stats: false,
        }));
        let (tx, rx) = mpsc::channel::<Cmd>();
        let own_tx = tx.clone();
        let (started_tx, started_rx) = mpsc::sync_channel::<Result<(), SessionError>>(1);
        crate::thread::spawn("gpu-trace-session", move || {
            crate::guard::run("session thread", move || {
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
                session_loop(&mut s, &own_tx, &rx, &out, period);
            });
        })
        .map_err(SessionError::Thread)?;
        let limit = Duration::from_secs(10);
        match started_rx.recv_timeout(limit) {
            Ok(r) => r.map(|()| FileSession { tx }),
            Err(_) => Err(SessionError::Timeout(limit)),
        }
    }

    /// A handle the emitter uses to have the buffer read before it writes
    /// more.
    pub(crate) fn reader(&self) -> SessionReader {
        SessionReader(self.tx.clone())
    }

    /// Waits (at most `limit`) until the service's statistics cover
    /// everything committed so far, and returns them.
    pub(crate) fn sync(&self, limit: Duration) -> Option<ServiceLosses> {
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        self.tx.send(Cmd::Sync(reply_tx)).ok()?;
        reply_rx.recv_timeout(limit).ok().flatten()
    }

    /// Flushes and stops the session and writes the rest of the file.
    /// `None` if the session thread did not answer within `limit`.
    pub(crate) fn stop(self, limit: Duration) -> Option<SessionReport> {
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        self.tx.send(Cmd::Stop(reply_tx)).ok()?;
        // Dropping `self` after this sends a second stop, which the
        // finished thread never reads.
        reply_rx.recv_timeout(limit).ok()
    }
}

impl Drop for FileSession {
    /// A session dropped without [`FileSession::stop`] still finalises its
    /// file (the session thread holds a sender of its own, so it would not
    /// notice).
    fn drop(&mut self) {
        let (reply_tx, _reply_rx) = mpsc::sync_channel(1);
        let _ = self.tx.send(Cmd::Stop(reply_tx));
    }
}

/// Asks the session thread to read the buffer into the file now.
#[derive(Clone)]
pub(crate) struct SessionReader(mpsc::Sender<Cmd>);

impl SessionReader {
    /// Asks for a read; the receiver answers once it is done.
    pub(crate) fn request(&self) -> mpsc::Receiver<()> {
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        let _ = self.0.send(Cmd::Read(reply_tx));
        reply_rx
    }
}

fn read_into(s: &mut TracingSession, out: &Arc<Mutex<Out>>) {
    let out = out.clone();
    s.read_trace_blocking(move |data, has_more| {
        crate::guard::run("trace read", || {
            out.lock()
                .unwrap_or_else(|e| e.into_inner())
                .write(data, !has_more)
        });
    });
}

/// What a flush of the session was started for.
enum AfterFlush {
    /// The periodic read.
    Read,
    /// [`Cmd::Sync`].
    Sync(mpsc::SyncSender<Option<ServiceLosses>>),
    /// [`Cmd::Stop`].
    Stop(mpsc::SyncSender<SessionReport>),
}

/// The session thread. Flushes are asynchronous: a flush runs our data
/// sources' flush callbacks, whose emitter cycle may itself ask this thread
/// to read ([`Cmd::Read`]) before it can answer.
fn session_loop(
    s: &mut TracingSession,
    tx: &mpsc::Sender<Cmd>,
    rx: &mpsc::Receiver<Cmd>,
    out: &Arc<Mutex<Out>>,
    period: Duration,
) {
    let stats_fresh = |out: &Arc<Mutex<Out>>| {
        std::mem::take(&mut out.lock().unwrap_or_else(|e| e.into_inner()).fresh_stats)
    };
    let flush = |s: &mut TracingSession| {
        let tx = tx.clone();
        s.flush_async(Duration::from_secs(5), move |_ok| {
            let _ = tx.send(Cmd::Flushed);
        });
    };
    // A read at once (the file is a trace from the start), another soon
    // after, then one every period.
    let mut last_read = Instant::now();
    let mut interval = Duration::ZERO;
    let mut early = [EARLY_READ.min(period)].into_iter();
    let mut pending: Option<AfterFlush> = None;
    let mut queued: Vec<AfterFlush> = Vec::new();
    loop {
        let wait = if pending.is_some() {
            Duration::from_secs(10)
        } else {
            interval.saturating_sub(last_read.elapsed())
        };
        let cmd = match rx.recv_timeout(wait) {
            Ok(c) => c,
            Err(mpsc::RecvTimeoutError::Timeout) if pending.is_none() => {
                interval = early.next().unwrap_or(period);
                pending = Some(AfterFlush::Read);
                flush(s);
                continue;
            }
            // A flush that never answered: go on as if it had.
            Err(mpsc::RecvTimeoutError::Timeout) => Cmd::Flushed,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                finish(s, out);
                return;
            }
        };
        let after = match cmd {
            Cmd::Read(reply) => {
                read_into(s, out);
                last_read = Instant::now();
                let _ = reply.send(());
                continue;
            }
            Cmd::Sync(reply) => AfterFlush::Sync(reply),
            Cmd::Stop(reply) => AfterFlush::Stop(reply),
            Cmd::Flushed => {
                let Some(done) = pending.take() else { continue };
                match done {
                    AfterFlush::Read => {
                        read_into(s, out);
                        last_read = Instant::now();
                    }
                    AfterFlush::Sync(reply) => {
                        // The service marks its statistics for the next
                        // read every STATS_PERIOD: read until one carried
                        // them.
                        stats_fresh(out);
                        let deadline = Instant::now() + 4 * STATS_PERIOD;
                        loop {
                            std::thread::sleep(STATS_PERIOD + Duration::from_millis(10));
                            read_into(s, out);
                            if stats_fresh(out) || Instant::now() > deadline {
                                break;
                            }
                        }
                        last_read = Instant::now();
                        let losses = out.lock().unwrap_or_else(|e| e.into_inner()).losses;
                        let _ = reply.send(losses);
                    }
                    AfterFlush::Stop(reply) => {
                        let _ = reply.send(finish(s, out));
                        return;
                    }
                }
                if !queued.is_empty() {
                    pending = Some(queued.remove(0));
                    flush(s);
                }
                continue;
            }
        };
        if pending.is_none() {
            pending = Some(after);
            flush(s);
        } else {
            queued.push(after);
        }
    }
}

fn finish(s: &mut TracingSession, out: &Arc<Mutex<Out>>) -> SessionReport {
    s.stop_blocking();
    read_into(s, out);
    let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(e) = o.file.sync_data()
        && o.error.is_none()
    {
        o.error = Some(e.to_string());
    }
    SessionReport {
        losses: o.losses,
        bytes: o.bytes,
        error: o.error.clone(),
    }
}

/// Creates the standalone trace's file: `path` must not exist (a symbolic
/// link there is not followed).
pub(crate) fn create_trace_file(path: &std::path::Path) -> Result<std::fs::File, SessionError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|source| SessionError::File {
            path: path.to_path_buf(),
            source,
        })
}

/// The in-process session's `TraceConfig`.
pub(crate) fn file_trace_config(
    suffix: &str,
    buffer_kb: u32,
    categories: &[&str],
    counters: bool,
    telemetry: bool,
) -> Vec<u8> {
    use gpu_trace_model::schema::config as c;
    let (rs, ctr) = data_source_names(suffix);
    let mut w = gpu_trace_reader::pb::Writer::new();
    w.nested(c::BUFFERS, |b| {
        // A ring: should the reader ever fall behind, the oldest unread
        // chunks go (counted in the service's statistics) and recording
        // goes on, where DISCARD would stop accepting anything for good.
        b.varint(c::BUFFER_SIZE_KB, buffer_kb as u64)
            .varint(c::BUFFER_FILL_POLICY, c::FILL_POLICY_RING_BUFFER);
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
    if telemetry {
        w.nested(c::DATA_SOURCES, |d| {
            d.nested(c::DS_CONFIG, |cfg| {
                cfg.string(c::DSC_NAME, &telemetry_source_name(suffix));
            });
        });
    }
    w.varint(c::FLUSH_TIMEOUT_MS, 5000)
        // After a loss the trace processor ignores a sequence until its
        // interned data is described again: have it re-described regularly.
        .nested(c::INCREMENTAL_STATE_CONFIG, |i| {
            i.varint(c::INCREMENTAL_CLEAR_PERIOD_MS, 10_000);
        })
        .nested(c::BUILTIN_DATA_SOURCES, |b| {
            b.varint(
                c::BUILTIN_SNAPSHOT_INTERVAL_MS,
                STATS_PERIOD.as_millis() as u64,
            );
            // The service's flush/read events stay on: without them
            // (tried in 9795ea5, which let the trace processor sort the
            // whole file and keep every kernel placed after kernel replay)
            // a read of an empty buffer hands perfetto-sdk 1.2.1 a null
            // pointer, which aborts debug builds. The trace processor then
            // sorts in windows between reads (see README, "Known").
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
