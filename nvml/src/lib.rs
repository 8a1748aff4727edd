//! A safe wrapper over the parts of NVML (the NVIDIA Management Library) a
//! telemetry sampler needs: device handles found by UUID, PCI bus id or
//! index; clocks, utilisation, power, temperature, memory, clock-event
//! reasons, PCIe throughput and energy; and GPU Performance Monitoring
//! (GPM) metrics computed from two samples.
//!
//! ```no_run
//! let nvml = nvml::Nvml::load()?;
//! let gpu = nvml.device_by_index(0)?;
//! println!("SM clock {} MHz, {} mW", gpu.clock(nvml::Clock::Sm)?, gpu.power_mw()?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Loading: [`Nvml::load`] opens `libnvidia-ml.so.1` (or only what
//! `GPU_TRACE_NVML_PATH` names, when set) and calls `nvmlInit_v2`; dropping the last
//! handle calls `nvmlShutdown`. The library itself stays loaded for the rest
//! of the process, as the driver's own clients keep it: NVML's error texts
//! are static strings inside it, and unloading a driver library another
//! thread may still be in is never safe. Without NVML, `load` fails with
//! every path tried; nothing else happens.
//!
//! Every reading returns [`Result`]; [`Error`] keeps NVML's code, and
//! [`Error::is_permanent`] tells a reading a device lacks from a passing
//! failure. Functions an older driver lacks are `Error::MissingSymbol`, and
//! where NVML renamed a function (`nvmlDeviceGetCurrentClocksEventReasons`,
//! `nvmlDeviceGetTemperatureV`, `nvmlDeviceGetMemoryInfo_v2`) the newer one
//! is used when present, the older otherwise.

#![deny(missing_docs)]

mod error;
pub mod gpm;

pub use error::{Code, Error, Result};
use nvml_sys as sys;
use std::ffi::{CStr, CString, c_char};
use std::sync::Arc;

struct Inner {
    api: &'static sys::Api,
    path: String,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: one nvmlShutdown for the nvmlInit_v2 this handle made; NVML
        // counts them.
        let _ = unsafe { self.api.nvmlShutdown() };
    }
}

impl Inner {
    fn check(&self, r: std::result::Result<sys::nvmlReturn_t, sys::MissingSymbol>) -> Result<()> {
        let r = r?;
        if r == sys::nvmlReturn_t::SUCCESS {
            return Ok(());
        }
        Err(Error::Nvml {
            code: Code::from_raw(r),
            raw: r,
            message: self.error_string(r),
        })
    }

    fn error_string(&self, r: sys::nvmlReturn_t) -> &'static str {
        // SAFETY: nvmlErrorString takes any value and returns a static string
        // or NULL; the library is never unloaded (see the crate doc), so the
        // text lives for the rest of the process.
        let p = unsafe { self.api.nvmlErrorString(r) }.unwrap_or(std::ptr::null());
        if p.is_null() {
            return r.name().unwrap_or("unknown NVML error");
        }
        // SAFETY: NUL-terminated static text from NVML (above).
        unsafe { CStr::from_ptr(p) }
            .to_str()
            .unwrap_or("NVML error (text not UTF-8)")
    }
}

/// An initialised NVML. Cheap to clone; NVML is shut down when the last
/// handle (and every [`Device`] and [`gpm::Sample`]) is gone.
#[derive(Clone)]
pub struct Nvml(Arc<Inner>);

impl std::fmt::Debug for Nvml {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Nvml").field(&self.0.path).finish()
    }
}

/// Why NVML could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// No library opened.
    #[error(transparent)]
    NotFound(#[from] sys::loader::LibraryNotFound),
    /// The library opened but `nvmlInit_v2` failed (no driver, a
    /// library/driver mismatch, no permission).
    #[error("nvmlInit_v2 failed in {path}: {error}")]
    Init {
        /// The library.
        path: String,
        /// What it said.
        error: Error,
    },
}

impl Nvml {
    /// Opens NVML and initialises it.
    ///
    /// # Errors
    /// [`LoadError`]: no library, or no usable driver behind it.
    #[doc(alias = "nvmlInit_v2")]
    pub fn load() -> std::result::Result<Nvml, LoadError> {
        let (api, path) = sys::Api::load()?;
        // SAFETY: a table resolved from the library `path` names as NVML.
        unsafe { Self::from_api(Box::leak(Box::new(api)), path) }
    }

    /// Initialises NVML through `api`, a table from [`sys::Api::load`] or a
    /// resolver over a fake.
    ///
    /// # Safety
    /// Every function in `api` must behave as NVML's does (its documented
    /// contract), and stay callable for the rest of the process.
    ///
    /// # Errors
    /// [`LoadError::Init`] when `nvmlInit_v2` fails or is missing.
    pub unsafe fn from_api(
        api: &'static sys::Api,
        path: impl Into<String>,
    ) -> std::result::Result<Nvml, LoadError> {
        let path = path.into();
        // SAFETY: no arguments; initialising is what the caller asked for.
        let r = unsafe { api.nvmlInit_v2() };
        let probe = Inner {
            api,
            path: path.clone(),
        };
        let checked = probe.check(r);
        // `probe` must not shut down an NVML that did not initialise.
        std::mem::forget(probe);
        match checked {
            Ok(()) => Ok(Nvml(Arc::new(Inner { api, path }))),
            Err(error) => Err(LoadError::Init { path, error }),
        }
    }

    /// The library that was opened.
    pub fn path(&self) -> &str {
        &self.0.path
    }

    /// The driver's version.
    ///
    /// # Errors
    /// As NVML reports.
    #[doc(alias = "nvmlSystemGetDriverVersion")]
    pub fn driver_version(&self) -> Result<String> {
        let mut buf = [0 as c_char; 96];
        // SAFETY: the buffer and its length.
        let r = unsafe {
            self.0
                .api
                .nvmlSystemGetDriverVersion(buf.as_mut_ptr(), buf.len() as u32)
        };
        self.0.check(r)?;
        Ok(text(&buf))
    }

    /// How many GPUs NVML sees (every GPU of the host, whatever
    /// `CUDA_VISIBLE_DEVICES` says).
    ///
    /// # Errors
    /// As NVML reports.
    #[doc(alias = "nvmlDeviceGetCount_v2")]
    pub fn device_count(&self) -> Result<u32> {
        let mut n = 0;
        // SAFETY: valid out-pointer.
        let r = unsafe { self.0.api.nvmlDeviceGetCount_v2(&mut n) };
        self.0.check(r)?;
        Ok(n)
    }

    /// The device NVML numbers `index` (PCI order, as `nvidia-smi` shows).
    ///
    /// # Errors
    /// As NVML reports (`InvalidArgument` past the last device).
    #[doc(alias = "nvmlDeviceGetHandleByIndex_v2")]
    pub fn device_by_index(&self, index: u32) -> Result<Device> {
        let mut d = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let r = unsafe { self.0.api.nvmlDeviceGetHandleByIndex_v2(index, &mut d) };
        self.device(r, d)
    }

    /// The device with this UUID text (`GPU-8b5e...`, as `nvidia-smi -L`
    /// prints it).
    ///
    /// # Errors
    /// `NotFound` for no such device; `InvalidArgument` for text with a NUL.
    #[doc(alias = "nvmlDeviceGetHandleByUUID")]
    pub fn device_by_uuid(&self, uuid: &str) -> Result<Device> {
        let c = self.c_string(uuid)?;
        let mut d = std::ptr::null_mut();
        // SAFETY: NUL-terminated text and a valid out-pointer.
        let r = unsafe { self.0.api.nvmlDeviceGetHandleByUUID(c.as_ptr(), &mut d) };
        self.device(r, d)
    }

    /// The device whose CUDA UUID (`cuDeviceGetUuid`, 16 bytes) is `uuid`.
    ///
    /// # Errors
    /// As [`Nvml::device_by_uuid`].
    pub fn device_by_cuda_uuid(&self, uuid: &[u8; 16]) -> Result<Device> {
        self.device_by_uuid(&uuid_text(uuid))
    }

    /// The device at this PCI bus id (`0000:06:00.0` or NVML's own
    /// `00000000:06:00.0`; hex digits in either case).
    ///
    /// # Errors
    /// `NotFound` for no such device.
    #[doc(alias = "nvmlDeviceGetHandleByPciBusId_v2")]
    pub fn device_by_pci_bus_id(&self, bus_id: &str) -> Result<Device> {
        let c = self.c_string(bus_id)?;
        let mut d = std::ptr::null_mut();
        // SAFETY: NUL-terminated text and a valid out-pointer.
        let r = unsafe {
            self.0
                .api
                .nvmlDeviceGetHandleByPciBusId_v2(c.as_ptr(), &mut d)
        };
        self.device(r, d)
    }

    fn c_string(&self, s: &str) -> Result<CString> {
        CString::new(s).map_err(|_| Error::Nvml {
            code: Code::InvalidArgument,
            raw: sys::nvmlReturn_t::ERROR_INVALID_ARGUMENT,
            message: "text with a NUL byte",
        })
    }

    fn device(
        &self,
        r: std::result::Result<sys::nvmlReturn_t, sys::MissingSymbol>,
        d: sys::nvmlDevice_t,
    ) -> Result<Device> {
        self.0.check(r)?;
        Ok(Device {
            nvml: self.0.clone(),
            raw: d,
        })
    }
}

/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`: how NVML writes a UUID that
/// CUDA reports as 16 bytes.
pub fn uuid_text(u: &[u8; 16]) -> String {
    let h = |r: std::ops::Range<usize>| u[r].iter().map(|b| format!("{b:02x}")).collect::<String>();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        h(0..4),
        h(4..6),
        h(6..8),
        h(8..10),
        h(10..16)
    )
}

fn text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A clock domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Clock {
    /// Graphics.
    Graphics,
    /// Streaming multiprocessors.
    Sm,
    /// Memory.
    Memory,
    /// Video encoder/decoder.
    Video,
}

impl Clock {
    fn raw(self) -> sys::nvmlClockType_t {
        match self {
            Clock::Graphics => sys::nvmlClockType_t::CLOCK_GRAPHICS,
            Clock::Sm => sys::nvmlClockType_t::CLOCK_SM,
            Clock::Memory => sys::nvmlClockType_t::CLOCK_MEM,
            Clock::Video => sys::nvmlClockType_t::CLOCK_VIDEO,
        }
    }
}

/// A PCIe direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pcie {
    /// From the GPU.
    Tx,
    /// To the GPU.
    Rx,
}

/// GPU and memory utilisation, percent of NVML's last sample period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Utilization {
    /// Time one or more kernels ran.
    pub gpu: u32,
    /// Time device memory was read or written.
    pub memory: u32,
}

/// Device memory, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Memory {
    /// Total.
    pub total: u64,
    /// Allocated (without the driver's reserve where NVML reports it apart).
    pub used: u64,
    /// Free.
    pub free: u64,
    /// Reserved by the driver and firmware, when NVML reports it (v2).
    pub reserved: Option<u64>,
}

/// One GPU. Cheap to clone; keeps NVML initialised.
#[derive(Clone)]
pub struct Device {
    nvml: Arc<Inner>,
    raw: sys::nvmlDevice_t,
}

// SAFETY: NVML is thread-safe: "it is safe to make simultaneous NVML calls
// from multiple threads" (NVML API Reference, introduction). A device handle
// is a token valid in every thread until nvmlShutdown, which only the last
// `Inner` calls.
unsafe impl Send for Device {}
// SAFETY: as for Send; no method takes `&mut self`.
unsafe impl Sync for Device {}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Device").field(&self.raw).finish()
    }
}

impl Device {
    fn check(&self, r: std::result::Result<sys::nvmlReturn_t, sys::MissingSymbol>) -> Result<()> {
        self.nvml.check(r)
    }

    /// Product name, e.g. "NVIDIA H200".
    ///
    /// # Errors
    /// As NVML reports.
    #[doc(alias = "nvmlDeviceGetName")]
    pub fn name(&self) -> Result<String> {
        let mut buf = [0 as c_char; sys::NVML_DEVICE_NAME_V2_BUFFER_SIZE];
        // SAFETY: our handle, the buffer and its length.
        let r = unsafe {
            self.nvml
                .api
                .nvmlDeviceGetName(self.raw, buf.as_mut_ptr(), buf.len() as u32)
        };
        self.check(r)?;
        Ok(text(&buf))
    }

    /// UUID text, `GPU-...`.
    ///
    /// # Errors
    /// As NVML reports.
    #[doc(alias = "nvmlDeviceGetUUID")]
    pub fn uuid(&self) -> Result<String> {
        let mut buf = [0 as c_char; sys::NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        // SAFETY: our handle, the buffer and its length.
        let r = unsafe {
            self.nvml
                .api
                .nvmlDeviceGetUUID(self.raw, buf.as_mut_ptr(), buf.len() as u32)
        };
        self.check(r)?;
        Ok(text(&buf))
    }

    /// The current clock of a domain, MHz.
    ///
    /// # Errors
    /// As NVML reports.
    #[doc(alias = "nvmlDeviceGetClockInfo")]
    pub fn clock(&self, c: Clock) -> Result<u32> {
        let mut v = 0;
        // SAFETY: our handle, a valid enumerator, a valid out-pointer.
        let r = unsafe {
            self.nvml
                .api
                .nvmlDeviceGetClockInfo(self.raw, c.raw(), &mut v)
        };
        self.check(r)?;
        Ok(v)
    }

    /// GPU and memory utilisation.
    ///
    /// # Errors
    /// As NVML reports.
    #[doc(alias = "nvmlDeviceGetUtilizationRates")]
    pub fn utilization(&self) -> Result<Utilization> {
        let mut u = sys::nvmlUtilization_t::default();
        // SAFETY: our handle and a valid out-pointer.
        let r = unsafe {
            self.nvml
                .api
                .nvmlDeviceGetUtilizationRates(self.raw, &mut u)
        };
        self.check(r)?;
        Ok(Utilization {
            gpu: u.gpu,
            memory: u.memory,
        })
    }

    /// Power draw, mW.
    ///
    /// # Errors
    /// As NVML reports.
    #[doc(alias = "nvmlDeviceGetPowerUsage")]
    pub fn power_mw(&self) -> Result<u32> {
        let mut v = 0;
        // SAFETY: our handle and a valid out-pointer.
        let r = unsafe { self.nvml.api.nvmlDeviceGetPowerUsage(self.raw, &mut v) };
        self.check(r)?;
        Ok(v)
    }

    /// GPU die temperature, °C: `nvmlDeviceGetTemperatureV` where the driver
    /// has it, else the deprecated `nvmlDeviceGetTemperature`.
    ///
    /// # Errors
    /// As NVML reports.
    #[doc(alias = "nvmlDeviceGetTemperatureV")]
    #[doc(alias = "nvmlDeviceGetTemperature")]
    pub fn temperature_c(&self) -> Result<i32> {
        let api = self.nvml.api;
        if api.has("nvmlDeviceGetTemperatureV") {
            let mut t = sys::nvmlTemperature_v1_t {
                version: sys::nvmlTemperature_v1,
                sensorType: sys::nvmlTemperatureSensors_t::TEMPERATURE_GPU,
                temperature: 0,
            };
            // SAFETY: our handle and a versioned struct.
            let r = unsafe { api.nvmlDeviceGetTemperatureV(self.raw, &mut t) };
            self.check(r)?;
            return Ok(t.temperature);
        }
        let mut v = 0u32;
        // SAFETY: our handle, a valid enumerator, a valid out-pointer.
        let r = unsafe {
            api.nvmlDeviceGetTemperature(
                self.raw,
                sys::nvmlTemperatureSensors_t::TEMPERATURE_GPU,
                &mut v,
            )
        };
        self.check(r)?;
        Ok(v as i32)
    }

    /// Device memory: `nvmlDeviceGetMemoryInfo_v2` where present (used
    /// without the driver's reserve), else v1.
    ///
    /// # Errors
    /// As NVML reports.
    #[doc(alias = "nvmlDeviceGetMemoryInfo_v2")]
    #[doc(alias = "nvmlDeviceGetMemoryInfo")]
    pub fn memory(&self) -> Result<Memory> {
        let api = self.nvml.api;
        if api.has("nvmlDeviceGetMemoryInfo_v2") {
            let mut m = sys::nvmlMemory_v2_t {
                version: sys::nvmlMemory_v2,
                ..Default::default()
            };
            // SAFETY: our handle and a versioned struct.
            let r = unsafe { api.nvmlDeviceGetMemoryInfo_v2(self.raw, &mut m) };
            self.check(r)?;
            return Ok(Memory {
                total: m.total,
                used: m.used,
                free: m.free,
                reserved: Some(m.reserved),
            });
        }
        let mut m = sys::nvmlMemory_t::default();
        // SAFETY: our handle and a valid out-pointer.
        let r = unsafe { api.nvmlDeviceGetMemoryInfo(self.raw, &mut m) };
        self.check(r)?;
        Ok(Memory {
            total: m.total,
            used: m.used,
            free: m.free,
            reserved: None,
        })
    }

    /// Why the clocks are below their maximum now: a mask of
    /// [`sys::clocks_event_reasons`] bits.
    ///
    /// # Errors
    /// As NVML reports.
    #[doc(alias = "nvmlDeviceGetCurrentClocksEventReasons")]
    #[doc(alias = "nvmlDeviceGetCurrentClocksThrottleReasons")]
    pub fn clocks_event_reasons(&self) -> Result<u64> {
        let api = self.nvml.api;
        let mut v = 0u64;
        // SAFETY: our handle and a valid out-pointer; both functions share the
        // prototype.
        let r = unsafe {
            if api.has("nvmlDeviceGetCurrentClocksEventReasons") {
                api.nvmlDeviceGetCurrentClocksEventReasons(self.raw, &mut v)
            } else {
                api.nvmlDeviceGetCurrentClocksThrottleReasons(self.raw, &mut v)
            }
        };
        self.check(r)?;
        Ok(v)
    }

    /// PCIe throughput of one direction, KB/s. Blocks for NVML's 20 ms
    /// window (about 21 ms a call measured on an H200): never call it where
    /// that wait matters.
    ///
    /// # Errors
    /// As NVML reports.
    #[doc(alias = "nvmlDeviceGetPcieThroughput")]
    pub fn pcie_throughput_kbps(&self, dir: Pcie) -> Result<u32> {
        let c = match dir {
            Pcie::Tx => sys::nvmlPcieUtilCounter_t::PCIE_UTIL_TX_BYTES,
            Pcie::Rx => sys::nvmlPcieUtilCounter_t::PCIE_UTIL_RX_BYTES,
        };
        let mut v = 0;
        // SAFETY: our handle, a valid enumerator, a valid out-pointer.
        let r = unsafe {
            self.nvml
                .api
                .nvmlDeviceGetPcieThroughput(self.raw, c, &mut v)
        };
        self.check(r)?;
        Ok(v)
    }

    /// Energy since the driver was last loaded, mJ (about 4 ms a call on an
    /// H200).
    ///
    /// # Errors
    /// As NVML reports.
    #[doc(alias = "nvmlDeviceGetTotalEnergyConsumption")]
    pub fn total_energy_mj(&self) -> Result<u64> {
        let mut v = 0u64;
        // SAFETY: our handle and a valid out-pointer.
        let r = unsafe {
            self.nvml
                .api
                .nvmlDeviceGetTotalEnergyConsumption(self.raw, &mut v)
        };
        self.check(r)?;
        Ok(v)
    }

    /// Whether the device supports GPM (Hopper and newer).
    ///
    /// # Errors
    /// As NVML reports (`MissingSymbol` on drivers before GPM).
    #[doc(alias = "nvmlGpmQueryDeviceSupport")]
    pub fn gpm_supported(&self) -> Result<bool> {
        let mut s = sys::nvmlGpmSupport_t {
            version: sys::NVML_GPM_SUPPORT_VERSION,
            isSupportedDevice: 0,
        };
        // SAFETY: our handle and a versioned struct.
        let r = unsafe { self.nvml.api.nvmlGpmQueryDeviceSupport(self.raw, &mut s) };
        self.check(r)?;
        Ok(s.isSupportedDevice != 0)
    }

    /// Reads the device's GPM counters into `sample` (about 48 µs on an H200).
    ///
    /// # Errors
    /// As NVML reports.
    #[doc(alias = "nvmlGpmSampleGet")]
    pub fn gpm_sample(&self, sample: &mut gpm::Sample) -> Result<()> {
        // SAFETY: our handle and a live sample buffer we hold exclusively.
        let r = unsafe { self.nvml.api.nvmlGpmSampleGet(self.raw, sample.raw()) };
        self.check(r)?;
        sample.device = Some(self.raw as usize);
        Ok(())
    }

    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.nvml
    }
}

// What the sampler relies on: handles move to its threads.
static_assertions::assert_impl_all!(Nvml: Send, Sync);
static_assertions::assert_impl_all!(Device: Send, Sync);
static_assertions::assert_impl_all!(gpm::Sample: Send);
static_assertions::assert_impl_all!(gpm::Metrics: Send);
