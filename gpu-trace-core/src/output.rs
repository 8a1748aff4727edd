//! Where the standalone trace file goes.
//!
//! The in-process service opens the file itself with `O_CREAT|O_EXCL` and,
//! if that fails, silently never starts. So the path is settled here first:
//! patterns are expanded, an existing file is never overwritten (a numbered
//! name is chosen and announced), and an unwritable place falls back to the
//! working directory and then the temp directory, with one clear line.

use std::fs::OpenOptions;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Set by `gpu-trace record`: a file to which every traced process appends
/// the path of its trace, so that the launcher can summarise them.
pub const RECORD_LOG_VAR: &str = "GPU_TRACE_RECORD_LOG";

/// The program's name for file names: the script for `python train.py`,
/// the module for `python -m pkg.mod`, else the executable's file name.
pub fn program_name() -> String {
    let args: Vec<String> = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_else(|_| std::env::args().collect());
    program_name_from(&args)
}

fn base(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

fn program_name_from(args: &[String]) -> String {
    let Some(exe) = args.first() else {
        return "gpu-trace".to_owned();
    };
    let exe_base = base(exe);
    if exe_base.starts_with("python") {
        let mut it = args[1..].iter();
        while let Some(a) = it.next() {
            if a == "-m" {
                if let Some(m) = it.next() {
                    return sanitize(m);
                }
            } else if a == "-c" {
                return sanitize(exe_base);
            } else if !a.starts_with('-') {
                let b = base(a);
                return sanitize(b.strip_suffix(".py").unwrap_or(b));
            }
        }
    }
    sanitize(exe_base)
}

fn sanitize(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() {
        "gpu-trace".to_owned()
    } else {
        out
    }
}

fn hostname() -> String {
    let u = rustix::system::uname();
    sanitize(&u.nodename().to_string_lossy())
}

/// Expands `%p` (pid), `%n` (program), `%h` (host) and `%%`.
pub fn expand(pattern: &str, pid: u32, program: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('p') => out.push_str(&pid.to_string()),
            Some('n') => out.push_str(program),
            Some('h') => out.push_str(&hostname()),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// The outcome of settling the output path.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    let mut wanted = PathBuf::from(expand(pattern, pid, program));
    if pattern.ends_with('/') || wanted.is_dir() {
        wanted.push(&default_name);
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    if wanted.is_relative() {
        wanted = cwd.join(wanted);
    }
    let mut notes = Vec::new();
    let candidates = [
        wanted.clone(),
        cwd.join(&default_name),
        std::env::temp_dir().join(&default_name),
    ];
    let mut last_err = String::new();
    for (i, c) in candidates.iter().enumerate() {
        if i > 0 && candidates[..i].contains(c) {
            continue;
        }
        match claim(c) {
            Ok(p) => {
                if i > 0 {
                    notes.push(format!(
                        "cannot write the trace to {}: {last_err}; writing {} instead",
                        candidates[0].display(),
                        p.display()
                    ));
                } else if p != *c {
                    notes.push(format!(
                        "{} exists and is kept; writing {} instead",
                        c.display(),
                        p.display()
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
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )))
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
    fn program_names() {
        assert_eq!(
            program_name_from(&args(&["/usr/bin/python3", "train.py"])),
            "train"
        );
        assert_eq!(
            program_name_from(&args(&["python3.12", "-u", "/x/y/bench.py", "--lr", "1"])),
            "bench"
        );
        assert_eq!(
            program_name_from(&args(&["python", "-m", "torch.distributed.run"])),
            "torch.distributed.run"
        );
        assert_eq!(program_name_from(&args(&["./my app"])), "my_app");
        assert_eq!(program_name_from(&[]), "gpu-trace");
    }

    #[test]
    fn expansion() {
        assert_eq!(expand("%n-%p.pftrace", 42, "train"), "train-42.pftrace");
        assert_eq!(expand("100%%-%p", 7, "x"), "100%-7");
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

    #[test]
    fn unwritable_directory_falls_back_with_a_note() {
        let r = resolve("/proc/no-such-dir/x.pftrace", 5, "prog").unwrap();
        assert_ne!(r.path, PathBuf::from("/proc/no-such-dir/x.pftrace"));
        assert!(r.path.ends_with("prog-5.pftrace"));
        assert!(r.notes[0].contains("cannot write the trace to /proc/no-such-dir/x.pftrace"));
    }
}
