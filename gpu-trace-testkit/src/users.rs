//! A second local user for the tests of what gpu-trace makes in shared
//! places: the test process (root, as CI runs) is the victim, and helper
//! commands it runs as `nobody` are the attacker who got to `/tmp` first.
//! Not root: the tests say on stderr that they are skipped.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

/// The other user: `nobody`.
pub const OTHER: u32 = 65534;

/// Whether this process can act as another user (it is root). If not,
/// says on stderr that `test` is skipped, and why.
pub fn can_switch(test: &str) -> bool {
    let root = rustix::process::geteuid().is_root();
    if !root {
        eprintln!("{test}: skipped: it needs root, to act as a second user (uid {OTHER})");
    }
    root
}

/// This process's effective user.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// A fresh folder that is like `/tmp`: root's, mode 1777. Removed on drop.
pub struct SharedTmp(PathBuf);

impl SharedTmp {
    /// Makes `gpu-trace-shared-<pid>-<n>-<tag>` in the temporary folder
    /// (`TMPDIR`, else `/tmp`).
    pub fn new(tag: &str) -> SharedTmp {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "gpu-trace-shared-{}-{}-{tag}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir(&p).expect("a folder in the temporary folder");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o1777)).unwrap();
        SharedTmp(p)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// `name` in it.
    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for SharedTmp {
    fn drop(&mut self) {
        if std::env::var_os("GPU_TRACE_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// `cmd` set to run as the other user.
pub fn as_other(cmd: &mut Command) -> &mut Command {
    cmd.uid(OTHER).gid(OTHER)
}

/// Runs `program args` as the other user; panics unless it succeeds.
pub fn other_runs<S: AsRef<OsStr>>(program: &str, args: &[S]) -> Output {
    let out = as_other(Command::new(program).args(args))
        .output()
        .unwrap_or_else(|e| panic!("{program} as uid {OTHER}: {e}"));
    assert!(
        out.status.success(),
        "{program} as uid {OTHER}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The other user makes the directory `path` with `mode` (`0777`: anyone
/// may add to it, as an attacker leaves it for the victim).
pub fn other_mkdir(path: &Path, mode: &str) {
    other_runs(
        "mkdir",
        &[OsStr::new("-m"), OsStr::new(mode), path.as_os_str()],
    );
}

/// The other user makes the symbolic link `link` to `target`.
pub fn other_symlink(target: &Path, link: &Path) {
    other_runs(
        "ln",
        &[OsStr::new("-s"), target.as_os_str(), link.as_os_str()],
    );
}

/// The mode bits (`0o7777`) of `path` itself (not followed).
pub fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .mode()
        & 0o7777
}

/// A copy of this test executable in a fresh folder of `shared`, that
/// the other user can run (the build folder may be closed to them),
/// made setuid root with `setuid`.
pub fn exe_copy(shared: &SharedTmp, setuid: bool) -> PathBuf {
    let dir = shared.join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = std::env::current_exe().unwrap();
    let copy = dir.join(exe.file_name().unwrap());
    std::fs::copy(&exe, &copy).unwrap();
    let mode = if setuid { 0o4755 } else { 0o755 };
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(mode)).unwrap();
    copy
}

/// Whether a setuid program in `dir` runs with its owner's rights (the
/// folder is not on a `nosuid` mount, and no sandbox strips it).
pub fn setuid_works(shared: &SharedTmp) -> bool {
    let dir = shared.join("bin");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755));
    let id = dir.join("id");
    if std::fs::copy("/usr/bin/id", &id).is_err() && std::fs::copy("/bin/id", &id).is_err() {
        return false;
    }
    let _ = std::fs::set_permissions(&id, std::fs::Permissions::from_mode(0o4755));
    let out = as_other(Command::new(&id).arg("-u")).output();
    let _ = std::fs::remove_file(&id);
    out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
