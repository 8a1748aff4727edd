//! Records (once) and decodes the reader benchmark's trace, printing the
//! throughput, for profiling the reader:
//! `perf record -g target/release/examples/read_profile [launches] [dir] [open|visit] [every]`.
//! `visit` streams it as the `reader/visit` benchmark does (the path
//! `gpu-trace stats` reads through); `open` (the default) decodes it whole.
//! With `every`, the trace also has two per-kernel counters on every
//! `every`-th kernel ([`gpu_trace_benches::profiled_trace`]).

use gpu_trace_benches::{profiled_trace, recorded_trace};
use gpu_trace_reader::{GpuEvent, Parts, Slice, Stage, Trace, Visitor};
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
    let visit = args.next().as_deref() == Some("visit");
    let path = match args.next().and_then(|a| a.parse().ok()) {
        Some(every) => profiled_trace(&dir, launches, every),
        None => recorded_trace(&dir, launches),
    };
    let bytes = std::fs::metadata(&path).expect("trace").len();
    let t0 = Instant::now();
    let what = if visit {
        let mut n = Count::default();
        let t = Trace::visit(&path, &mut n).expect("trace decodes");
        format!(
            "{} kernels, {} slices, {} problems",
            n.kernels,
            n.slices,
            t.problems.len()
        )
    } else {
        let t = Trace::open(&path).expect("trace decodes");
        format!(
            "{} GPU events, {} slices, {} problems",
            t.gpu_events.len(),
            t.slices.len(),
            t.problems.len()
        )
    };
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "{}: {bytes} bytes, {what}: {secs:.3} s = {:.0} MB/s",
        path.display(),
        bytes as f64 / secs / 1e6
    );
}

/// What the `reader/visit` benchmark's visitor touches.
#[derive(Default)]
struct Count {
    kernels: u64,
    dur: u64,
    slices: u64,
}

impl Visitor for Count {
    /// As `gpu-trace stats`: no kernel launches.
    fn parts(&self) -> Parts {
        Parts {
            kernel_launch: false,
        }
    }
    fn gpu_event(&mut self, e: &GpuEvent) {
        self.kernels += (e.stage == Stage::Kernel) as u64;
        self.dur += e.dur;
    }
    fn slice(&mut self, s: &Slice, _: u32) {
        self.slices += 1;
        self.dur += s.dur;
    }
}
