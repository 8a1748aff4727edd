//! `gpu-trace start|stop|status [PID|all]`: switch recording in running
//! traced processes of this user, through each one's control socket
//! (`gpu_trace_agent::windows`). The sockets' directory is checked before
//! anything in it is read or sent to: this user's, mode 0700, not a link;
//! and each entry must be a socket of this user.

use gpu_trace_agent::windows;
use std::process::ExitCode;
use std::time::Duration;

/// Which processes a command is for.
#[derive(clap::Args, Debug)]
pub(crate) struct ControlArgs {
    /// A traced process id, or `all` (default) for every traced process of
    /// this user.
    #[arg(value_name = "PID|all")]
    target: Option<String>,
}

/// How long a process has to answer.
const ANSWER_LIMIT: Duration = Duration::from_secs(5);

/// Runs `cmd` (`start`, `stop` or `status`) for the chosen processes:
/// one line per process. Exit 0 when every one answered, 1 when one did
/// not or none is traced, 2 for a bad argument.
pub(crate) fn run(cmd: &str, args: &ControlArgs) -> ExitCode {
    let pids = match args.target.as_deref().map(str::trim) {
        None | Some("all") => match windows::traced_pids() {
            Ok(p) => p,
            Err(e) => {
                // Another user's folder, or a link: nothing in it is read.
                eprintln!("gpu-trace: {e}");
                return ExitCode::from(1);
            }
        },
        Some(p) => match p.parse::<u32>() {
            Ok(pid) if pid > 0 => vec![pid],
            _ => {
                eprintln!(
                    "gpu-trace: {cmd} {}: expected a process id or all",
                    gpu_trace_model::log::quoted(p)
                );
                return ExitCode::from(2);
            }
        },
    };
    if pids.is_empty() {
        eprintln!(
            "gpu-trace: no traced process of this user is running (their control sockets live in {})",
            windows::control_dir().display()
        );
        return ExitCode::from(1);
    }
    let mut failed = false;
    for pid in pids {
        match windows::send(pid, cmd, ANSWER_LIMIT) {
            Ok(reply) => println!("{pid}: {}", describe(&reply)),
            Err(e) => {
                eprintln!("gpu-trace: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `open 2 python` → `recording (window 2), python`. The program's name is
/// the traced process's to choose: escaped and cut as values are.
fn describe(reply: &str) -> String {
    let mut it = reply.splitn(3, ' ');
    let (state, n) = (it.next(), it.next());
    let program = gpu_trace_model::log::plain(it.next().unwrap_or("?"));
    match (state, n) {
        (Some("open"), Some(n)) => format!("recording (window {n}), {program}"),
        (Some("closed"), Some("0")) => format!("paused (no window yet), {program}"),
        (Some("closed"), Some(n)) => format!("paused after window {n}, {program}"),
        _ => gpu_trace_model::log::plain(reply).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn replies_read_as_sentences() {
        assert_eq!(describe("open 2 python"), "recording (window 2), python");
        assert_eq!(describe("closed 0 train"), "paused (no window yet), train");
        assert_eq!(describe("closed 3 a b"), "paused after window 3, a b");
        assert_eq!(describe("what"), "what");
        assert_eq!(
            describe("open 1 \u{1b}]0;x\u{7}\nprog"),
            "recording (window 1), \\u{1b}]0;x\\u{7}\\nprog"
        );
    }
}
