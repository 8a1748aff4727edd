//! Raw, hand-written bindings to the NVIDIA Management Library (NVML,
//! `libnvidia-ml.so.1`), written from NVIDIA's NVML API Reference: only the
//! device queries a telemetry sampler needs (clocks, utilisation, power,
//! temperature, memory, clock-event reasons, PCIe throughput, energy) and GPU
//! Performance Monitoring (GPM, Hopper and newer).
//!
//! * Types keep their C names. C enums are `#[repr(transparent)]` integer
//!   newtypes with associated constants, never Rust enums: a newer driver may
//!   return values we do not know.
//! * Nothing is linked. [`Api::load`] opens `libnvidia-ml.so.1` (or the file
//!   `GPU_TRACE_NVML_PATH` names) with libloading; [`Api::load_with`] takes
//!   any resolver (a fake table in tests). A missing symbol is an
//!   `Err(MissingSymbol)` when called.
//! * Versioned structs carry the version word the reference documents
//!   ([`nvml_struct_version`], [`nvmlMemory_v2`], [`nvmlTemperature_v1`],
//!   [`NVML_GPM_METRICS_GET_VERSION`], [`NVML_GPM_SUPPORT_VERSION`]). Sizes and
//!   offsets are checked at compile time below and in `tests/abi.rs`.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

use core::ffi::{c_char, c_int, c_uint, c_ulonglong};

#[macro_use]
mod macros;

mod api;
pub mod loader;

pub use api::*;

/// A symbol the loaded library does not export, named as in C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MissingSymbol(pub &'static str);

impl core::fmt::Display for MissingSymbol {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "symbol `{}` not found in the loaded library", self.0)
    }
}

impl std::error::Error for MissingSymbol {}

/// Opaque device (`struct nvmlDevice_st`).
#[repr(C)]
pub struct nvmlDevice_st {
    _private: [u8; 0],
}

/// Device handle, valid from a `nvmlDeviceGetHandleBy*` call until
/// `nvmlShutdown`.
pub type nvmlDevice_t = *mut nvmlDevice_st;

/// Opaque GPM sample buffer (`struct nvmlGpmSample_st`).
#[repr(C)]
pub struct nvmlGpmSample_st {
    _private: [u8; 0],
}

/// A GPM sample buffer from `nvmlGpmSampleAlloc`; free it with
/// `nvmlGpmSampleFree`.
pub type nvmlGpmSample_t = *mut nvmlGpmSample_st;

c_enum! {
    /// `nvmlReturn_t`: the status of every call.
    pub struct nvmlReturn_t(c_uint) = "NVML_" {
        SUCCESS = 0,
        ERROR_UNINITIALIZED = 1,
        ERROR_INVALID_ARGUMENT = 2,
        ERROR_NOT_SUPPORTED = 3,
        ERROR_NO_PERMISSION = 4,
        ERROR_ALREADY_INITIALIZED = 5,
        ERROR_NOT_FOUND = 6,
        ERROR_INSUFFICIENT_SIZE = 7,
        ERROR_INSUFFICIENT_POWER = 8,
        ERROR_DRIVER_NOT_LOADED = 9,
        ERROR_TIMEOUT = 10,
        ERROR_IRQ_ISSUE = 11,
        ERROR_LIBRARY_NOT_FOUND = 12,
        ERROR_FUNCTION_NOT_FOUND = 13,
        ERROR_CORRUPTED_INFOROM = 14,
        ERROR_GPU_IS_LOST = 15,
        ERROR_RESET_REQUIRED = 16,
        ERROR_OPERATING_SYSTEM = 17,
        ERROR_LIB_RM_VERSION_MISMATCH = 18,
        ERROR_IN_USE = 19,
        ERROR_MEMORY = 20,
        ERROR_NO_DATA = 21,
        ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
        ERROR_INSUFFICIENT_RESOURCES = 23,
        ERROR_FREQ_NOT_SUPPORTED = 24,
        ERROR_ARGUMENT_VERSION_MISMATCH = 25,
        ERROR_DEPRECATED = 26,
        ERROR_NOT_READY = 27,
        ERROR_GPU_NOT_FOUND = 28,
        ERROR_INVALID_STATE = 29,
        ERROR_UNKNOWN = 999,
    }
}

c_enum! {
    /// `nvmlClockType_t`: a clock domain.
    pub struct nvmlClockType_t(c_uint) = "NVML_" {
        CLOCK_GRAPHICS = 0,
        CLOCK_SM = 1,
        CLOCK_MEM = 2,
        CLOCK_VIDEO = 3,
    }
}

c_enum! {
    /// `nvmlTemperatureSensors_t`.
    pub struct nvmlTemperatureSensors_t(c_uint) = "NVML_" {
        TEMPERATURE_GPU = 0,
    }
}

c_enum! {
    /// `nvmlPcieUtilCounter_t`: direction of `nvmlDeviceGetPcieThroughput`.
    pub struct nvmlPcieUtilCounter_t(c_uint) = "NVML_" {
        PCIE_UTIL_TX_BYTES = 0,
        PCIE_UTIL_RX_BYTES = 1,
    }
}

c_enum! {
    /// `nvmlGpmMetricId_t`: the GPM metrics bound here (the driver knows more).
    pub struct nvmlGpmMetricId_t(c_uint) = "NVML_GPM_METRIC_" {
        /// Percentage of time any compute/graphics app was active on the GPU.
        GRAPHICS_UTIL = 1,
        /// Percentage of SMs that were busy.
        SM_UTIL = 2,
        /// Percentage of warps that were active vs theoretical maximum.
        SM_OCCUPANCY = 3,
        /// Percentage of time the SMs were doing integer operations.
        INTEGER_UTIL = 4,
        /// Percentage of time the SMs were doing any tensor operations.
        ANY_TENSOR_UTIL = 5,
        /// Percentage of time the SMs were doing DFMA tensor operations.
        DFMA_TENSOR_UTIL = 6,
        /// Percentage of time the SMs were doing HMMA tensor operations.
        HMMA_TENSOR_UTIL = 7,
        /// Percentage of time the SMs were doing IMMA tensor operations.
        IMMA_TENSOR_UTIL = 9,
        /// Percentage of DRAM bandwidth used vs theoretical maximum.
        DRAM_BW_UTIL = 10,
        /// Percentage of time the SMs were doing non-tensor FP64 math.
        FP64_UTIL = 11,
        /// Percentage of time the SMs were doing non-tensor FP32 math.
        FP32_UTIL = 12,
        /// Percentage of time the SMs were doing non-tensor FP16 math.
        FP16_UTIL = 13,
        /// PCIe traffic from this GPU, MiB/s.
        PCIE_TX_PER_SEC = 20,
        /// PCIe traffic to this GPU, MiB/s.
        PCIE_RX_PER_SEC = 21,
        /// NVLink read bandwidth of all links, MiB/s.
        NVLINK_TOTAL_RX_PER_SEC = 60,
        /// NVLink write bandwidth of all links, MiB/s.
        NVLINK_TOTAL_TX_PER_SEC = 61,
    }
}

/// `NVML_STRUCT_VERSION(data, ver)`: the struct's size in the low 24 bits and
/// its version above them.
pub const fn nvml_struct_version(size: usize, ver: u32) -> c_uint {
    (size as c_uint) | (ver << 24)
}

/// `nvmlUtilization_t`: percent of the last sample period (1/6 s to 1 s,
/// depending on the product) during which a kernel ran (`gpu`) and device
/// memory was read or written (`memory`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct nvmlUtilization_t {
    /// Percent of time one or more kernels was executing.
    pub gpu: c_uint,
    /// Percent of time device memory was being read or written.
    pub memory: c_uint,
}

/// `nvmlMemory_t` (v1): `used` includes the driver's reserved memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct nvmlMemory_t {
    /// Total physical device memory, bytes.
    pub total: c_ulonglong,
    /// Unallocated device memory, bytes.
    pub free: c_ulonglong,
    /// Reserved and allocated device memory, bytes.
    pub used: c_ulonglong,
}

/// `nvmlMemory_v2_t`: adds the version word and the system-reserved amount.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct nvmlMemory_v2_t {
    /// Must be [`nvmlMemory_v2`].
    pub version: c_uint,
    /// Total physical device memory, bytes.
    pub total: c_ulonglong,
    /// Reserved for system use (driver or firmware), bytes.
    pub reserved: c_ulonglong,
    /// Unallocated device memory, bytes.
    pub free: c_ulonglong,
    /// Allocated device memory, bytes.
    pub used: c_ulonglong,
}

/// `nvmlMemory_v2`: `NVML_STRUCT_VERSION(Memory, 2)`.
pub const nvmlMemory_v2: c_uint = nvml_struct_version(core::mem::size_of::<nvmlMemory_v2_t>(), 2);

/// `nvmlTemperature_v1_t`, for `nvmlDeviceGetTemperatureV` (which replaces
/// the deprecated `nvmlDeviceGetTemperature`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct nvmlTemperature_v1_t {
    /// Must be [`nvmlTemperature_v1`].
    pub version: c_uint,
    /// IN: the sensor.
    pub sensorType: nvmlTemperatureSensors_t,
    /// OUT: degrees C.
    pub temperature: c_int,
}

/// `nvmlTemperature_v1`: `NVML_STRUCT_VERSION(Temperature, 1)`.
pub const nvmlTemperature_v1: c_uint =
    nvml_struct_version(core::mem::size_of::<nvmlTemperature_v1_t>(), 1);

/// Clock-event (throttle) reason bits of
/// `nvmlDeviceGetCurrentClocksEventReasons` (`nvmlClocksEventReason*`, the
/// older `nvmlClocksThrottleReason*`).
pub mod clocks_event_reasons {
    /// Nothing is running on the GPU; clocks are dropping to idle.
    pub const GPU_IDLE: u64 = 0x1;
    /// Clocks are limited by the applications-clocks setting.
    pub const APPLICATIONS_CLOCKS_SETTING: u64 = 0x2;
    /// Software power scaling is holding clocks below requested.
    pub const SW_POWER_CAP: u64 = 0x4;
    /// Hardware slowdown (temperature, power brake or power supply) by 2× or more.
    pub const HW_SLOWDOWN: u64 = 0x8;
    /// Sync boost: clocks follow the slowest GPU of a sync-boost group.
    pub const SYNC_BOOST: u64 = 0x10;
    /// Software thermal slowdown.
    pub const SW_THERMAL_SLOWDOWN: u64 = 0x20;
    /// Hardware thermal slowdown.
    pub const HW_THERMAL_SLOWDOWN: u64 = 0x40;
    /// Hardware power-brake slowdown (an external signal).
    pub const HW_POWER_BRAKE_SLOWDOWN: u64 = 0x80;
    /// Display clock setting.
    pub const DISPLAY_CLOCK_SETTING: u64 = 0x100;
    /// Board limit (`nvmlClocksEventReasonBoardLimit`, newer drivers).
    pub const BOARD_LIMIT: u64 = 0x200;
    /// Reliability (`nvmlClocksEventReasonReliability`, newer drivers).
    pub const RELIABILITY: u64 = 0x400;
}

/// `NVML_GPM_METRICS_GET_VERSION`.
pub const NVML_GPM_METRICS_GET_VERSION: c_uint = 1;
/// `NVML_GPM_SUPPORT_VERSION`.
pub const NVML_GPM_SUPPORT_VERSION: c_uint = 1;
/// `NVML_GPM_METRIC_MAX` of the current reference (driver R590 / NVML 13.x).
/// The driver reads only `numMetrics` entries, so an array this long serves
/// drivers built with a smaller or larger maximum alike.
pub const NVML_GPM_METRIC_MAX: usize = 333;
/// `NVML_DEVICE_UUID_V2_BUFFER_SIZE`: room for any UUID string.
pub const NVML_DEVICE_UUID_V2_BUFFER_SIZE: usize = 96;
/// `NVML_DEVICE_NAME_V2_BUFFER_SIZE`: room for any device name.
pub const NVML_DEVICE_NAME_V2_BUFFER_SIZE: usize = 96;
/// `NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE`.
pub const NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE: usize = 32;

/// `nvmlGpmSupport_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct nvmlGpmSupport_t {
    /// IN: [`NVML_GPM_SUPPORT_VERSION`].
    pub version: c_uint,
    /// OUT: non-zero when the device supports GPM.
    pub isSupportedDevice: c_uint,
}

/// The anonymous `metricInfo` of `nvmlGpmMetric_t`: names and unit, each
/// possibly NULL, owned by the library.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nvmlGpmMetricInfo {
    /// Short name.
    pub shortName: *mut c_char,
    /// Long name.
    pub longName: *mut c_char,
    /// Unit.
    pub unit: *mut c_char,
}

/// `nvmlGpmMetric_t`: one metric asked for (`metricId`) and its result.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nvmlGpmMetric_t {
    /// IN: an `NVML_GPM_METRIC_*` id.
    pub metricId: c_uint,
    /// OUT: this metric's status; `value` is valid only on `NVML_SUCCESS`.
    pub nvmlReturn: nvmlReturn_t,
    /// OUT: the value.
    pub value: f64,
    /// OUT: names and unit.
    pub metricInfo: nvmlGpmMetricInfo,
}

impl Default for nvmlGpmMetric_t {
    fn default() -> Self {
        Self {
            metricId: 0,
            nvmlReturn: nvmlReturn_t::SUCCESS,
            value: 0.0,
            metricInfo: nvmlGpmMetricInfo {
                shortName: core::ptr::null_mut(),
                longName: core::ptr::null_mut(),
                unit: core::ptr::null_mut(),
            },
        }
    }
}

/// `nvmlGpmMetricsGet_t`: two samples in, `numMetrics` metrics out.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nvmlGpmMetricsGet_t {
    /// IN: [`NVML_GPM_METRICS_GET_VERSION`].
    pub version: c_uint,
    /// IN: how many entries of `metrics` to compute.
    pub numMetrics: c_uint,
    /// IN: the earlier sample.
    pub sample1: nvmlGpmSample_t,
    /// IN: the later sample.
    pub sample2: nvmlGpmSample_t,
    /// IN/OUT: ids on input, results on output.
    pub metrics: [nvmlGpmMetric_t; NVML_GPM_METRIC_MAX],
}

impl Default for nvmlGpmMetricsGet_t {
    fn default() -> Self {
        Self {
            version: NVML_GPM_METRICS_GET_VERSION,
            numMetrics: 0,
            sample1: core::ptr::null_mut(),
            sample2: core::ptr::null_mut(),
            metrics: [nvmlGpmMetric_t::default(); NVML_GPM_METRIC_MAX],
        }
    }
}

// The layouts of the reference's structs on 64-bit Linux.
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<nvmlUtilization_t>() == 8);
    assert!(size_of::<nvmlMemory_t>() == 24);
    assert!(size_of::<nvmlMemory_v2_t>() == 40);
    assert!(offset_of!(nvmlMemory_v2_t, total) == 8);
    assert!(offset_of!(nvmlMemory_v2_t, used) == 32);
    assert!(size_of::<nvmlTemperature_v1_t>() == 12);
    assert!(size_of::<nvmlGpmSupport_t>() == 8);
    assert!(size_of::<nvmlGpmMetric_t>() == 40);
    assert!(offset_of!(nvmlGpmMetric_t, value) == 8);
    assert!(offset_of!(nvmlGpmMetric_t, metricInfo) == 16);
    assert!(offset_of!(nvmlGpmMetricsGet_t, sample1) == 8);
    assert!(offset_of!(nvmlGpmMetricsGet_t, metrics) == 24);
    assert!(size_of::<nvmlGpmMetricsGet_t>() == 24 + 40 * NVML_GPM_METRIC_MAX);
};
