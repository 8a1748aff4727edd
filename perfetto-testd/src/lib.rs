//! Perfetto's tracing service for this workspace's system-mode tests.
//!
//! The build script compiles `perfetto-testd` (Perfetto's `traced` and a
//! `perfetto` recording command) from the amalgamated SDK source that the
//! crates.io package `perfetto-sdk-sys` ships: the same Perfetto revision
//! as the producers under test, and nothing from outside the registries.
//! [`Traced`] runs it on sockets of its own; [`Traced::record`] records a
//! session from a text-format config, as `perfetto --txt -c` does.
//!
//! Where `GPU_TRACE_TRACEBOX` names a `tracebox` of Perfetto's own release,
//! the same helpers run that instead (its `traced` and `perfetto`
//! sub-commands take the same options).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The variable naming the socket producers connect to.
pub const PRODUCER_SOCK_VAR: &str = "PERFETTO_PRODUCER_SOCK_NAME";
/// The variable naming the socket consumers (the `perfetto` command) use.
pub const CONSUMER_SOCK_VAR: &str = "PERFETTO_CONSUMER_SOCK_NAME";
/// The variable that points the helpers at a `tracebox` of Perfetto's own.
pub const TRACEBOX_VAR: &str = "GPU_TRACE_TRACEBOX";

/// The `perfetto-testd` binary this crate built.
pub fn built() -> &'static Path {
    Path::new(env!("PERFETTO_TESTD_BIN"))
}

/// The Perfetto SDK source it was built from (`perfetto-sdk-sys-1.4.0`).
pub const SDK: &str = env!("PERFETTO_TESTD_SDK");

/// The binary the helpers run: the `tracebox` that `GPU_TRACE_TRACEBOX`
/// names, else [`built`]. Panics if the variable names no file.
pub fn binary() -> PathBuf {
    match std::env::var_os(TRACEBOX_VAR) {
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(p.is_file(), "{TRACEBOX_VAR}={} is not a file", p.display());
            p
        }
        None => built().to_path_buf(),
    }
}

/// A name no other call of this process uses, for scratch files.
fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A private tracing service: `traced` on sockets in a temporary directory
/// of its own. Killed, and its directory removed (unless `GPU_TRACE_KEEP`
/// is set), on drop.
#[derive(Debug)]
pub struct Traced {
    binary: PathBuf,
    child: Child,
    dir: PathBuf,
}

/// What `traced` says of itself (`perfetto --query-raw`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceState {
    /// Connected producers: (id, pid, name).
    pub producers: Vec<(u64, u64, String)>,
    /// Registered data sources: (name, producer id).
    pub data_sources: Vec<(String, u64)>,
    /// Sessions.
    pub sessions: u64,
    /// Started sessions.
    pub sessions_started: u64,
}

impl ServiceState {
    /// The pids of the producers that registered data source `name`.
    pub fn pids_with(&self, name: &str) -> Vec<u64> {
        let mut pids: Vec<u64> = self
            .data_sources
            .iter()
            .filter(|(n, _)| n == name)
            .filter_map(|(_, id)| self.producers.iter().find(|p| p.0 == *id).map(|p| p.1))
            .collect();
        pids.sort_unstable();
        pids
    }
}

impl Traced {
    /// Starts `traced` and waits until both its sockets accept connections.
    pub fn start(tag: &str) -> Traced {
        let binary = binary();
        let dir = std::env::temp_dir().join(unique(&format!("gpu-trace-traced-{tag}")));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("traced's directory");
        let log = std::fs::File::create(dir.join("traced.log")).expect("traced's log");
        let child = Command::new(&binary)
            .arg("traced")
            .env(PRODUCER_SOCK_VAR, dir.join("producer.sock"))
            .env(CONSUMER_SOCK_VAR, dir.join("consumer.sock"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("traced's log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{} traced does not start: {e}", binary.display()));
        let mut t = Traced { binary, child, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let up = [t.producer_sock(), t.consumer_sock()]
                .iter()
                .all(|s| std::os::unix::net::UnixStream::connect(s).is_ok());
            if up {
                return t;
            }
            if let Ok(Some(status)) = t.child.try_wait() {
                panic!("traced exited ({status}):\n{}", t.log());
            }
            assert!(
                Instant::now() < deadline,
                "traced's sockets did not accept connections within 10 s:\n{}",
                t.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Where producers connect (set it as [`PRODUCER_SOCK_VAR`]).
    pub fn producer_sock(&self) -> PathBuf {
        self.dir.join("producer.sock")
    }

    /// Where consumers connect.
    pub fn consumer_sock(&self) -> PathBuf {
        self.dir.join("consumer.sock")
    }

    /// The service's own directory (sockets, configs, traces, logs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What `traced` printed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("traced.log")).unwrap_or_default()
    }

    /// The `perfetto` command, talking to this service.
    pub fn perfetto(&self) -> Command {
        let mut c = Command::new(&self.binary);
        c.arg("perfetto")
            .env(CONSUMER_SOCK_VAR, self.consumer_sock())
            .env(PRODUCER_SOCK_VAR, self.producer_sock())
            .stdin(Stdio::null());
        c
    }

    /// Starts recording with the text config `config` into
    /// `<dir>/<name>.pftrace` (`perfetto --txt -c <name>.pbtx -o ...`), in
    /// the background.
    pub fn record(&self, name: &str, config: &str) -> Recording {
        let cfg = self.dir.join(format!("{name}.pbtx"));
        let out = self.dir.join(format!("{name}.pftrace"));
        let log = self.dir.join(format!("{name}.perfetto.log"));
        std::fs::write(&cfg, config).expect("config file");
        let log_file = std::fs::File::create(&log).expect("perfetto's log");
        let child = self
            .perfetto()
            .arg("--txt")
            .arg("-c")
            .arg(&cfg)
            .arg("-o")
            .arg(&out)
            .stdout(log_file.try_clone().expect("perfetto's log"))
            .stderr(log_file)
            .spawn()
            .expect("perfetto starts");
        Recording {
            child: Some(child),
            out,
            log,
        }
    }

    /// The service's state (`perfetto --query-raw`, decoded).
    pub fn state(&self) -> ServiceState {
        let out = self
            .perfetto()
            .arg("--query-raw")
            .output()
            .expect("perfetto --query-raw runs");
        assert!(
            out.status.success(),
            "perfetto --query-raw failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        decode_service_state(&out.stdout)
    }

    /// Polls the service's state (every 20 ms, at most `limit`) until
    /// `done` holds; panics, with the last state, at the deadline.
    pub fn wait_until(
        &self,
        what: &str,
        limit: Duration,
        done: impl Fn(&ServiceState) -> bool,
    ) -> ServiceState {
        let deadline = Instant::now() + limit;
        loop {
            let s = self.state();
            if done(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "traced: no {what} within {limit:?}; last state {s:?}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::env::var_os("GPU_TRACE_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            eprintln!("kept {}", self.dir.display());
        }
    }
}

/// `TracingServiceState`: producers (1: id 1, name 2, pid 5), data sources
/// (2: descriptor 1 with name 1, producer id 2), sessions (3), started
/// sessions (4).
fn decode_service_state(data: &[u8]) -> ServiceState {
    use gpu_trace_reader::pb::Fields;
    let mut s = ServiceState::default();
    for (n, v) in Fields::new(data).flatten() {
        match n {
            1 => {
                let (mut id, mut pid, mut name) = (0, 0, String::new());
                for (f, x) in Fields::new(v.as_bytes().unwrap_or_default()).flatten() {
                    match f {
                        1 => id = x.as_u64().unwrap_or(0),
                        2 => name = x.as_str().unwrap_or_default().to_owned(),
                        5 => pid = x.as_u64().unwrap_or(0),
                        _ => {}
                    }
                }
                s.producers.push((id, pid, name));
            }
            2 => {
                let (mut name, mut producer) = (String::new(), 0);
                for (f, x) in Fields::new(v.as_bytes().unwrap_or_default()).flatten() {
                    match f {
                        1 => {
                            for (g, y) in Fields::new(x.as_bytes().unwrap_or_default()).flatten() {
                                if g == 1 {
                                    name = y.as_str().unwrap_or_default().to_owned();
                                }
                            }
                        }
                        2 => producer = x.as_u64().unwrap_or(0),
                        _ => {}
                    }
                }
                s.data_sources.push((name, producer));
            }
            3 => s.sessions = v.as_u64().unwrap_or(0),
            4 => s.sessions_started = v.as_u64().unwrap_or(0),
            _ => {}
        }
    }
    s
}

/// A `perfetto` command recording in the background. Killed on drop if
/// still running.
#[derive(Debug)]
pub struct Recording {
    child: Option<Child>,
    out: PathBuf,
    log: PathBuf,
}

impl Recording {
    /// The trace file it writes.
    pub fn output(&self) -> &Path {
        &self.out
    }

    /// What the command printed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops the session (SIGTERM, as Ctrl-C would), waits at most 30 s for
    /// the command to write the trace and exit, and returns the trace's path.
    pub fn stop(mut self) -> PathBuf {
        if let Some(c) = &self.child {
            let pid = rustix::process::Pid::from_child(c);
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        self.finish(Duration::from_secs(30))
    }

    /// Waits at most `limit` for the session to end by itself
    /// (`duration_ms`) and returns the trace's path.
    pub fn wait(mut self, limit: Duration) -> PathBuf {
        self.finish(limit)
    }

    fn finish(&mut self, limit: Duration) -> PathBuf {
        let mut child = self.child.take().expect("a running command");
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(s) = child.try_wait().expect("perfetto's status") {
                break s;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("perfetto did not finish within {limit:?}:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(
            status.success(),
            "perfetto failed ({status}):\n{}",
            self.log()
        );
        assert!(
            self.out.is_file(),
            "perfetto wrote no {}:\n{}",
            self.out.display(),
            self.log()
        );
        self.out.clone()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The binary config that the built `perfetto-testd` makes of the text
/// config `text` (`config-to-pb`), or its error message.
pub fn config_to_pb(text: &str) -> Result<Vec<u8>, String> {
    use std::io::Write;
    let mut child = Command::new(built())
        .arg("config-to-pb")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("perfetto-testd config-to-pb starts");
    child
        .stdin
        .take()
        .expect("its stdin")
        .write_all(text.as_bytes())
        .expect("the config written to it");
    let out = child.wait_with_output().expect("its output");
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim_end().to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_state_is_decoded() {
        use gpu_trace_reader::pb::Writer;
        let mut w = Writer::new();
        w.nested(1, |p| {
            p.varint(1, 3).string(2, "app").varint(5, 4242);
        });
        w.nested(2, |d| {
            d.nested(1, |x| {
                x.string(1, "gpu.renderstages.nv");
            })
            .varint(2, 3);
        });
        w.varint(3, 2).varint(4, 1);
        let s = decode_service_state(w.as_bytes());
        assert_eq!(s.producers, [(3, 4242, "app".to_owned())]);
        assert_eq!(s.pids_with("gpu.renderstages.nv"), [4242]);
        assert!(s.pids_with("gpu.counters.nv").is_empty());
        assert_eq!((s.sessions, s.sessions_started), (2, 1));
    }
}
