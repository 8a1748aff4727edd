//! Where the standalone trace file goes.
//!
//! The in-process service opens the file itself with `O_CREAT|O_EXCL` and,
//! if that fails, silently never starts. So the path is settled here first:
//! patterns are expanded, a name without an extension gets `.pftrace`, an
//! existing file is never overwritten (a numbered name is chosen and
//! announced), and an unwritable place falls back to the working directory
//! and then this user's own folder in the temp directory
//! (`<temp>/gpu-trace-<uid>`, see [`crate::private_dir`]), with one clear
//! line. Values the pattern takes from the environment (`%q{VAR}`) are
//! made safe for a file name, as the program's name is.
//!
//! Under `gpu-trace record`, each process also tells the launcher what
//! became of it through the record log ([`announce_trace`],
//! [`announce_untraced`], read back with [`read_record_log`]).

use crate::private_dir::PrivateDir;
use std::fs::OpenOptions;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Set by `gpu-trace record`: a file to which every traced process appends
/// the path of its trace, or why it runs untraced, so that the launcher can
/// summarise them.
pub const RECORD_LOG_VAR: &str = "GPU_TRACE_RECORD_LOG";

/// The extension given to an output name that has none.
pub const EXTENSION: &str = "pftrace";

/// One line of the record log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Announcement {
    /// A process is writing this trace.
    Trace {
        /// The process.
        pid: u32,
        /// The trace.
        path: PathBuf,
    },
    /// A process loaded gpu-trace but runs untraced, and why (one short
    /// clause, such as "CUPTI is already in use by another profiler").
    Untraced {
        /// The process.
        pid: u32,
        /// Why.
        reason: String,
    },
}

fn announce(line: &str) {
    let Some(log) = std::env::var_os(RECORD_LOG_VAR) else {
        return;
    };
    if let Err(e) = append_to_record_log(Path::new(&log), line) {
        crate::warn_once!("{RECORD_LOG_VAR}={log:?}: {e}");
    }
}

/// Appends `line` to the record log `log`, which must be an existing
/// regular file of this user in a directory of this user that no one else
/// can write to ([`PrivateDir`]), not reached through a symbolic link. It
/// is never created: a process that outlives `gpu-trace record` finds it
/// removed and writes nothing (`Ok`), instead of leaving a new file behind.
///
/// # Errors
/// A line naming the log and what is wrong with it.
pub(crate) fn append_to_record_log(log: &Path, line: &str) -> Result<(), String> {
    use std::io::Write;
    let (Some(parent), Some(name)) = (log.parent(), log.file_name().and_then(|n| n.to_str()))
    else {
        return Err(format!("{}: not a path to a file", log.display()));
    };
    let opened = match PrivateDir::open(parent)? {
        Some(dir) => dir.open_file(
            name,
            rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::APPEND,
        )?,
        None => None,
    };
    let Some(fd) = opened else {
        crate::verbose!(
            "the record log {} is gone (gpu-trace record has finished)",
            log.display()
        );
        return Ok(());
    };
    // One short write with O_APPEND: lines from concurrent processes do not
    // interleave.
    let _ = std::fs::File::from(fd).write_all(format!("{line}\n").as_bytes());
    Ok(())
}

/// Tells `gpu-trace record` (if it runs this process) that `path` is
/// being written.
pub fn announce_trace(path: &Path) {
    announce(&format!(
        "trace\t{}\t{}",
        std::process::id(),
        path.display()
    ));
}

/// Tells `gpu-trace record` (if it runs this process) that this process
/// runs untraced, and why.
pub fn announce_untraced(reason: &str) {
    let reason = reason.replace(['\n', '\t'], " ");
    announce(&format!("untraced\t{}\t{reason}", std::process::id()));
}

/// The announcements in a record log's text, in order; lines that are not
/// announcements are skipped.
pub fn read_record_log(text: &str) -> Vec<Announcement> {
    text.lines()
        .filter_map(|l| {
            let (kind, rest) = l.split_once('\t')?;
            let (pid, rest) = rest.split_once('\t')?;
            let pid = pid.parse().ok()?;
            match kind {
                "trace" => Some(Announcement::Trace {
                    pid,
                    path: PathBuf::from(rest),
                }),
                "untraced" => Some(Announcement::Untraced {
                    pid,
                    reason: rest.to_owned(),
                }),
                _ => None,
            }
        })
        .collect()
}

pub use gpu_trace_model::process::{file_name_part, program_name, program_name_of};

fn hostname() -> String {
    let u = rustix::system::uname();
    let h = file_name_part(&u.nodename().to_string_lossy());
    if h.is_empty() {
        "gpu-trace".to_owned()
    } else {
        h
    }
}

/// The environment variables a pattern's `%q{VAR}` escapes name, in order.
/// `Err` with the offending text when an escape is malformed.
pub fn pattern_vars(pattern: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut rest = pattern;
    while let Some(i) = rest.find('%') {
        let after = &rest[i + 1..];
        match after.chars().next() {
            Some('q') => {
                let body = after[1..]
                    .strip_prefix('{')
                    .and_then(|b| b.find('}').map(|end| &b[..end]))
                    .filter(|v| is_var_name(v))
                    .ok_or_else(|| after.chars().take(12).collect::<String>())?;
                out.push(body);
                rest = &after[1 + body.len() + 2..];
            }
            Some(c) => rest = &after[c.len_utf8()..],
            None => break,
        }
    }
    Ok(out)
}

fn is_var_name(v: &str) -> bool {
    let mut b = v.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// A `%q{VAR}` whose variable is not set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("%q{{{0}}} names the environment variable {0}, which is not set")]
pub struct UnsetVar(pub String);

/// Expands `%p` (pid), `%n` (program), `%h` (host), `%q{VAR}` (the value
/// of environment variable `VAR`, read through `env`, made safe for a file
/// name by [`file_name_part`]: `RANK=../../x` gives `.._.._x`) and `%%`.
///
/// # Errors
/// [`UnsetVar`] when a `%q{VAR}` names a variable `env` does not know.
pub fn expand_with(
    pattern: &str,
    pid: u32,
    program: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, UnsetVar> {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some((_, 'p')) => out.push_str(&pid.to_string()),
            Some((_, 'n')) => out.push_str(program),
            Some((_, 'h')) => out.push_str(&hostname()),
            Some((_, '%')) => out.push('%'),
            Some((_, 'q')) if pattern[i + 2..].starts_with('{') => {
                let body = &pattern[i + 3..];
                match body.find('}') {
                    Some(end) if is_var_name(&body[..end]) => {
                        let var = &body[..end];
                        let value = env(var).ok_or_else(|| UnsetVar(var.to_owned()))?;
                        out.push_str(&file_name_part(&value));
                        // Skip `{VAR}`.
                        for _ in 0..end + 2 {
                            chars.next();
                        }
                    }
                    _ => out.push_str("%q"),
                }
            }
            Some((_, other)) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    Ok(out)
}

/// [`expand_with`] over the process environment; an unset `%q{VAR}`
/// becomes the empty string.
pub fn expand(pattern: &str, pid: u32, program: &str) -> String {
    let env = |v: &str| Some(crate::config::env_lookup(v).unwrap_or_default());
    expand_with(pattern, pid, program, &env).unwrap_or_default()
}

/// Where `pattern` puts the trace of process `pid` running `program`,
/// before fallbacks and numbering: expanded, inside a directory if it
/// names one (or ends in `/`), `.pftrace` added to a name without an
/// extension, relative to the working directory.
///
/// # Errors
/// [`UnsetVar`] as [`expand_with`].
pub fn wanted_path(
    pattern: &str,
    pid: u32,
    program: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, UnsetVar> {
    let mut wanted = PathBuf::from(expand_with(pattern, pid, program, env)?);
    if pattern.ends_with('/') || wanted.is_dir() {
        wanted.push(expand(crate::config::DEFAULT_OUTPUT, pid, program));
    } else if wanted.extension().is_none() {
        wanted.set_extension(EXTENSION);
    }
    if wanted.is_relative() {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        wanted = cwd.join(wanted);
    }
    Ok(wanted)
}

/// The outcome of settling the output path.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Resolved {
    /// Absolute path the trace will be written to; it does not exist yet.
    pub path: PathBuf,
    /// Lines to print: why another path than the requested one is used.
    pub notes: Vec<String>,
}

/// No usable path anywhere.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot write a trace file: {0}")]
pub struct NoOutput(pub String);

/// Settles the output path for `pattern`.
pub fn resolve(pattern: &str, pid: u32, program: &str) -> Result<Resolved, NoOutput> {
    let default_name = expand(crate::config::DEFAULT_OUTPUT, pid, program);
    let wanted = wanted_path(pattern, pid, program, &crate::config::env_lookup)
        .map_err(|e| NoOutput(e.to_string()))?;
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut notes = Vec::new();
    // The last resort is this user's own folder in the temp directory,
    // not the shared temp directory itself.
    let private = crate::private_dir::temp_dir();
    let candidates = [
        wanted.clone(),
        cwd.join(&default_name),
        private.join(&default_name),
    ];
    let mut last_err = String::new();
    for (i, c) in candidates.iter().enumerate() {
        if i > 0 && candidates[..i].contains(c) {
            continue;
        }
        if i == 2
            && let Err(e) = PrivateDir::create(&private)
        {
            last_err = e;
            continue;
        }
        match claim(c) {
            Ok(p) => {
                if i > 0 {
                    notes.push(format!(
                        "cannot write the trace to {}: {last_err}; writing {} instead",
                        shown(&candidates[0]),
                        shown(&p)
                    ));
                } else if p != *c {
                    notes.push(format!(
                        "{} exists and is kept; writing {} instead",
                        shown(c),
                        shown(&p)
                    ));
                }
                return Ok(Resolved { path: p, notes });
            }
            Err(e) => last_err = e,
        }
    }
    Err(NoOutput(format!(
        "tried {} ({last_err})",
        candidates
            .iter()
            .map(|c| shown(c))
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// A path as the notes show it: it comes from the environment
/// (`INJECTION_OUTPUT`, `%q{VAR}`) or the program's name, and is escaped and
/// cut as values are ([`crate::log::plain`]).
fn shown(p: &Path) -> String {
    crate::log::plain(&p.to_string_lossy()).to_string()
}

/// Finds a free name at or next to `path` in a writable directory. The file
/// is created to prove it can be, then removed: the tracing service insists
/// on creating it itself.
fn claim(path: &Path) -> Result<PathBuf, String> {
    let (stem, ext) = split_ext(path);
    for n in 0..1000 {
        let p = if n == 0 {
            path.to_path_buf()
        } else {
            PathBuf::from(format!("{stem}.{n}{ext}"))
        };
        match OpenOptions::new().write(true).create_new(true).open(&p) {
            Ok(f) => {
                drop(f);
                let _ = std::fs::remove_file(&p);
                return Ok(p);
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    Err("1000 numbered names are taken".to_owned())
}

fn split_ext(path: &Path) -> (String, String) {
    let s = path.display().to_string();
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if s.len() > e.len() + 1 => {
            let cut = s.len() - e.len() - 1;
            (s[..cut].to_owned(), s[cut..].to_owned())
        }
        _ => (s, String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn expansion() {
        assert_eq!(expand("%n-%p.pftrace", 42, "train"), "train-42.pftrace");
        assert_eq!(expand("100%%-%p", 7, "x"), "100%-7");
        let env = |v: &str| (v == "RANK").then(|| "3".to_owned());
        assert_eq!(
            expand_with("r%q{RANK}-%p.%q{RANK}", 9, "x", &env).unwrap(),
            "r3-9.3"
        );
        assert_eq!(
            expand_with("r%q{WORLD}", 9, "x", &env)
                .unwrap_err()
                .to_string(),
            "%q{WORLD} names the environment variable WORLD, which is not set"
        );
        // Not an escape of a variable: left as written.
        assert_eq!(expand_with("a%qb", 1, "x", &env).unwrap(), "a%qb");
    }

    /// A value from the environment is made safe like the program's name:
    /// `RANK=/../../x` stays inside the folder the pattern names.
    #[test]
    fn values_of_q_escapes_cannot_leave_the_folder() {
        let env = |v: &str| match v {
            "RANK" => Some("/../../x".to_owned()),
            "DOTS" => Some("..".to_owned()),
            "JOB" => Some("my job: 1".to_owned()),
            _ => None,
        };
        let p = |pat: &str| wanted_path(pat, 5, "prog", &env).unwrap();
        assert_eq!(
            p("/out/r%q{RANK}.pftrace"),
            PathBuf::from("/out/r_.._.._x.pftrace")
        );
        assert_eq!(p("/out/%q{DOTS}/t"), PathBuf::from("/out/__/t.pftrace"));
        assert_eq!(
            p("/out/%q{JOB}-%p"),
            PathBuf::from("/out/my_job__1-5.pftrace")
        );
        assert_eq!(file_name_part("."), "_");
        assert_eq!(file_name_part(".x"), ".x");
        assert_eq!(file_name_part(""), "");
        assert_eq!(program_name_of(&args(&[".."])), "__");
    }

    #[test]
    fn pattern_variables() {
        assert_eq!(
            pattern_vars("t-%q{RANK}-%q{_X1}.pftrace").unwrap(),
            ["RANK", "_X1"]
        );
        assert_eq!(pattern_vars("%%q{A}").unwrap(), Vec::<&str>::new());
        assert_eq!(pattern_vars("%n-%p").unwrap(), Vec::<&str>::new());
        for bad in ["%q", "%q{}", "%q{1A}", "%q{RANK", "%q{A-B}", "%qRANK"] {
            assert!(pattern_vars(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_name_without_an_extension_gets_pftrace() {
        let env = |_: &str| None;
        let p = |pat: &str| wanted_path(pat, 5, "prog", &env).unwrap();
        assert_eq!(p("/x/run"), PathBuf::from("/x/run.pftrace"));
        assert_eq!(p("/x/run.perfetto"), PathBuf::from("/x/run.perfetto"));
        assert_eq!(p("/x/run-%p"), PathBuf::from("/x/run-5.pftrace"));
        assert_eq!(p("/x/"), PathBuf::from("/x/prog-5.pftrace"));
        assert!(p("rel").ends_with("rel.pftrace") && p("rel").is_absolute());
    }

    #[test]
    fn record_log_round_trip() {
        let text = "trace\t7\t/a/b\tc.pftrace\nuntraced\t42\tno CUPTI\nnoise\nuntraced\tx\ty\n";
        assert_eq!(
            read_record_log(text),
            [
                Announcement::Trace {
                    pid: 7,
                    path: "/a/b\tc.pftrace".into()
                },
                Announcement::Untraced {
                    pid: 42,
                    reason: "no CUPTI".into()
                }
            ]
        );
    }

    #[test]
    fn existing_file_is_not_clobbered() {
        let dir = std::env::temp_dir().join(format!("gpu-trace-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("t.pftrace");
        std::fs::write(&f, b"keep me").unwrap();
        let r = resolve(f.to_str().unwrap(), 1, "p").unwrap();
        assert_eq!(r.path, dir.join("t.1.pftrace"));
        assert!(r.notes[0].contains("exists and is kept"), "{:?}", r.notes);
        assert_eq!(std::fs::read(&f).unwrap(), b"keep me");
        assert!(!r.path.exists(), "the service must be able to create it");
        // A directory gets the default name inside it.
        let r = resolve(&format!("{}/", dir.display()), 9, "prog").unwrap();
        assert_eq!(r.path, dir.join("prog-9.pftrace"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A link at the output path (to a file or to nothing) is kept, not
    /// followed: the trace is written next to it.
    #[test]
    fn a_link_at_the_output_path_is_kept() {
        let dir = std::env::temp_dir().join(format!("gpu-trace-out-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("target");
        let link = dir.join("t.pftrace");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let r = resolve(link.to_str().unwrap(), 1, "p").unwrap();
        assert_eq!(r.path, dir.join("t.1.pftrace"));
        assert!(!target.exists(), "followed the link");
        assert_eq!(std::fs::read_link(&link).unwrap(), target);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The record log is appended to only when it is a file of ours in a
    /// directory of ours; it is never created (a process that outlives the
    /// launcher finds it gone) and never reached through a link.
    #[test]
    fn the_record_log_is_only_appended_to_never_made_or_followed() {
        use gpu_trace_testkit::users::SharedTmp;
        let tmp = SharedTmp::new("record-log");
        let dir = PrivateDir::create(&tmp.join("gpu-trace-x")).unwrap();
        drop(
            dir.create_file("record-1.log", rustix::fs::OFlags::WRONLY)
                .unwrap(),
        );
        let log = dir.path().join("record-1.log");
        append_to_record_log(&log, "trace\t1\t/a.pftrace").unwrap();
        append_to_record_log(&log, "untraced\t2\twhy").unwrap();
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "trace\t1\t/a.pftrace\nuntraced\t2\twhy\n"
        );
        // Gone (the launcher removed it): not made again.
        std::fs::remove_file(&log).unwrap();
        append_to_record_log(&log, "trace\t3\t/b.pftrace").unwrap();
        assert!(!log.exists(), "a late process made the record log again");
        // Its folder gone too: nothing made.
        let gone = tmp.join("gone/record-1.log");
        append_to_record_log(&gone, "x").unwrap();
        assert!(!tmp.join("gone").exists());
        // A link in its place is not followed.
        let target = tmp.join("elsewhere");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, &log).unwrap();
        assert_eq!(
            append_to_record_log(&log, "x").unwrap_err(),
            format!("{}: is a symbolic link; not following it", log.display())
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        // In a folder others can write to (the shared one itself): refused.
        let shared = tmp.join("record-2.log");
        std::fs::write(&shared, "").unwrap();
        assert!(append_to_record_log(&shared, "x").is_err());
        assert_eq!(std::fs::read_to_string(&shared).unwrap(), "");
        assert!(append_to_record_log(Path::new("rel.log"), "x").is_err());
    }

    #[test]
    fn unwritable_directory_falls_back_with_a_note() {
        let r = resolve("/proc/no-such-dir/x.pftrace", 5, "prog").unwrap();
        assert_ne!(r.path, PathBuf::from("/proc/no-such-dir/x.pftrace"));
        assert!(r.path.ends_with("prog-5.pftrace"));
        assert!(r.notes[0].contains("cannot write the trace to /proc/no-such-dir/x.pftrace"));
    }
}
