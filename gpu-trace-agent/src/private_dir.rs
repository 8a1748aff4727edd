//! Directories of this user in places other users can write to, and the
//! files in them: the control sockets, the telemetry locks, the record log
//! and a fallback trace.
//!
//! gpu-trace runs inside other people's jobs, often as root, where the
//! shared `/tmp` is all there is and every name in it is predictable
//! (`/tmp/gpu-trace-0`). Another local user can make that name first: a
//! directory of theirs, or a symbolic link to one of root's. So each
//! directory is made and checked the way OpenSSH and systemd treat `/tmp`:
//!
//! - its folder must be owned by root or by us, and if others may write to
//!   it, sticky (as `/tmp` is), so that nobody else can rename or replace
//!   what we make there;
//! - it is made with `mkdir` mode 0700, or, when it exists, opened with
//!   `O_NOFOLLOW|O_DIRECTORY`, and the open descriptor is checked with
//!   `fstat`: a directory, owned by this effective user, that no other
//!   user can write to. Ours but readable by others (as an older gpu-trace
//!   left it) is tightened to 0700 through the descriptor;
//! - files in it are opened relative to that descriptor, `O_NOFOLLOW`,
//!   created with `O_EXCL`, and an existing one must be a regular file of
//!   ours with one link.
//!
//! Anything else is refused with a line that names the path and what is
//! wrong with it; the caller leaves off the feature the directory serves.
//!
//! Where the directory is ([`runtime_dir`], [`temp_dir`]) comes from
//! `XDG_RUNTIME_DIR` and `TMPDIR`, which are used only when they hold up:
//! neither is ever created.

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The temp directory when `TMPDIR` is unset or unusable.
const SYSTEM_TMP: &str = "/tmp";

/// This process's effective user: the owner every directory and file here
/// must have.
fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// A directory only this user can enter, open and checked. Entries are
/// reached through its descriptor; [`PrivateDir::path`] is for what needs
/// a path (binding a socket) and for messages.
#[derive(Debug)]
pub struct PrivateDir {
    fd: OwnedFd,
    path: PathBuf,
}

/// What an entry of a [`PrivateDir`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// No such entry.
    Missing,
    /// A socket of ours.
    Socket,
}

impl PrivateDir {
    /// Opens the directory `path`, making it (mode 0700) when it does not
    /// exist. Only its last component is made: its folder must exist.
    ///
    /// # Errors
    /// A line naming the path and what is wrong with it.
    pub fn create(path: &Path) -> Result<PrivateDir, String> {
        Self::open_in(path, true)?
            .ok_or_else(|| format!("{}: gone as soon as it was made", path.display()))
    }

    /// Opens the directory `path` if it exists (`None` when it does not),
    /// with the checks of [`PrivateDir::create`]; never makes it, nor
    /// changes its mode (one readable by others is taken as it is).
    ///
    /// # Errors
    /// A line naming the path and what is wrong with it.
    pub fn open(path: &Path) -> Result<Option<PrivateDir>, String> {
        Self::open_in(path, false)
    }

    fn open_in(path: &Path, make: bool) -> Result<Option<PrivateDir>, String> {
        let at = path.display();
        let (parent, name) = split(path)?;
        let pfd = match rustix::fs::open(
            parent,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) if !make => return Ok(None),
            Err(e) => {
                return Err(format!(
                    "{at}: cannot open its folder {}: {e}",
                    parent.display()
                ));
            }
        };
        check_folder(&pfd, path, parent)?;
        if make {
            match rustix::fs::mkdirat(&pfd, name, Mode::from_raw_mode(0o700)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(format!("{at}: cannot create it: {e}")),
            }
        }
        let fd = match rustix::fs::openat(
            &pfd,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) if !make => return Ok(None),
            Err(e) => return Err(format!("{at}: {}", what_is(&pfd, name, e))),
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| format!("{at}: {e}"))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
            return Err(format!("{at}: is not a directory; not using it"));
        }
        if st.st_uid != euid() {
            return Err(format!(
                "{at}: owned by uid {}, not by this user (uid {}): another user made it; not using it",
                st.st_uid,
                euid()
            ));
        }
        let mode = st.st_mode & 0o7777;
        if mode & 0o022 != 0 {
            return Err(format!(
                "{at}: mode {mode:04o} lets other users write to it; not using it (expected 0700)"
            ));
        }
        if make && mode & 0o077 != 0 {
            // Ours, and nobody else could add anything: close it to them.
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o700))
                .map_err(|e| format!("{at}: mode {mode:04o}, and cannot make it 0700: {e}"))?;
        }
        Ok(Some(PrivateDir {
            fd,
            path: path.to_path_buf(),
        }))
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open directory.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Creates the new file `name` (mode 0600, `O_EXCL`), opened with
    /// `access` (`WRONLY`, `RDWR` or `RDONLY`).
    ///
    /// # Errors
    /// A line naming the file and what is wrong.
    pub fn create_file(&self, name: &str, access: OFlags) -> Result<OwnedFd, String> {
        rustix::fs::openat(
            &self.fd,
            name,
            access | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| match e {
            Errno::EXIST => format!("{}: exists already", self.path.join(name).display()),
            e => format!("{}: cannot create it: {e}", self.path.join(name).display()),
        })
    }

    /// Opens the existing file `name` with `access` (plus `O_APPEND` or
    /// the like): a regular file of ours with one link, never through a
    /// symbolic link. `Ok(None)` when there is none.
    ///
    /// # Errors
    /// A line naming the file and what is wrong with it.
    pub fn open_file(&self, name: &str, access: OFlags) -> Result<Option<OwnedFd>, String> {
        let at = self.path.join(name);
        let fd = match rustix::fs::openat(
            &self.fd,
            name,
            // NONBLOCK: a FIFO in its place cannot hang us.
            access | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(format!("{}: {}", at.display(), what_is(&self.fd, name, e))),
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| format!("{}: {e}", at.display()))?;
        check_file(&st).map_err(|why| format!("{}: {why}; not using it", at.display()))?;
        Ok(Some(fd))
    }

    /// Opens the file `name`, creating it (mode 0600) if it is not there:
    /// for a file that several processes of this user share.
    ///
    /// # Errors
    /// As [`PrivateDir::create_file`] and [`PrivateDir::open_file`].
    pub fn open_or_create_file(&self, name: &str, access: OFlags) -> Result<OwnedFd, String> {
        // Another process may make or remove it in between: a few tries.
        let mut last = String::new();
        for _ in 0..4 {
            match self.create_file(name, access) {
                Ok(fd) => return Ok(fd),
                Err(e) => last = e,
            }
            if let Some(fd) = self.open_file(name, access)? {
                return Ok(fd);
            }
        }
        Err(last)
    }

    /// What the entry `name` is: [`Entry::Missing`], or [`Entry::Socket`]
    /// when it is a socket of ours (not followed if a symbolic link).
    ///
    /// # Errors
    /// A line naming the entry and what it is instead.
    pub fn entry(&self, name: &str) -> Result<Entry, String> {
        let at = self.path.join(name);
        let st = match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => return Ok(Entry::Missing),
            Err(e) => return Err(format!("{}: {e}", at.display())),
        };
        let kind = FileType::from_raw_mode(st.st_mode);
        if kind != FileType::Socket {
            return Err(format!(
                "{}: is {}, not a socket",
                at.display(),
                describe(kind)
            ));
        }
        if st.st_uid != euid() {
            return Err(format!(
                "{}: a socket of uid {}, not of this user (uid {})",
                at.display(),
                st.st_uid,
                euid()
            ));
        }
        Ok(Entry::Socket)
    }

    /// Removes the entry `name` (not a directory), if there is one.
    pub fn remove(&self, name: &str) {
        let _ = rustix::fs::unlinkat(&self.fd, name, AtFlags::empty());
    }

    /// The names of the entries, `.` and `..` left out.
    pub fn names(&self) -> Vec<String> {
        let Ok(dir) = rustix::fs::Dir::read_from(&self.fd) else {
            return Vec::new();
        };
        dir.filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str().ok().map(str::to_owned))
            .filter(|n| n != "." && n != "..")
            .collect()
    }
}

/// `path`'s folder and last component, which must be a plain name.
fn split(path: &Path) -> Result<(&Path, &OsStr), String> {
    let at = path.display();
    if !path.is_absolute() {
        return Err(format!("{at}: not an absolute path"));
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(format!("{at}: not a path to a folder")),
    }
}

/// The folder a private directory is made in must be one where nobody else
/// can rename or replace it: owned by root or by us, and sticky if others
/// may write to it.
fn check_folder(pfd: &OwnedFd, path: &Path, parent: &Path) -> Result<(), String> {
    let st = rustix::fs::fstat(pfd).map_err(|e| format!("{}: {e}", parent.display()))?;
    let mode = st.st_mode & 0o7777;
    if st.st_uid != 0 && st.st_uid != euid() {
        return Err(format!(
            "{}: its folder {} belongs to uid {}, who could replace it; not using it",
            path.display(),
            parent.display(),
            st.st_uid
        ));
    }
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Err(format!(
            "{}: its folder {} (mode {mode:04o}) lets other users replace what is in it (it is not sticky, as /tmp is); not using it",
            path.display(),
            parent.display()
        ));
    }
    Ok(())
}

/// A file of ours that we may write: regular, owned by us, one link (not
/// a hard link to someone else's file).
fn check_file(st: &Stat) -> Result<(), String> {
    let kind = FileType::from_raw_mode(st.st_mode);
    if kind != FileType::RegularFile {
        return Err(format!("is {}, not a regular file", describe(kind)));
    }
    if st.st_uid != euid() {
        return Err(format!(
            "owned by uid {}, not by this user (uid {})",
            st.st_uid,
            euid()
        ));
    }
    if st.st_nlink != 1 {
        return Err(format!("has {} hard links", st.st_nlink));
    }
    Ok(())
}

/// Why opening `name` in `dir` failed with `e`, saying what the entry is
/// when that is the reason (`O_NOFOLLOW` on a symbolic link).
fn what_is(dir: &OwnedFd, name: impl AsRef<Path>, e: Errno) -> String {
    match rustix::fs::statat(dir, name.as_ref(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
            "is a symbolic link; not following it".to_owned()
        }
        Ok(st) if matches!(e, Errno::NOTDIR) => format!(
            "is {}, not a directory",
            describe(FileType::from_raw_mode(st.st_mode))
        ),
        _ => e.to_string(),
    }
}

fn describe(kind: FileType) -> &'static str {
    match kind {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "of an unknown kind",
    }
}

/// The temp directory: `TMPDIR` when it is an absolute path to a
/// directory, else `/tmp`. A relative or empty `TMPDIR` would put our
/// folders in the application's working directory.
pub fn temp_base() -> PathBuf {
    temp_base_from(std::env::var_os("TMPDIR").as_deref())
}

/// [`temp_base`] for a `TMPDIR` of `tmpdir`.
pub fn temp_base_from(tmpdir: Option<&OsStr>) -> PathBuf {
    match tmpdir.map(Path::new) {
        Some(d) if d.is_absolute() && d.is_dir() => d.to_path_buf(),
        _ => PathBuf::from(SYSTEM_TMP),
    }
}

/// This user's folder in the temp directory, `<temp>/gpu-trace-<uid>`:
/// where a trace goes when neither the asked place nor the working
/// directory can take it (a trace can be large: not in the runtime
/// directory, which is often a small tmpfs).
pub fn temp_dir() -> PathBuf {
    temp_base().join(format!("gpu-trace-{}", euid()))
}

/// This user's folder of control sockets, telemetry locks and record logs:
/// `$XDG_RUNTIME_DIR/gpu-trace` when `XDG_RUNTIME_DIR` is a directory of
/// ours that no one else can enter (as the login manager makes it), else
/// [`temp_dir`]. A `XDG_RUNTIME_DIR` that does not hold up (missing, or
/// another user's, as `sudo` can leave it) is passed over, never made.
pub fn runtime_dir() -> PathBuf {
    runtime_dir_from(
        std::env::var_os("XDG_RUNTIME_DIR").as_deref(),
        std::env::var_os("TMPDIR").as_deref(),
    )
}

/// [`runtime_dir`] for the given `XDG_RUNTIME_DIR` and `TMPDIR`.
pub fn runtime_dir_from(xdg: Option<&OsStr>, tmpdir: Option<&OsStr>) -> PathBuf {
    if let Some(x) = xdg.filter(|x| !x.is_empty()) {
        match check_runtime_base(Path::new(x)) {
            Ok(()) => return Path::new(x).join("gpu-trace"),
            Err(why) => crate::verbose!("XDG_RUNTIME_DIR={x:?} is not used: {why}"),
        }
    }
    temp_base_from(tmpdir).join(format!("gpu-trace-{}", euid()))
}

/// `XDG_RUNTIME_DIR` must be an existing directory of ours, mode 0700.
fn check_runtime_base(dir: &Path) -> Result<(), String> {
    if !dir.is_absolute() {
        return Err("expected an absolute path".to_owned());
    }
    let fd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::NOENT => "it does not exist".to_owned(),
        Errno::LOOP => "it is a symbolic link".to_owned(),
        Errno::NOTDIR => "it is not a directory".to_owned(),
        e => e.to_string(),
    })?;
    let st = rustix::fs::fstat(&fd).map_err(|e| e.to_string())?;
    if st.st_uid != euid() {
        return Err(format!(
            "it belongs to uid {}, not to this user (uid {})",
            st.st_uid,
            euid()
        ));
    }
    if st.st_mode & 0o077 != 0 {
        return Err(format!(
            "its mode is {:04o}, expected 0700",
            st.st_mode & 0o7777
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_trace_testkit::users::{SharedTmp, can_switch, mode_of};
    use std::os::unix::fs::{PermissionsExt, chown, symlink};
    use std::os::unix::net::UnixDatagram;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_missing_directory_is_made_0700_and_an_existing_one_of_ours_is_taken() {
        let tmp = SharedTmp::new("make");
        let d = tmp.join("gpu-trace-x");
        assert!(
            PrivateDir::open(&d).unwrap().is_none(),
            "open never makes it"
        );
        assert!(!d.exists());
        let made = PrivateDir::create(&d).unwrap();
        assert_eq!(made.path(), d);
        assert!(d.is_dir());
        assert_eq!(mode_of(&d), 0o700);
        assert!(PrivateDir::create(&d).is_ok());
        assert!(PrivateDir::open(&d).unwrap().is_some());
        // Ours and readable by others (as an older gpu-trace left it):
        // tightened when made again, taken as it is when only opened.
        chmod(&d, 0o755);
        assert!(PrivateDir::open(&d).unwrap().is_some());
        assert_eq!(mode_of(&d), 0o755);
        assert!(PrivateDir::create(&d).is_ok());
        assert_eq!(mode_of(&d), 0o700);
        // Only the last component is made.
        let deep = tmp.join("no-such/gpu-trace");
        let e = PrivateDir::create(&deep).unwrap_err();
        assert!(
            e.starts_with(&format!("{}: cannot open its folder", deep.display())),
            "{e}"
        );
        assert!(!tmp.join("no-such").exists());
        assert_eq!(
            PrivateDir::create(Path::new("rel/gpu-trace")).unwrap_err(),
            "rel/gpu-trace: not an absolute path"
        );
    }

    #[test]
    fn links_files_and_directories_others_can_write_to_are_refused() {
        let tmp = SharedTmp::new("refuse");
        let real = tmp.join("real");
        std::fs::create_dir(&real).unwrap();
        chmod(&real, 0o700);
        let link = tmp.join("link");
        symlink(&real, &link).unwrap();
        let e = PrivateDir::create(&link).unwrap_err();
        assert_eq!(
            e,
            format!("{}: is a symbolic link; not following it", link.display())
        );
        assert_eq!(PrivateDir::open(&link).unwrap_err(), e);
        let file = tmp.join("file");
        std::fs::write(&file, "").unwrap();
        assert_eq!(
            PrivateDir::create(&file).unwrap_err(),
            format!("{}: is a regular file, not a directory", file.display())
        );
        let open = tmp.join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        assert_eq!(
            PrivateDir::create(&open).unwrap_err(),
            format!(
                "{}: mode 0777 lets other users write to it; not using it (expected 0700)",
                open.display()
            )
        );
        assert_eq!(mode_of(&open), 0o777, "refused, not changed");
        chmod(&open, 0o1770);
        assert!(PrivateDir::open(&open).is_err());
    }

    #[test]
    fn another_users_directory_or_a_folder_they_control_is_refused() {
        if !can_switch("another_users_directory_or_a_folder_they_control_is_refused") {
            return;
        }
        let tmp = SharedTmp::new("owner");
        let theirs = tmp.join("gpu-trace-0");
        std::fs::create_dir(&theirs).unwrap();
        chmod(&theirs, 0o700);
        chown(&theirs, Some(65534), Some(65534)).unwrap();
        assert_eq!(
            PrivateDir::create(&theirs).unwrap_err(),
            format!(
                "{}: owned by uid 65534, not by this user (uid 0): another user made it; not using it",
                theirs.display()
            )
        );
        // A folder of theirs: they could rename ours away and put theirs
        // in its place after we checked it.
        let folder = tmp.join("theirs");
        std::fs::create_dir(&folder).unwrap();
        chown(&folder, Some(65534), Some(65534)).unwrap();
        let inside = folder.join("gpu-trace-0");
        let e = PrivateDir::create(&inside).unwrap_err();
        assert!(
            e.contains("belongs to uid 65534, who could replace it"),
            "{e}"
        );
        assert!(!inside.exists());
        // Writable by all but not sticky.
        let open = tmp.join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        let e = PrivateDir::create(&open.join("gpu-trace-0")).unwrap_err();
        assert!(e.contains("(mode 0777) lets other users replace"), "{e}");
        // The shared folder itself is sticky, like /tmp: fine.
        assert!(PrivateDir::create(&tmp.join("ours")).is_ok());
    }

    #[test]
    fn files_are_made_new_and_only_ours_are_opened() {
        let tmp = SharedTmp::new("files");
        let d = PrivateDir::create(&tmp.join("d")).unwrap();
        let f = d.create_file("log", OFlags::WRONLY).unwrap();
        drop(f);
        assert_eq!(mode_of(&d.path().join("log")), 0o600);
        assert_eq!(
            d.create_file("log", OFlags::WRONLY).unwrap_err(),
            format!("{}: exists already", d.path().join("log").display())
        );
        assert!(d.open_file("log", OFlags::WRONLY).unwrap().is_some());
        assert!(d.open_file("none", OFlags::WRONLY).unwrap().is_none());
        // A link, even to a file of ours, is not followed.
        symlink(d.path().join("log"), d.path().join("link")).unwrap();
        assert_eq!(
            d.open_file("link", OFlags::WRONLY).unwrap_err(),
            format!(
                "{}: is a symbolic link; not following it",
                d.path().join("link").display()
            )
        );
        assert!(d.open_or_create_file("link", OFlags::RDONLY).is_err());
        // A second name for a file: refused (it could be someone else's).
        std::fs::hard_link(d.path().join("log"), d.path().join("hard")).unwrap();
        let e = d.open_file("hard", OFlags::WRONLY).unwrap_err();
        assert!(e.ends_with("has 2 hard links; not using it"), "{e}");
        // A FIFO neither hangs the open nor is taken.
        rustix::fs::mknodat(&d.fd, "fifo", FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        let e = d.open_file("fifo", OFlags::WRONLY).unwrap_err();
        assert!(e.contains("No such device") || e.contains("a FIFO"), "{e}");
        let e = d.open_file("fifo", OFlags::RDONLY).unwrap_err();
        assert!(
            e.ends_with("is a FIFO, not a regular file; not using it"),
            "{e}"
        );
        // Made once, then shared.
        let a = d.open_or_create_file("lock", OFlags::RDONLY).unwrap();
        let b = d.open_or_create_file("lock", OFlags::RDONLY).unwrap();
        assert_eq!(
            rustix::fs::fstat(&a).unwrap().st_ino,
            rustix::fs::fstat(&b).unwrap().st_ino
        );
        let mut names = d.names();
        names.sort();
        assert_eq!(names, ["fifo", "hard", "link", "lock", "log"]);
        d.remove("log");
        assert!(!d.path().join("log").exists());
    }

    #[test]
    fn only_sockets_of_ours_are_entries_to_send_to() {
        let tmp = SharedTmp::new("sockets");
        let d = PrivateDir::create(&tmp.join("d")).unwrap();
        assert_eq!(d.entry("1.sock"), Ok(Entry::Missing));
        let _s = UnixDatagram::bind(d.path().join("1.sock")).unwrap();
        assert_eq!(d.entry("1.sock"), Ok(Entry::Socket));
        symlink(d.path().join("1.sock"), d.path().join("2.sock")).unwrap();
        assert_eq!(
            d.entry("2.sock"),
            Err(format!(
                "{}: is a symbolic link, not a socket",
                d.path().join("2.sock").display()
            ))
        );
        std::fs::write(d.path().join("3.sock"), "").unwrap();
        assert!(
            d.entry("3.sock")
                .unwrap_err()
                .ends_with("is a regular file, not a socket")
        );
        if rustix::process::geteuid().is_root() {
            let _t = UnixDatagram::bind(d.path().join("4.sock")).unwrap();
            rustix::fs::chownat(
                &d.fd,
                "4.sock",
                Some(rustix::process::Uid::from_raw(65534)),
                None,
                AtFlags::SYMLINK_NOFOLLOW,
            )
            .unwrap();
            assert!(
                d.entry("4.sock")
                    .unwrap_err()
                    .ends_with("4.sock: a socket of uid 65534, not of this user (uid 0)")
            );
        }
    }

    #[test]
    fn tmpdir_is_used_only_when_absolute_and_there() {
        let tmp = SharedTmp::new("tmpdir");
        let p = |v: &str| temp_base_from(Some(OsStr::new(v)));
        assert_eq!(temp_base_from(None), PathBuf::from("/tmp"));
        assert_eq!(p(""), PathBuf::from("/tmp"));
        assert_eq!(p("rel"), PathBuf::from("/tmp"));
        assert_eq!(p("./x"), PathBuf::from("/tmp"));
        assert_eq!(p(tmp.path().to_str().unwrap()), tmp.path());
        let missing = tmp.join("missing");
        assert_eq!(p(missing.to_str().unwrap()), PathBuf::from("/tmp"));
        assert!(!missing.exists());
    }

    #[test]
    fn xdg_runtime_dir_is_used_only_when_it_is_ours_and_0700() {
        let tmp = SharedTmp::new("xdg");
        let uid = euid();
        let fallback = tmp.join(format!("gpu-trace-{uid}"));
        let t = Some(tmp.path().as_os_str());
        let x = |d: &Path| runtime_dir_from(Some(d.as_os_str()), t);
        // Missing: passed over, and not made.
        let missing = tmp.join("run-user");
        assert_eq!(x(&missing), fallback);
        assert!(!missing.exists());
        // Open to others: passed over.
        std::fs::create_dir(&missing).unwrap();
        chmod(&missing, 0o755);
        assert_eq!(x(&missing), fallback);
        chmod(&missing, 0o700);
        assert_eq!(x(&missing), missing.join("gpu-trace"));
        if rustix::process::geteuid().is_root() {
            // Another user's (sudo keeps the caller's XDG_RUNTIME_DIR).
            chown(&missing, Some(65534), None).unwrap();
            assert_eq!(x(&missing), fallback);
            chown(&missing, Some(0), None).unwrap();
        }
        // A link to it, a relative or an empty value: passed over.
        let link = tmp.join("run-link");
        symlink(&missing, &link).unwrap();
        assert_eq!(x(&link), fallback);
        assert_eq!(x(Path::new("run-user")), fallback);
        assert_eq!(x(Path::new("")), fallback);
        assert_eq!(runtime_dir_from(None, t), fallback);
        assert!(
            !fallback.exists(),
            "a path is chosen; nothing is made until it is used"
        );
    }
}
