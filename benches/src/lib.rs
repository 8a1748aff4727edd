//! Shared fixtures for the overhead benchmarks: a tracer writing to a
//! throw-away file, and synthetic events shaped like real ones.

use gpu_trace_model::Limits;
use gpu_trace_model::model::{
    ApiCall, ArgValue, Device, Dim3, KernelDesc, KernelExec, KernelId, NameId,
};
use gpu_trace_model::writer::TraceSettings;
use gpu_trace_perfetto::{Tracer, TracerOptions};
use std::path::PathBuf;

/// A tracer in standalone mode writing into the temp directory, recording
/// GPU work, API calls and markers.
pub fn file_tracer(tag: &str) -> (Tracer, PathBuf) {
    tracer_with(tag, false)
}

/// [`file_tracer`], with per-kernel counters on too where `counters`.
fn tracer_with(tag: &str, counters: bool) -> (Tracer, PathBuf) {
    let dir = std::env::temp_dir().join(format!("gpu-trace-bench-{}-{tag}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    // A free name: a tag may be used twice in one process.
    let path = (0..)
        .map(|n| dir.join(format!("bench-{n}.pftrace")))
        .find(|p| !p.exists())
        .expect("a free name");
    let mut settings = TraceSettings::file(path);
    settings.buffer_kb = 256 * 1024;
    settings.recording.counters = counters;
    // `BENCH_FILE_WRITER=service`: the trace goes through the SDK's
    // in-process service, as before the direct writer, whose thread writes
    // each flush's bytes beside the next measurement.
    if std::env::var("BENCH_FILE_WRITER").is_ok_and(|v| v == "service") {
        settings.file_sink = gpu_trace_model::writer::FileSink::Service;
    }
    settings.limits = Limits {
        events: 1 << 20,
        text: 1 << 20,
        sealed: 64,
        ..Limits::default()
    };
    let tracer =
        Tracer::start(TracerOptions::new(gpu_trace_testkit::BACKEND, settings)).expect("tracer");
    let mut gpu = Device::new(0, "Bench GPU");
    gpu.vendor = Some("NVIDIA".into());
    gpu.arch_id = "sm_90".into();
    gpu.sm_count = 132;
    tracer.add_device(gpu);
    (tracer, dir)
}

/// A tracer in standalone mode with the defaults an injected process gets
/// (buffer, queue, flush period, what is recorded), writing `path` through
/// `sink`.
pub fn default_file_tracer(path: PathBuf, sink: gpu_trace_model::writer::FileSink) -> Tracer {
    let mut settings = TraceSettings::file(path);
    settings.file_sink = sink;
    let tracer =
        Tracer::start(TracerOptions::new(gpu_trace_testkit::BACKEND, settings)).expect("tracer");
    let mut gpu = Device::new(0, "Bench GPU");
    gpu.vendor = Some("NVIDIA".into());
    gpu.arch_id = "sm_90".into();
    gpu.sm_count = 132;
    tracer.add_device(gpu);
    tracer
}

/// Registers `n` kernel classes shaped like PyTorch's.
pub fn kernels(tracer: &Tracer, n: usize) -> Vec<KernelId> {
    let names = tracer.names();
    let regs = names.intern("launch__registers_per_thread");
    (0..n)
        .map(|i| {
            let kn = tracer.kernels().names(
                names,
                &format!("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEELi{i}EEEviT0_"),
            );
            let mut desc =
                KernelDesc::new(kn.mangled, kn.demangled, kn.display, names.intern("sm_90"));
            desc.args = vec![(regs, ArgValue::Uint(32))];
            tracer.kernels().register(desc)
        })
        .collect()
}

/// A kernel execution record.
pub fn kernel(kernel: KernelId, corr: u64, t: u64) -> KernelExec {
    let mut k = KernelExec::new(0, corr, t, t + 2_500, kernel);
    k.context = 1;
    k.stream = 7;
    k.grid = Dim3::new(1024, 1, 1);
    k.block = Dim3::new(256, 1, 1);
    // Waves stay `None`, as both backends write them: the CUDA backend
    // leaves them out (13 bytes a kernel, derivable from the grid and the
    // class's occupancy), and HIP has no occupancy to derive them from.
    k
}

/// A launch API call.
pub fn launch(name: NameId, thread: u32, corr: u64, t: u64) -> ApiCall {
    let mut call = ApiCall::new(name, thread, t, t + 3_000, corr);
    call.submits = true;
    call
}

/// A trace recorded through the real in-process path: `launches` kernel
/// launches (API slice with its submission arrow, and the kernel), every
/// eighth followed by an asynchronous copy with its API slice, from two
/// threads over 64 kernel classes. Written once into `dir` and reused.
pub fn recorded_trace(dir: &std::path::Path, launches: u64) -> PathBuf {
    record(dir, launches, None)
}

/// [`recorded_trace`], with two per-kernel counters measured on every
/// `every`-th kernel, as a counter-profiling run writes them (each value
/// at its kernel's start, and back to zero at its end).
pub fn profiled_trace(dir: &std::path::Path, launches: u64, every: u64) -> PathBuf {
    record(dir, launches, Some(every.max(1)))
}

fn record(dir: &std::path::Path, launches: u64, profiled: Option<u64>) -> PathBuf {
    use gpu_trace_model::model::{
        CopyKind, CounterGroup, CounterSpec, KernelCounters, MemoryKind, MemoryOp, MemoryOpKind,
        Unit,
    };
    let name = match profiled {
        None => format!("recorded-{launches}"),
        Some(every) => format!("profiled-{launches}-{every}"),
    };
    let path = dir.join(format!("{name}.pftrace"));
    if path.is_file() {
        return path;
    }
    let (tracer, tmp) = tracer_with(&name, profiled.is_some());
    let counters = profiled.map(|every| {
        let spec = |n: &str, unit| CounterSpec::new(n, unit, CounterGroup::Compute);
        let ids = [
            tracer.register_counter(spec(
                "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                Unit::Percent,
            )),
            tracer.register_counter(spec("dram__bytes.sum", Unit::Byte)),
        ];
        (every, ids)
    });
    let ks = kernels(&tracer, 64);
    let launch_name = tracer.names().intern("cudaLaunchKernel");
    let copy_name = tracer.names().intern("cudaMemcpyAsync");
    let rec = tracer.recorder().clone();
    let threads = [gpu_trace_model::clock::thread_id(), 1_000_001];
    let t0 = gpu_trace_model::clock::boottime_ns();
    let mut corr = 0;
    for chunk in 0..launches.div_ceil(10_000) {
        for i in 0..10_000.min(launches - chunk * 10_000) {
            corr += 1;
            let t = t0 + corr * 5_000;
            let thread = threads[(i % 2) as usize];
            rec.api(launch(launch_name, thread, corr, t));
            rec.kernel(kernel(ks[(i % 64) as usize], corr, t + 2_000));
            if let Some((every, ids)) = counters
                && corr % every == 0
            {
                let v = (corr % 100) as f64;
                rec.kernel_counters(KernelCounters::new(
                    0,
                    corr,
                    t + 2_000,
                    t + 4_500,
                    vec![(ids[0], v), (ids[1], v * 4096.0)].into(),
                ));
            }
            if i % 8 == 7 {
                corr += 1;
                let t = t0 + corr * 5_000;
                rec.api(launch(copy_name, thread, corr, t));
                let mut op = MemoryOp::new(
                    0,
                    corr,
                    t + 2_000,
                    t + 4_000,
                    1 << 20,
                    MemoryOpKind::Copy {
                        kind: CopyKind::HtoD,
                        src: MemoryKind::Pinned,
                        dst: MemoryKind::Device,
                        peer: None,
                    },
                );
                op.context = 1;
                op.stream = 7;
                rec.memory(op);
            }
        }
        tracer.flush(std::time::Duration::from_secs(30));
    }
    tracer.shutdown(std::time::Duration::from_secs(60));
    let written = tracer.output_path().expect("file output").to_path_buf();
    let _ = std::fs::create_dir_all(dir);
    std::fs::rename(&written, &path)
        .or_else(|_| std::fs::copy(&written, &path).map(drop))
        .expect("keep the recorded trace");
    let _ = std::fs::remove_dir_all(tmp);
    path
}
