//! One sampling process per GPU: an exclusive `flock` on a file per GPU,
//! held by the process that samples it until it exits (the kernel drops the
//! lock with the process, however it ends).

use rustix::fs::{FlockOperation, Mode, OFlags};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// Where the lock files are: `configured` (`INJECTION_TELEMETRY_LOCK_DIR`),
/// else `$XDG_RUNTIME_DIR/gpu-trace` (per user, on a tmpfs), else
/// `<temp dir>/gpu-trace-<uid>`. Processes of one user share it; set the
/// variable to one folder for all users to share the GPUs' locks across
/// users too.
pub fn lock_dir(configured: Option<&Path>) -> PathBuf {
    if let Some(d) = configured {
        return d.to_path_buf();
    }
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d).join("gpu-trace"),
        None => {
            std::env::temp_dir().join(format!("gpu-trace-{}", rustix::process::getuid().as_raw()))
        }
    }
}

/// The lock file of the GPU called `key` (a UUID or bus id) in `dir`.
pub(crate) fn lock_path(dir: &Path, key: &str) -> PathBuf {
    let safe: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("telemetry-{safe}.lock"))
}

/// What trying the lock found.
#[derive(Debug)]
pub(crate) enum Lock {
    /// Ours until the descriptor is closed.
    Held(#[allow(dead_code)] OwnedFd),
    /// Another process holds it.
    Busy,
    /// No lock could be taken (the folder is not writable ...): why.
    Unavailable(String),
}

/// Tries, without waiting, to take the lock of `key` in `dir`.
pub(crate) fn try_lock(dir: &Path, key: &str) -> Lock {
    if let Err(e) = std::fs::create_dir_all(dir) {
        return Lock::Unavailable(format!("cannot create {}: {e}", dir.display()));
    }
    let path = lock_path(dir, key);
    // Read-only is enough for flock, and opens a file another user
    // created with the default umask.
    let fd = match rustix::fs::open(
        &path,
        OFlags::RDONLY | OFlags::CREATE | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    ) {
        Ok(fd) => fd,
        Err(e) => {
            return Lock::Unavailable(format!("cannot open {}: {e}", path.display()));
        }
    };
    match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Lock::Held(fd),
        Err(rustix::io::Errno::WOULDBLOCK) => Lock::Busy,
        Err(e) => Lock::Unavailable(format!("cannot lock {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_free_again_when_it_closes() {
        let dir = std::env::temp_dir().join(format!("gpu-trace-lock-{}", std::process::id()));
        let a = try_lock(&dir, "GPU-1234/x");
        assert!(matches!(a, Lock::Held(_)), "{a:?}");
        // A second open file description, as another process has.
        assert!(matches!(try_lock(&dir, "GPU-1234/x"), Lock::Busy));
        assert!(matches!(try_lock(&dir, "GPU-5678"), Lock::Held(_)));
        drop(a);
        assert!(matches!(try_lock(&dir, "GPU-1234/x"), Lock::Held(_)));
        assert_eq!(
            lock_path(&dir, "0000:06:00.0"),
            dir.join("telemetry-0000_06_00.0.lock")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unwritable_folder_is_said_not_fatal() {
        let l = try_lock(Path::new("/proc/gpu-trace-no-such"), "x");
        assert!(
            matches!(l, Lock::Unavailable(ref m) if m.contains("/proc/gpu-trace-no-such")),
            "{l:?}"
        );
    }

    #[test]
    fn the_folder_is_configured_or_per_user() {
        assert_eq!(lock_dir(Some(Path::new("/x"))), PathBuf::from("/x"));
        let d = lock_dir(None);
        assert!(d.ends_with("gpu-trace") || d.to_string_lossy().contains("gpu-trace-"));
    }
}
