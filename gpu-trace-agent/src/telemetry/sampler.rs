//! The sampler's threads: one for the fast readings, and one for the slow
//! readings when they are on.

use super::lock::{Lock, lock_dir, try_lock};
use super::{DeviceProbes, Metric, Opener, Probe, Reading};
use crate::config::{TelemetryConfig, format_period};
use gpu_trace_model::Recorder;
use gpu_trace_model::model::{CounterId, CounterSample};
use gpu_trace_model::registry::Counters;
use gpu_trace_model::writer::WriterListener;
use std::os::fd::OwnedFd;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often a GPU another process samples is tried again: that process
/// may exit first (a launcher, a job's first rank).
const LOCK_RETRY: Duration = Duration::from_secs(1);

/// The sampler of one tracer. Cheap to clone.
#[derive(Clone)]
pub struct Telemetry(Arc<Shared>);

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("config", &self.0.config)
            .finish_non_exhaustive()
    }
}

struct Shared {
    recorder: Recorder,
    counters: Arc<Counters>,
    config: TelemetryConfig,
    state: Mutex<State>,
    cv: Condvar,
}

#[derive(Default)]
struct State {
    enabled: bool,
    exit: bool,
    pending: Vec<Watched>,
    /// The fast thread's end: its statistics.
    done: Option<mpsc::Receiver<Stats>>,
    /// Lines for the trace's log.
    notes: Vec<(bool, String)>,
    /// Lines said on stderr (each said once).
    said: Vec<String>,
}

struct Watched {
    gpu_id: u32,
    key: String,
    open: Opener,
}

/// What the sampler did and what it cost, at its end.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Rounds of fast readings (each reads every sampled GPU once).
    pub rounds: u64,
    /// Values recorded, fast and slow.
    pub values: u64,
    /// GPUs this process sampled.
    pub devices: u32,
    /// GPUs another process sampled (their lock was held).
    pub elsewhere: u32,
    /// CPU time of the fast thread, opening included.
    pub cpu: Duration,
    /// Of `cpu`, what opening the GPUs took (loading NVML, finding the
    /// GPU, GPM's buffers): paid once, not per period.
    pub setup_cpu: Duration,
    /// Time sampling was on.
    pub active: Duration,
    /// The longest fast round.
    pub slowest_round: Duration,
    /// Rounds of slow readings.
    pub slow_rounds: u64,
    /// CPU time of the slow thread.
    pub slow_cpu: Duration,
}

impl Stats {
    /// Percent of one CPU core the fast thread's rounds used while
    /// sampling was on: the steady cost, opening left out (it is paid
    /// once, and would make a short run look dear).
    pub fn core_percent(&self) -> f64 {
        if self.active.is_zero() {
            return 0.0;
        }
        100.0 * self.cpu.saturating_sub(self.setup_cpu).as_secs_f64() / self.active.as_secs_f64()
    }
}

/// What [`Telemetry::stop`] hands back: lines for the trace's log (warning
/// or not), and the statistics if the thread ended in time.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Report {
    /// (warning, line).
    pub lines: Vec<(bool, String)>,
    /// `None` when no thread ran or it did not end within the limit.
    pub stats: Option<Stats>,
}

/// How long the trace's end waits for the telemetry threads (a slow
/// reading takes ~21 ms; a vendor call that hangs must not hang the exit).
const STOP_LIMIT: Duration = Duration::from_secs(1);

/// The writer tells the sampler when telemetry is recorded, and asks it for
/// its last lines when the trace ends.
impl WriterListener for Telemetry {
    fn telemetry(&self, on: bool) {
        self.set_enabled(on);
    }

    /// Ends sampling before the last events are written; what it said and
    /// what it cost go into the trace's log.
    fn ending(&self) -> Vec<(bool, String)> {
        let report = self.stop(STOP_LIMIT);
        let mut lines = report.lines;
        if let Some(stats) = report.stats.filter(|s| s.rounds > 0) {
            let line = Report::cost_line(&stats, self.config());
            crate::verbose!("{line}");
            lines.push((false, line));
        }
        lines
    }
}

impl Telemetry {
    /// A sampler recording into `recorder`, registering its counters in
    /// `counters`. No thread runs until a GPU is watched.
    pub fn new(recorder: Recorder, counters: Arc<Counters>, config: TelemetryConfig) -> Self {
        Self(Arc::new(Shared {
            recorder,
            counters,
            config,
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
        }))
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &TelemetryConfig {
        &self.0.config
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Samples GPU `gpu_id` while telemetry is recorded. `key` names the
    /// GPU across processes (its UUID or PCI bus id: the lock file's name);
    /// `open` makes its probes, on the sampler's thread. Watching a
    /// `gpu_id` twice does nothing.
    pub fn watch(&self, gpu_id: u32, key: impl Into<String>, open: Opener) {
        let mut s = self.state();
        if s.exit {
            return;
        }
        if s.done.is_none() {
            let (tx, rx) = mpsc::channel();
            let sh = self.clone();
            let spawned = crate::thread::spawn("gpu-trace-telemetry", move || {
                let _ = crate::guard::catch("telemetry sampler", || {
                    let stats = sh.run();
                    let _ = tx.send(stats);
                });
            });
            match spawned {
                Ok(_) => s.done = Some(rx),
                Err(e) => {
                    crate::warn!("cannot start the telemetry thread ({e}); no GPU telemetry");
                    s.exit = true;
                    return;
                }
            }
        }
        s.pending.push(Watched {
            gpu_id,
            key: key.into(),
            open,
        });
        self.0.cv.notify_all();
    }

    /// Starts or pauses sampling (the telemetry data source was enabled or
    /// disabled).
    pub(crate) fn set_enabled(&self, on: bool) {
        let mut s = self.state();
        if s.enabled != on {
            s.enabled = on;
            self.0.cv.notify_all();
        }
    }

    /// Ends the threads, waiting at most `limit` (a vendor call that never
    /// returns must not hang the exit), and returns the lines for the
    /// trace's log. Events already recorded stay in the recorder.
    pub fn stop(&self, limit: Duration) -> Report {
        let rx = {
            let mut s = self.state();
            s.exit = true;
            self.0.cv.notify_all();
            s.done.take()
        };
        let stats = rx.and_then(|rx| rx.recv_timeout(limit).ok());
        let lines = std::mem::take(&mut self.state().notes);
        Report { lines, stats }
    }

    /// Says `line` once: on stderr when telemetry was asked for (else only
    /// in verbose mode), and in the trace's log.
    fn say(&self, line: String) {
        let mut s = self.state();
        if s.said.contains(&line) {
            return;
        }
        if self.0.config.asked {
            crate::warn!("{line}");
        } else {
            crate::verbose!("{line}");
        }
        s.notes.push((true, line.clone()));
        s.said.push(line);
    }

    /// The fast thread.
    fn run(&self) -> Stats {
        let cfg = &self.0.config;
        let dir = lock_dir(cfg.lock_dir.as_deref());
        let mut devs: Vec<Dev> = Vec::new();
        let mut ids: [Option<CounterId>; Metric::ALL.len()] = [None; Metric::ALL.len()];
        let mut reading = Reading::default();
        let mut stats = Stats::default();
        let mut slow: Option<Slow> = None;
        let mut was_on = false;
        let mut on_since: Option<Instant> = None;
        let mut next = Instant::now();
        loop {
            let mut s = self.state();
            for w in s.pending.drain(..) {
                if let Some(d) = Dev::new(w, &devs) {
                    devs.push(d);
                }
            }
            if s.exit {
                break;
            }
            let on = s.enabled;
            if on != was_on {
                was_on = on;
                if on {
                    next = Instant::now();
                    on_since = Some(next);
                    for d in &mut devs {
                        if let Stage::Ready(p) = &mut d.stage {
                            p.restart();
                        }
                    }
                } else if let Some(t) = on_since.take() {
                    stats.active += t.elapsed();
                }
                if let Some(sl) = &slow {
                    sl.set_enabled(on);
                }
            }
            if !on || devs.is_empty() {
                drop(self.0.cv.wait(s).unwrap_or_else(|e| e.into_inner()));
                continue;
            }
            let now = Instant::now();
            if now < next {
                drop(
                    self.0
                        .cv
                        .wait_timeout(s, next - now)
                        .unwrap_or_else(|e| e.into_inner()),
                );
                continue;
            }
            drop(s);
            let started = Instant::now();
            for d in &mut devs {
                self.round(d, &dir, &mut reading, &mut ids, &mut stats, &mut slow);
            }
            stats.rounds += 1;
            stats.slowest_round = stats.slowest_round.max(started.elapsed());
            next += cfg.period;
            let now = Instant::now();
            if next <= now {
                // Behind (a slow round, a stalled thread): skip the missed
                // rounds rather than run them back to back.
                next = now + cfg.period;
            }
        }
        if let Some(t) = on_since {
            stats.active += t.elapsed();
        }
        stats.cpu = Duration::from_nanos(crate::clock::thread_cpu_ns());
        stats.devices = devs
            .iter()
            .filter(|d| matches!(d.stage, Stage::Ready(_)))
            .count() as u32;
        stats.elsewhere = devs
            .iter()
            .filter(|d| matches!(d.stage, Stage::Locking { .. }) && d.told_busy)
            .count() as u32;
        if let Some(sl) = slow {
            let (rounds, values, cpu) = sl.stop(Duration::from_secs(1));
            stats.slow_rounds = rounds;
            stats.values += values;
            stats.slow_cpu = cpu;
        }
        stats
    }

    fn round(
        &self,
        d: &mut Dev,
        dir: &std::path::Path,
        reading: &mut Reading,
        ids: &mut [Option<CounterId>; Metric::ALL.len()],
        stats: &mut Stats,
        slow: &mut Option<Slow>,
    ) {
        match &mut d.stage {
            Stage::Locking { retry_at } => {
                if Instant::now() < *retry_at {
                    return;
                }
                match try_lock(dir, &d.key) {
                    Lock::Held(fd) => d.lock = Some(fd),
                    Lock::Busy => {
                        if !d.told_busy {
                            d.told_busy = true;
                            crate::verbose!(
                                "telemetry: GPU {} is sampled by another process (lock {}); not here",
                                d.gpu_id,
                                super::lock::lock_path(dir, &d.key).display()
                            );
                        }
                        *retry_at = Instant::now() + LOCK_RETRY;
                        return;
                    }
                    Lock::Unavailable(why) => {
                        // Said once: the same folder is refused for every GPU.
                        crate::warn_once!(
                            "telemetry: no lock for GPU {} ({why}); sampling it without one, so other processes of this user may sample it too",
                            d.gpu_id
                        );
                    }
                }
                if d.told_busy {
                    crate::verbose!("telemetry: GPU {} is free now; sampling it", d.gpu_id);
                }
                let t0 = crate::clock::thread_cpu_ns();
                self.open(d, slow);
                stats.setup_cpu += Duration::from_nanos(crate::clock::thread_cpu_ns() - t0);
            }
            Stage::Ready(p) => {
                reading.clear(crate::clock::boottime_ns());
                p.read(reading);
                stats.values += record(&self.0.recorder, &self.0.counters, ids, d.gpu_id, reading);
            }
            Stage::Done => {}
        }
    }

    fn open(&self, d: &mut Dev, slow: &mut Option<Slow>) {
        let Some(open) = d.open.take() else {
            d.stage = Stage::Done;
            return;
        };
        match open() {
            Ok(DeviceProbes {
                fast,
                slow: slow_probe,
                detail,
            }) => {
                crate::verbose!(
                    "telemetry: GPU {} every {}: {detail}",
                    d.gpu_id,
                    format_period(self.0.config.period)
                );
                if let (Some(p), Some(period)) = (slow_probe, self.0.config.slow_period) {
                    let sl = slow.get_or_insert_with(|| {
                        Slow::start(self.0.recorder.clone(), self.0.counters.clone(), period)
                    });
                    sl.add(d.gpu_id, p);
                }
                d.stage = Stage::Ready(fast);
            }
            Err(why) => {
                self.say(why);
                d.stage = Stage::Done;
                // Another process may sample it.
                d.lock = None;
            }
        }
    }
}

enum Stage {
    /// Waiting for the GPU's lock.
    Locking { retry_at: Instant },
    /// Sampling.
    Ready(Box<dyn Probe>),
    /// No telemetry for it (said once).
    Done,
}

struct Dev {
    gpu_id: u32,
    key: String,
    open: Option<Opener>,
    /// Held while this process samples the GPU.
    lock: Option<OwnedFd>,
    stage: Stage,
    told_busy: bool,
}

impl Dev {
    fn new(w: Watched, known: &[Dev]) -> Option<Dev> {
        if known.iter().any(|d| d.gpu_id == w.gpu_id) {
            return None;
        }
        Some(Dev {
            gpu_id: w.gpu_id,
            key: w.key,
            open: Some(w.open),
            lock: None,
            stage: Stage::Locking {
                retry_at: Instant::now(),
            },
            told_busy: false,
        })
    }
}

/// Counter ids of the metrics, registered at first use.
pub(crate) type Ids = [Option<CounterId>; Metric::ALL.len()];

/// Records one reading of GPU `gpu_id`; returns the values recorded.
pub(crate) fn record(
    rec: &Recorder,
    counters: &Counters,
    ids: &mut Ids,
    gpu_id: u32,
    r: &Reading,
) -> u64 {
    let mut id = |m: Metric| *ids[m.index()].get_or_insert_with(|| counters.register(m.spec()));
    let mut n = 0;
    if !r.values().is_empty() {
        let values: Box<[(CounterId, f64)]> = r.values().iter().map(|&(m, v)| (id(m), v)).collect();
        let mut s = CounterSample::new(gpu_id, r.now(), values);
        s.frequency_khz = r
            .values()
            .iter()
            .find(|(m, _)| *m == Metric::SmClock)
            .map(|&(_, mhz)| (mhz * 1000.0).round() as u32);
        n += s.values.len() as u64;
        rec.counters(s);
    }
    if let (Some(since), values) = r.interval_values()
        && !values.is_empty()
    {
        let values: Box<[(CounterId, f64)]> = values.iter().map(|&(m, v)| (id(m), v)).collect();
        n += values.len() as u64;
        rec.counters(CounterSample::new(gpu_id, since, values));
    }
    n
}

/// The slow thread: its own period, its own probes.
struct Slow {
    shared: Arc<(Mutex<SlowState>, Condvar)>,
    done: Option<mpsc::Receiver<(u64, u64, Duration)>>,
}

#[derive(Default)]
struct SlowState {
    enabled: bool,
    exit: bool,
    pending: Vec<(u32, Box<dyn Probe>)>,
}

impl Slow {
    fn start(rec: Recorder, counters: Arc<Counters>, period: Duration) -> Slow {
        let shared: Arc<(Mutex<SlowState>, Condvar)> = Arc::default();
        let (tx, rx) = mpsc::channel();
        let sh = shared.clone();
        let spawned = crate::thread::spawn("gpu-trace-telemetry-slow", move || {
            let _ = crate::guard::catch("slow telemetry", || {
                let _ = tx.send(slow_loop(&sh, &rec, &counters, period));
            });
        });
        if let Err(e) = &spawned {
            crate::verbose!("cannot start the slow telemetry thread ({e}); no slow readings");
        }
        // The fast thread starts it only while sampling is on.
        shared.0.lock().unwrap_or_else(|e| e.into_inner()).enabled = true;
        Slow {
            shared,
            done: spawned.ok().map(|_| rx),
        }
    }

    fn add(&self, gpu_id: u32, p: Box<dyn Probe>) {
        let (m, cv) = &*self.shared;
        m.lock()
            .unwrap_or_else(|e| e.into_inner())
            .pending
            .push((gpu_id, p));
        cv.notify_all();
    }

    fn set_enabled(&self, on: bool) {
        let (m, cv) = &*self.shared;
        m.lock().unwrap_or_else(|e| e.into_inner()).enabled = on;
        cv.notify_all();
    }

    fn stop(self, limit: Duration) -> (u64, u64, Duration) {
        let (m, cv) = &*self.shared;
        m.lock().unwrap_or_else(|e| e.into_inner()).exit = true;
        cv.notify_all();
        self.done
            .and_then(|rx| rx.recv_timeout(limit).ok())
            .unwrap_or_default()
    }
}

fn slow_loop(
    sh: &(Mutex<SlowState>, Condvar),
    rec: &Recorder,
    counters: &Counters,
    period: Duration,
) -> (u64, u64, Duration) {
    let (m, cv) = sh;
    let mut probes: Vec<(u32, Box<dyn Probe>)> = Vec::new();
    let mut ids: [Option<CounterId>; Metric::ALL.len()] = [None; Metric::ALL.len()];
    let mut reading = Reading::default();
    let (mut rounds, mut values) = (0u64, 0u64);
    let mut next = Instant::now();
    loop {
        let mut s = m.lock().unwrap_or_else(|e| e.into_inner());
        probes.append(&mut s.pending);
        if s.exit {
            break;
        }
        if !s.enabled || probes.is_empty() {
            drop(cv.wait(s).unwrap_or_else(|e| e.into_inner()));
            next = Instant::now();
            continue;
        }
        let now = Instant::now();
        if now < next {
            drop(
                cv.wait_timeout(s, next - now)
                    .unwrap_or_else(|e| e.into_inner()),
            );
            continue;
        }
        drop(s);
        for (gpu, p) in &mut probes {
            reading.clear(crate::clock::boottime_ns());
            p.read(&mut reading);
            values += record(rec, counters, &mut ids, *gpu, &reading);
        }
        rounds += 1;
        next += period;
        if next <= Instant::now() {
            next = Instant::now() + period;
        }
    }
    (
        rounds,
        values,
        Duration::from_nanos(crate::clock::thread_cpu_ns()),
    )
}

impl Report {
    /// The line that says what sampling cost, for the log and `--verbose`.
    pub(crate) fn cost_line(stats: &Stats, cfg: &TelemetryConfig) -> String {
        let mut l = format!(
            "gpu-trace telemetry: {} GPU(s) every {}, {} rounds, {} values; {:.1} ms CPU over {:.1} s sampling ({:.3}% of one core), {:.1} ms more opening the GPUs; slowest round {} us",
            stats.devices,
            format_period(cfg.period),
            stats.rounds,
            stats.values,
            stats.cpu.saturating_sub(stats.setup_cpu).as_secs_f64() * 1e3,
            stats.active.as_secs_f64(),
            stats.core_percent(),
            stats.setup_cpu.as_secs_f64() * 1e3,
            stats.slowest_round.as_micros()
        );
        if stats.elsewhere > 0 {
            l.push_str(&format!(
                "; {} GPU(s) sampled by another process",
                stats.elsewhere
            ));
        }
        if let Some(p) = cfg.slow_period {
            l.push_str(&format!(
                "; slow readings every {}: {} rounds, {:.1} ms CPU",
                format_period(p),
                stats.slow_rounds,
                stats.slow_cpu.as_secs_f64() * 1e3
            ));
        }
        l
    }
}

#[cfg(test)]
mod tests {
    use super::super::DeviceProbes;
    use super::*;
    use gpu_trace_model::collector::Limits;
    use gpu_trace_model::model::Event;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A probe that reads a clock, a temperature and (from its second
    /// round on) an interval value since its previous round; counts rounds
    /// and restarts.
    struct Fake {
        rounds: Arc<AtomicU32>,
        restarts: Arc<AtomicU32>,
        last: Option<u64>,
        sleep: Duration,
    }

    impl Probe for Fake {
        fn read(&mut self, r: &mut Reading) {
            std::thread::sleep(self.sleep);
            let n = self.rounds.fetch_add(1, Ordering::Relaxed);
            r.set(Metric::SmClock, 1410.0);
            r.set(Metric::Temperature, 40.0 + n as f64);
            if let Some(since) = self.last {
                r.set_since(since, Metric::SmActive, 50.0);
            }
            self.last = Some(r.now());
        }

        fn restart(&mut self) {
            self.restarts.fetch_add(1, Ordering::Relaxed);
            self.last = None;
        }
    }

    struct Rig {
        t: Telemetry,
        rec: Recorder,
        counters: Arc<Counters>,
        rounds: Arc<AtomicU32>,
        slow_rounds: Arc<AtomicU32>,
        restarts: Arc<AtomicU32>,
        opened: Arc<AtomicU32>,
    }

    fn config(tag: &str) -> TelemetryConfig {
        TelemetryConfig {
            period: Duration::from_millis(2),
            lock_dir: Some(std::env::temp_dir().join(format!(
                "gpu-trace-telemetry-test-{}-{tag}",
                std::process::id()
            ))),
            ..TelemetryConfig::default()
        }
    }

    fn rig(cfg: TelemetryConfig) -> Rig {
        let rec = Recorder::new(Limits::default());
        let counters = Arc::new(Counters::default());
        Rig {
            t: Telemetry::new(rec.clone(), counters.clone(), cfg),
            rec,
            counters,
            rounds: Arc::default(),
            slow_rounds: Arc::default(),
            restarts: Arc::default(),
            opened: Arc::default(),
        }
    }

    impl Rig {
        fn watch(&self, gpu: u32, key: &str, slow_sleep: Option<Duration>) {
            let (rounds, slow_rounds, restarts, opened) = (
                self.rounds.clone(),
                self.slow_rounds.clone(),
                self.restarts.clone(),
                self.opened.clone(),
            );
            self.t.watch(
                gpu,
                key,
                Box::new(move || {
                    opened.fetch_add(1, Ordering::Relaxed);
                    Ok(DeviceProbes {
                        fast: Box::new(Fake {
                            rounds,
                            restarts: restarts.clone(),
                            last: None,
                            sleep: Duration::ZERO,
                        }),
                        slow: slow_sleep.map(|sleep| {
                            Box::new(Fake {
                                rounds: slow_rounds,
                                restarts,
                                last: None,
                                sleep,
                            }) as Box<dyn Probe>
                        }),
                        detail: "fake".into(),
                    })
                }),
            );
        }

        fn samples(&self) -> Vec<CounterSample> {
            self.rec
                .drain_some(usize::MAX)
                .into_iter()
                .flat_map(|b| b.events)
                .filter_map(|e| match e {
                    Event::Counters(c) => Some(c),
                    _ => None,
                })
                .collect()
        }
    }

    fn until(what: &str, mut f: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !f() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn nothing_is_opened_or_read_until_telemetry_is_recorded() {
        let r = rig(config("off"));
        r.watch(0, "GPU-off", None);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(
            r.opened.load(Ordering::Relaxed),
            0,
            "no vendor library loaded"
        );
        r.t.set_enabled(true);
        until("a round", || r.rounds.load(Ordering::Relaxed) >= 3);
        let report = r.t.stop(Duration::from_secs(5));
        let stats = report.stats.expect("the thread ended");
        assert!(stats.rounds >= 3 && stats.devices == 1, "{stats:?}");
        assert!(stats.cpu > Duration::ZERO && stats.active > Duration::ZERO);
        assert_eq!(r.opened.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn readings_become_samples_with_the_frequency_and_interval_values_at_their_start() {
        let r = rig(config("values"));
        r.t.set_enabled(true);
        r.watch(3, "GPU-values", None);
        until("rounds", || r.rounds.load(Ordering::Relaxed) >= 4);
        r.t.stop(Duration::from_secs(5));
        let specs = r.counters.snapshot();
        let name = |id: CounterId| specs[id.0 as usize - 1].name.as_str();
        let samples = r.samples();
        let instant: Vec<_> = samples
            .iter()
            .filter(|s| s.frequency_khz.is_some())
            .collect();
        let interval: Vec<_> = samples
            .iter()
            .filter(|s| s.frequency_khz.is_none())
            .collect();
        assert!(instant.len() >= 4 && !interval.is_empty(), "{samples:#?}");
        for s in &instant {
            assert_eq!(s.device, 3);
            assert_eq!(s.frequency_khz, Some(1_410_000));
            let names: Vec<_> = s.values.iter().map(|(id, _)| name(*id)).collect();
            assert_eq!(names, ["clocks.sm", "temperature.gpu"]);
        }
        // Temperatures 40, 41, 42 ...: every round, in order.
        let temps: Vec<f64> = instant.iter().map(|s| s.values[1].1).collect();
        assert_eq!(temps[..4], [40.0, 41.0, 42.0, 43.0]);
        // The first interval value covers the first two rounds: written at
        // the first round's time.
        assert_eq!(interval[0].ts, instant[0].ts);
        assert_eq!(name(interval[0].values[0].0), "gpm.sm_active");
        assert_eq!(interval[0].values[0].1, 50.0);
    }

    #[test]
    fn one_process_per_gpu_the_next_one_takes_over_when_it_ends() {
        let cfg = config("lock");
        let a = rig(cfg.clone());
        let b = rig(cfg);
        a.t.set_enabled(true);
        b.t.set_enabled(true);
        a.watch(0, "GPU-shared", None);
        until("a samples", || a.rounds.load(Ordering::Relaxed) >= 2);
        b.watch(0, "GPU-shared", None);
        // b's own GPU is free.
        b.watch(1, "GPU-b-only", None);
        until("b samples its own GPU", || {
            b.rounds.load(Ordering::Relaxed) >= 2
        });
        assert_eq!(b.opened.load(Ordering::Relaxed), 1, "the shared GPU is a's");
        a.t.stop(Duration::from_secs(5));
        // The lock goes with a's thread; b retries every second.
        until("b takes over", || b.opened.load(Ordering::Relaxed) == 2);
        let n = b.rounds.load(Ordering::Relaxed);
        until("b samples both", || {
            b.rounds.load(Ordering::Relaxed) >= n + 4
        });
        let report = b.t.stop(Duration::from_secs(5));
        assert!(report.lines.is_empty(), "nothing said: {:?}", report.lines);
        let gpus: std::collections::BTreeSet<u32> = b.samples().iter().map(|s| s.device).collect();
        assert_eq!(gpus.into_iter().collect::<Vec<_>>(), [0, 1]);
    }

    #[test]
    fn a_gpu_without_telemetry_is_said_once_and_the_others_are_sampled() {
        let r = rig(config("fail"));
        r.t.set_enabled(true);
        for gpu in 0..2 {
            r.t.watch(
                gpu,
                format!("GPU-fail-{gpu}"),
                Box::new(|| Err("NVML is not usable (libnvidia-ml not found)".into())),
            );
        }
        r.watch(2, "GPU-fail-ok", None);
        until("rounds", || r.rounds.load(Ordering::Relaxed) >= 2);
        let report = r.t.stop(Duration::from_secs(5));
        assert_eq!(
            report.lines,
            [(
                true,
                "NVML is not usable (libnvidia-ml not found)".to_owned()
            )]
        );
        assert_eq!(report.stats.unwrap().devices, 1);
    }

    #[test]
    fn a_slow_reading_never_delays_the_fast_ones_and_a_pause_restarts_intervals() {
        let mut cfg = config("slow");
        cfg.slow_period = Some(Duration::from_millis(100));
        let r = rig(cfg);
        r.t.set_enabled(true);
        r.watch(0, "GPU-slow", Some(Duration::from_millis(300)));
        until("a slow reading", || {
            r.slow_rounds.load(Ordering::Relaxed) >= 1
        });
        // The slow probe blocks 300 ms a reading; the fast one goes on.
        let before = r.rounds.load(Ordering::Relaxed);
        until("fast rounds during a slow reading", || {
            r.rounds.load(Ordering::Relaxed) >= before + 20
        });
        assert!(r.slow_rounds.load(Ordering::Relaxed) <= 2);
        let restarts = r.restarts.load(Ordering::Relaxed);
        r.t.set_enabled(false);
        std::thread::sleep(Duration::from_millis(20));
        let paused = r.rounds.load(Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(
            r.rounds.load(Ordering::Relaxed),
            paused,
            "no rounds while off"
        );
        r.t.set_enabled(true);
        until("restart", || r.restarts.load(Ordering::Relaxed) > restarts);
        let stats = r.t.stop(Duration::from_secs(5)).stats.unwrap();
        assert!(stats.slow_rounds >= 1, "{stats:?}");
    }
}
