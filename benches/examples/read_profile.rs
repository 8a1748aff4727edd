//! Records (once) and decodes the reader benchmark's trace, printing the
//! throughput, for profiling the reader:
//! `perf record -g target/release/examples/read_profile [launches] [dir]`.

use gpu_trace_benches::recorded_trace;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let launches: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dir = args
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("gpu-trace-read-profile"));
    let path = recorded_trace(&dir, launches);
    let bytes = std::fs::metadata(&path).expect("trace").len();
    let t0 = Instant::now();
    let t = gpu_trace_core::reader::Trace::open(&path).expect("trace decodes");
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "{}: {bytes} bytes, {} GPU events, {} slices, {} problems: {secs:.3} s = {:.0} MB/s",
        path.display(),
        t.gpu_events.len(),
        t.slices.len(),
        t.problems.len(),
        bytes as f64 / secs / 1e6
    );
}
