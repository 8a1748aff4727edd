//! GPU smoke test of the `cupti` crate (run by `cupti/tests/gpu/run.sh`).
//!
//! Loads CUPTI, subscribes to a few callbacks, registers the CLOCK_BOOTTIME
//! timestamp callback and the activity handler, then runs the tiny CUDA
//! program of `cupti/tests/gpu/smoke.cu` (a shared library given as the first
//! argument) and checks what came back: the kernel's name, the byte counts of
//! the copy and the set, correlation with the launch callback, and that every
//! timestamp lies in this process's CLOCK_BOOTTIME window. Then it profiles one
//! kernel with two valid metrics and shows a bad metric rejected on its own.
//!
//! Prints one `PASS:`/`FAIL:`/`SKIP:` line per check; exits 1 on any failure.
//! Without a CUDA driver it prints `skipped: no CUDA driver` and exits 0.

use std::{
    ffi::c_int,
    process::ExitCode,
    sync::{Arc, Mutex},
};

use cupti::{
    Context, Cupti,
    activity::{self, ActivityConfig, ActivityKind, MemcpyKind, Record, Records},
    callback::{Callback, Domain, ResourceEvent, Site, Subscriber},
    cbid::{ApiDomain, CallKind},
    driver::Driver,
    profiler::{MetricConfig, Profiler, RangeProfiler},
};
use cupti_sys as sys;

const KERNEL: &str = "gpu_trace_smoke_kernel";
const COPY_BYTES: u64 = 1 << 20;
const SET_BYTES: u64 = 1 << 19;
const SET_VALUE: u32 = 0x5a;
const GOOD_METRICS: [&str; 2] = [
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
];
const BAD_METRIC: &str = "gpu_trace__no_such_metric.sum";

#[derive(Debug, Clone)]
enum Seen {
    Kernel {
        name: String,
        start: u64,
        end: u64,
        corr: u32,
    },
    Memcpy {
        kind: MemcpyKind,
        bytes: u64,
        start: u64,
        end: u64,
    },
    Memset {
        bytes: u64,
        value: u32,
        start: u64,
        end: u64,
    },
}

struct Call {
    name: String,
    domain: ApiDomain,
    kind: CallKind,
    site: Site,
    corr: u32,
    stream: Option<u64>,
    launch: Option<cupti::callback::LaunchConfig>,
}

#[derive(Default)]
struct Report {
    failed: bool,
}

impl Report {
    fn check(&mut self, ok: bool, what: &str) {
        if ok {
            println!("PASS: {what}");
        } else {
            println!("FAIL: {what}");
            self.failed = true;
        }
    }
}

type SmokeFn = unsafe extern "C" fn() -> c_int;

fn main() -> ExitCode {
    // SAFETY: loading the driver as any CUDA application does; only probed here.
    if unsafe { libloading::Library::new("libcuda.so.1") }.is_err() {
        println!("skipped: no CUDA driver");
        return ExitCode::SUCCESS;
    }
    let Some(lib_path) = std::env::args().nth(1) else {
        println!("FAIL: usage: gpu_smoke path/to/libgpu_trace_smoke.so");
        return ExitCode::FAILURE;
    };
    match run(&lib_path) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            println!("FAIL: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(lib_path: &str) -> Result<bool, Box<dyn std::error::Error>> {
    let mut r = Report::default();
    let cupti = Cupti::load()?;
    println!(
        "PASS: loaded {} (CUPTI API version {})",
        cupti.path(),
        cupti.version()
    );
    let t0 = activity::boottime_ns();

    // Callbacks: launches (runtime and driver), copies, sets, syncs, contexts.
    let calls = Arc::new(Mutex::new(Vec::<Call>::new()));
    let context = Arc::new(Mutex::new(None::<Context>));
    let (c2, ctx2) = (calls.clone(), context.clone());
    let sub = Subscriber::subscribe(&cupti, c"example", move |cb: &Callback<'_>| match cb {
        Callback::Api(api) => {
            c2.lock().unwrap().push(Call {
                name: api.function_name().to_string_lossy().into_owned(),
                domain: api.domain(),
                kind: api.kind(),
                site: api.site(),
                corr: api.correlation_id(),
                stream: api.stream().map(cupti::Stream::as_u64),
                launch: api.launch_config(),
            });
            if let Some(c) = api.context() {
                ctx2.lock().unwrap().get_or_insert(c);
            }
        }
        Callback::Resource(res) if res.event() == ResourceEvent::ContextCreated => {
            if let Some(c) = res.context() {
                *ctx2.lock().unwrap() = Some(c);
            }
        }
        _ => {}
    })?;
    for kind in [CallKind::KernelLaunch, CallKind::Memcpy, CallKind::Memset] {
        sub.enable_kind(ApiDomain::Runtime, kind)?;
    }
    sub.enable_kind(ApiDomain::Driver, CallKind::KernelLaunch)?;
    sub.enable(
        Domain::Resource,
        sys::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_CONTEXT_CREATED.0,
    )?;

    // Activity, on CLOCK_BOOTTIME.
    activity::register_timestamp_callback(&cupti)?;
    let seen = Arc::new(Mutex::new(Vec::<Seen>::new()));
    let s2 = seen.clone();
    let act = activity::register(
        &cupti,
        ActivityConfig::default(),
        move |records: Records<'_>| {
            let mut out = s2.lock().unwrap();
            for rec in records {
                match rec {
                    Ok(Record::Kernel(k)) => out.push(Seen::Kernel {
                        name: k
                            .name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default(),
                        start: k.start(),
                        end: k.end(),
                        corr: k.correlation_id(),
                    }),
                    Ok(Record::Memcpy(m)) => out.push(Seen::Memcpy {
                        kind: m.copy_kind(),
                        bytes: m.bytes(),
                        start: m.start(),
                        end: m.end(),
                    }),
                    Ok(Record::Memset(m)) => out.push(Seen::Memset {
                        bytes: m.bytes(),
                        value: m.value(),
                        start: m.start(),
                        end: m.end(),
                    }),
                    Ok(_) => {}
                    Err(e) => println!("FAIL: record error {e}"),
                }
            }
        },
    )?;
    for k in [
        ActivityKind::ConcurrentKernel,
        ActivityKind::Memcpy,
        ActivityKind::Memset,
    ] {
        act.enable(k)?;
    }

    // The application.
    // SAFETY: loading our own test library built from smoke.cu.
    let lib = unsafe { libloading::Library::new(lib_path) }?;
    // SAFETY: the symbols are the `extern "C" int f(void)` functions of smoke.cu.
    let (init, run_once, kernel_once) = unsafe {
        (
            *lib.get::<SmokeFn>(b"smoke_init")?,
            *lib.get::<SmokeFn>(b"smoke_run")?,
            *lib.get::<SmokeFn>(b"smoke_kernel_once")?,
        )
    };
    // SAFETY: plain C calls into the test library.
    let rc = unsafe { init() };
    r.check(rc == 0, &format!("smoke_init returned {rc}"));
    // SAFETY: as above.
    let rc = unsafe { run_once() };
    r.check(rc == 0, &format!("smoke_run returned {rc}"));
    act.flush_all(true)?;
    let t1 = activity::boottime_ns();
    let stats = act.stats();
    println!("info: pool {stats:?}");

    let seen = seen.lock().unwrap().clone();
    let in_window = |s: u64, e: u64| t0 <= s && s <= e && e <= t1;
    let kernel = seen.iter().find_map(|s| match s {
        Seen::Kernel {
            name,
            start,
            end,
            corr,
        } if name == KERNEL => Some((*start, *end, *corr)),
        _ => None,
    });
    r.check(kernel.is_some(), &format!("kernel record named {KERNEL}"));
    if let Some((s, e, corr)) = kernel {
        r.check(
            in_window(s, e),
            &format!("kernel timestamps {s}..{e} within CLOCK_BOOTTIME {t0}..{t1}"),
        );
        let calls = calls.lock().unwrap();
        let launch = calls
            .iter()
            .find(|c| c.corr == corr && c.kind == CallKind::KernelLaunch);
        r.check(
            launch.is_some(),
            &format!(
                "kernel correlation id {corr} matches a launch callback ({:?})",
                launch.map(|c| (&c.name, c.domain))
            ),
        );
        r.check(
            launch.is_some_and(|c| c.stream.is_some()),
            &format!(
                "launch callback exposes the stream handle ({:?})",
                launch.map(|c| c.stream)
            ),
        );
    }
    {
        // smoke.cu launches (SET_BYTES / 256) blocks of 256 threads, no dynamic smem.
        let calls = calls.lock().unwrap();
        let want = ([(SET_BYTES / 256) as u32, 1, 1], [256, 1, 1], 0);
        for domain in [ApiDomain::Runtime, ApiDomain::Driver] {
            let got: Vec<_> = calls
                .iter()
                .filter(|c| c.domain == domain && c.kind == CallKind::KernelLaunch)
                .map(|c| {
                    (
                        c.name.as_str(),
                        c.launch.map(|l| (l.grid, l.block, l.dynamic_shared_mem)),
                    )
                })
                .collect();
            r.check(
                !got.is_empty() && got.iter().all(|g| g.1 == Some(want)),
                &format!("{domain:?} launch callbacks decode grid/block/smem {want:?}: {got:?}"),
            );
        }
    }
    let copy = seen.iter().find_map(|s| match s {
        Seen::Memcpy {
            kind: MemcpyKind::HtoD,
            bytes,
            start,
            end,
        } => Some((*bytes, *start, *end)),
        _ => None,
    });
    r.check(
        copy.is_some_and(|c| c.0 == COPY_BYTES),
        &format!("HtoD memcpy of {COPY_BYTES} bytes ({copy:?})"),
    );
    r.check(
        copy.is_some_and(|c| in_window(c.1, c.2)),
        "memcpy timestamps within the CLOCK_BOOTTIME window",
    );
    let set = seen.iter().find_map(|s| match s {
        Seen::Memset {
            bytes,
            value,
            start,
            end,
        } => Some((*bytes, *value, *start, *end)),
        _ => None,
    });
    r.check(
        set.is_some_and(|s| s.0 == SET_BYTES && s.1 == SET_VALUE),
        &format!("memset of {SET_BYTES} bytes of {SET_VALUE:#x} ({set:?})"),
    );
    r.check(
        set.is_some_and(|s| in_window(s.2, s.3)),
        "memset timestamps within the CLOCK_BOOTTIME window",
    );
    {
        let calls = calls.lock().unwrap();
        for kind in [CallKind::KernelLaunch, CallKind::Memcpy, CallKind::Memset] {
            let of_kind = |site| {
                calls
                    .iter()
                    .filter(|c| c.domain == ApiDomain::Runtime && c.kind == kind && c.site == site)
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
            };
            let (enter, exit) = (of_kind(Site::Enter), of_kind(Site::Exit));
            r.check(
                !enter.is_empty() && !exit.is_empty(),
                &format!("runtime {kind:?} enter and exit callbacks ({enter:?})"),
            );
        }
    }

    // Driver-side device description.
    let driver = Driver::from_process()?;
    let dev = driver.device(0)?;
    let sms = driver.device_attribute(
        dev,
        sys::CUdevice_attribute_enum::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    )?;
    println!(
        "info: driver {} device 0 {:?} pci {} mem {} B, {} SMs, uuid {:02x?}",
        driver.version()?,
        driver.device_name(dev)?,
        driver.device_pci_bus_id(dev)?,
        driver.device_total_mem(dev)?,
        sms,
        driver.device_uuid(dev)?
    );
    r.check(sms > 0, "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT) > 0");

    // Range profiler: stop tracing first so replay does not mix with it.
    for k in [
        ActivityKind::ConcurrentKernel,
        ActivityKind::Memcpy,
        ActivityKind::Memset,
    ] {
        act.disable(k)?;
    }
    act.flush_all(true)?;
    let Some(ctx) = *context.lock().unwrap() else {
        r.check(false, "a CUDA context was seen in callbacks");
        return Ok(!r.failed);
    };
    match profile(&cupti, ctx, kernel_once, &mut r) {
        Ok(()) => {}
        Err(e) if e.is_permission_denied() => {
            println!("SKIP: counters: {e}");
        }
        Err(e) => r.check(false, &format!("range profiler: {e}")),
    }
    drop(sub);
    Ok(!r.failed)
}

fn profile(cupti: &Cupti, ctx: Context, kernel_once: SmokeFn, r: &mut Report) -> cupti::Result<()> {
    let profiler = Profiler::initialize(cupti)?;
    let device = ctx.device_id(cupti)? as usize;
    let chip = profiler.chip_name(device)?;
    println!("info: chip {chip}");
    let availability = profiler.counter_availability(ctx)?;
    let metrics = [GOOD_METRICS[0], BAD_METRIC, GOOD_METRICS[1]];
    let config = MetricConfig::new(cupti, &chip, Some(&availability), &metrics)?;
    let accepted: Vec<&str> = config.accepted().collect();
    r.check(
        accepted == GOOD_METRICS,
        &format!("valid metrics accepted: {accepted:?}"),
    );
    let rejected: Vec<&str> = config.rejected().iter().map(|(n, _)| n.as_str()).collect();
    r.check(
        rejected == [BAD_METRIC],
        &format!("bad metric rejected on its own: {:?}", config.rejected()),
    );
    println!("info: {} replay pass(es)", config.num_passes());
    let mut rp = RangeProfiler::enable(
        cupti,
        ctx,
        &config,
        1,
        cupti::profiler::Replay::Kernel,
        cupti::profiler::Ranges::Auto,
    )?;
    // SAFETY: plain C call into the test library.
    let (rc, ranges) = rp.profile(c"gpu_trace_smoke_kernel", || unsafe { kernel_once() })?;
    r.check(rc == 0, &format!("profiled launch returned {rc}"));
    r.check(
        ranges.len() == 1,
        &format!("one profiled range ({} found)", ranges.len()),
    );
    for range in &ranges {
        println!("info: range {:?}: {:?}", range.name, range.values);
        r.check(
            range.values.len() == 2 && range.values.iter().all(|(_, v)| v.is_finite()),
            "two finite metric values",
        );
        let dur = range
            .values
            .iter()
            .find(|(n, _)| n == GOOD_METRICS[0])
            .map(|v| v.1);
        r.check(
            dur.is_some_and(|d| d > 0.0),
            &format!("gpu__time_duration.sum > 0 ({dur:?})"),
        );
    }
    rp.close()?;
    drop(config);
    drop(profiler);
    Ok(())
}
