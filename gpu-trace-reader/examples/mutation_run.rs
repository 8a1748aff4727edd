//! The long mutation run of the reader: many seeded cases (see
//! `tests/mutate/mod.rs`), each read in a process of its own, so that an
//! abort, a runaway allocation or a hang is seen as such and its peak
//! memory is its own. Run it under an address-space limit:
//!
//! ```text
//! cargo build --release --example mutation_run -p gpu-trace-reader
//! (ulimit -v 2097152; target/release/examples/mutation_run --cases 10000 --seed 1)
//! ```
//!
//! Each case reads the mutated bytes from memory whole and streaming, from
//! a pipe-like reader, and from a file; the report gives the panics,
//! aborts (a signal), timeouts, check failures and the peak RSS of each
//! case against its size (the rule: at most 4 × the file + 64 MiB).
//! `--write DIR` writes the cases as files instead (for `gpu-trace stats`).

#[path = "../tests/mutate/mod.rs"]
mod mutate;

use gpu_trace_reader::Trace;
use mutate::{CORPUS, case, check, events_before, packet_starts};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// Peak resident memory of this process, KiB.
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// One case, in this process: prints `ok RSS_KB BYTES` or `fail WHY`.
fn one(corpus: &[u8], seed: u64, index: u64, dir: &str) {
    let starts = packet_starts(corpus);
    let (b, m) = case(corpus, &starts, seed, index);
    let before = events_before(corpus, &starts, m.intact);
    let path = format!("{dir}/case-{index}.pftrace");
    std::fs::write(&path, &b).unwrap();
    let mut c = mutate::Count::default();
    let by_file = Trace::visit(&path, &mut c);
    let opened = Trace::open(&path);
    let _ = std::fs::remove_file(&path);
    let r = check(&b, before).and_then(|()| match (&by_file, &opened) {
        (Ok(_), Ok(t)) if t.gpu_events.len() as u64 != c.gpu => Err(format!(
            "from the file: {} GPU events opened, {} visited",
            t.gpu_events.len(),
            c.gpu
        )),
        (Ok(_), Ok(_)) | (Err(_), Err(_)) => Ok(()),
        _ => Err("from the file, open and visit disagree".to_owned()),
    });
    match r {
        Ok(()) => println!("ok {} {}", peak_rss_kb(), b.len()),
        Err(e) => println!("fail {}: {e}", m.what),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seed: u64 = arg(&args, "--seed").map_or(1, |s| s.parse().unwrap());
    let corpus_path = arg(&args, "--corpus").unwrap_or_else(|| CORPUS.to_owned());
    let corpus = std::fs::read(&corpus_path).unwrap();
    let dir = std::env::temp_dir().join(format!("mutation-run-{}", std::process::id()));
    if let Some(i) = arg(&args, "--one") {
        let dir = arg(&args, "--dir").unwrap();
        one(&corpus, seed, i.parse().unwrap(), &dir);
        return;
    }
    let cases: u64 = arg(&args, "--cases").map_or(10_000, |s| s.parse().unwrap());
    if let Some(out) = arg(&args, "--write") {
        std::fs::create_dir_all(&out).unwrap();
        let starts = packet_starts(&corpus);
        for i in 0..cases {
            let (b, m) = case(&corpus, &starts, seed, i);
            std::fs::write(format!("{out}/case-{i}.pftrace"), &b).unwrap();
            println!("case-{i}: {}", m.what);
        }
        return;
    }
    let timeout = Duration::from_secs(arg(&args, "--timeout").map_or(20, |s| s.parse().unwrap()));
    std::fs::create_dir_all(&dir).unwrap();
    let me = std::env::current_exe().unwrap();
    let (mut panics, mut aborts, mut timeouts, mut failures, mut over) = (0, 0, 0, 0, 0);
    let (mut max_rss, mut max_excess, mut max_ratio) = (0u64, i64::MIN, 0f64);
    let started = Instant::now();
    for i in 0..cases {
        let mut child = Command::new(&me)
            .args(["--one", &i.to_string(), "--seed", &seed.to_string()])
            .args([
                "--corpus",
                &corpus_path,
                "--dir",
                &dir.display().to_string(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if t0.elapsed() > timeout {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        match status {
            None => {
                timeouts += 1;
                println!("case {i}: timeout");
            }
            Some(s) if s.signal().is_some() => {
                aborts += 1;
                println!("case {i}: signal {:?}: {}", s.signal(), stderr.trim());
            }
            Some(s) if s.code() == Some(101) => {
                panics += 1;
                println!("case {i}: panic: {}", stderr.trim());
            }
            Some(s) if !s.success() => {
                aborts += 1;
                println!("case {i}: exit {:?}: {}", s.code(), stderr.trim());
            }
            Some(_) => {
                let line = stdout.trim();
                if let Some(rest) = line.strip_prefix("ok ") {
                    let mut w = rest.split(' ').map(|x| x.parse::<u64>().unwrap());
                    let (rss, len) = (w.next().unwrap(), w.next().unwrap());
                    let allowed = (4 * len + (64 << 20)) / 1024;
                    max_rss = max_rss.max(rss);
                    max_excess = max_excess.max(rss as i64 - (4 * len / 1024) as i64);
                    if len >= 64 << 10 {
                        max_ratio = max_ratio.max(rss as f64 * 1024.0 / len as f64);
                    }
                    if rss > allowed {
                        over += 1;
                        println!("case {i}: peak RSS {rss} KiB for {len} bytes");
                    }
                } else {
                    failures += 1;
                    println!("case {i}: {line}");
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "{cases} cases (seed {seed}) in {:.0} s: {panics} panics, {aborts} aborts, {timeouts} timeouts, {failures} check failures, {over} over the memory rule; peak RSS at most {max_rss} KiB, at most {max_excess} KiB above 4 x the file, at most {max_ratio:.1} x the file (of those of 64 KiB or more)",
        started.elapsed().as_secs_f64()
    );
    if panics + aborts + timeouts + failures + over > 0 {
        std::process::exit(1);
    }
}
