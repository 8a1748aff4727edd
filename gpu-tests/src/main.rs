//! `gpu-check CASE TRACE EXPECT-FILE`: compares a trace with what the test
//! program printed. Prints `PASS case: ...` (exit 0) or `FAIL case: ...`
//! (exit 1); bad usage exits 2. With `--expect-loss STDERR-FILE` the
//! trace must report a forced loss that the program's stderr states once.

use gpu_tests::{CASES, Options, check_files};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: gpu-check [--label NAME] [--device-name TEXT] [--sync-slack-ns N] \
[--validate PYTHON [--validator SCRIPT]] [--expect-loss STDERR-FILE] CASE TRACE EXPECT-FILE";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut o = Options::default();
    let mut label = None;
    let mut python = None;
    let mut validator = None;
    let mut loss_file = None;
    let mut pos = Vec::new();
    while let Some(a) = args.next() {
        let mut value = |what: &str| args.next().ok_or_else(|| format!("{a} needs {what}"));
        let r = match a.as_str() {
            "--label" => value("a name").map(|v| label = Some(v)),
            "--device-name" => value("text").map(|v| o.device_name = v),
            "--sync-slack-ns" => value("nanoseconds").and_then(|v| {
                v.parse()
                    .map(|n| o.sync_slack_ns = n)
                    .map_err(|_| format!("--sync-slack-ns {v}: not a number"))
            }),
            "--validate" => value("a python").map(|v| python = Some(v)),
            "--validator" => value("a path").map(|v| validator = Some(PathBuf::from(v))),
            "--expect-loss" => value("the program's stderr file").map(|v| loss_file = Some(v)),
            "-h" | "--help" => {
                println!("{USAGE}\ncases: {}", case_names());
                return ExitCode::SUCCESS;
            }
            s if s.starts_with("--") => Err(format!("unknown option {s}")),
            _ => {
                pos.push(a);
                Ok(())
            }
        };
        if let Err(e) = r {
            eprintln!("gpu-check: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    }
    let [case, trace, expect] = match <[String; 3]>::try_from(pos) {
        Ok(p) => p,
        Err(_) => {
            eprintln!("{USAGE}\ncases: {}", case_names());
            return ExitCode::from(2);
        }
    };
    if !CASES.iter().any(|(c, _)| *c == case) {
        eprintln!("gpu-check: unknown case {case:?}; cases: {}", case_names());
        return ExitCode::from(2);
    }
    let label = label.unwrap_or_else(|| case.clone());
    let text = match std::fs::read(&expect) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            println!("FAIL {label}: cannot read {expect}: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(f) = loss_file {
        match std::fs::read(&f) {
            Ok(b) => o.expect_loss = Some(String::from_utf8_lossy(&b).into_owned()),
            Err(e) => {
                println!("FAIL {label}: cannot read {f}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let trace = Path::new(&trace);
    let mut report = check_files(&case, &label, trace, &text, &o);
    if let Some(py) = python {
        validate(&py, validator, trace, &mut report);
    }
    print!("{}", report.render());
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn case_names() -> String {
    CASES.iter().map(|(c, _)| *c).collect::<Vec<_>>().join(" ")
}

/// Runs the official-schema validator; a Python without the `perfetto`
/// wheel skips it with a note.
fn validate(py: &str, script: Option<PathBuf>, trace: &Path, r: &mut gpu_tests::Report) {
    let script = script.or_else(|| {
        let exe = std::env::current_exe().ok()?;
        [
            PathBuf::from("tools/validate_pftrace.py"),
            exe.parent()?.join("../../tools/validate_pftrace.py"),
            exe.parent()?.join("tools/validate_pftrace.py"),
        ]
        .into_iter()
        .find(|p| p.is_file())
    });
    let Some(script) = script else {
        r.note("  schema validation skipped: tools/validate_pftrace.py not found (--validator)");
        return;
    };
    match Command::new(py).arg(&script).arg(trace).output() {
        Err(e) => r.note(format!("  schema validation skipped: cannot run {py}: {e}")),
        Ok(out) => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            if out.status.success() {
                r.number("schema", "ok");
            } else if text.contains("No module named") {
                r.note(format!(
                    "  schema validation skipped: {py} lacks a module ({})",
                    text.lines().last().unwrap_or("").trim()
                ));
            } else {
                let tail: Vec<&str> = text.lines().rev().take(5).collect();
                r.fail(format!(
                    "the schema validator rejected the trace: {}",
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                ));
            }
        }
    }
}
