//! Records and emits a fixed number of kernel events and API calls, for
//! instruction-level profiling of the emitter:
//! `valgrind --tool=callgrind target/release/examples/emit_profile`.

use gpu_trace_benches::{file_tracer, kernel, kernels, launch};
use std::time::Duration;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
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
