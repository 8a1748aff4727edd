//! The simulated SDK (compiled into both crate types; only the cdylib's copy is ever used,
//! because only it is loaded RTLD_GLOBAL where tools look for the symbols).

mod buffers;
mod device;
mod exec;
mod exports;
mod names;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use rocprofiler_sys as sys;

use crate::Report;
use crate::host::RunSpec;
use crate::scenario::{AgentKind, Scenario};

use buffers::{Buf, Delivery};
use device::Device;

/// A raw pointer the tool gave us, moved between threads as the SDK does.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SendPtr(pub(crate) *mut c_void);
// SAFETY: the SDK contract: tool data pointers are handed back on SDK threads; the tool is
// responsible for what they point at.
unsafe impl Send for SendPtr {}
// SAFETY: as above.
unsafe impl Sync for SendPtr {}

pub(crate) type CallbackFn = unsafe extern "C" fn(
    sys::rocprofiler_callback_tracing_record_t,
    *mut sys::rocprofiler_user_data_t,
    *mut c_void,
);

#[derive(Clone)]
pub(crate) struct CbService {
    pub(crate) ops: Option<Arc<BTreeSet<i32>>>,
    pub(crate) cb: CallbackFn,
    pub(crate) data: SendPtr,
}

#[derive(Clone)]
pub(crate) struct BufService {
    pub(crate) ops: Option<Arc<BTreeSet<i32>>>,
    pub(crate) buffer: Arc<Buf>,
}

#[derive(Clone)]
pub(crate) enum CountingSink {
    Callback {
        cb: unsafe extern "C" fn(
            sys::rocprofiler_dispatch_counting_service_data_t,
            *mut sys::rocprofiler_counter_record_t,
            usize,
            sys::rocprofiler_user_data_t,
            *mut c_void,
        ),
        data: SendPtr,
    },
    Buffer(Arc<Buf>),
}

#[derive(Clone)]
pub(crate) struct Counting {
    pub(crate) dispatch: unsafe extern "C" fn(
        sys::rocprofiler_dispatch_counting_service_data_t,
        *mut sys::rocprofiler_counter_config_id_t,
        *mut sys::rocprofiler_user_data_t,
        *mut c_void,
    ),
    pub(crate) dispatch_data: SendPtr,
    pub(crate) sink: CountingSink,
}

#[derive(Default)]
pub(crate) struct Ctx {
    pub(crate) active: bool,
    pub(crate) callback: BTreeMap<u32, CbService>,
    pub(crate) buffer: BTreeMap<u32, BufService>,
    pub(crate) counting: Option<Counting>,
}

pub(crate) struct CounterCfg {
    pub(crate) agent: u64,
    pub(crate) counters: Vec<u64>,
}

#[derive(Default)]
pub(crate) struct Registry {
    /// Index = handle - 1.
    pub(crate) contexts: Vec<Ctx>,
    /// Index = handle - 1.
    pub(crate) buffers: Vec<Arc<Buf>>,
    pub(crate) configs: HashMap<u64, CounterCfg>,
    pub(crate) next_config: u64,
    /// Index = handle - 1.
    pub(crate) threads: Vec<Arc<Delivery>>,
    pub(crate) external: HashMap<(u64, u64), Vec<u64>>,
}

/// A counter as the simulated SDK knows it.
pub(crate) struct CounterDef {
    pub(crate) id: u64,
    pub(crate) agent: u64,
    pub(crate) name: String,
    pub(crate) instances: usize,
    pub(crate) c_name: &'static CStr,
    pub(crate) c_description: &'static CStr,
    pub(crate) c_block: &'static CStr,
    pub(crate) dim_name: &'static CStr,
}

pub(crate) struct Sim {
    pub(crate) spec: RunSpec,
    /// 0 not initialised, -1 configuring/initialising, 1 done (configuration locked).
    pub(crate) init_status: AtomicI32,
    /// 0 running, -1 finalising, 1 finalised.
    pub(crate) fini_status: AtomicI32,
    pub(crate) reg: Mutex<Registry>,
    pub(crate) report: Mutex<Report>,
    pub(crate) next_corr: AtomicU64,
    pub(crate) next_dispatch: AtomicU64,
    pub(crate) next_range: AtomicU64,
    pub(crate) next_event: AtomicU64,
    /// SDK-owned agent structs; pointers to them are handed out (boxed: stable addresses).
    #[allow(clippy::vec_box)]
    pub(crate) agents: Vec<Box<sys::rocprofiler_agent_v0_t>>,
    /// Agent handles of the GPUs in HIP-ordinal order.
    pub(crate) gpu_agents: Vec<u64>,
    pub(crate) cpu_agent: u64,
    pub(crate) counters: Vec<CounterDef>,
    pub(crate) devices: Vec<Device>,
    pub(crate) default_delivery: OnceLock<Arc<Delivery>>,
    pub(crate) tool: Mutex<ToolState>,
    pub(crate) client_handle: u32,
}

#[derive(Default)]
pub(crate) struct ToolState {
    pub(crate) result: Option<sys::rocprofiler_tool_configure_result_t>,
    pub(crate) finalized: bool,
}

// SAFETY: the raw pointers inside (agent strings, tool data) are SDK-owned statics or handed back
// to the tool as the SDK contract requires; all mutable state is behind Mutexes/atomics.
unsafe impl Sync for Sim {}
// SAFETY: as above.
unsafe impl Send for Sim {}

static SIM: OnceLock<Sim> = OnceLock::new();

pub(crate) fn sim() -> Option<&'static Sim> {
    SIM.get()
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// CLOCK_BOOTTIME in ns, the SDK's clock.
pub(crate) use gpu_trace_model::clock::boottime_ns as now_ns;

pub(crate) fn gettid() -> u64 {
    u64::from(gpu_trace_model::clock::thread_id())
}

fn leak_c(s: &str) -> &'static CStr {
    Box::leak(
        CString::new(s.replace('\0', ""))
            .expect("no NUL")
            .into_boxed_c_str(),
    )
}

const AGENT_HANDLE_BASE: u64 = 0x1000;
const COUNTER_HANDLE_BASE: u64 = 0x100;

impl Sim {
    fn new(spec: RunSpec) -> Sim {
        let mut agents = Vec::new();
        let mut gpu_agents = Vec::new();
        let mut cpu_agent = 0;
        let mut counters = Vec::new();
        let (mut cpus, mut gpus) = (0, 0);
        for (i, a) in spec.scenario.agents.iter().enumerate() {
            // SAFETY: all-zero is valid for this plain C struct.
            let mut raw: sys::rocprofiler_agent_v0_t = unsafe { std::mem::zeroed() };
            let handle = AGENT_HANDLE_BASE + i as u64;
            raw.size = std::mem::size_of::<sys::rocprofiler_agent_v0_t>() as u64;
            raw.id = sys::rocprofiler_agent_id_t { handle };
            raw.node_id = i as u32;
            raw.logical_node_id = i as i32;
            raw.name = leak_c(&a.name).as_ptr();
            raw.product_name = leak_c(&a.product_name).as_ptr();
            raw.model_name = leak_c("").as_ptr();
            raw.runtime_visibility = sys::rocprofiler_agent_runtime_visiblity_t { bits: 0b1111 };
            match a.kind {
                AgentKind::Cpu => {
                    raw.r#type = sys::rocprofiler_agent_type_t::CPU;
                    raw.logical_node_type_id = cpus;
                    raw.vendor_name = leak_c("CPU").as_ptr();
                    raw.cpu_cores_count = 64;
                    if cpus == 0 {
                        cpu_agent = handle;
                    }
                    cpus += 1;
                }
                AgentKind::Gpu => {
                    raw.r#type = sys::rocprofiler_agent_type_t::GPU;
                    raw.logical_node_type_id = gpus;
                    raw.vendor_name = leak_c("AMD").as_ptr();
                    raw.vendor_id = 0x1002;
                    raw.device_id = 0x740f;
                    raw.gfx_target_version = a.gfx_target_version;
                    raw.cu_count = a.cu_count;
                    raw.simd_count = a.cu_count * 4;
                    raw.wave_front_size = 64;
                    raw.num_xcc = 1;
                    raw.max_waves_per_cu = 32;
                    raw.lds_size_in_kb = 64;
                    raw.local_mem_size = 64 << 30;
                    raw.gpu_id = 1000 + gpus as u64;
                    raw.location_id = 0x100 * (gpus as u32 + 1);
                    raw.workgroup_max_size = 1024;
                    raw.workgroup_max_dim = sys::rocprofiler_dim3_t {
                        x: 1024,
                        y: 1024,
                        z: 1024,
                    };
                    raw.grid_max_dim = sys::rocprofiler_dim3_t {
                        x: u32::MAX,
                        y: u32::MAX,
                        z: u32::MAX,
                    };
                    gpu_agents.push(handle);
                    for (j, c) in a.counters.iter().enumerate() {
                        counters.push(CounterDef {
                            id: COUNTER_HANDLE_BASE * (gpus as u64 + 1) + j as u64,
                            agent: handle,
                            name: c.name.clone(),
                            instances: c.instances,
                            c_name: leak_c(&c.name),
                            c_description: leak_c(&c.description),
                            c_block: leak_c(&c.block),
                            dim_name: leak_c("INSTANCE"),
                        });
                    }
                    gpus += 1;
                }
            }
            agents.push(Box::new(raw));
        }
        let devices = (0..gpu_agents.len()).map(Device::new).collect();
        Sim {
            spec,
            init_status: AtomicI32::new(0),
            fini_status: AtomicI32::new(0),
            reg: Mutex::new(Registry {
                next_config: 1,
                ..Default::default()
            }),
            report: Mutex::new(Report::default()),
            next_corr: AtomicU64::new(1),
            next_dispatch: AtomicU64::new(1),
            next_range: AtomicU64::new(1),
            next_event: AtomicU64::new(1),
            agents,
            gpu_agents,
            cpu_agent,
            counters,
            devices,
            default_delivery: OnceLock::new(),
            tool: Mutex::new(ToolState::default()),
            client_handle: 1,
        }
    }

    pub(crate) fn scenario(&self) -> &Scenario {
        &self.spec.scenario
    }

    pub(crate) fn violation(&self, v: String) {
        eprintln!("rocprofiler-sim: protocol violation: {v}");
        lock(&self.report).violations.push(v);
    }

    /// Records a call the tool made and what it returned.
    pub(crate) fn ret(
        &self,
        call: &str,
        s: sys::rocprofiler_status_t,
    ) -> sys::rocprofiler_status_t {
        let mut r = lock(&self.report);
        *r.calls.entry(call.to_owned()).or_default() += 1;
        if s != sys::rocprofiler_status_t::SUCCESS {
            let name = names::status_name(s)
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_else(|| s.0.to_string());
            *r.failed_calls
                .entry(call.to_owned())
                .or_default()
                .entry(name)
                .or_default() += 1;
        }
        s
    }

    pub(crate) fn counter(&self, id: u64) -> Option<&CounterDef> {
        self.counters.iter().find(|c| c.id == id)
    }

    pub(crate) fn default_delivery(&self) -> Arc<Delivery> {
        self.default_delivery
            .get_or_init(|| Delivery::spawn("sdk-buffer"))
            .clone()
    }

    /// Stops every context (the tool's) — before its finalize, as the SDK does.
    fn stop_all_contexts(&self) {
        for c in lock(&self.reg).contexts.iter_mut() {
            c.active = false;
        }
    }

    fn call_finalize(&self) {
        let result = {
            let mut t = lock(&self.tool);
            if t.finalized {
                return;
            }
            t.finalized = true;
            t.result
        };
        let Some(result) = result else { return };
        self.stop_all_contexts();
        lock(&self.report).finalize_calls += 1;
        if let Some(fini) = result.finalize {
            // SAFETY: the tool's finalize with the tool data it gave us.
            unsafe { fini(result.tool_data) };
        }
    }
}

/// `rocprofiler_client_finalize_t` handed to the tool's initialize.
unsafe extern "C" fn client_finalize(client: sys::rocprofiler_client_id_t) {
    let Some(sim) = sim() else { return };
    if client.handle != sim.client_handle {
        sim.violation(format!(
            "client finalize called with unknown handle {}",
            client.handle
        ));
        return;
    }
    sim.call_finalize();
}

const CANARY: u8 = 0xA5;

fn run(spec: RunSpec) -> Result<Report, String> {
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    spec.scenario.validate()?;
    let version = spec.sdk_version;
    if SIM.set(Sim::new(spec)).is_err() {
        return Err("a process can host one simulated SDK run".into());
    }
    let sim = sim().expect("just set");
    lock(&sim.report).sdk_version = version;

    if sim.spec.finalize_at_exit {
        // SAFETY: a plain `extern "C" fn()` that catches panics.
        if unsafe { atexit(finalize_at_exit) } != 0 {
            return Err("cannot register the exit handler".into());
        }
    }

    // The SDK dlopens tools RTLD_LOCAL; it finds our symbols because we were loaded RTLD_GLOBAL.
    // SAFETY: loading the tool under test runs its initialisers, as the real SDK does.
    let tool = unsafe { Library::open(Some(&sim.spec.tool), RTLD_NOW | RTLD_LOCAL) }
        .map_err(|e| format!("loading tool {}: {e}", sim.spec.tool.display()))?;
    // SAFETY: a tool's `rocprofiler_configure` has this prototype (checked in rocprofiler-sys).
    let configure =
        unsafe { tool.get::<sys::rocprofiler_configure_func_t>(b"rocprofiler_configure\0") }
            .map_err(|e| format!("tool has no rocprofiler_configure: {e}"))?;
    let Some(configure) = *configure else {
        return Err("rocprofiler_configure is null".into());
    };

    sim.init_status.store(-1, Ordering::SeqCst);
    // The client id the tool may write `name` into, inside a canary-filled block so writes past
    // it (or into the wrong layout) are seen. 0.x SDKs passed `{const char* name; uint32_t handle}`.
    let mut block = [CANARY; 64];
    let legacy = version < sys::encode_version(1, 0, 0);
    let client_size = if legacy {
        16
    } else {
        std::mem::size_of::<sys::rocprofiler_client_id_t>()
    };
    if legacy {
        block[..8].copy_from_slice(&0u64.to_ne_bytes());
        block[8..12].copy_from_slice(&sim.client_handle.to_ne_bytes());
        block[12..16].copy_from_slice(&[0; 4]);
    } else {
        let id = sys::rocprofiler_client_id_t {
            size: std::mem::size_of::<sys::rocprofiler_client_id_t>(),
            name: std::ptr::null(),
            handle: sim.client_handle,
        };
        // SAFETY: the block is larger than the struct; unaligned write of plain data.
        unsafe { std::ptr::write_unaligned(block.as_mut_ptr().cast(), id) };
    }
    let before = block;
    let rv = CString::new(format!(
        "{}.{}.{} (rocprofiler-sim)",
        version / 10000,
        version / 100 % 100,
        version % 100
    ))
    .expect("no NUL");
    lock(&sim.report).configure_called = true;
    // The block is 8-aligned in practice only by luck; copy into an aligned holder.
    let mut holder = [0u64; 8];
    // SAFETY: same size (64 bytes), plain data.
    unsafe { std::ptr::copy_nonoverlapping(block.as_ptr(), holder.as_mut_ptr().cast::<u8>(), 64) };
    // SAFETY: calling the tool's entry point as the SDK does.
    let result = unsafe { configure(version, rv.as_ptr(), 0, holder.as_mut_ptr().cast()) };
    // SAFETY: same size, plain data.
    unsafe { std::ptr::copy_nonoverlapping(holder.as_ptr().cast::<u8>(), block.as_mut_ptr(), 64) };
    {
        let mut r = lock(&sim.report);
        let mut intact = block[client_size..] == before[client_size..];
        if legacy {
            intact &= block[..client_size] == before[..client_size];
        } else {
            // Only `name` (bytes 8..16) may change.
            intact &= block[..8] == before[..8] && block[16..24] == before[16..24];
            let name =
                u64::from_ne_bytes(block[8..16].try_into().expect("8 bytes")) as *const c_char;
            if !name.is_null() {
                // SAFETY: the tool set a NUL-terminated static name.
                r.client_name = Some(
                    unsafe { CStr::from_ptr(name) }
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
        r.client_id_intact = intact;
        r.configure_accepted = !result.is_null();
    }
    if !lock(&sim.report).client_id_intact {
        sim.violation("rocprofiler_configure wrote outside client_id->name".into());
    }

    if !result.is_null() {
        // SAFETY: non-null result the tool returned; the SDK copies it.
        let res = unsafe { std::ptr::read(result) };
        lock(&sim.report).result_size = Some(res.size as u64);
        if res.size != std::mem::size_of::<sys::rocprofiler_tool_configure_result_t>() {
            sim.violation(format!("configure result size {} (expected 32)", res.size));
        }
        lock(&sim.tool).result = Some(res);
        if let Some(init) = res.initialize {
            // SAFETY: the tool's initialize with our client-finalize function and its data.
            let status = unsafe { init(Some(client_finalize), res.tool_data) };
            lock(&sim.report).initialize_status = Some(status);
        }
    }
    sim.init_status.store(1, Ordering::SeqCst);

    // The application.
    exec::run_program(sim);

    if sim.spec.finalize_at_exit {
        // Like the real SDK, the tool stays loaded until the process exits.
        std::mem::forget(tool);
        return Ok(lock(&sim.report).clone());
    }
    finalize_sdk(sim);
    // Like the real SDK, the tool stays loaded until the process exits.
    std::mem::forget(tool);
    Ok(lock(&sim.report).clone())
}

/// Exit: drain, unload code objects, finalize the tool, stop SDK threads, check that every
/// record was delivered.
fn finalize_sdk(sim: &Sim) {
    for d in &sim.devices {
        d.wait_idle();
    }
    sim.fini_status.store(-1, Ordering::SeqCst);
    exec::unload_code_objects(sim);
    sim.call_finalize();
    sim.fini_status.store(1, Ordering::SeqCst);
    for d in &sim.devices {
        d.shutdown();
    }
    let undelivered: u64 = lock(&sim.reg)
        .buffers
        .iter()
        .map(|b| b.pending_records())
        .sum();
    if undelivered > 0 {
        sim.violation(format!(
            "{undelivered} records never delivered: the tool's finalize must flush its buffers"
        ));
    }
    lock(&sim.report).undelivered_records = undelivered;
    let threads: Vec<Arc<Delivery>> = lock(&sim.reg).threads.clone();
    for t in threads.iter().chain(sim.default_delivery.get()) {
        t.shutdown();
    }
}

extern "C" fn finalize_at_exit() {
    if let Some(sim) = sim() {
        let _ = std::panic::catch_unwind(|| finalize_sdk(sim));
    }
}

unsafe extern "C" {
    fn atexit(f: extern "C" fn()) -> c_int;
}

/// Entry point of the cdylib: runs a [`RunSpec`] (JSON) and hands the [`Report`] (JSON) to
/// `out`. Returns 0 on success; on failure `out` gets the error text.
///
/// # Safety
/// `spec` must be a NUL-terminated string; `out` is called once with a valid string.
#[unsafe(no_mangle)]
#[allow(unreachable_pub)]
pub unsafe extern "C" fn rocprofiler_sim_run(
    spec: *const c_char,
    out: unsafe extern "C" fn(*const c_char, *mut c_void),
    data: *mut c_void,
) -> c_int {
    // SAFETY: caller contract.
    let text = unsafe { CStr::from_ptr(spec) }
        .to_string_lossy()
        .into_owned();
    let result = std::panic::catch_unwind(|| {
        let spec: RunSpec = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        run(spec)
    })
    .unwrap_or_else(|_| Err("the simulator panicked".into()));
    let (rc, text) = match result {
        Ok(r) => (0, serde_json::to_string(&r).unwrap_or_default()),
        Err(e) => (1, e),
    };
    let c = CString::new(text.replace('\0', "")).expect("no NUL");
    // SAFETY: caller contract.
    unsafe { out(c.as_ptr(), data) };
    rc
}
