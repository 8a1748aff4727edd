//! Records and emits a fixed number of kernel events and API calls.
//!
//! - `emit_profile [N]`: N launches from one thread, flushed every 10,000,
//!   for instruction-level profiling of the emitter:
//!   `valgrind --tool=callgrind target/release/examples/emit_profile`.
//! - `emit_profile compare N REPS THREADS`: the standalone pipeline as a
//!   whole process, from the recording calls to the bytes on disk, through
//!   the in-process Perfetto service (`service`) and the direct file writer
//!   (`direct`), each run REPS times in alternation, each run a process of
//!   its own with the defaults an injected process gets: N launches (an
//!   API slice and its kernel each) from THREADS threads, as fast as the
//!   pipeline takes them. Prints, per writer, the medians of events per
//!   second, CPU per event (user + system, getrusage) and peak RSS, and
//!   reads each trace back: the kernels and launches it holds, and what
//!   its summary says was lost (a program that records faster than the
//!   writer takes it waits at the queue, at most 500 ms an event, then
//!   drops and counts: `thread_buffer`). With
//!   `EMIT_PROFILE_BASELINE=BIN`, another build of this program (an older
//!   commit's) runs its `service` path in the same alternation, as
//!   `baseline`.

use gpu_trace_benches::{default_file_tracer, file_tracer, kernel, kernels, launch};
use gpu_trace_model::writer::FileSink;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, d: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    match args.first().map(String::as_str) {
        Some("compare") => compare(num(1, 4_000_000), num(2, 3), num(3, 1)),
        Some("one") => one(&args[1], num(2, 0), num(3, 1)),
        _ => profile(num(0, 200_000)),
    }
}

fn profile(n: u64) {
    let (tracer, dir) = file_tracer("profile");
    let ks = kernels(&tracer, 64);
    let api = tracer.names().intern("cudaLaunchKernel");
    let tid = gpu_trace_model::clock::thread_id();
    let rec = tracer.recorder().clone();
    // Realistic timestamps: BOOTTIME, a launch every 5 µs.
    let t0 = gpu_trace_model::clock::boottime_ns();
    for chunk in 0..n / 10_000 {
        for i in 0..10_000 {
            let corr = chunk * 10_000 + i;
            let t = t0 + corr * 5_000;
            rec.api(launch(api, tid, corr, t));
            rec.kernel(kernel(ks[(i % 64) as usize], corr, t + 2_000));
        }
        tracer.flush(Duration::from_secs(30));
    }
    tracer.shutdown(Duration::from_secs(30));
    let size = std::fs::metadata(tracer.output_path().unwrap())
        .map(|m| m.len())
        .unwrap_or(0);
    println!(
        "{n} launches, trace {size} bytes = {:.1} bytes per launch (kernel + API slice)",
        size as f64 / n as f64
    );
    if std::env::var_os("GPU_TRACE_KEEP").is_some() {
        println!("kept {}", tracer.output_path().unwrap().display());
    } else {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// One run's figures, as the child prints them.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Until the recording threads returned.
    record_s: f64,
    /// Until the file was complete and synced.
    wall_s: f64,
    cpu_s: f64,
    maxrss_kb: u64,
    bytes: u64,
    /// Kernels and launch slices in the trace, and events its summary
    /// says were lost.
    kernels: u64,
    launches: u64,
    lost: u64,
}

fn compare(n: u64, reps: u64, threads: u64) {
    let exe = std::env::current_exe().expect("own path");
    let baseline = std::env::var_os("EMIT_PROFILE_BASELINE").map(std::path::PathBuf::from);
    let mut runs: Vec<(&str, Vec<Run>)> = vec![("service", Vec::new()), ("direct", Vec::new())];
    if baseline.is_some() {
        runs.insert(0, ("baseline", Vec::new()));
    }
    for rep in 0..reps {
        for (sink, v) in &mut runs {
            let (bin, path) = match (*sink, &baseline) {
                ("baseline", Some(b)) => (b, "service"),
                _ => (&exe, *sink),
            };
            let out = std::process::Command::new(bin)
                .args(["one", path, &n.to_string(), &threads.to_string()])
                .output()
                .expect("run a child");
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{sink}: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let line = text
                .lines()
                .find(|l| l.starts_with("RUN "))
                .unwrap_or_else(|| panic!("{sink}: no result in {text}"));
            let f: Vec<f64> = line
                .split_whitespace()
                .skip(1)
                .map(|x| x.parse().expect("a number"))
                .collect();
            let r = Run {
                wall_s: f[0],
                cpu_s: f[1],
                maxrss_kb: f[2] as u64,
                bytes: f[3] as u64,
                record_s: f[4],
                kernels: f[5] as u64,
                launches: f[6] as u64,
                lost: f[7] as u64,
            };
            eprintln!("rep {rep} {sink}: {r:?}");
            v.push(r);
        }
    }
    let events = 2 * n;
    println!(
        "{n} launches ({events} events: API slice + kernel) from {threads} thread(s), {reps} runs each, medians"
    );
    println!(
        "| writer | events/s to the synced file | wall s | recording s | CPU ns/event (user+sys) | peak RSS MiB | trace bytes | runs complete | lost (counted), per run |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|");
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for (sink, v) in &runs {
        let wall = med(v.iter().map(|r| r.wall_s).collect());
        let record = med(v.iter().map(|r| r.record_s).collect());
        let cpu = med(v.iter().map(|r| r.cpu_s).collect());
        let rss = med(v.iter().map(|r| r.maxrss_kb as f64).collect());
        let complete = v
            .iter()
            .filter(|r| r.kernels == n && r.launches == n && r.lost == 0)
            .count();
        let lost: Vec<String> = v.iter().map(|r| r.lost.to_string()).collect();
        println!(
            "| {sink} | {:.0} | {wall:.2} | {record:.2} | {:.0} | {:.0} | {} | {complete} of {} | {} |",
            events as f64 / wall,
            cpu * 1e9 / events as f64,
            rss / 1024.0,
            v[0].bytes,
            v.len(),
            lost.join(" ")
        );
    }
}

/// One measured run in this process (see [`compare`]).
fn one(sink: &str, n: u64, threads: u64) {
    let sink = match sink {
        "service" => FileSink::Service,
        _ => FileSink::Direct,
    };
    let dir = std::env::temp_dir().join(format!("gpu-trace-bench-{}-one", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder");
    let path = dir.join("one.pftrace");
    let started = Instant::now();
    let tracer = default_file_tracer(path.clone(), sink);
    let ks = kernels(&tracer, 64);
    let api = tracer.names().intern("cudaLaunchKernel");
    let per = n / threads;
    std::thread::scope(|s| {
        for th in 0..threads {
            let rec = tracer.recorder().clone();
            let ks = &ks;
            s.spawn(move || {
                let tid = gpu_trace_model::clock::thread_id();
                let t0 = gpu_trace_model::clock::boottime_ns();
                for i in 0..per {
                    let corr = th * per + i + 1;
                    let t = t0 + i * 5_000;
                    rec.api(launch(api, tid, corr, t));
                    rec.kernel(kernel(ks[(i % 64) as usize], corr, t + 2_000));
                }
            });
        }
    });
    let record = started.elapsed().as_secs_f64();
    tracer.shutdown(Duration::from_secs(600));
    let wall = started.elapsed().as_secs_f64();
    let ru = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .expect("getrusage");
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    let cpu = secs(ru.user_time()) + secs(ru.system_time());
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    if std::env::var_os("EMIT_PROFILE_NO_CHECK").is_some() {
        // For profiling the pipeline alone.
        println!("RUN {wall} {cpu} {} {bytes} {record} 0 0 0", ru.max_rss());
        return;
    }
    // The content, outside the measured part: the kernels and launches
    // written, and what the summary says was lost. Whatever is missing is
    // counted there (a failed flush of the service's loses nothing by
    // itself).
    let t = gpu_trace_reader::Trace::open(&path).expect("the trace reads");
    let launches = t
        .slices
        .iter()
        .filter(|s| s.name == "cudaLaunchKernel")
        .count() as u64;
    let kernels = t.kernels().count() as u64;
    let lost: u64 = t
        .drop_counts()
        .expect("a summary")
        .iter()
        .filter(|(k, _)| k != "perfetto_flushes_failed")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(
        kernels + launches + lost,
        2 * per * threads,
        "every event written or counted"
    );
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    println!(
        "RUN {wall} {cpu} {} {bytes} {record} {kernels} {launches} {lost}",
        ru.max_rss()
    );
    if std::env::var_os("GPU_TRACE_KEEP").is_some() {
        println!("kept {}", path.display());
    } else {
        let _ = std::fs::remove_dir_all(dir);
    }
}
