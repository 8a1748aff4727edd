//! One sampling process per GPU: an exclusive `flock` on a file per GPU,
//! held by the process that samples it until it exits (the kernel drops the
//! lock with the process, however it ends).
//!
//! The lock files live in a directory of this user only
//! ([`PrivateDir`]): their names are predictable (the GPU's UUID or bus
//! id), and in a folder another user could enter, a link planted under
//! that name made a root job create or lock a file of the planter's
//! choosing. So processes of one user share a GPU's lock, and processes of
//! different users do not: two users' jobs on one GPU each sample it.

use crate::private_dir::PrivateDir;
use rustix::fs::{FlockOperation, OFlags};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// Where the lock files are: `configured` (`INJECTION_TELEMETRY_LOCK_DIR`),
/// else this user's runtime folder ([`crate::private_dir::runtime_dir`]:
/// `$XDG_RUNTIME_DIR/gpu-trace`, else `<temp dir>/gpu-trace-<uid>`).
/// Processes of one user share it. Either way it must be a directory of
/// this user that no one else can enter; one folder for several users is
/// refused.
pub fn lock_dir(configured: Option<&Path>) -> PathBuf {
    configured.map_or_else(crate::private_dir::runtime_dir, Path::to_path_buf)
}

/// The name of the lock file of the GPU called `key` (a UUID or bus id).
fn lock_name(key: &str) -> String {
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
    format!("telemetry-{safe}.lock")
}

/// The lock file of the GPU called `key` in `dir`.
pub(crate) fn lock_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(lock_name(key))
}

/// What trying the lock found.
#[derive(Debug)]
pub(crate) enum Lock {
    /// Ours until the descriptor is closed.
    Held(#[allow(dead_code)] OwnedFd),
    /// Another process holds it.
    Busy,
    /// No lock could be taken (the folder is another user's, not
    /// writable ...): why, naming the path.
    Unavailable(String),
}

/// Tries, without waiting, to take the lock of `key` in `dir`, making
/// `dir` (mode 0700) if it is not there.
pub(crate) fn try_lock(dir: &Path, key: &str) -> Lock {
    let dir = match PrivateDir::create(dir) {
        Ok(d) => d,
        Err(e) => return Lock::Unavailable(e),
    };
    // Read-only is enough for flock.
    let fd = match dir.open_or_create_file(&lock_name(key), OFlags::RDONLY) {
        Ok(fd) => fd,
        Err(e) => return Lock::Unavailable(e),
    };
    match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Lock::Held(fd),
        Err(rustix::io::Errno::WOULDBLOCK) => Lock::Busy,
        Err(e) => Lock::Unavailable(format!(
            "cannot lock {}: {e}",
            lock_path(dir.path(), key).display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_trace_testkit::users::{SharedTmp, can_switch, other_mkdir, other_symlink};
    use std::os::unix::fs::PermissionsExt;

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

    /// Another user makes root's lock folder first, with links named as
    /// the GPUs' lock files: one to where they want root to create a
    /// file, one to a file of root's they want locked for the whole job.
    /// Neither is followed.
    #[test]
    fn a_lock_folder_another_user_made_first_is_refused_and_its_links_not_followed() {
        if !can_switch(
            "a_lock_folder_another_user_made_first_is_refused_and_its_links_not_followed",
        ) {
            return;
        }
        let tmp = SharedTmp::new("locks");
        let planted = tmp.join("gpu-trace-0");
        other_mkdir(&planted, "0777");
        let wanted = tmp.join("made-by-root");
        other_symlink(&wanted, &planted.join("telemetry-gpu-new.lock"));
        let roots = tmp.join("root-file");
        std::fs::write(&roots, "root's").unwrap();
        std::fs::set_permissions(&roots, std::fs::Permissions::from_mode(0o600)).unwrap();
        other_symlink(&roots, &planted.join("telemetry-gpu-old.lock"));

        let new = try_lock(&planted, "GPU-NEW");
        assert!(
            !wanted.exists(),
            "root created {} through a link another user planted",
            wanted.display()
        );
        let old = try_lock(&planted, "GPU-OLD");
        let f = std::fs::File::open(&roots).unwrap();
        assert!(
            rustix::fs::flock(&f, FlockOperation::NonBlockingLockExclusive).is_ok(),
            "root holds a lock on {} through a link another user planted",
            roots.display()
        );
        let why = format!(
            "{}: owned by uid 65534, not by this user (uid 0): another user made it; not using it",
            planted.display()
        );
        for l in [new, old] {
            assert!(matches!(&l, Lock::Unavailable(m) if *m == why), "{l:?}");
        }
    }

    /// One folder for the locks of all users (a 1777 folder, as /tmp is):
    /// another user could plant links in it, so it is refused.
    #[test]
    fn one_lock_folder_shared_by_all_users_is_refused() {
        let tmp = SharedTmp::new("shared-locks");
        let l = try_lock(tmp.path(), "GPU-1");
        assert!(
            matches!(&l, Lock::Unavailable(m) if *m == format!(
                "{}: mode 1777 lets other users write to it; not using it (expected 0700)",
                tmp.path().display()
            )),
            "{l:?}"
        );
        assert!(!tmp.join("telemetry-gpu-1.lock").exists());
    }

    #[test]
    fn a_link_in_our_own_folder_is_not_followed() {
        let tmp = SharedTmp::new("own-link");
        let dir = tmp.join("locks");
        assert!(matches!(try_lock(&dir, "GPU-1"), Lock::Held(_)));
        let target = tmp.join("target");
        std::os::unix::fs::symlink(&target, dir.join("telemetry-gpu-2.lock")).unwrap();
        let l = try_lock(&dir, "GPU-2");
        assert!(
            matches!(&l, Lock::Unavailable(m) if m.ends_with("telemetry-gpu-2.lock: is a symbolic link; not following it")),
            "{l:?}"
        );
        assert!(!target.exists());
    }
}
