//! The launcher outlives the signals meant for the program, so that it can
//! wait for the program and its trace and return the program's status.
//!
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT are caught from before the program
//! starts. One the terminal generated (Ctrl-C, Ctrl-\, a hang-up) went to
//! the whole foreground process group, the program included, so it is not
//! sent again. SIGINT is never passed on: it is the signal sent to a group
//! (by the terminal, or `kill -INT -PGID`), and a second one would reach a
//! program in the middle of its own Ctrl-C handling (Python's
//! KeyboardInterrupt cleanup, a checkpoint) and cut it short. SIGTERM,
//! SIGHUP and SIGQUIT sent with `kill` are passed on. A second SIGINT
//! within [`KILL_WINDOW`] of the first kills the program.

use rustix::process::{Pid, Signal};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::SignalsInfo;
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::low_level::siginfo::Cause;
use std::os::fd::OwnedFd;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How soon a second Ctrl-C kills the program.
pub(crate) const KILL_WINDOW: Duration = Duration::from_secs(3);
/// A Ctrl-C this soon after the program's end is the one that ended it.
const SAME_SIGNAL: Duration = Duration::from_millis(500);

/// The signals caught.
const CAUGHT: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

/// Signals caught, not yet aimed at a program (the program has not started).
pub(crate) struct Catcher(SignalsInfo<WithOrigin>);

/// Passes signals on to one program; once it has exited, a signal ends
/// the launcher (as the signal's default would, with status 128+N), but
/// for the Ctrl-C that ended the program, which may reach the launcher
/// just after that end: the summary still comes.
pub(crate) struct Forwarder {
    handle: signal_hook::iterator::Handle,
    thread: Option<std::thread::JoinHandle<()>>,
    /// When the program exited.
    exited: Arc<OnceLock<Instant>>,
}

impl Catcher {
    /// Catches the signals from now on (their default actions no longer
    /// apply to this process; the program starts with the defaults).
    pub(crate) fn install() -> std::io::Result<Catcher> {
        SignalsInfo::<WithOrigin>::new(CAUGHT).map(Catcher)
    }

    /// Passes the signals caught from now on to the program `pid`.
    pub(crate) fn forward_to(self, pid: u32) -> Forwarder {
        let mut signals = self.0;
        let handle = signals.handle();
        let target = Target::new(pid);
        let exited = Arc::new(OnceLock::<Instant>::new());
        let gone = exited.clone();
        let thread = std::thread::Builder::new()
            .name("gpu-trace-signals".into())
            .spawn(move || {
                let mut first_int: Option<Instant> = None;
                for origin in signals.forever() {
                    let sig = origin.signal;
                    if let Some(at) = gone.get() {
                        // The Ctrl-C that ended the program itself may
                        // reach this thread only just after the program's
                        // end: the summary still comes. Another one, or a
                        // later one, stops it.
                        if sig == SIGINT && first_int.is_none() && at.elapsed() < SAME_SIGNAL {
                            first_int = Some(Instant::now());
                            continue;
                        }
                        eprintln!("gpu-trace: {}: stopping", signal_name(sig));
                        std::process::exit(128 + sig);
                    }
                    // The program got it too (see the module doc).
                    let by_terminal = origin.cause == Cause::Kernel || sig == SIGINT;
                    if sig == SIGINT {
                        if first_int.is_some_and(|t| t.elapsed() < KILL_WINDOW) {
                            eprintln!(
                                "gpu-trace: SIGINT again: killing the program (pid {pid}); its trace ends at its last periodic write"
                            );
                            target.send(Signal::KILL);
                            continue;
                        }
                        first_int = Some(Instant::now());
                    }
                    let name = signal_name(sig);
                    if !by_terminal && let Some(s) = Signal::from_named_raw(sig) {
                        target.send(s);
                    }
                    let again = if sig == SIGINT {
                        format!("; Ctrl-C again within {} s kills it", KILL_WINDOW.as_secs())
                    } else {
                        String::new()
                    };
                    eprintln!(
                        "gpu-trace: {name}{}: waiting for the program to exit and write its trace{again}",
                        if by_terminal { "" } else { " passed to the program" }
                    );
                }
            })
            .ok();
        Forwarder {
            handle,
            thread,
            exited,
        }
    }
}

impl Forwarder {
    /// The program has exited: nothing more to pass on.
    pub(crate) fn program_exited(&self) {
        let _ = self.exited.set(Instant::now());
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The program, by pidfd where the kernel has them: a signal then cannot
/// reach another process that took over the pid after the program exited.
struct Target {
    pid: Option<Pid>,
    pidfd: Option<OwnedFd>,
}

impl Target {
    fn new(pid: u32) -> Target {
        let pid = i32::try_from(pid).ok().and_then(Pid::from_raw);
        let pidfd = pid.and_then(|p| {
            rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok()
        });
        Target { pid, pidfd }
    }

    fn send(&self, s: Signal) {
        let _ = match (&self.pidfd, self.pid) {
            (Some(fd), _) => rustix::process::pidfd_send_signal(fd, s),
            (None, Some(p)) => rustix::process::kill_process(p, s),
            (None, None) => Ok(()),
        };
    }
}

pub(crate) fn signal_name(sig: i32) -> String {
    signal_hook::low_level::signal_name(sig)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("signal {sig}"))
}
