//! Privileged programs: gpu-trace stays off in them.
//!
//! Everything gpu-trace does is steered by the environment: where the trace
//! goes (`INJECTION_OUTPUT`, and without it the working directory), the
//! record log (`GPU_TRACE_RECORD_LOG`), the lock folder
//! (`INJECTION_TELEMETRY_LOCK_DIR`), the libraries it opens
//! (`GPU_TRACE_CUPTI_PATH`, `GPU_TRACE_NVML_PATH`, and `CUDA_HOME`,
//! `VIRTUAL_ENV`, `CONDA_PREFIX`, `PYTHONPATH` where it looks for CUPTI),
//! the sysfs root it reads (`GPU_TRACE_SYSFS_ROOT`). In a setuid or setgid
//! program, or one given file capabilities, that environment is the
//! calling user's while the process holds someone else's rights: honouring
//! any of it would let that user create and append to files, and load
//! libraries, as root. Leaving out just the variables that name paths is
//! not enough either (the default output is in the working directory the
//! caller chose). So in such a process the injection does not start at
//! all, and says so in one line.
//!
//! The kernel tells a program that it runs with rights it was given at
//! exec through `AT_SECURE` in its auxiliary vector (what glibc's
//! `secure_getenv` and the dynamic loader go by); we read it from
//! `/proc/self/auxv`. Where that cannot be read, a process whose real and
//! effective user or group differ is taken as privileged, and so is one
//! the kernel refuses its own auxiliary vector (it is not dumpable, as
//! privileged programs are not).

use std::io;

/// `AT_SECURE` in `<elf.h>`.
const AT_SECURE: usize = 23;
/// `AT_NULL`: the end of the vector.
const AT_NULL: usize = 0;

/// The real and effective user and group of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ids {
    /// Real user.
    pub uid: u32,
    /// Effective user.
    pub euid: u32,
    /// Real group.
    pub gid: u32,
    /// Effective group.
    pub egid: u32,
}

impl Ids {
    /// This process's.
    pub(crate) fn current() -> Ids {
        use rustix::process::{getegid, geteuid, getgid, getuid};
        Ids {
            uid: getuid().as_raw(),
            euid: geteuid().as_raw(),
            gid: getgid().as_raw(),
            egid: getegid().as_raw(),
        }
    }
}

/// Why gpu-trace must stay off in this process, as the line to print; or
/// `None` for an ordinary process.
pub(crate) fn refusal() -> Option<String> {
    verdict(std::fs::read("/proc/self/auxv"), Ids::current())
}

/// The decision of [`refusal`] from the contents of `/proc/self/auxv` (or
/// why it could not be read) and the process's ids.
pub(crate) fn verdict(auxv: io::Result<Vec<u8>>, ids: Ids) -> Option<String> {
    const OFF: &str = "gpu-trace stays off in this process and reads none of its settings, which come from the environment of whoever started it";
    let secure = match auxv {
        Ok(bytes) => at_secure(&bytes),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            return Some(format!(
                "this program runs with privileges it was given (the kernel does not let it read its own /proc/self/auxv: {e}); {OFF}"
            ));
        }
        Err(_) => None,
    };
    if secure == Some(true) {
        return Some(format!(
            "this program runs setuid, setgid or with file capabilities (AT_SECURE); {OFF}"
        ));
    }
    if ids.uid != ids.euid || ids.gid != ids.egid {
        return Some(format!(
            "this program runs as another user or group than the one who started it (uid {}, euid {}, gid {}, egid {}); {OFF}",
            ids.uid, ids.euid, ids.gid, ids.egid
        ));
    }
    None
}

/// `AT_SECURE`'s value in an auxiliary vector (pairs of native words), if
/// it is there.
fn at_secure(auxv: &[u8]) -> Option<bool> {
    const W: usize = std::mem::size_of::<usize>();
    let word = |b: &[u8]| usize::from_ne_bytes(b.try_into().unwrap_or([0; W]));
    for pair in auxv.chunks_exact(2 * W) {
        match word(&pair[..W]) {
            AT_NULL => break,
            AT_SECURE => return Some(word(&pair[W..]) != 0),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auxv(pairs: &[(usize, usize)]) -> Vec<u8> {
        pairs
            .iter()
            .flat_map(|&(k, v)| [k.to_ne_bytes(), v.to_ne_bytes()].concat())
            .collect()
    }

    const PLAIN: Ids = Ids {
        uid: 1000,
        euid: 1000,
        gid: 1000,
        egid: 1000,
    };

    #[test]
    fn at_secure_turns_gpu_trace_off() {
        let v = verdict(Ok(auxv(&[(6, 4096), (AT_SECURE, 1), (0, 0)])), PLAIN);
        assert_eq!(
            v.as_deref(),
            Some(
                "this program runs setuid, setgid or with file capabilities (AT_SECURE); gpu-trace stays off in this process and reads none of its settings, which come from the environment of whoever started it"
            )
        );
        // A root process (same ids) is ordinary: only a change of rights counts.
        let root = Ids {
            uid: 0,
            euid: 0,
            gid: 0,
            egid: 0,
        };
        assert_eq!(verdict(Ok(auxv(&[(AT_SECURE, 0), (0, 0)])), root), None);
        // After AT_NULL nothing counts.
        assert_eq!(
            verdict(Ok(auxv(&[(6, 4096), (0, 0), (AT_SECURE, 1)])), PLAIN),
            None
        );
    }

    #[test]
    fn without_the_vector_differing_ids_or_a_refused_read_turn_it_off() {
        let gone = || Err(io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(verdict(gone(), PLAIN), None);
        let setuid = Ids { euid: 0, ..PLAIN };
        assert!(
            verdict(gone(), setuid)
                .unwrap()
                .contains("(uid 1000, euid 0, gid 1000, egid 1000)")
        );
        let setgid = Ids { egid: 42, ..PLAIN };
        assert!(verdict(gone(), setgid).is_some());
        // Ids differ even though AT_SECURE says 0 (seteuid after exec).
        assert!(verdict(Ok(auxv(&[(AT_SECURE, 0), (0, 0)])), setuid).is_some());
        let denied = verdict(Err(io::Error::from(io::ErrorKind::PermissionDenied)), PLAIN);
        assert!(denied.unwrap().contains("/proc/self/auxv"));
    }

    #[test]
    fn this_test_process_is_ordinary() {
        // The vector is readable and says 0 (cargo runs tests unprivileged
        // in that sense, root or not).
        let raw = std::fs::read("/proc/self/auxv").unwrap();
        assert_eq!(at_secure(&raw), Some(false));
        assert_eq!(refusal(), None);
    }
}
