//! The safe layer over the fake NVML, resolved in-process as a symbol table.

use nvml::gpm::{Metric, Metrics, Sample};
use nvml::{Clock, Code, Error, LoadError, Nvml, Pcie};
use nvml_sim::{DeviceSpec, Spec};
use std::sync::{Mutex, MutexGuard};

/// The fake's state is process-wide: one test at a time.
fn lock() -> MutexGuard<'static, ()> {
    static L: Mutex<()> = Mutex::new(());
    L.lock().unwrap_or_else(|e| e.into_inner())
}

fn open(spec: Spec) -> Result<Nvml, LoadError> {
    nvml_sim::configure(spec);
    // SAFETY: the fake's exports have NVML's prototypes (checked in the fake
    // against nvml_sys::pfn) and live for the whole process.
    let api = unsafe { nvml_sys::Api::load_with(nvml_sim::resolve) };
    // SAFETY: as above.
    unsafe { Nvml::from_api(Box::leak(Box::new(api)), "nvml-sim") }
}

#[test]
fn readings_come_from_the_newest_functions_with_their_units() {
    let _l = lock();
    let nvml = open(Spec::default()).unwrap();
    let d = nvml.device_by_index(0).unwrap();
    let v = nvml_sim::Values::default();
    assert_eq!(d.clock(Clock::Sm).unwrap(), v.sm_clock);
    assert_eq!(d.clock(Clock::Memory).unwrap(), v.mem_clock);
    let u = d.utilization().unwrap();
    assert_eq!((u.gpu, u.memory), (v.gpu_util, v.mem_util));
    assert_eq!(d.power_mw().unwrap(), v.power_mw);
    assert_eq!(d.temperature_c().unwrap(), v.temperature);
    let m = d.memory().unwrap();
    assert_eq!(m.used, v.mem_used, "v2: the driver's reserve apart");
    assert_eq!(m.reserved, Some(v.mem_reserved));
    assert_eq!(m.total, v.mem_total);
    assert_eq!(d.clocks_event_reasons().unwrap(), v.reasons);
    assert_eq!(d.pcie_throughput_kbps(Pcie::Rx).unwrap(), v.pcie_rx_kbps);
    let e0 = d.total_energy_mj().unwrap();
    let e1 = d.total_energy_mj().unwrap();
    assert_eq!(e1 - e0, v.energy_step_mj);
    assert_eq!(d.name().unwrap(), DeviceSpec::default().name);
    assert_eq!(nvml.driver_version().unwrap(), "580.65.06-sim");
    // The versioned functions were used (the fake checks their version words).
    assert_eq!(nvml_sim::calls("nvmlDeviceGetTemperatureV"), 1);
    assert_eq!(nvml_sim::calls("nvmlDeviceGetTemperature"), 0);
    assert_eq!(nvml_sim::calls("nvmlDeviceGetMemoryInfo_v2"), 1);
    assert_eq!(nvml_sim::calls("nvmlDeviceGetCurrentClocksEventReasons"), 1);
    drop((d, nvml));
    assert_eq!(nvml_sim::init_count(), 0, "the last handle shuts NVML down");
}

#[test]
fn an_older_driver_is_read_through_the_older_names() {
    let _l = lock();
    let nvml = open(Spec {
        missing: [
            "nvmlDeviceGetTemperatureV",
            "nvmlDeviceGetMemoryInfo_v2",
            "nvmlDeviceGetCurrentClocksEventReasons",
        ]
        .map(String::from)
        .to_vec(),
        ..Spec::default()
    })
    .unwrap();
    let d = nvml.device_by_index(0).unwrap();
    let v = nvml_sim::Values::default();
    assert_eq!(d.temperature_c().unwrap(), v.temperature);
    let m = d.memory().unwrap();
    assert_eq!(m.used, v.mem_used + v.mem_reserved, "v1 counts the reserve");
    assert_eq!(m.reserved, None);
    assert_eq!(d.clocks_event_reasons().unwrap(), v.reasons);
    assert_eq!(nvml_sim::calls("nvmlDeviceGetTemperature"), 1);
    assert_eq!(nvml_sim::calls("nvmlDeviceGetMemoryInfo"), 1);
    assert_eq!(
        nvml_sim::calls("nvmlDeviceGetCurrentClocksThrottleReasons"),
        1
    );
}

#[test]
fn devices_are_found_by_cuda_uuid_bus_id_or_index() {
    let _l = lock();
    let mut second = DeviceSpec {
        uuid: "GPU-00112233-4455-6677-8899-aabbccddeeff".into(),
        pci: "00000000:9A:00.0".into(),
        ..DeviceSpec::default()
    };
    second.values.sm_clock = 1410;
    let nvml = open(Spec {
        devices: vec![DeviceSpec::default(), second],
        ..Spec::default()
    })
    .unwrap();
    assert_eq!(nvml.device_count().unwrap(), 2);
    let cuda_uuid: [u8; 16] = [
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee,
        0xff,
    ];
    assert_eq!(
        nvml::uuid_text(&cuda_uuid),
        "GPU-00112233-4455-6677-8899-aabbccddeeff"
    );
    let by_uuid = nvml.device_by_cuda_uuid(&cuda_uuid).unwrap();
    assert_eq!(by_uuid.clock(Clock::Sm).unwrap(), 1410);
    // CUDA writes a 4-digit domain and lower case; NVML 8 digits, upper case.
    let by_pci = nvml.device_by_pci_bus_id("0000:9a:00.0").unwrap();
    assert_eq!(by_pci.clock(Clock::Sm).unwrap(), 1410);
    assert_eq!(
        nvml.device_by_index(1).unwrap().uuid().unwrap(),
        "GPU-00112233-4455-6677-8899-aabbccddeeff"
    );
    let e = nvml.device_by_pci_bus_id("0000:07:00.0").unwrap_err();
    assert_eq!(e.code(), Some(Code::NotFound));
    assert_eq!(e.to_string(), "Not Found (NVML_ERROR_NOT_FOUND)");
    assert_eq!(
        nvml.device_by_index(2).unwrap_err().code(),
        Some(Code::InvalidArgument)
    );
}

#[test]
fn gpm_metrics_come_from_two_samples_of_one_device_in_order() {
    let _l = lock();
    let dev = DeviceSpec {
        gpm_unsupported: vec![60, 61],
        ..DeviceSpec::default()
    };
    let nvml = open(Spec {
        devices: vec![dev, DeviceSpec::default()],
        ..Spec::default()
    })
    .unwrap();
    let d = nvml.device_by_index(0).unwrap();
    assert!(d.gpm_supported().unwrap());
    let mut a = Sample::alloc(&d).unwrap();
    let mut b = Sample::alloc(&d).unwrap();
    let mut m = Metrics::new(&[
        Metric::SmActive,
        Metric::SmOccupancy,
        Metric::TensorActive,
        Metric::DramBandwidth,
        Metric::NvlinkTx,
    ]);
    // Never sampled: refused before NVML is asked.
    assert!(m.compute(&a, &b).is_err());
    d.gpm_sample(&mut a).unwrap();
    d.gpm_sample(&mut b).unwrap();
    let got: Vec<_> = m.compute(&a, &b).unwrap().to_vec();
    let values: Vec<f64> = got[..4].iter().map(|(_, v)| *v.as_ref().unwrap()).collect();
    assert_eq!(values, [96.7, 14.3, 93.9, 16.5]);
    assert_eq!(got[4].0, Metric::NvlinkTx);
    let e = got[4].1.unwrap_err();
    assert_eq!(e.code(), Some(Code::NotSupported), "{e}");
    // The later sample first: NVML refuses.
    assert_eq!(
        m.compute(&b, &a).unwrap_err().code(),
        Some(Code::InvalidArgument)
    );
    // A sample of another device.
    let other = nvml.device_by_index(1).unwrap();
    other.gpm_sample(&mut a).unwrap();
    assert!(m.compute(&a, &b).is_err());
    assert_eq!(nvml_sim::live_samples(), 2);
    a.close().unwrap();
    drop(b);
    assert_eq!(nvml_sim::live_samples(), 0, "both buffers freed");
}

#[test]
fn a_gpu_without_gpm_says_so_and_its_samples_fail_for_good() {
    let _l = lock();
    let nvml = open(Spec {
        devices: vec![DeviceSpec {
            gpm: false,
            ..DeviceSpec::default()
        }],
        ..Spec::default()
    })
    .unwrap();
    let d = nvml.device_by_index(0).unwrap();
    assert!(!d.gpm_supported().unwrap());
    let mut s = Sample::alloc(&d).unwrap();
    let e = d.gpm_sample(&mut s).unwrap_err();
    assert!(e.is_permanent(), "{e:?}");
    // The other readings are unaffected.
    assert!(d.power_mw().is_ok());
}

#[test]
fn a_driver_before_gpm_is_missing_symbols_not_a_crash() {
    let _l = lock();
    let nvml = open(Spec {
        missing: [
            "nvmlGpmQueryDeviceSupport",
            "nvmlGpmSampleAlloc",
            "nvmlGpmSampleGet",
        ]
        .map(String::from)
        .to_vec(),
        ..Spec::default()
    })
    .unwrap();
    let d = nvml.device_by_index(0).unwrap();
    let e = d.gpm_supported().unwrap_err();
    assert!(
        matches!(e, Error::MissingSymbol(_)) && e.is_permanent(),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "symbol `nvmlGpmQueryDeviceSupport` not found in the loaded library"
    );
    assert!(Sample::alloc(&d).is_err());
}

#[test]
fn unsupported_readings_are_permanent_errors_with_nvmls_text() {
    let _l = lock();
    let nvml = open(Spec {
        devices: vec![DeviceSpec {
            unsupported: vec!["power".into(), "reasons".into()],
            ..DeviceSpec::default()
        }],
        ..Spec::default()
    })
    .unwrap();
    let d = nvml.device_by_index(0).unwrap();
    let e = d.power_mw().unwrap_err();
    assert_eq!(e.code(), Some(Code::NotSupported));
    assert!(e.is_permanent());
    assert_eq!(e.to_string(), "Not Supported (NVML_ERROR_NOT_SUPPORTED)");
    assert!(d.clocks_event_reasons().is_err());
    assert!(d.clock(Clock::Sm).is_ok());
}

#[test]
fn a_failed_init_names_the_library_and_nvmls_reason() {
    let _l = lock();
    let e = open(Spec {
        init_error: Some(9),
        ..Spec::default()
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "nvmlInit_v2 failed in nvml-sim: Driver Not Loaded (NVML_ERROR_DRIVER_NOT_LOADED)"
    );
    assert_eq!(nvml_sim::calls("nvmlShutdown"), 0, "nothing to shut down");
}

#[test]
fn nvml_missing_lists_what_was_tried() {
    // Not the fake: the real loader, pointed at nothing.
    let e = nvml_sys::loader::open_first(&["/nonexistent/libnvidia-ml.so.1".into()]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "libnvidia-ml not found; tried: /nonexistent/libnvidia-ml.so.1"
    );
}
