//! Recording windows: tracing switched on and off in a running process,
//! by time (a delay, a duration, a duty cycle) or from outside
//! (`gpu-trace start|stop|status PID`).
//!
//! Windows drive the writer's [`RecordingSwitch`], the same switch that
//! `cudaProfilerStart`/`Stop` capture ranges use: outside a window nothing
//! of the vendor's tracing is enabled, and each window holds everything
//! submitted inside it, including work still running when it closes. Each
//! window's opening and closing are lines of the trace's GPU log
//! (`recording window N opened (why)`, `... closed (why)`, at their time),
//! so that the UI and `gpu-trace stats` see where the trace has data. A run
//! that is never switched gets none.
//!
//! **Control from outside** is a Unix datagram socket per traced process,
//! `<dir>/<pid>.sock`, in a directory only this user can enter
//! (`$XDG_RUNTIME_DIR/gpu-trace`, else `$TMPDIR/gpu-trace-<uid>`, else
//! `/tmp/gpu-trace-<uid>`; mode 0700, checked through its open descriptor
//! and refused when it is another user's or a link: see
//! [`crate::private_dir`]). The client checks it the same way before it
//! reads or sends anything. A socket rather than a signal: the
//! application's own signal handlers are never touched, nothing needs
//! chaining, a stray signal cannot kill it, and the controlling thread
//! sleeps in `recv` (no polling) until a command or the next scheduled
//! switch. Commands are `start`, `stop` and `status`; the reply is one line,
//! `open <windows> <program>` or `closed <windows> <program>`.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::config::{Problem, env_lookup, parse_var};
use crate::private_dir::PrivateDir;
use gpu_trace_model::Recorder;
use gpu_trace_model::capture::RecordingSwitch;
use gpu_trace_model::schema::RecordingWindow;

/// Environment variable names.
pub mod vars {
    /// `1`: start with recording off, until a window opens.
    pub const PAUSED: &str = "INJECTION_PAUSED";
    /// Time before the first window opens (`10s`, `500ms`, `2m`).
    pub const DELAY: &str = "INJECTION_DELAY";
    /// Length of the (first) window; recording stops after it.
    pub const DURATION: &str = "INJECTION_DURATION";
    /// Length of each window of a duty cycle (with [`EVERY`]).
    pub const WINDOW: &str = "INJECTION_WINDOW";
    /// Period of the duty cycle: a window of [`WINDOW`] opens every EVERY.
    pub const EVERY: &str = "INJECTION_EVERY";
    /// `on` (default) or `off`: the control socket.
    pub const CONTROL: &str = "INJECTION_CONTROL";
}

/// Shortest window or period accepted.
const MIN: Duration = Duration::from_millis(10);
/// Longest delay, window or period accepted (a week).
const MAX: Duration = Duration::from_secs(7 * 24 * 3600);

/// When recording runs, as the environment asks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Plan {
    /// Start with recording off.
    pub paused: bool,
    /// First window opens after this.
    pub delay: Option<Duration>,
    /// First window closes after this (and no scheduled window follows).
    pub duration: Option<Duration>,
    /// Duty cycle: (window, period).
    pub cycle: Option<(Duration, Duration)>,
    /// The control socket.
    pub control: bool,
}

impl Plan {
    /// Reads the process environment; problems are returned, not printed.
    pub fn from_env() -> (Plan, Vec<Problem>) {
        Self::from_lookup(&env_lookup)
    }

    /// Reads the plan through `get`, for tests.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> (Plan, Vec<Problem>) {
        let mut problems = Vec::new();
        let mut p = Plan {
            control: true,
            ..Plan::default()
        };
        let mut push = |r: Result<Option<Duration>, Problem>| match r {
            Ok(v) => v,
            Err(e) => {
                problems.push(e);
                None
            }
        };
        let expected = "a duration from 10ms to 7d, such as 30s, 500ms, 2m or 1h";
        let dur = |var| parse_var(get, var, expected, "none", parse_duration);
        p.delay = push(parse_var(
            get,
            vars::DELAY,
            "a duration up to 7d, such as 30s, 500ms, 2m or 1h",
            "no delay",
            |v| parse_duration(v).or_else(|| (v.trim() == "0").then_some(Duration::ZERO)),
        ));
        p.duration = push(dur(vars::DURATION));
        let window = push(dur(vars::WINDOW));
        let every = push(dur(vars::EVERY));
        match (window, every) {
            (Some(w), Some(e)) if w < e => p.cycle = Some((w, e)),
            (Some(w), Some(e)) => problems.push(Problem {
                var: vars::WINDOW,
                value: format!("{w:?} with {}={e:?}", vars::EVERY),
                expected: format!("a window shorter than {}", vars::EVERY),
                using: "no duty cycle".to_owned(),
            }),
            (Some(w), None) => problems.push(Problem {
                var: vars::WINDOW,
                value: format!("{w:?}"),
                expected: format!("{} as well (the period of the windows)", vars::EVERY),
                using: "no duty cycle".to_owned(),
            }),
            (None, Some(e)) => problems.push(Problem {
                var: vars::EVERY,
                value: format!("{e:?}"),
                expected: format!("{} as well (the length of each window)", vars::WINDOW),
                using: "no duty cycle".to_owned(),
            }),
            (None, None) => {}
        }
        match parse_var(get, vars::PAUSED, "0 or 1", "0", parse_flag) {
            Ok(v) => p.paused = v.unwrap_or(false),
            Err(e) => problems.push(e),
        }
        match parse_var(get, vars::CONTROL, "on or off", "on", parse_flag) {
            Ok(v) => p.control = v.unwrap_or(true),
            Err(e) => problems.push(e),
        }
        (p, problems)
    }

    /// Whether recording is switched by this plan (and the tracer must run
    /// with capture ranges).
    pub fn switches(&self) -> bool {
        self.paused || self.delay.is_some() || self.duration.is_some() || self.cycle.is_some()
    }

    /// Whether recording is on at start.
    pub fn open_at_start(&self) -> bool {
        !self.paused && self.delay.is_none_or(|d| d.is_zero())
    }
}

fn parse_flag(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "on" | "yes" | "true" => Some(true),
        "0" | "off" | "no" | "false" => Some(false),
        _ => None,
    }
}

/// Parses `30s`, `500ms`, `2m`, `1h`, `1d`, `1.5s` (a bare number is seconds),
/// from 10 ms to a week.
pub fn parse_duration(v: &str) -> Option<Duration> {
    let t = v.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().ok().filter(|n: &f64| n.is_finite())?;
    let secs = match unit.trim() {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => return None,
    };
    let d = Duration::try_from_secs_f64(n * secs).ok()?;
    (MIN..=MAX).contains(&d).then_some(d)
}

/// The directory of the control sockets of this user's traced processes:
/// this user's runtime folder ([`crate::private_dir::runtime_dir`]).
pub fn control_dir() -> PathBuf {
    crate::private_dir::runtime_dir()
}

/// Makes (or opens and checks) the control directory: a directory of this
/// user, mode 0700, not reached through a symbolic link, in a folder
/// nobody else can replace it in ([`PrivateDir::create`]).
///
/// # Errors
/// A line naming the directory and what is wrong with it.
pub(crate) fn ensure_control_dir(dir: &Path) -> Result<PrivateDir, String> {
    PrivateDir::create(dir)
}

/// The name of process `pid`'s control socket in the control directory.
fn socket_name(pid: u32) -> String {
    format!("{pid}.sock")
}

/// The control socket of process `pid`.
pub fn socket_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(socket_name(pid))
}

/// The running window controller of this process; stops its thread and
/// removes its socket on drop.
pub struct Windows {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
    socket: Option<PathBuf>,
    /// The process that started the controller. A child it forks inherits
    /// this value (and the exit handler that stops it) but neither the
    /// thread nor the socket, which stay the parent's.
    pid: u32,
}

struct Shared {
    switch: Box<dyn RecordingSwitch>,
    recorder: Recorder,
    stop: AtomicBool,
    /// Windows opened so far.
    opened: AtomicU32,
    program: String,
    /// Whether windows are drawn: when a plan switches recording, or once
    /// a command came (a run that is never switched gets no window range).
    draw: AtomicBool,
    /// Whether the switch is open because of a window of ours.
    ours: AtomicBool,
    /// Whether the open window's start is drawn, and when it opened.
    marked: AtomicBool,
    opened_at: std::sync::atomic::AtomicU64,
    /// Held while a window opens or closes: the controller's thread and
    /// the program's own calls ([`WindowsHandle`]) may switch at once.
    switching: std::sync::Mutex<()>,
}

impl Shared {
    /// Opens or closes a window, drawing it as a process-wide range.
    fn set(&self, open: bool, why: &str) {
        let _one_at_a_time = self.switching.lock().unwrap_or_else(|e| e.into_inner());
        if self.switch.is_open() == open {
            return;
        }
        let now = crate::clock::boottime_ns();
        if open {
            let n = self.opened.fetch_add(1, Ordering::Relaxed) + 1;
            self.opened_at.store(now, Ordering::Relaxed);
            self.ours.store(true, Ordering::Relaxed);
            let t = Instant::now();
            self.switch.set(true);
            let draw = self.draw.load(Ordering::Relaxed);
            if draw {
                self.mark_start(n, now, why);
            }
            self.marked.store(draw, Ordering::Relaxed);
            crate::verbose!("window {n} opened ({why}) in {:.1?}", t.elapsed());
        } else {
            let n = self.opened.load(Ordering::Relaxed);
            if self.ours.swap(false, Ordering::Relaxed) {
                self.mark_end(n, now, why);
            }
            let t = Instant::now();
            self.switch.set(false);
            crate::verbose!("window {n} closed ({why}) in {:.1?}", t.elapsed());
        }
    }

    fn mark_start(&self, n: u32, ts: u64, why: &str) {
        log_window(&self.recorder, ts, n, true, why);
    }

    /// Logs window `n`'s end, and its start first if that was not.
    fn mark_end(&self, n: u32, ts: u64, why: &str) {
        if !self.marked.swap(true, Ordering::Relaxed) {
            let at = self.opened_at.load(Ordering::Relaxed);
            self.mark_start(n, at, "start");
        }
        log_window(&self.recorder, ts, n, false, why);
    }
}

pub use gpu_trace_model::schema::WINDOW_LOG;

/// Writes window `n`'s opening or closing line into the trace's GPU log at
/// `ts`: the marker every kind of window (socket, schedule, capture range)
/// leaves, and what `stats` reads back.
pub fn log_window(recorder: &Recorder, ts: u64, n: u32, opened: bool, why: &str) {
    let w = if opened {
        RecordingWindow::opened(n, why)
    } else {
        RecordingWindow::closed(n, why)
    };
    recorder.window(ts, &w);
}

impl Windows {
    /// Starts the controller for `plan`: opens the first window now when
    /// the plan starts recording at once, schedules the others, and listens
    /// on the control socket. Returns `None` when there is nothing to do.
    pub fn start(
        plan: &Plan,
        switch: impl RecordingSwitch + 'static,
        recorder: Recorder,
    ) -> Option<Windows> {
        if !plan.switches() && !plan.control {
            return None;
        }
        let shared = Arc::new(Shared {
            switch: Box::new(switch),
            recorder,
            stop: AtomicBool::new(false),
            opened: AtomicU32::new(0),
            program: crate::output::program_name(),
            draw: AtomicBool::new(plan.switches()),
            ours: AtomicBool::new(false),
            marked: AtomicBool::new(false),
            opened_at: std::sync::atomic::AtomicU64::new(0),
            switching: std::sync::Mutex::new(()),
        });
        if plan.open_at_start() {
            shared.set(true, "start");
        }
        let (sock, path) = if plan.control {
            match bind() {
                Ok((s, p)) => (Some(s), Some(p)),
                Err(e) => {
                    crate::warn!(
                        "no control socket ({e}); gpu-trace start/stop cannot reach this process"
                    );
                    (None, None)
                }
            }
        } else {
            (None, None)
        };
        if sock.is_none() && !plan.switches() {
            return None;
        }
        let schedule = Schedule::new(plan, Instant::now());
        let s = shared.clone();
        let thread = crate::thread::spawn("gpu-trace-windows", move || {
            crate::guard::catch("window controller", || run(&s, sock, schedule));
        })
        .map_err(|e| crate::warn!("cannot start the window controller: {e}"))
        .ok();
        Some(Windows {
            shared,
            thread,
            socket: path,
            pid: std::process::id(),
        })
    }

    /// Windows opened so far.
    pub fn opened(&self) -> u32 {
        self.shared.opened.load(Ordering::Relaxed)
    }

    /// A handle through which the traced program itself opens and closes
    /// windows ([`crate::program`]).
    pub fn handle(&self) -> WindowsHandle {
        WindowsHandle {
            shared: self.shared.clone(),
            pid: self.pid,
        }
    }

    /// Stops the controller a tool keeps in `slot`, if any (once: the slot
    /// is emptied).
    pub fn stop_in(slot: &std::sync::Mutex<Option<Windows>>) {
        let taken = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut w) = taken {
            w.stop();
        }
    }

    /// Stops the controller (at exit). A window still open stays open, so
    /// that the tracer's shutdown writes its work; its range ends now.
    ///
    /// In a forked child this does nothing: the thread is not in the child
    /// (joining it failed with a panic there), and the socket and the
    /// trace are the parent's, who goes on using them.
    pub fn stop(&mut self) {
        if std::process::id() != self.pid {
            // Not joined nor detached: it is not a thread of this process.
            std::mem::forget(self.thread.take());
            self.socket = None;
            return;
        }
        if self.shared.stop.swap(true, Ordering::AcqRel) {
            return;
        }
        let s = &self.shared;
        if s.switch.is_open() && s.ours.load(Ordering::Relaxed) && s.draw.load(Ordering::Relaxed) {
            s.mark_end(
                s.opened.load(Ordering::Relaxed),
                crate::clock::boottime_ns(),
                "exit",
            );
        }
        if let Some(p) = &self.socket {
            // Wakes the thread out of recv.
            if let Ok(c) = UnixDatagram::unbound() {
                let _ = c.send_to(b"quit", p);
            }
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(p) = self.socket.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Opens and closes windows as `gpu-trace start|stop` does over the
/// socket, from inside the process ([`Windows::handle`]). Cheap to clone.
#[derive(Clone)]
pub struct WindowsHandle {
    shared: Arc<Shared>,
    pid: u32,
}

impl WindowsHandle {
    /// Opens (`open`) or closes the window; `why` names the switch in the
    /// trace's log line. Does nothing once the controller stopped (at
    /// exit), or in a forked child (the trace is its parent's). Returns
    /// whether it switched, or found recording already as asked.
    pub fn switch(&self, open: bool, why: &str) -> bool {
        if std::process::id() != self.pid || self.shared.stop.load(Ordering::Acquire) {
            return false;
        }
        self.shared.draw.store(true, Ordering::Relaxed);
        self.shared.set(open, why);
        true
    }

    /// Whether a window is open.
    pub fn is_open(&self) -> bool {
        self.shared.switch.is_open()
    }
}

impl Drop for Windows {
    fn drop(&mut self) {
        self.stop();
    }
}

fn bind() -> Result<(UnixDatagram, PathBuf), String> {
    let dir = ensure_control_dir(&control_dir())?;
    let name = socket_name(std::process::id());
    // A socket of an earlier process with our pid is stale.
    dir.remove(&name);
    // Bound by path (a socket has no *at call), in a directory no one else
    // can enter, in a folder where no one else can replace it.
    let path = dir.path().join(&name);
    let s = UnixDatagram::bind(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((s, path))
}

/// The scheduled switches of a plan.
#[derive(Debug)]
struct Schedule {
    /// Next scheduled switch: when, and whether it opens.
    next: Option<(Instant, bool)>,
    plan: Plan,
    t0: Instant,
    /// Windows the schedule opened.
    n: u32,
}

impl Schedule {
    fn new(plan: &Plan, t0: Instant) -> Self {
        let mut s = Schedule {
            next: None,
            plan: plan.clone(),
            t0,
            n: 0,
        };
        s.next = if plan.paused {
            None
        } else if plan.open_at_start() {
            s.n = 1;
            s.close_after(t0)
        } else {
            plan.delay.map(|d| (t0 + d, true))
        };
        s
    }

    /// The close of the window opened at `at`, if one is scheduled.
    fn close_after(&self, at: Instant) -> Option<(Instant, bool)> {
        match (self.n, self.plan.duration, self.plan.cycle) {
            (1, Some(d), _) => Some((at + d, false)),
            (_, _, Some((w, _))) => Some((at + w, false)),
            _ => None,
        }
    }

    /// The switch due at `next` began at `began` and ended at `ended`:
    /// what comes after it. A window lasts its full length from the end
    /// of its opening switch (enabling the vendor's tracing can take a
    /// while), and a period whose start has passed (a late switch) is
    /// skipped rather than opened late, so that every window is whole and
    /// the cycle keeps its phase.
    fn advance(&mut self, began: Instant, ended: Instant) {
        let Some((at, opened)) = self.next else {
            return;
        };
        self.next = if opened {
            self.n += 1;
            self.close_after(ended.max(at))
        } else {
            match (self.n, self.plan.duration, self.plan.cycle) {
                // A duration ends scheduled recording, unless a cycle follows.
                (1, Some(_), None) => None,
                (_, _, Some((_, every))) => {
                    // Period k's window opens at start + every * k; the
                    // n opened so far began no later than period n - 1,
                    // and every one before a skipped period is past.
                    let start = self.t0 + self.plan.delay.unwrap_or_default();
                    let mut k = self.n;
                    while start + every * k < began.max(ended) {
                        k += 1;
                    }
                    Some((start + every * k, true))
                }
                _ => None,
            }
        };
    }
}

fn run(s: &Shared, sock: Option<UnixDatagram>, mut schedule: Schedule) {
    let mut buf = [0u8; 64];
    if let Some(sock) = &sock
        && let Err(e) = sock.set_nonblocking(true)
    {
        crate::verbose!("control socket: {e}");
    }
    loop {
        if s.stop.load(Ordering::Acquire) {
            return;
        }
        let wait = schedule
            .next
            .map(|(at, _)| at.saturating_duration_since(Instant::now()));
        if let Some(w) = wait
            && w.is_zero()
        {
            let (_, open) = schedule.next.unwrap_or((Instant::now(), false));
            let at = Instant::now();
            s.set(open, "scheduled");
            schedule.advance(at, Instant::now());
            continue;
        }
        let Some(sock) = &sock else {
            std::thread::sleep(wait.unwrap_or(Duration::from_secs(3600)));
            continue;
        };
        // poll's timeout is a high-resolution timer. A socket's receive
        // timeout (SO_RCVTIMEO) is not: the kernel's timer wheel rounds a
        // long one up by up to an eighth, and on the H200 a 19 s wait for
        // the next window of a 1 s / 20 s cycle woke 0.2-1.2 s late,
        // shortening the windows it opened.
        if !readable(sock, wait) {
            continue;
        }
        let (n, from) = match sock.recv_from(&mut buf) {
            Ok(r) => r,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(e) => {
                crate::verbose!("control socket: {e}");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let cmd = std::str::from_utf8(&buf[..n]).unwrap_or("").trim();
        if matches!(cmd, "start" | "stop") {
            s.draw.store(true, Ordering::Relaxed);
        }
        match cmd {
            "start" => s.set(true, "gpu-trace start"),
            "stop" => s.set(false, "gpu-trace stop"),
            "quit" if s.stop.load(Ordering::Acquire) => return,
            _ => {}
        }
        if let Some(p) = from.as_pathname() {
            let state = if s.switch.is_open() { "open" } else { "closed" };
            let reply = format!("{state} {} {}", s.opened.load(Ordering::Relaxed), s.program);
            let _ = sock.send_to(reply.as_bytes(), p);
        }
    }
}

/// Waits until `sock` has a datagram or `wait` has passed (forever
/// without one); whether it has one.
fn readable(sock: &UnixDatagram, wait: Option<Duration>) -> bool {
    use rustix::event::{PollFd, PollFlags, poll};
    let timeout = wait.map(|w| rustix::time::Timespec {
        tv_sec: i64::try_from(w.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(w.subsec_nanos()),
    });
    let mut fds = [PollFd::new(sock, PollFlags::IN)];
    match poll(&mut fds, timeout.as_ref()) {
        Ok(n) => n > 0,
        Err(rustix::io::Errno::INTR) => false,
        Err(e) => {
            crate::verbose!("control socket: poll: {e}");
            std::thread::sleep(Duration::from_millis(100));
            false
        }
    }
}

/// Sends `cmd` (`start`, `stop`, `status`) to process `pid`'s control
/// socket and returns its one-line reply.
///
/// # Errors
/// A line saying why the process could not be reached.
pub fn send(pid: u32, cmd: &str, timeout: Duration) -> Result<String, String> {
    send_in(&control_dir(), pid, cmd, timeout)
}

/// [`send`] through the sockets in `dir` (for tests, which give the
/// traced process its own `XDG_RUNTIME_DIR`). Nothing is read or sent
/// unless `dir` is a directory of this user that no one else can enter,
/// and the process's entry a socket of this user (not a link to one).
///
/// # Errors
/// As [`send`].
pub fn send_in(dir: &Path, pid: u32, cmd: &str, timeout: Duration) -> Result<String, String> {
    let Some(d) = PrivateDir::open(dir)? else {
        return Err(no_socket(pid, dir));
    };
    let name = socket_name(pid);
    match d.entry(&name) {
        Ok(crate::private_dir::Entry::Socket) => {}
        Ok(crate::private_dir::Entry::Missing) => return Err(no_socket(pid, dir)),
        Err(e) => return Err(format!("{e}; not sending to it")),
    }
    let target = d.path().join(&name);
    let me = format!(
        "client-{}-{}.sock",
        std::process::id(),
        crate::clock::boottime_ns()
    );
    let c = UnixDatagram::bind(d.path().join(&me))
        .map_err(|e| format!("{}: {e}", d.path().join(&me).display()))?;
    let r = (|| {
        c.set_read_timeout(Some(timeout))
            .map_err(|e| e.to_string())?;
        // A socket nobody listens on any more refuses at once: its process
        // was killed, or replaced its program by exec ([`is_stale`]). No
        // wait for an answer that cannot come.
        c.send_to(cmd.as_bytes(), &target).map_err(|e| {
            if e.kind() == std::io::ErrorKind::ConnectionRefused {
                stale(pid)
            } else {
                format!("process {pid}: {e} (it may have exited)")
            }
        })?;
        let mut buf = [0u8; 512];
        let n = c
            .recv(&mut buf)
            .map_err(|e| format!("process {pid} did not answer within {timeout:?}: {e}"))?;
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    })();
    d.remove(&me);
    r
}

/// Whether a socket file is left over: nothing holds it any more. A traced
/// process's socket is close-on-exec (as every socket the standard library
/// makes), so a program that replaces itself with `exec` leaves the file,
/// and the pid still runs, another program now. No exit handler runs at an
/// exec, and a library the CUDA driver or rocprofiler-sdk loads cannot
/// intercept one, so the client tells such a file apart: a datagram
/// `connect` to it is refused.
fn is_stale(path: &Path) -> bool {
    UnixDatagram::unbound()
        .and_then(|c| c.connect(path))
        .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused)
}

/// What a client says of a process whose socket is left over ([`is_stale`]).
fn stale(pid: u32) -> String {
    format!(
        "process {pid} no longer runs gpu-trace (its program was replaced by exec, or tracing ended without removing its control socket)"
    )
}

/// Why `pid` has no socket in `dir`, as far as `/proc` says: gone, traced
/// but not yet using the GPU (the tool loads with CUDA or the HIP runtime),
/// or not traced.
fn no_socket(pid: u32, dir: &Path) -> String {
    let proc = PathBuf::from(format!("/proc/{pid}"));
    if !proc.exists() {
        return format!("no process {pid} is running");
    }
    let traced = std::fs::read(proc.join("environ")).is_ok_and(|env| {
        env.split(|&b| b == 0).any(|kv| {
            let kv = String::from_utf8_lossy(kv);
            (kv.starts_with("CUDA_INJECTION64_PATH=") || kv.starts_with("ROCP_TOOL_LIBRARIES="))
                && kv.contains("gpu_trace")
        })
    });
    if traced {
        format!(
            "process {pid} is traced but has not started using the GPU yet (gpu-trace loads with CUDA or HIP); try again once it has"
        )
    } else {
        format!(
            "process {pid} has no gpu-trace control socket in {} (is it running under gpu-trace record?)",
            dir.display()
        )
    }
}

/// The pids with a control socket in this user's directory, removing
/// sockets of processes that no longer exist and passing over those that
/// a process left when it replaced its program ([`is_stale`]; the file
/// stays: the pid's next traced program binds the same name, and removing
/// it could race with that). Entries that are not sockets of this user are
/// passed over.
///
/// # Errors
/// A line naming the directory and what is wrong with it: then nothing in
/// it is read.
pub fn traced_pids() -> Result<Vec<u32>, String> {
    traced_pids_in(&control_dir())
}

/// [`traced_pids`] in `dir`.
///
/// # Errors
/// As [`traced_pids`].
pub fn traced_pids_in(dir: &Path) -> Result<Vec<u32>, String> {
    let Some(d) = PrivateDir::open(dir)? else {
        return Ok(Vec::new());
    };
    let mut pids: Vec<u32> = d
        .names()
        .into_iter()
        .filter_map(|name| {
            let pid: u32 = name.strip_suffix(".sock")?.parse().ok()?;
            if d.entry(&name) != Ok(crate::private_dir::Entry::Socket) {
                return None;
            }
            if Path::new(&format!("/proc/{pid}")).exists() {
                (!is_stale(&d.path().join(&name))).then_some(pid)
            } else {
                d.remove(&name);
                None
            }
        })
        .collect();
    pids.sort_unstable();
    Ok(pids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_without_a_socket_is_told_apart_gone_not_yet_on_the_gpu_or_untraced() {
        let dir = std::env::temp_dir().join(format!("gpu-trace-nosock-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("CUDA_INJECTION64_PATH", "/opt/x/libgpu_trace_cuda.so")
            .spawn()
            .expect("sleep");
        let pid = child.id();
        // Until its exec, a child's /proc shows the parent's environment.
        for _ in 0..200 {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            if String::from_utf8_lossy(&env).contains("libgpu_trace_cuda") {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let traced = send_in(&dir, pid, "status", Duration::from_secs(1)).unwrap_err();
        assert_eq!(
            traced,
            format!(
                "process {pid} is traced but has not started using the GPU yet (gpu-trace loads with CUDA or HIP); try again once it has"
            )
        );
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            send_in(&dir, pid, "status", Duration::from_secs(1)).unwrap_err(),
            format!("no process {pid} is running")
        );
        let mut plain = std::process::Command::new("sleep")
            .arg("30")
            .env_remove("CUDA_INJECTION64_PATH")
            .env_remove("ROCP_TOOL_LIBRARIES")
            .spawn()
            .expect("sleep");
        std::thread::sleep(Duration::from_millis(200));
        let untraced = send_in(&dir, plain.id(), "status", Duration::from_secs(1)).unwrap_err();
        let _ = plain.kill();
        let _ = plain.wait();
        assert!(
            untraced.ends_with("(is it running under gpu-trace record?)"),
            "{untraced}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_socket_nothing_holds_is_stale_and_a_held_or_missing_one_is_not() {
        let dir = std::env::temp_dir().join(format!("gpu-trace-stale-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("1.sock");
        let _ = std::fs::remove_file(&path);
        assert!(!is_stale(&path), "no file");
        let held = UnixDatagram::bind(&path).unwrap();
        assert!(!is_stale(&path), "bound and held");
        // As an exec leaves it: the socket closed, its file still there.
        drop(held);
        assert!(path.exists());
        assert!(is_stale(&path));
        let me = std::process::id();
        let left = socket_path(&dir, me);
        let _ = std::fs::remove_file(&left);
        drop(UnixDatagram::bind(&left).unwrap());
        assert_eq!(
            send_in(&dir, me, "status", Duration::from_secs(1)).unwrap_err(),
            stale(me)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Another user links root's control folder name to a folder of
    /// root's: it is refused as it is, and the folder keeps its mode.
    #[test]
    fn a_control_folder_linked_to_a_folder_of_roots_is_refused_and_left_alone() {
        use gpu_trace_testkit::users::{
            SharedTmp, can_switch, mode_of, other_mkdir, other_symlink,
        };
        use std::os::unix::fs::PermissionsExt;
        if !can_switch("a_control_folder_linked_to_a_folder_of_roots_is_refused_and_left_alone") {
            return;
        }
        let tmp = SharedTmp::new("control-link");
        let roots = tmp.join("root-dir");
        std::fs::create_dir(&roots).unwrap();
        std::fs::set_permissions(&roots, std::fs::Permissions::from_mode(0o755)).unwrap();
        let planted = tmp.join("gpu-trace-0");
        other_symlink(&roots, &planted);
        let r = ensure_control_dir(&planted);
        assert_eq!(
            mode_of(&roots),
            0o755,
            "root's folder was changed through a link another user planted"
        );
        assert_eq!(
            r.unwrap_err(),
            format!(
                "{}: is a symbolic link; not following it",
                planted.display()
            )
        );
        // A folder they made, open to all.
        let made = tmp.join("gpu-trace-1");
        other_mkdir(&made, "0777");
        assert!(
            ensure_control_dir(&made)
                .unwrap_err()
                .contains("owned by uid 65534, not by this user (uid 0)")
        );
        // The client refuses both before reading or sending anything.
        for d in [&planted, &made] {
            let e = send_in(d, 1, "status", Duration::from_secs(5)).unwrap_err();
            assert!(e.starts_with(&d.display().to_string()), "{e}");
            assert!(traced_pids_in(d).is_err());
        }
    }

    /// Env: the socket [`send_as_other_user`] sends to.
    const SEND_TO: &str = "GPU_TRACE_TEST_SEND_TO";

    /// Run as the other user by
    /// [`other_users_cannot_reach_a_control_socket`]: sends `status` to the
    /// socket [`SEND_TO`] names, and says what came of it.
    #[test]
    #[ignore = "run as another user by other_users_cannot_reach_a_control_socket"]
    fn send_as_other_user() {
        let to =
            std::env::var_os(SEND_TO).expect("run by other_users_cannot_reach_a_control_socket");
        let r = UnixDatagram::unbound().unwrap().send_to(b"status", to);
        println!(
            "send: {}",
            match r {
                Ok(_) => "sent".to_owned(),
                Err(e) => format!("{:?}", e.kind()),
            }
        );
    }

    /// A control socket as `bind` makes it: another user's send is refused
    /// by the kernel (EACCES), and the socket gets nothing.
    #[test]
    fn other_users_cannot_reach_a_control_socket() {
        use gpu_trace_testkit::users::{SharedTmp, as_other, can_switch, exe_copy};
        if !can_switch("other_users_cannot_reach_a_control_socket") {
            return;
        }
        let tmp = SharedTmp::new("control-eacces");
        let dir = ensure_control_dir(&tmp.join("gpu-trace-0")).unwrap();
        let path = dir.path().join("4242.sock");
        let sock = UnixDatagram::bind(&path).unwrap();
        sock.set_nonblocking(true).unwrap();
        let exe = exe_copy(&tmp, false);
        let out = as_other(std::process::Command::new(&exe).args([
            "--ignored",
            "--exact",
            "windows::tests::send_as_other_user",
            "--nocapture",
            "-q",
        ]))
        .env(SEND_TO, &path)
        .output()
        .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("send: PermissionDenied"), "{said}");
        let mut buf = [0u8; 64];
        assert_eq!(
            sock.recv(&mut buf).unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock
        );
    }

    fn plan(pairs: &[(&str, &str)]) -> (Plan, Vec<Problem>) {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Plan::from_lookup(&move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn durations_parse_with_units_and_limits() {
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration(" 500ms "), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration("5ms"), None);
        assert_eq!(parse_duration("8d"), None);
        assert_eq!(parse_duration("soon"), None);
        assert_eq!(parse_duration("10 parsecs"), None);
    }

    #[test]
    fn plans_name_the_bad_value() {
        let (p, probs) = plan(&[]);
        assert!(!p.switches() && p.control && probs.is_empty());
        let (p, probs) = plan(&[
            (vars::WINDOW, "2s"),
            (vars::EVERY, "1m"),
            (vars::DELAY, "0"),
        ]);
        assert!(probs.is_empty(), "{probs:?}");
        assert_eq!(
            p.cycle,
            Some((Duration::from_secs(2), Duration::from_secs(60)))
        );
        let (p, probs) = plan(&[(vars::WINDOW, "2s")]);
        assert_eq!(p.cycle, None);
        assert_eq!(
            probs[0].to_string(),
            "INJECTION_WINDOW=\"2s\": expected INJECTION_EVERY as well (the period of the windows); using no duty cycle"
        );
        let (_, probs) = plan(&[(vars::DURATION, "forever"), (vars::PAUSED, "maybe")]);
        assert_eq!(
            probs[0].to_string(),
            "INJECTION_DURATION=\"forever\": expected a duration from 10ms to 7d, such as 30s, 500ms, 2m or 1h; using none"
        );
        assert_eq!(
            probs[1].to_string(),
            "INJECTION_PAUSED=\"maybe\": expected 0 or 1; using 0"
        );
        let (_, probs) = plan(&[(vars::WINDOW, "1m"), (vars::EVERY, "30s")]);
        assert!(
            probs[0]
                .to_string()
                .contains("a window shorter than INJECTION_EVERY")
        );
    }

    /// The switch due now happens on time and takes no time.
    fn on_time(sc: &mut Schedule) {
        let at = sc.next.expect("a switch is due").0;
        sc.advance(at, at);
    }

    #[test]
    fn schedules_open_and_close_at_the_planned_times() {
        let t0 = Instant::now();
        let s = |secs: u64| t0 + Duration::from_secs(secs);
        // Delay then duration: open at 5 s, close at 8 s, then nothing.
        let (p, _) = plan(&[(vars::DELAY, "5s"), (vars::DURATION, "3s")]);
        let mut sc = Schedule::new(&p, t0);
        assert_eq!(sc.next, Some((s(5), true)));
        on_time(&mut sc);
        assert_eq!(sc.next, Some((s(8), false)));
        on_time(&mut sc);
        assert_eq!(sc.next, None);
        // Duty cycle from the start: open now (by start), close at 2, open at 60, close at 62, open at 120.
        let (p, _) = plan(&[(vars::WINDOW, "2s"), (vars::EVERY, "60s")]);
        let mut sc = Schedule::new(&p, t0);
        assert_eq!(sc.next, Some((s(2), false)));
        on_time(&mut sc);
        assert_eq!(sc.next, Some((s(60), true)));
        on_time(&mut sc);
        assert_eq!(sc.next, Some((s(62), false)));
        on_time(&mut sc);
        assert_eq!(sc.next, Some((s(120), true)));
        // Delay plus cycle: windows at 10, 70, 130 ...
        let (p, _) = plan(&[
            (vars::DELAY, "10s"),
            (vars::WINDOW, "1s"),
            (vars::EVERY, "60s"),
        ]);
        let mut sc = Schedule::new(&p, t0);
        assert_eq!(sc.next, Some((s(10), true)));
        on_time(&mut sc);
        assert_eq!(sc.next, Some((s(11), false)));
        on_time(&mut sc);
        assert_eq!(sc.next, Some((s(70), true)));
        // Paused: nothing scheduled.
        let (p, _) = plan(&[(vars::PAUSED, "1"), (vars::DURATION, "3s")]);
        assert!(!p.open_at_start());
        assert_eq!(Schedule::new(&p, t0).next, None);
    }

    /// The controller's wait for the next switch is as long as asked: a
    /// socket receive timeout woke 166 ms late for 3 s here and up to
    /// 1.2 s late for 19 s on the H200, which cut duty-cycle windows short.
    #[test]
    fn the_wait_for_the_next_switch_is_as_long_as_asked() {
        let dir = std::env::temp_dir().join(format!("gpu-trace-wait-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("w.sock");
        let _ = std::fs::remove_file(&path);
        let sock = UnixDatagram::bind(&path).unwrap();
        let asked = Duration::from_secs(3);
        let t = Instant::now();
        assert!(!readable(&sock, Some(asked)));
        let took = t.elapsed();
        assert!(
            took >= asked && took < asked + Duration::from_millis(110),
            "waited {took:?} for {asked:?}"
        );
        // A command ends the wait at once.
        UnixDatagram::unbound()
            .unwrap()
            .send_to(b"status", &path)
            .unwrap();
        let t = Instant::now();
        assert!(readable(&sock, Some(asked)));
        assert!(t.elapsed() < Duration::from_secs(1));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_late_switch_keeps_windows_whole_and_the_cycle_in_phase() {
        let t0 = Instant::now();
        let s = |ms: u64| t0 + Duration::from_millis(ms);
        let (p, _) = plan(&[(vars::WINDOW, "1s"), (vars::EVERY, "20s")]);
        let mut sc = Schedule::new(&p, t0);
        assert_eq!(sc.next, Some((s(1_000), false)));
        // The close is on time; the next window is due at 20 s, but its
        // opening switch begins 650 ms late and takes 50 ms: the window
        // still lasts 1 s from when recording is on.
        on_time(&mut sc);
        assert_eq!(sc.next, Some((s(20_000), true)));
        sc.advance(s(20_650), s(20_700));
        assert_eq!(sc.next, Some((s(21_700), false)));
        // A close that ends after the next period began skips that period:
        // the window opens at 60 s, not at once, late and cut short.
        sc.advance(s(21_700), s(41_200));
        assert_eq!(sc.next, Some((s(60_000), true)));
        on_time(&mut sc);
        assert_eq!(sc.next, Some((s(61_000), false)));
        on_time(&mut sc);
        assert_eq!(sc.next, Some((s(80_000), true)));
    }
}
