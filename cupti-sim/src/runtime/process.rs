//! `Op::Fork` and `Op::Exec`: a program that forks a child which exits at once, and one that
//! replaces itself with another program, both after CUDA (and the tool) started.

use std::ffi::CString;
use std::time::{Duration, Instant};

use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, fork};

use super::{FAKE, lock, violation};

/// How long the child of `Op::Fork` may take to exit: a tool that waits at exit for threads
/// that were not forked with it hangs there.
const CHILD_LIMIT: Duration = Duration::from_secs(30);

/// Forks; the child calls `exit(code)` (its exit handlers run: the tool's, then the fake's,
/// which writes no report in a child); the parent waits for it and notes its status.
pub(crate) fn fork_and_exit(code: i32) {
    // SAFETY: the child only calls `exit`, as a C program's child would; what the exit
    // handlers do in a child of a threaded process is what is under test.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => std::process::exit(code),
        Ok(ForkResult::Parent { child }) => {
            let until = Instant::now() + CHILD_LIMIT;
            let status = loop {
                match waitpid(child, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::Exited(_, c)) => break Some(c),
                    Ok(WaitStatus::Signaled(..)) => break None,
                    Ok(_) if Instant::now() < until => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Ok(_) => {
                        violation(format!(
                            "the forked child did not exit within {CHILD_LIMIT:?} of its exit()"
                        ));
                        let _ = nix::sys::signal::kill(child, nix::sys::signal::Signal::SIGKILL);
                        let _ = waitpid(child, None);
                        break None;
                    }
                    Err(e) => {
                        violation(format!("waitpid on the forked child: {e}"));
                        break None;
                    }
                }
            };
            lock(&FAKE.report).children.push(status);
        }
        Err(e) => violation(format!("fork: {e}")),
    }
}

/// Writes the report, then `execv(program, [program, args...])`. Returns only if the exec
/// failed (a violation: the scenario named a program that cannot run).
pub(crate) fn exec(program: &str, args: &[String]) {
    let argv: Result<Vec<CString>, _> = std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .map(CString::new)
        .collect();
    let Ok(argv) = argv else {
        violation(format!("exec {program:?}: an argument holds a NUL byte"));
        return;
    };
    super::write_report(true);
    let e = nix::unistd::execv(&argv[0], &argv).unwrap_err();
    violation(format!("exec {program:?}: {e}"));
}
