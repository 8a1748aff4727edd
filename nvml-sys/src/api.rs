//! The run-time symbol table.

use core::ffi::{c_char, c_uint, c_ulonglong};

use crate::*;

api_table! {
    /// Initialises NVML (reference-counted: every call needs a matching `nvmlShutdown`).
    fn nvmlInit_v2() -> nvmlReturn_t;
    /// Drops one reference taken by `nvmlInit_v2`.
    fn nvmlShutdown() -> nvmlReturn_t;
    /// Static text of a status.
    fn nvmlErrorString(result: nvmlReturn_t) -> *const c_char;
    /// The driver's version as text.
    fn nvmlSystemGetDriverVersion(version: *mut c_char, length: c_uint) -> nvmlReturn_t;
    /// Number of GPUs NVML sees (all of them, whatever `CUDA_VISIBLE_DEVICES` says).
    fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> nvmlReturn_t;
    /// Device by NVML index (PCI order, as `nvidia-smi` numbers them).
    fn nvmlDeviceGetHandleByIndex_v2(index: c_uint, device: *mut nvmlDevice_t) -> nvmlReturn_t;
    /// Device by UUID text (`GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`).
    fn nvmlDeviceGetHandleByUUID(uuid: *const c_char, device: *mut nvmlDevice_t) -> nvmlReturn_t;
    /// Device by PCI bus id (`domain:bus:device.function`, hex).
    fn nvmlDeviceGetHandleByPciBusId_v2(pciBusId: *const c_char, device: *mut nvmlDevice_t) -> nvmlReturn_t;
    /// Product name.
    fn nvmlDeviceGetName(device: nvmlDevice_t, name: *mut c_char, length: c_uint) -> nvmlReturn_t;
    /// UUID text.
    fn nvmlDeviceGetUUID(device: nvmlDevice_t, uuid: *mut c_char, length: c_uint) -> nvmlReturn_t;
    /// Current clock of a domain, MHz.
    fn nvmlDeviceGetClockInfo(device: nvmlDevice_t, type_: nvmlClockType_t, clock: *mut c_uint) -> nvmlReturn_t;
    /// GPU and memory utilisation over the last sample period, percent.
    fn nvmlDeviceGetUtilizationRates(device: nvmlDevice_t, utilization: *mut nvmlUtilization_t) -> nvmlReturn_t;
    /// Power draw of the GPU and its memory, mW.
    fn nvmlDeviceGetPowerUsage(device: nvmlDevice_t, power: *mut c_uint) -> nvmlReturn_t;
    /// Temperature, degrees C (deprecated in 13.0 for `nvmlDeviceGetTemperatureV`).
    fn nvmlDeviceGetTemperature(device: nvmlDevice_t, sensorType: nvmlTemperatureSensors_t, temp: *mut c_uint) -> nvmlReturn_t;
    /// Temperature through a versioned struct ([`nvmlTemperature_v1_t`]).
    fn nvmlDeviceGetTemperatureV(device: nvmlDevice_t, temperature: *mut nvmlTemperature_v1_t) -> nvmlReturn_t;
    /// Memory in use (v1: `used` includes reserved memory).
    fn nvmlDeviceGetMemoryInfo(device: nvmlDevice_t, memory: *mut nvmlMemory_t) -> nvmlReturn_t;
    /// Memory in use (v2: reserved memory apart).
    fn nvmlDeviceGetMemoryInfo_v2(device: nvmlDevice_t, memory: *mut nvmlMemory_v2_t) -> nvmlReturn_t;
    /// Why clocks are below their maximum ([`clocks_event_reasons`] bits).
    fn nvmlDeviceGetCurrentClocksEventReasons(device: nvmlDevice_t, reasons: *mut c_ulonglong) -> nvmlReturn_t;
    /// The same under its older name (deprecated in 13.0).
    fn nvmlDeviceGetCurrentClocksThrottleReasons(device: nvmlDevice_t, reasons: *mut c_ulonglong) -> nvmlReturn_t;
    /// PCIe throughput of one direction over a 20 ms window, KB/s. Blocks for that window.
    fn nvmlDeviceGetPcieThroughput(device: nvmlDevice_t, counter: nvmlPcieUtilCounter_t, value: *mut c_uint) -> nvmlReturn_t;
    /// Energy since the driver was last loaded, mJ.
    fn nvmlDeviceGetTotalEnergyConsumption(device: nvmlDevice_t, energy: *mut c_ulonglong) -> nvmlReturn_t;
    /// Whether the device supports GPM.
    fn nvmlGpmQueryDeviceSupport(device: nvmlDevice_t, gpmSupport: *mut nvmlGpmSupport_t) -> nvmlReturn_t;
    /// Allocates a GPM sample buffer.
    fn nvmlGpmSampleAlloc(gpmSample: *mut nvmlGpmSample_t) -> nvmlReturn_t;
    /// Frees a GPM sample buffer.
    fn nvmlGpmSampleFree(gpmSample: nvmlGpmSample_t) -> nvmlReturn_t;
    /// Reads the device's GPM counters into a sample buffer.
    fn nvmlGpmSampleGet(device: nvmlDevice_t, gpmSample: nvmlGpmSample_t) -> nvmlReturn_t;
    /// Computes metrics from two samples.
    fn nvmlGpmMetricsGet(metricsGet: *mut nvmlGpmMetricsGet_t) -> nvmlReturn_t;
}

impl Api {
    /// Opens NVML ([`loader::open_nvml`]) and resolves every symbol.
    ///
    /// # Errors
    /// [`loader::LibraryNotFound`], naming every place tried, when no NVML opens.
    pub fn load() -> Result<(Api, String), loader::LibraryNotFound> {
        let (lib, path) = loader::open_nvml()?;
        // SAFETY: the library is NVML (or what the user named as NVML), whose
        // exports have the prototypes of this table; the table keeps the library
        // loaded for as long as it lives.
        let mut api = unsafe {
            Api::load_with(
                |name| match lib.get::<*const core::ffi::c_void>(name.to_bytes()) {
                    Ok(sym) => *sym,
                    Err(_) => core::ptr::null(),
                },
            )
        };
        api._library = Some(lib);
        Ok((api, path))
    }
}
