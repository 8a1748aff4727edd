//! The layouts and version words of the reference, on 64-bit Linux: what a
//! C compiler makes of `nvml.h`, written out by hand from the reference's
//! struct definitions (every field's size and alignment).

use core::mem::{align_of, offset_of, size_of};
use nvml_sys::*;

#[test]
fn struct_layouts_match_the_reference() {
    assert_eq!(
        (
            size_of::<nvmlUtilization_t>(),
            align_of::<nvmlUtilization_t>()
        ),
        (8, 4)
    );
    assert_eq!(offset_of!(nvmlUtilization_t, memory), 4);
    assert_eq!(
        (size_of::<nvmlMemory_t>(), align_of::<nvmlMemory_t>()),
        (24, 8)
    );
    assert_eq!(offset_of!(nvmlMemory_t, used), 16);
    assert_eq!(size_of::<nvmlMemory_v2_t>(), 40);
    assert_eq!(
        [
            offset_of!(nvmlMemory_v2_t, total),
            offset_of!(nvmlMemory_v2_t, reserved),
            offset_of!(nvmlMemory_v2_t, free),
            offset_of!(nvmlMemory_v2_t, used)
        ],
        [8, 16, 24, 32]
    );
    assert_eq!(size_of::<nvmlTemperature_v1_t>(), 12);
    assert_eq!(offset_of!(nvmlTemperature_v1_t, temperature), 8);
    assert_eq!(size_of::<nvmlGpmSupport_t>(), 8);
    assert_eq!(
        (size_of::<nvmlGpmMetric_t>(), align_of::<nvmlGpmMetric_t>()),
        (40, 8)
    );
    assert_eq!(offset_of!(nvmlGpmMetric_t, nvmlReturn), 4);
    assert_eq!(offset_of!(nvmlGpmMetric_t, metricInfo), 16);
    assert_eq!(offset_of!(nvmlGpmMetricInfo, unit), 16);
    assert_eq!(offset_of!(nvmlGpmMetricsGet_t, numMetrics), 4);
    assert_eq!(offset_of!(nvmlGpmMetricsGet_t, sample2), 16);
    assert_eq!(offset_of!(nvmlGpmMetricsGet_t, metrics), 24);
}

#[test]
fn version_words_are_size_and_version() {
    // NVML_STRUCT_VERSION(Memory, 2) = sizeof | 2 << 24.
    assert_eq!(nvmlMemory_v2, 0x0200_0028);
    assert_eq!(nvmlTemperature_v1, 0x0100_000c);
    assert_eq!(NVML_GPM_METRICS_GET_VERSION, 1);
    assert_eq!(NVML_GPM_SUPPORT_VERSION, 1);
    assert_eq!(nvmlMemory_v2_t::default().version, 0, "callers set it");
    assert_eq!(nvmlGpmMetricsGet_t::default().version, 1);
}

#[test]
fn enumerators_have_the_reference_values() {
    assert_eq!(nvmlReturn_t::ERROR_NOT_SUPPORTED.0, 3);
    assert_eq!(nvmlReturn_t::ERROR_FUNCTION_NOT_FOUND.0, 13);
    assert_eq!(nvmlReturn_t::ERROR_GPU_IS_LOST.0, 15);
    assert_eq!(nvmlReturn_t::ERROR_UNKNOWN.0, 999);
    assert_eq!(format!("{:?}", nvmlReturn_t(4242)), "nvmlReturn_t(4242)");
    assert_eq!(
        nvmlReturn_t::ERROR_NO_PERMISSION.name(),
        Some("NVML_ERROR_NO_PERMISSION")
    );
    assert_eq!(
        (nvmlClockType_t::CLOCK_SM.0, nvmlClockType_t::CLOCK_MEM.0),
        (1, 2)
    );
    assert_eq!(nvmlPcieUtilCounter_t::PCIE_UTIL_RX_BYTES.0, 1);
    let m = |x: nvmlGpmMetricId_t| x.0;
    assert_eq!(
        [
            m(nvmlGpmMetricId_t::SM_UTIL),
            m(nvmlGpmMetricId_t::SM_OCCUPANCY),
            m(nvmlGpmMetricId_t::ANY_TENSOR_UTIL),
            m(nvmlGpmMetricId_t::DRAM_BW_UTIL),
            m(nvmlGpmMetricId_t::PCIE_TX_PER_SEC),
            m(nvmlGpmMetricId_t::PCIE_RX_PER_SEC),
            m(nvmlGpmMetricId_t::NVLINK_TOTAL_RX_PER_SEC),
            m(nvmlGpmMetricId_t::NVLINK_TOTAL_TX_PER_SEC),
        ],
        [2, 3, 5, 10, 20, 21, 60, 61]
    );
    assert_eq!(clocks_event_reasons::SW_POWER_CAP, 0x4);
    assert_eq!(clocks_event_reasons::HW_THERMAL_SLOWDOWN, 0x40);
}

#[test]
fn a_resolver_that_finds_nothing_gives_missing_symbols_not_panics() {
    // SAFETY: the resolver returns only null pointers.
    let api = unsafe { Api::load_with(|_| core::ptr::null()) };
    assert_eq!(api.missing().len(), Api::NAMES.len());
    assert!(!api.has("nvmlInit_v2"));
    // SAFETY: the function is missing, so nothing is called.
    let r = unsafe { api.nvmlInit_v2() };
    assert_eq!(r, Err(MissingSymbol("nvmlInit_v2")));
}
