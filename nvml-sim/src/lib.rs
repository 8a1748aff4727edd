//! A fake NVML: scripted devices with fixed readings (see the README).

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// The exported functions (also reachable from Rust, for the in-process resolver).
pub mod ffi;

pub use ffi::resolve;

/// Environment variable holding the JSON [`Spec`] of a cdylib run.
pub const SPEC_ENV: &str = "NVML_SIM_SPEC";

/// What the fake NVML shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spec {
    /// The host's GPUs, in NVML index order.
    pub devices: Vec<DeviceSpec>,
    /// `nvmlInit_v2` fails with this status (e.g. 9, driver not loaded).
    pub init_error: Option<u32>,
    /// Functions [`resolve`] does not find (in-process only: a cdylib's
    /// exports cannot hide; there they answer `NVML_ERROR_FUNCTION_NOT_FOUND`).
    pub missing: Vec<String>,
    /// How long `nvmlDeviceGetPcieThroughput` blocks, µs (the real one: ~21 ms).
    pub pcie_delay_us: u64,
    /// How long `nvmlDeviceGetTotalEnergyConsumption` blocks, µs (real: ~4 ms).
    pub energy_delay_us: u64,
}

impl Default for Spec {
    fn default() -> Self {
        Self {
            devices: vec![DeviceSpec::default()],
            init_error: None,
            missing: Vec::new(),
            pcie_delay_us: 0,
            energy_delay_us: 0,
        }
    }
}

/// One GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceSpec {
    /// `GPU-...` text.
    pub uuid: String,
    /// NVML's bus id, `00000000:bb:dd.f`.
    pub pci: String,
    /// Product name.
    pub name: String,
    /// `nvmlGpmQueryDeviceSupport` says supported.
    pub gpm: bool,
    /// Readings answering `NVML_ERROR_NOT_SUPPORTED`: `clock`, `utilization`,
    /// `power`, `temperature`, `memory`, `reasons`, `pcie`, `energy`.
    pub unsupported: Vec<String>,
    /// GPM metric ids whose own status is `NVML_ERROR_NOT_SUPPORTED`.
    pub gpm_unsupported: Vec<u32>,
    /// The readings.
    pub values: Values,
}

impl Default for DeviceSpec {
    fn default() -> Self {
        Self {
            uuid: "GPU-5a1b2c3d-0000-4000-8000-00000000c0de".into(),
            pci: "00000000:06:00.0".into(),
            name: "NVIDIA H200 (nvml-sim)".into(),
            gpm: true,
            unsupported: Vec::new(),
            gpm_unsupported: Vec::new(),
            values: Values::default(),
        }
    }
}

/// Fixed readings (energy grows by `energy_step_mj` a call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Values {
    /// MHz.
    pub sm_clock: u32,
    /// MHz.
    pub mem_clock: u32,
    /// Percent.
    pub gpu_util: u32,
    /// Percent.
    pub mem_util: u32,
    /// mW.
    pub power_mw: u32,
    /// °C.
    pub temperature: i32,
    /// Bytes.
    pub mem_total: u64,
    /// Bytes (v2 `used`; v1 reports `used + reserved`).
    pub mem_used: u64,
    /// Bytes.
    pub mem_reserved: u64,
    /// Clock-event reason bits.
    pub reasons: u64,
    /// KB/s.
    pub pcie_tx_kbps: u32,
    /// KB/s.
    pub pcie_rx_kbps: u32,
    /// mJ at the first call.
    pub energy_mj: u64,
    /// mJ added by every call.
    pub energy_step_mj: u64,
    /// GPM metric values by id.
    pub gpm: Vec<(u32, f64)>,
}

impl Default for Values {
    fn default() -> Self {
        Self {
            sm_clock: 1980,
            mem_clock: 3201,
            gpu_util: 87,
            mem_util: 41,
            power_mw: 352_500,
            temperature: 54,
            mem_total: 150_754_820_096,
            mem_used: 12_884_901_888,
            mem_reserved: 536_870_912,
            reasons: nvml_sys::clocks_event_reasons::SW_POWER_CAP,
            pcie_tx_kbps: 1_234,
            pcie_rx_kbps: 5_678,
            energy_mj: 1_000_000,
            energy_step_mj: 250,
            // The H200 under a bf16 matmul loop, as NVML read it there.
            gpm: vec![
                (1, 97.5),
                (2, 96.7),
                (3, 14.3),
                (5, 93.9),
                (10, 16.5),
                (20, 120.0),
                (21, 480.0),
                (60, 0.0),
                (61, 0.0),
            ],
        }
    }
}

struct State {
    spec: Spec,
    inits: i64,
    calls: HashMap<String, u64>,
    /// Next GPM sample sequence number.
    seq: u64,
    live_samples: i64,
    energy_calls: Vec<u64>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn state() -> MutexGuard<'static, Option<State>> {
    let mut g = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_none() {
        let spec = std::env::var(SPEC_ENV)
            .ok()
            .map(|s| serde_json::from_str(&s).expect("NVML_SIM_SPEC is a JSON Spec"))
            .unwrap_or_default();
        *g = Some(new_state(spec));
    }
    g
}

fn new_state(spec: Spec) -> State {
    State {
        energy_calls: vec![0; spec.devices.len()],
        spec,
        inits: 0,
        calls: HashMap::new(),
        seq: 0,
        live_samples: 0,
    }
}

/// Replaces the spec (in-process use), resetting every count.
pub fn configure(spec: Spec) {
    *STATE.lock().unwrap_or_else(|e| e.into_inner()) = Some(new_state(spec));
}

/// Calls of the function `name` since the last [`configure`].
pub fn calls(name: &str) -> u64 {
    state()
        .as_ref()
        .and_then(|s| s.calls.get(name).copied())
        .unwrap_or(0)
}

/// GPM sample buffers allocated and not freed.
pub fn live_samples() -> i64 {
    state().as_ref().map_or(0, |s| s.live_samples)
}

/// `nvmlInit_v2` calls not matched by `nvmlShutdown`.
pub fn init_count() -> i64 {
    state().as_ref().map_or(0, |s| s.inits)
}
