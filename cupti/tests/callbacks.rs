//! The callback API and error handling through a fake CUPTI.

mod common;

use std::{
    ffi::c_void,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
};

use cupti::{
    Error, Stream,
    callback::{Callback, Domain, ResourceEvent, Site, Subscriber},
    cbid::{self, ApiDomain, CallKind, SyncKind},
    nvtx::{NvtxEvent, NvtxMessage, Payload},
};
use cupti_sim::inproc::{self as fake, fire, serial};
use cupti_sys as sys;

const RUNTIME: sys::CUpti_CallbackDomain = sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RUNTIME_API;
const DRIVER: sys::CUpti_CallbackDomain = sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API;

fn api_data(
    site: sys::CUpti_ApiCallbackSite,
    name: &'static std::ffi::CStr,
    params: *const c_void,
) -> sys::CUpti_CallbackData {
    sys::CUpti_CallbackData {
        callbackSite: site,
        functionName: name.as_ptr(),
        functionParams: params,
        functionReturnValue: std::ptr::null_mut(),
        symbolName: c"_Z6kernelPf".as_ptr(),
        context: 0xc0de as sys::CUcontext,
        contextUid: 3,
        correlationData: std::ptr::null_mut(),
        correlationId: 42,
    }
}

/// Set when a test's closure is freed.
static CLOSURE_FREED: AtomicBool = AtomicBool::new(false);

struct FreedFlag;
impl Drop for FreedFlag {
    fn drop(&mut self) {
        CLOSURE_FREED.store(true, Ordering::SeqCst);
    }
}

#[test]
fn drop_unsubscribes_and_leaks_the_closure() {
    let _g = serial();
    let cupti = common::cupti(&["cuptiSubscribe_v2"]);
    CLOSURE_FREED.store(false, Ordering::SeqCst);
    let calls = Arc::new(AtomicUsize::new(0));
    let flag = FreedFlag;
    let c2 = calls.clone();
    let sub = Subscriber::subscribe(&cupti, c"test", move |_cb: &Callback<'_>| {
        let _keep = &flag;
        c2.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    assert!(fire(RUNTIME, 1, std::ptr::null()));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let before = fake::report().unsubscribes;
    drop(sub);
    assert_eq!(fake::report().unsubscribes, before + 1);
    assert!(!fire(RUNTIME, 1, std::ptr::null()), "still subscribed");
    // CUPTI does not say it waits for callbacks under way on other threads:
    // the closure must outlive the unsubscribe, for good.
    assert!(
        !CLOSURE_FREED.load(Ordering::SeqCst),
        "closure freed after unsubscribe"
    );
    assert_eq!(Arc::strong_count(&calls), 2, "captures dropped");
    // A late callback is safe and no longer reaches the closure.
    assert!(fake::fire_stale(RUNTIME, 1, std::ptr::null()));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "closure ran after unsubscribe"
    );
}

#[test]
fn close_leaks_the_closure_too() {
    let _g = serial();
    let cupti = common::cupti(&[]);
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = calls.clone();
    let sub = Subscriber::subscribe(&cupti, c"test", move |_cb: &Callback<'_>| {
        c2.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    sub.close().unwrap();
    assert_eq!(Arc::strong_count(&calls), 2, "captures dropped");
    assert!(fake::fire_stale(RUNTIME, 1, std::ptr::null()));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn subscriber_name_is_the_callers() {
    let _g = serial();
    let cupti = common::cupti(&[]);
    let sub = Subscriber::subscribe(&cupti, c"my-tool", |_cb: &Callback<'_>| {}).unwrap();
    assert_eq!(
        fake::report().subscriber_names.last().map(String::as_str),
        Some("my-tool")
    );
    drop(sub);
    let long = std::ffi::CString::new("x".repeat(cupti::callback::MAX_NAME_LEN + 1)).unwrap();
    let err = Subscriber::subscribe(&cupti, &long, |_cb: &Callback<'_>| {}).unwrap_err();
    assert!(matches!(err, Error::InvalidParameter(_)), "{err:?}");
    let max = std::ffi::CString::new("x".repeat(cupti::callback::MAX_NAME_LEN)).unwrap();
    Subscriber::subscribe(&cupti, &max, |_cb: &Callback<'_>| {})
        .unwrap()
        .close()
        .unwrap();
}

#[test]
fn enable_calls_from_many_threads_are_serialized() {
    let _g = serial();
    let cupti = common::cupti(&[]);
    let sub = Subscriber::subscribe(&cupti, c"test", |_cb: &Callback<'_>| {}).unwrap();
    fake::slow_enable(true);
    std::thread::scope(|s| {
        for ids in sys::cbid_names::RUNTIME_CBID_NAMES.chunks(20).take(4) {
            let sub = &sub;
            s.spawn(move || {
                for (id, _) in ids {
                    sub.enable(Domain::Runtime, *id).unwrap();
                }
            });
        }
    });
    assert_eq!(fake::enabled_callbacks().len(), 80);
    assert_eq!(fake::violations(), Vec::<String>::new());
    sub.close().unwrap();
}

#[test]
fn panic_in_closure_is_caught_and_disables_the_subscriber() {
    let _g = serial();
    let cupti = common::cupti(&["cuptiSubscribe_v2"]);
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = calls.clone();
    let sub = Subscriber::subscribe(&cupti, c"test", move |_cb: &Callback<'_>| {
        c2.fetch_add(1, Ordering::SeqCst);
        panic!("boom in user closure");
    })
    .unwrap();
    // Returning here at all proves nothing unwound through the extern "C" frame
    // (that would abort the test process).
    fire(RUNTIME, 1, std::ptr::null());
    assert!(sub.is_disabled());
    fire(RUNTIME, 1, std::ptr::null());
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "disabled subscriber was called again"
    );
    sub.close().unwrap();
}

#[test]
fn second_subscriber_is_a_typed_error_naming_the_holder() {
    let _g = serial();
    let cupti = common::cupti(&[]);
    // Another profiler holds CUPTI.
    let first = Subscriber::subscribe(&cupti, c"nsys", |_cb: &Callback<'_>| {}).unwrap();
    let err = Subscriber::subscribe(&cupti, c"test", |_cb: &Callback<'_>| {}).unwrap_err();
    match &err {
        Error::MultipleSubscribers { status, holder } => {
            assert_eq!(
                status.code(),
                sys::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
            );
            assert_eq!(holder.as_deref(), Some("nsys"));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        err.code(),
        Some(sys::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED.0)
    );
    assert!(
        err.to_string()
            .contains("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"),
        "{err}"
    );
    assert!(err.to_string().contains("nsys"), "{err}");
    drop(first);
}

#[test]
fn enable_single_ids_and_kinds() {
    let _g = serial();
    let cupti = common::cupti(&[]);
    let sub = Subscriber::subscribe(&cupti, c"test", |_cb: &Callback<'_>| {}).unwrap();
    let launch = cbid::by_name(ApiDomain::Driver, "cuLaunchKernel").unwrap();
    sub.enable(Domain::Driver, launch).unwrap();
    sub.enable_kind(ApiDomain::Runtime, CallKind::Sync(SyncKind::Stream))
        .unwrap();
    let on = fake::enabled_callbacks();
    assert!(on.contains(&(DRIVER.0, launch)));
    let stream_sync = cbid::by_name(ApiDomain::Runtime, "cudaStreamSynchronize_v3020").unwrap();
    assert!(on.contains(&(RUNTIME.0, stream_sync)));
    assert!(
        on.iter()
            .filter(|e| e.0 == RUNTIME.0)
            .all(|e| cbid::classify(ApiDomain::Runtime, e.1) == CallKind::Sync(SyncKind::Stream))
    );
    assert_eq!(on.iter().filter(|e| e.0 == DRIVER.0).count(), 1);
    // An id the fake rejects maps to InvalidParameter with the raw code kept.
    let err = sub.enable(Domain::Runtime, 1_000_000).unwrap_err();
    assert!(matches!(err, Error::InvalidParameter(_)), "{err:?}");
    assert_eq!(
        err.code(),
        Some(sys::CUptiResult::CUPTI_ERROR_INVALID_PARAMETER.0)
    );
    assert_eq!(
        err.to_string(),
        "CUPTI_ERROR_INVALID_PARAMETER (CUPTI error 1)"
    );
}

#[test]
fn api_view_reads_stream_name_and_return_value() {
    let _g = serial();
    let cupti = common::cupti(&[]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let sub = Subscriber::subscribe(&cupti, c"test", move |cb: &Callback<'_>| {
        if let Callback::Api(api) = cb {
            s2.lock().unwrap().push((
                api.domain(),
                api.kind(),
                api.function_name().to_str().unwrap().to_owned(),
                api.site(),
                api.correlation_id(),
                api.context_handle(),
                api.context_uid(),
                api.stream().map(Stream::as_u64),
                api.event(),
                api.launch_config()
                    .map(|c| (c.grid, c.block, c.dynamic_shared_mem)),
                api.return_value(),
                api.symbol_name().map(|s| s.to_str().unwrap().to_owned()),
            ));
            api.set_correlation_data(7);
        }
    })
    .unwrap();

    // cudaLaunchKernel on stream 0xabc, grid 4x2x1, block 128x1x1, 256 B smem.
    let p = sys::cudaLaunchKernel_v7000_params {
        func: std::ptr::null(),
        gridDim: sys::dim3 { x: 4, y: 2, z: 1 },
        blockDim: sys::dim3 { x: 128, y: 1, z: 1 },
        args: std::ptr::null_mut(),
        sharedMem: 256,
        stream: 0xabc as sys::cudaStream_t,
    };
    let id =
        sys::CUpti_runtime_api_trace_cbid_enum::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000.0;
    let enter = api_data(
        sys::CUpti_ApiCallbackSite::CUPTI_API_ENTER,
        c"cudaLaunchKernel",
        (&raw const p).cast(),
    );
    fire(RUNTIME, id, (&raw const enter).cast());

    // cuLaunchKernelEx: the stream lives in the config struct.
    let cfg = sys::CUlaunchConfig {
        gridDimX: 1,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: 32,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        hStream: 0xdef as sys::CUstream,
        attrs: std::ptr::null_mut(),
        numAttrs: 0,
    };
    let px = sys::cuLaunchKernelEx_params {
        config: &raw const cfg,
        f: 0xf00 as sys::CUfunction,
        kernelParams: std::ptr::null_mut(),
        extra: std::ptr::null_mut(),
    };
    let idx = sys::CUpti_driver_api_trace_cbid_enum::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx.0;
    let mut exit = api_data(
        sys::CUpti_ApiCallbackSite::CUPTI_API_EXIT,
        c"cuLaunchKernelEx",
        (&raw const px).cast(),
    );
    let mut ret: u32 = 0;
    let mut slot: u64 = 0;
    exit.functionReturnValue = (&raw mut ret).cast();
    exit.correlationData = &raw mut slot;
    fire(DRIVER, idx, (&raw const exit).cast());

    // cuEventRecord_ptsz: event and stream.
    let pe = sys::cuEventRecord_ptsz_params {
        hEvent: 0xe1 as sys::CUevent,
        hStream: 0x5 as sys::CUstream,
    };
    let ide = sys::CUpti_driver_api_trace_cbid_enum::CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz.0;
    let ev = api_data(
        sys::CUpti_ApiCallbackSite::CUPTI_API_ENTER,
        c"cuEventRecord_ptsz",
        (&raw const pe).cast(),
    );
    fire(DRIVER, ide, (&raw const ev).cast());

    drop(sub);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    let a = &seen[0];
    assert_eq!((a.0, a.1), (ApiDomain::Runtime, CallKind::KernelLaunch));
    assert_eq!(a.2, "cudaLaunchKernel");
    assert_eq!((a.3, a.4, a.5, a.6), (Site::Enter, 42, 0xc0de, 3));
    assert_eq!(a.7, Some(0xabc));
    assert_eq!(a.8, None);
    assert_eq!(a.9, Some(([4, 2, 1], [128, 1, 1], 256)));
    assert_eq!(a.10, None, "no return value at entry");
    assert_eq!(a.11.as_deref(), Some("_Z6kernelPf"));
    let b = &seen[1];
    assert_eq!(
        (b.0, b.1, b.3),
        (ApiDomain::Driver, CallKind::KernelLaunch, Site::Exit)
    );
    assert_eq!(b.7, Some(0xdef));
    assert_eq!(b.9, Some(([1, 1, 1], [32, 1, 1], 0)));
    assert_eq!(b.10, Some(0));
    assert_eq!(slot, 7, "correlation data written through");
    let c = &seen[2];
    assert_eq!(
        (c.1, c.7, c.8),
        (CallKind::EventRecord, Some(0x5), Some(0xe1))
    );
}

#[test]
fn resource_and_nvtx_views() {
    let _g = serial();
    let cupti = common::cupti(&[]);
    let out = Arc::new(Mutex::new(Vec::<String>::new()));
    let o2 = out.clone();
    let sub = Subscriber::subscribe(&cupti, c"test", move |cb: &Callback<'_>| {
        let s = match cb {
            Callback::Resource(r) => format!(
                "{:?} ctx={:#x} stream={:?} module={:?}",
                r.event(),
                r.context_handle(),
                r.stream().map(Stream::as_u64),
                r.module().map(|m| (m.id, m.cubin_size))
            ),
            Callback::Nvtx(n) => match n.event() {
                NvtxEvent::Push {
                    domain,
                    message,
                    attributes,
                } => {
                    format!(
                        "push {domain:?} {message} {:?} {:?}",
                        attributes.color, attributes.payload
                    )
                }
                NvtxEvent::RangeStart { message, id, .. } => format!("start {message} {id:?}"),
                NvtxEvent::RangeEnd { domain, id } => format!("end {domain:?} {id}"),
                NvtxEvent::Pop { domain } => format!("pop {domain:?}"),
                NvtxEvent::Mark { message, .. } => match message {
                    NvtxMessage::Unicode(w) => format!("markW {w}"),
                    m => format!("mark {m}"),
                },
                other => format!("{other:?}"),
            },
            other => format!("{other:?}"),
        };
        o2.lock().unwrap().push(s);
    })
    .unwrap();

    let res = sys::CUpti_ResourceData {
        context: 0x10 as sys::CUcontext,
        resourceHandle: sys::CUpti_ResourceData__bindgen_ty_1 {
            stream: 0x20 as sys::CUstream,
        },
        resourceDescriptor: std::ptr::null_mut(),
    };
    let rdom = sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RESOURCE;
    fire(
        rdom,
        sys::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_STREAM_CREATED.0,
        (&raw const res).cast(),
    );
    let module = sys::CUpti_ModuleResourceData {
        moduleId: 9,
        cubinSize: 1234,
        pCubin: std::ptr::null(),
    };
    let mut res2 = res;
    res2.resourceDescriptor = (&raw const module).cast_mut().cast();
    fire(
        rdom,
        sys::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_MODULE_LOADED.0,
        (&raw const res2).cast(),
    );

    let ndom = sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_NVTX;
    type N = sys::CUpti_nvtx_api_trace_cbid;
    let nvtx = |cbid: N, params: *const c_void, ret: *const c_void| {
        let d = sys::CUpti_NvtxData {
            functionName: c"nvtx".as_ptr(),
            functionParams: params,
            functionReturnValue: ret,
        };
        fire(ndom, cbid.0, (&raw const d).cast());
    };
    // nvtxDomainRangePushEx with an ASCII message, ARGB color and a double payload.
    let mut attrs = sys::nvtxEventAttributes_t {
        version: 3,
        size: std::mem::size_of::<sys::nvtxEventAttributes_t>() as u16,
        colorType: sys::nvtxColorType_t::NVTX_COLOR_ARGB.0 as i32,
        color: 0xff00ff00,
        payloadType: sys::nvtxPayloadType_t::NVTX_PAYLOAD_TYPE_DOUBLE.0 as i32,
        messageType: sys::nvtxMessageType_t::NVTX_MESSAGE_TYPE_ASCII.0 as i32,
        ..Default::default()
    };
    attrs.payload.dValue = 1.5;
    attrs.message.ascii = c"step".as_ptr();
    let push = sys::nvtxDomainRangePushEx_params {
        domain: 0x77 as sys::nvtxDomainHandle_t,
        core: sys::nvtxRangePushEx_params {
            eventAttrib: &raw const attrs,
        },
    };
    nvtx(
        N::CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
        (&raw const push).cast(),
        std::ptr::null(),
    );
    let start = sys::nvtxRangeStartA_params {
        message: c"load".as_ptr(),
    };
    let id: u64 = 1001;
    nvtx(
        N::CUPTI_CBID_NVTX_nvtxRangeStartA,
        (&raw const start).cast(),
        (&raw const id).cast(),
    );
    let end = sys::nvtxDomainRangeEnd_params {
        domain: 0x77 as sys::nvtxDomainHandle_t,
        core: sys::nvtxRangeEnd_params { id: 1001 },
    };
    nvtx(
        N::CUPTI_CBID_NVTX_nvtxDomainRangeEnd,
        (&raw const end).cast(),
        std::ptr::null(),
    );
    let wide: Vec<u32> = "héllo".chars().map(u32::from).chain([0]).collect();
    let mark = sys::nvtxMarkW_params {
        message: wide.as_ptr(),
    };
    nvtx(
        N::CUPTI_CBID_NVTX_nvtxMarkW,
        (&raw const mark).cast(),
        std::ptr::null(),
    );
    nvtx(
        N::CUPTI_CBID_NVTX_nvtxRangePop,
        std::ptr::null(),
        std::ptr::null(),
    );
    drop(sub);

    let out = out.lock().unwrap();
    assert_eq!(out[0], "StreamCreated ctx=0x10 stream=Some(32) module=None");
    assert_eq!(
        out[1],
        format!(
            "{:?} ctx=0x10 stream=None module=Some((9, 1234))",
            ResourceEvent::ModuleLoaded
        )
    );
    assert_eq!(
        out[2],
        format!(
            "push Some(119) step Some(4278255360) {:?}",
            Some(Payload::F64(1.5))
        )
    );
    assert_eq!(out[3], "start load Some(1001)");
    assert_eq!(out[4], "end Some(119) 1001");
    assert_eq!(out[5], "markW héllo");
    assert_eq!(out[6], "pop None");
}

#[test]
fn missing_symbol_is_an_error_value() {
    let _g = serial();
    let cupti = common::cupti(&["cuptiSubscribe_v2", "cuptiSubscribe", "cuptiGetTimestamp"]);
    let err = Subscriber::subscribe(&cupti, c"test", |_cb: &Callback<'_>| {}).unwrap_err();
    assert!(
        matches!(
            err,
            Error::MissingSymbol(sys::MissingSymbol("cuptiSubscribe"))
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "symbol `cuptiSubscribe` not found in the loaded library"
    );
    let err = cupti.timestamp().unwrap_err();
    assert!(matches!(
        err,
        Error::MissingSymbol(sys::MissingSymbol("cuptiGetTimestamp"))
    ));
}

#[test]
fn version_floor_is_enforced() {
    let _g = serial();
    fake::set_version(28); // CUDA 12.9 Update 1
    let err = common::try_cupti(&[]).unwrap_err();
    fake::set_version(130001);
    match err {
        Error::VersionTooOld { found, floor } => assert_eq!((found, floor), (28, 130000)),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(common::try_cupti(&[]).unwrap().version(), 130001);
    let err = common::try_cupti(&["cuptiGetVersion"]).unwrap_err();
    assert!(matches!(err, Error::MissingSymbol(_)));
}

#[test]
fn error_mapping_keeps_the_raw_code() {
    let _g = serial();
    let cupti = common::cupti(&[]);
    assert_eq!(
        cupti.result_string(sys::CUptiResult::CUPTI_ERROR_INSUFFICIENT_PRIVILEGES),
        Some("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")
    );
    let e = Error::from_status(cupti::Status::new(
        sys::CUptiResult::CUPTI_ERROR_INSUFFICIENT_PRIVILEGES,
        Some("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"),
    ));
    assert!(e.is_permission_denied());
    assert_eq!(
        e.code(),
        Some(sys::CUptiResult::CUPTI_ERROR_INSUFFICIENT_PRIVILEGES.0)
    );
    assert!(e.to_string().contains("ERR_NVGPUCTRPERM"));
    for (code, check) in [
        (
            sys::CUptiResult::CUPTI_ERROR_NOT_INITIALIZED,
            "NotInitialized",
        ),
        (sys::CUptiResult::CUPTI_ERROR_NOT_COMPATIBLE, "NotSupported"),
        (
            sys::CUptiResult::CUPTI_ERROR_MAX_LIMIT_REACHED,
            "MaxLimitReached",
        ),
        (
            sys::CUptiResult::CUPTI_ERROR_INVALID_METRIC_NAME,
            "InvalidMetric",
        ),
        (sys::CUptiResult(9999), "Other"),
    ] {
        let e = Error::from_status(cupti::Status::new(code, None));
        assert!(format!("{e:?}").starts_with(check), "{e:?}");
        assert_eq!(e.code(), Some(code.0));
        assert_eq!(e.to_string(), format!("CUPTI error {}", code.0));
    }
}

#[test]
fn cuda13_triple_chevron_launch_is_decoded() {
    let _g = serial();
    let cupti = common::cupti(&[]);
    let got = Arc::new(Mutex::new(None));
    let g2 = got.clone();
    let sub = Subscriber::subscribe(&cupti, c"test", move |cb: &Callback<'_>| {
        if let Callback::Api(api) = cb {
            *g2.lock().unwrap() = Some((
                api.kind(),
                api.stream().map(Stream::as_u64),
                api.launch_config().map(|c| c.grid),
            ));
        }
    })
    .unwrap();
    let p = sys::cudaLaunchKernel_v7000_params {
        func: std::ptr::null(),
        gridDim: sys::dim3 {
            x: 2048,
            y: 1,
            z: 1,
        },
        blockDim: sys::dim3 { x: 256, y: 1, z: 1 },
        args: std::ptr::null_mut(),
        sharedMem: 0,
        stream: 0x99 as sys::cudaStream_t,
    };
    let id =
        sys::CUpti_runtime_api_trace_cbid_enum::CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000
            .0;
    let d = api_data(
        sys::CUpti_ApiCallbackSite::CUPTI_API_ENTER,
        c"__cudaLaunchKernel",
        (&raw const p).cast(),
    );
    fire(RUNTIME, id, (&raw const d).cast());
    drop(sub);
    assert_eq!(
        *got.lock().unwrap(),
        Some((CallKind::KernelLaunch, Some(0x99), Some([2048, 1, 1])))
    );
}

#[test]
fn api_view_reads_the_size_of_async_copies_and_sets() {
    let _g = serial();
    let cupti = common::cupti(&[]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let sub = Subscriber::subscribe(&cupti, c"test", move |cb: &Callback<'_>| {
        if let Callback::Api(api) = cb {
            s2.lock()
                .unwrap()
                .push((api.kind(), api.size(), api.stream().map(Stream::as_u64)));
        }
    })
    .unwrap();
    for bytes in [0usize, 4096] {
        let p = sys::cuMemcpyHtoDAsync_v2_params {
            dstDevice: 0x1000,
            srcHost: std::ptr::null(),
            ByteCount: bytes,
            hStream: 0x7 as sys::CUstream,
        };
        let id =
            sys::CUpti_driver_api_trace_cbid_enum::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2.0;
        let d = api_data(
            sys::CUpti_ApiCallbackSite::CUPTI_API_ENTER,
            c"cuMemcpyHtoDAsync_v2",
            (&raw const p).cast(),
        );
        fire(DRIVER, id, (&raw const d).cast());
    }
    let p = sys::cudaMemsetAsync_v3020_params {
        devPtr: std::ptr::null_mut(),
        value: 0,
        count: 0,
        stream: 0x9 as sys::cudaStream_t,
    };
    let id =
        sys::CUpti_runtime_api_trace_cbid_enum::CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020.0;
    let d = api_data(
        sys::CUpti_ApiCallbackSite::CUPTI_API_ENTER,
        c"cudaMemsetAsync",
        (&raw const p).cast(),
    );
    fire(RUNTIME, id, (&raw const d).cast());
    drop(sub);
    let seen = seen.lock().unwrap();
    assert_eq!(
        *seen,
        [
            (CallKind::Memcpy, Some(0), Some(0x7)),
            (CallKind::Memcpy, Some(4096), Some(0x7)),
            (CallKind::Memset, Some(0), Some(0x9)),
        ]
    );
}

#[test]
fn api_view_reads_what_allocations_and_frees_did_at_their_exit() {
    use cupti::callback::MemoryCall;
    use sys::CUpti_driver_api_trace_cbid_enum as D;
    let _g = serial();
    let cupti = common::cupti(&[]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let sub = Subscriber::subscribe(&cupti, c"test", move |cb: &Callback<'_>| {
        if let Callback::Api(api) = cb {
            s2.lock().unwrap().push(api.memory_call());
        }
    })
    .unwrap();
    let both = |id: D, name: &'static std::ffi::CStr, p: *const c_void| {
        for site in [
            sys::CUpti_ApiCallbackSite::CUPTI_API_ENTER,
            sys::CUpti_ApiCallbackSite::CUPTI_API_EXIT,
        ] {
            let d = api_data(site, name, p);
            fire(DRIVER, id.0, (&raw const d).cast());
        }
    };
    let mut ptr: sys::CUdeviceptr = 0x7000_0000;
    let p = sys::cuMemAlloc_v2_params {
        dptr: &mut ptr,
        bytesize: 1 << 20,
    };
    both(
        D::CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
        c"cuMemAlloc_v2",
        (&raw const p).cast(),
    );
    let mut pitch = 512usize;
    let p = sys::cuMemAllocPitch_v2_params {
        dptr: &mut ptr,
        pPitch: &mut pitch,
        WidthInBytes: 500,
        Height: 10,
        ElementSizeBytes: 4,
    };
    both(
        D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
        c"cuMemAllocPitch_v2",
        (&raw const p).cast(),
    );
    let p = sys::cuMemAllocAsync_params {
        dptr: &mut ptr,
        bytesize: 4096,
        hStream: std::ptr::null_mut(),
    };
    both(
        D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
        c"cuMemAllocAsync",
        (&raw const p).cast(),
    );
    // A null out-pointer reads as nothing.
    let p = sys::cuMemAllocManaged_params {
        dptr: std::ptr::null_mut(),
        bytesize: 8,
        flags: 1,
    };
    both(
        D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
        c"cuMemAllocManaged",
        (&raw const p).cast(),
    );
    let p = sys::cuMemFree_v2_params { dptr: 0x7000_0000 };
    both(
        D::CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
        c"cuMemFree_v2",
        (&raw const p).cast(),
    );
    let mut handle: sys::CUmemGenericAllocationHandle = 0xabc;
    // SAFETY: all-zero is a valid value of this plain C struct.
    let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 3;
    let p = sys::cuMemCreate_params {
        handle: &mut handle,
        size: 2 << 20,
        prop: &prop,
        flags: 0,
    };
    both(
        D::CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
        c"cuMemCreate",
        (&raw const p).cast(),
    );
    let p = sys::cuMemRelease_params { handle: 0xabc };
    both(
        D::CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
        c"cuMemRelease",
        (&raw const p).cast(),
    );
    // Another call has no memory effect.
    let p = sys::cuMemcpyHtoDAsync_v2_params {
        dstDevice: 0x1000,
        srcHost: std::ptr::null(),
        ByteCount: 1,
        hStream: std::ptr::null_mut(),
    };
    both(
        D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
        c"cuMemcpyHtoDAsync_v2",
        (&raw const p).cast(),
    );
    drop(sub);
    let seen = seen.lock().unwrap();
    // Entries read nothing: an allocation's pointer is not there yet.
    assert!(seen.iter().step_by(2).all(Option::is_none), "{seen:?}");
    let exits: Vec<_> = seen.iter().skip(1).step_by(2).copied().collect();
    assert_eq!(
        exits,
        [
            Some(MemoryCall::Alloc {
                ptr: 0x7000_0000,
                bytes: 1 << 20,
                managed: false,
                stream_ordered: false
            }),
            Some(MemoryCall::Alloc {
                ptr: 0x7000_0000,
                bytes: 5120,
                managed: false,
                stream_ordered: false
            }),
            Some(MemoryCall::Alloc {
                ptr: 0x7000_0000,
                bytes: 4096,
                managed: false,
                stream_ordered: true
            }),
            None,
            Some(MemoryCall::Free {
                ptr: 0x7000_0000,
                stream_ordered: false
            }),
            Some(MemoryCall::Create {
                handle: 0xabc,
                bytes: 2 << 20,
                device: Some(3)
            }),
            Some(MemoryCall::Release { handle: 0xabc }),
            None,
        ]
    );
    // Every id read is one memory accounting enables.
    let ids: Vec<u32> = cupti::callback::memory_call_ids().collect();
    for id in [
        D::CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
        D::CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
        D::CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
        D::CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
    ] {
        assert!(ids.contains(&id.0), "{id:?}");
    }
}
