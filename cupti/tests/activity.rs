//! The activity API through a fake CUPTI. The buffer handler is process-global
//! (set once), so everything that registers it lives in this one binary and
//! runs in sequence inside one test.

mod common;

use cupti_sim::inproc as fake;

use std::{
    ffi::CStr,
    mem::size_of,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use cupti::{
    Error,
    activity::{
        self, ActivityConfig, ActivityKind, LaunchType, MemcpyKind, MemoryKind, Record, Records,
        SyncType,
    },
};
use cupti_sys as sys;

const BUF: usize = 4096;
const UM_CONFIGURE: &str = "cuptiActivityConfigureUnifiedMemoryCounter";

/// Writes records one after another the way CUPTI lays them out (8-aligned).
struct Writer<'a> {
    buf: &'a mut [u8],
    off: usize,
}

impl Writer<'_> {
    fn put<T: Copy>(&mut self, kind: sys::CUpti_ActivityKind, rec: T) {
        assert!(self.off + size_of::<T>() <= self.buf.len());
        // SAFETY: in bounds (checked); unaligned write of a plain C struct.
        unsafe { std::ptr::write_unaligned(self.buf.as_mut_ptr().add(self.off).cast::<T>(), rec) };
        self.off += fake::record_size(kind.0);
    }
}

fn kernel(name: &'static CStr, corr: u32) -> sys::CUpti_ActivityKernel10 {
    // SAFETY: all-zero is a valid value of this plain C struct.
    let mut k: sys::CUpti_ActivityKernel10 = unsafe { std::mem::zeroed() };
    k.kind = sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = 1_000;
    k.end = 2_500;
    k.completed = 2_600;
    k.deviceId = 0;
    k.contextId = 1;
    k.streamId = 7;
    k.correlationId = corr;
    (k.gridX, k.gridY, k.gridZ) = (64, 2, 1);
    (k.blockX, k.blockY, k.blockZ) = (256, 1, 1);
    k.registersPerThread = 32;
    k.staticSharedMemory = 1024;
    k.dynamicSharedMemory = 2048;
    k.localMemoryTotal_v2 = 1 << 20;
    k.sharedMemoryExecuted = 65536;
    k.launchType =
        sys::CUpti_ActivityLaunchType::CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE.0 as u8;
    k.graphNodeId = 11;
    k.graphId = 12;
    k.name = name.as_ptr();
    k
}

fn fill(buf: &mut [u8]) -> usize {
    let mut w = Writer { buf, off: 0 };
    type K = sys::CUpti_ActivityKind;
    w.put(
        K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        kernel(c"_Z6vecAddPfS_S_i", 100),
    );
    // SAFETY: all-zero is valid for these plain C structs.
    let mut m: sys::CUpti_ActivityMemcpy6 = unsafe { std::mem::zeroed() };
    m.kind = K::CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = sys::CUpti_ActivityMemcpyKind::CUPTI_ACTIVITY_MEMCPY_KIND_HTOD.0 as u8;
    m.srcKind = sys::CUpti_ActivityMemoryKind::CUPTI_ACTIVITY_MEMORY_KIND_PINNED.0 as u8;
    m.dstKind = sys::CUpti_ActivityMemoryKind::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE.0 as u8;
    m.flags = sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC.0 as u8;
    m.bytes = 4096;
    m.correlationId = 101;
    m.streamId = 7;
    w.put(K::CUPTI_ACTIVITY_KIND_MEMCPY, m);
    // SAFETY: as above.
    let mut s: sys::CUpti_ActivityMemset4 = unsafe { std::mem::zeroed() };
    s.kind = K::CUPTI_ACTIVITY_KIND_MEMSET;
    s.bytes = 512;
    s.value = 0xab;
    s.memoryKind = sys::CUpti_ActivityMemoryKind::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE.0 as u16;
    s.correlationId = 102;
    w.put(K::CUPTI_ACTIVITY_KIND_MEMSET, s);
    // SAFETY: as above.
    let mut y: sys::CUpti_ActivitySynchronization2 = unsafe { std::mem::zeroed() };
    y.kind = K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    y.type_ = sys::CUpti_ActivitySynchronizationType::CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
    y.correlationId = 103;
    y.cudaEventId = 5;
    w.put(K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, y);
    let a = sys::CUpti_ActivityAPI {
        kind: K::CUPTI_ACTIVITY_KIND_DRIVER,
        cbid: 307,
        start: 10,
        end: 20,
        processId: 1,
        threadId: 2,
        correlationId: 100,
        returnValue: 0,
    };
    w.put(K::CUPTI_ACTIVITY_KIND_DRIVER, a);
    // SAFETY: as above.
    let mut mk: sys::CUpti_ActivityMarker2 = unsafe { std::mem::zeroed() };
    mk.kind = K::CUPTI_ACTIVITY_KIND_MARKER;
    mk.flags = sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_MARKER_START;
    mk.id = 9;
    mk.name = c"epoch".as_ptr();
    mk.domain = c"torch".as_ptr();
    w.put(K::CUPTI_ACTIVITY_KIND_MARKER, mk);
    // A kind we do not decode passes through.
    let other = sys::CUpti_Activity {
        kind: K::CUPTI_ACTIVITY_KIND_NAME,
    };
    w.put(K::CUPTI_ACTIVITY_KIND_NAME, other);
    w.off
}

fn summarize(records: Records<'_>) -> Vec<String> {
    records
        .map(|r| match r {
            Ok(Record::Kernel(k)) => {
                assert_eq!(k.kind(), ActivityKind::ConcurrentKernel);
                assert_eq!((k.start(), k.end(), k.completed()), (1_000, 2_500, 2_600));
                assert_eq!((k.context_id(), k.stream_id()), (1, 7));
                assert_eq!((k.grid(), k.block()), ([64, 2, 1], [256, 1, 1]));
                assert_eq!(k.registers_per_thread(), 32);
                assert_eq!(
                    (k.static_shared_memory(), k.dynamic_shared_memory()),
                    (1024, 2048)
                );
                assert_eq!(k.local_memory_total(), 1 << 20);
                assert_eq!(k.shared_memory_executed(), 65536);
                assert_eq!(k.launch_type(), LaunchType::CooperativeSingleDevice);
                assert_eq!((k.graph_node_id(), k.graph_id()), (11, 12));
                format!(
                    "kernel {} {}",
                    k.name().unwrap().to_str().unwrap(),
                    k.correlation_id()
                )
            }
            Ok(Record::Memcpy(m)) => {
                assert_eq!(m.copy_kind(), MemcpyKind::HtoD);
                assert_eq!(
                    (m.src_kind(), m.dst_kind()),
                    (MemoryKind::Pinned, MemoryKind::Device)
                );
                assert!(m.is_async());
                format!("memcpy {} {}", m.bytes(), m.correlation_id())
            }
            Ok(Record::Memset(s)) => {
                assert_eq!(s.memory_kind(), MemoryKind::Device);
                format!(
                    "memset {} {:#x} {}",
                    s.bytes(),
                    s.value(),
                    s.correlation_id()
                )
            }
            Ok(Record::Synchronization(y)) => {
                assert_eq!(y.sync_type(), SyncType::StreamWaitEvent);
                format!("sync {} {}", y.cuda_event_id(), y.correlation_id())
            }
            Ok(Record::Api(a)) => {
                format!("api {:?} {} {}", a.domain(), a.cbid(), a.correlation_id())
            }
            Ok(Record::Marker(m)) => format!(
                "marker {} {} {}",
                m.id(),
                m.name().unwrap().to_str().unwrap(),
                m.domain().unwrap().to_str().unwrap()
            ),
            Ok(Record::Other { kind }) => format!("other {kind:?}"),
            Ok(other) => format!("unexpected {other:?}"),
            Err(e) => format!("error {e}"),
        })
        .collect()
}

const EXPECTED: &[&str] = &[
    "kernel _Z6vecAddPfS_S_i 100",
    "memcpy 4096 101",
    "memset 512 0xab 102",
    "sync 5 103",
    "api Driver 307 100",
    "marker 9 epoch torch",
    "other Other(11)",
];

#[test]
fn activity_end_to_end_with_a_fake_cupti() {
    let _g = fake::serial();
    let cupti = common::cupti(&[]);

    // Decoding a hand-built buffer, without the global handler.
    let mut storage = vec![0u64; BUF / 8];
    // SAFETY: reinterpreting u64 storage as bytes (8-aligned, same length).
    let bytes = unsafe { std::slice::from_raw_parts_mut(storage.as_mut_ptr().cast::<u8>(), BUF) };
    let valid = fill(bytes);
    // SAFETY: the bytes are records laid out as CUPTI does; names are 'static.
    let got = summarize(unsafe { Records::from_buffer(&cupti, bytes, valid) });
    assert_eq!(got, EXPECTED);

    // A corrupt record: one error, then the iteration stops.
    let poison =
        fake::record_size(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL.0);
    bytes[poison..poison + 4].copy_from_slice(&fake::POISON_KIND.to_ne_bytes());
    // SAFETY: as above.
    let got = summarize(unsafe { Records::from_buffer(&cupti, bytes, valid) });
    assert_eq!(
        got,
        [
            "kernel _Z6vecAddPfS_S_i 100",
            "error CUPTI_ERROR_INVALID_KIND (CUPTI error 21)"
        ]
    );

    // Timestamp callback: registered before any kind is enabled.
    activity::register_timestamp_callback(&cupti).unwrap();
    let ts = fake::timestamp_callback().expect("registered");
    let before = activity::boottime_ns();
    // SAFETY: our own extern "C" callback.
    let t = unsafe { ts() };
    assert!(
        t >= before && t <= activity::boottime_ns(),
        "CLOCK_BOOTTIME ns"
    );

    // The global handler and pool.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let panic_next = Arc::new(AtomicBool::new(false));
    let (s2, p2) = (seen.clone(), panic_next.clone());
    let config = ActivityConfig {
        buffer_size: BUF,
        initial_buffers: 1,
        max_buffers: 2,
        request_wait: std::time::Duration::from_secs(60),
    };
    let act = activity::register(&cupti, config, move |records: Records<'_>| {
        if p2.load(Ordering::SeqCst) {
            panic!("handler bug");
        }
        let dropped = records.dropped();
        let mut v = summarize(records);
        v.push(format!("dropped {dropped}"));
        s2.lock().unwrap().push(v);
    })
    .unwrap();
    assert!(matches!(
        activity::register(&cupti, config, |_r: Records<'_>| {}),
        Err(Error::ActivityAlreadyRegistered)
    ));
    act.enable(ActivityKind::ConcurrentKernel).unwrap();
    act.enable(ActivityKind::Memcpy).unwrap();
    assert_eq!(
        fake::enabled_kinds(),
        [
            sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY.0,
            sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL.0,
        ]
    );
    assert!(matches!(
        activity::register_timestamp_callback(&cupti),
        Err(Error::TimestampAfterEnable)
    ));

    let (request, complete) = fake::buffer_callbacks();
    let ask = || {
        let (mut p, mut n, mut max) = (std::ptr::null_mut(), 0usize, 99usize);
        // SAFETY: calling our registered callback like CUPTI does.
        unsafe { request(&mut p, &mut n, &mut max) };
        (p, n, max)
    };
    let (p1, n1, max1) = ask();
    assert!(!p1.is_null() && n1 == BUF && max1 == 0);
    assert_eq!(p1 as usize % 8, 0, "8-byte aligned");
    // SAFETY: CUPTI (here: the test) owns the buffer between request and complete.
    let valid = fill(unsafe { std::slice::from_raw_parts_mut(p1, n1) });
    fake::set_dropped(3);
    // SAFETY: handing back the buffer we were given, as CUPTI does.
    unsafe { complete(std::ptr::null_mut(), 0, p1, n1, valid) };
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(&seen[0][..EXPECTED.len()], EXPECTED);
        assert_eq!(seen[0][EXPECTED.len()], "dropped 3");
    }

    // The same allocation comes back.
    let (p2_, _, _) = ask();
    assert_eq!(p2_, p1, "buffer reused");
    // Pool of at most two: a second one is allocated, the third is refused.
    let (p3, n3, _) = ask();
    assert!(!p3.is_null() && p3 != p1 && n3 == BUF);
    let (p4, n4, _) = ask();
    assert!(p4.is_null() && n4 == 0, "hard cap reached: empty buffer");
    let st = act.stats();
    assert_eq!((st.allocated, st.free, st.refused_requests), (2, 0, 1));
    assert_eq!((st.completed_buffers, st.dropped_records), (1, 3));
    assert_eq!(st.waited_requests, 0, "a delivering thread never waits");

    // A thread that never delivered a buffer (one that launches work)
    // waits past the cap until a completed buffer comes back.
    let waiter = std::thread::spawn(move || {
        let (mut p, mut n, mut max) = (std::ptr::null_mut(), 0usize, 99usize);
        // SAFETY: calling our registered callback like CUPTI does.
        unsafe { request(&mut p, &mut n, &mut max) };
        (p as usize, n)
    });
    while act.stats().waited_requests == 0 {
        assert!(!waiter.is_finished(), "refused instead of waiting");
        std::thread::yield_now();
    }
    assert!(!waiter.is_finished());
    // SAFETY: handing back a buffer we were given (empty), as CUPTI does.
    unsafe { complete(std::ptr::null_mut(), 0, p2_, BUF, 0) };
    assert_eq!(
        waiter.join().unwrap(),
        (p1 as usize, BUF),
        "it got that one"
    );
    let st = act.stats();
    assert_eq!((st.refused_requests, st.waited_requests), (1, 1));

    // A panicking handler: caught, disabled, buffer still recycled.
    panic_next.store(true, Ordering::SeqCst);
    // SAFETY: as above (empty buffer).
    unsafe { complete(std::ptr::null_mut(), 0, p1, BUF, 0) };
    assert!(act.is_disabled());
    panic_next.store(false, Ordering::SeqCst);
    // SAFETY: as above.
    unsafe { complete(std::ptr::null_mut(), 0, p3, BUF, valid) };
    assert_eq!(seen.lock().unwrap().len(), 2, "disabled handler not called");
    let st = act.stats();
    assert_eq!((st.allocated, st.free, st.completed_buffers), (2, 2, 4));
}

fn unified(
    kind: sys::CUpti_ActivityUnifiedMemoryCounterKind,
    flags: u32,
) -> sys::CUpti_ActivityUnifiedMemoryCounter3 {
    // SAFETY: all-zero is a valid value of this plain C struct.
    let mut u: sys::CUpti_ActivityUnifiedMemoryCounter3 = unsafe { std::mem::zeroed() };
    u.kind = sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
    u.counterKind = kind;
    u.value = 65_536;
    u.start = 5_000;
    u.end = 9_000;
    u.address = 0x7f00_0000_0000;
    u.srcId = 1;
    u.dstId = 2;
    u.flags = flags;
    u.processors = [0b110, 0, 0, 0, 0];
    u
}

#[test]
fn unified_memory_records_decode_and_counters_configure() {
    use activity::{AccessType, MigrationCause, RemoteMapCause, UnifiedMemoryCounterKind as U};
    let _g = fake::serial();
    let cupti = common::cupti(&[]);
    type K = sys::CUpti_ActivityUnifiedMemoryCounterKind;
    let mut storage = vec![0u64; BUF / 8];
    // SAFETY: reinterpreting u64 storage as bytes (8-aligned, same length).
    let bytes = unsafe { std::slice::from_raw_parts_mut(storage.as_mut_ptr().cast::<u8>(), BUF) };
    let mut w = Writer { buf: bytes, off: 0 };
    let uk = sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
    w.put(
        uk,
        unified(
            K::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
            sys::CUpti_ActivityUnifiedMemoryMigrationCause::CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_PREFETCH.0,
        ),
    );
    w.put(
        uk,
        unified(
            K::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
            sys::CUpti_ActivityUnifiedMemoryAccessType::CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE.0,
        ),
    );
    w.put(
        uk,
        unified(
            K::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP,
            sys::CUpti_ActivityUnifiedMemoryRemoteMapCause::CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_THRASHING.0,
        ),
    );
    w.put(
        uk,
        unified(
            K::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING,
            sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_THRASHING_IN_CPU.0,
        ),
    );
    w.put(
        uk,
        unified(sys::CUpti_ActivityUnifiedMemoryCounterKind(77), 0),
    );
    let valid = w.off;
    // SAFETY: the bytes are records laid out as CUPTI does.
    let got: Vec<_> = unsafe { Records::from_buffer(&cupti, bytes, valid) }
        .map(|r| match r {
            Ok(Record::UnifiedMemory(u)) => {
                assert_eq!((u.value(), u.start(), u.end()), (65_536, 5_000, 9_000));
                assert_eq!(
                    (u.address(), u.src_id(), u.dst_id()),
                    (0x7f00_0000_0000, 1, 2)
                );
                (
                    u.kind(),
                    u.migration_cause(),
                    u.access_type(),
                    u.remote_map_cause(),
                    u.involves_cpu(),
                    u.processors()[0],
                )
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                U::BytesHtoD,
                Some(MigrationCause::Prefetch),
                None,
                None,
                None,
                6
            ),
            (
                U::GpuPageFault,
                None,
                Some(AccessType::Write),
                None,
                None,
                6
            ),
            (
                U::RemoteMap,
                None,
                None,
                Some(RemoteMapCause::Thrashing),
                None,
                6
            ),
            (U::Thrashing, None, None, None, Some(true), 6),
            (U::Other(77), None, None, None, None, 6),
        ]
    );

    // Configuring: one config per kind, enabled or not, with CUPTI's error
    // mapped.
    let before = fake::unified_memory_configs().len();
    activity::configure_unified_memory(&cupti, &U::ALL, true).unwrap();
    activity::configure_unified_memory(&cupti, &[U::GpuPageFault], false).unwrap();
    let configs = fake::unified_memory_configs()[before..].to_vec();
    assert_eq!(configs.len(), 9);
    assert!(configs[..8].iter().all(|c| c.1 == 1));
    assert_eq!(
        configs[8],
        (
            K::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT.0,
            0
        )
    );
    let raw: Vec<u32> = configs[..8].iter().map(|c| c.0).collect();
    assert_eq!(raw, U::ALL.map(|k| k.to_raw().0));
    for code in [
        sys::CUptiResult::CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED,
        sys::CUptiResult::CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES,
        sys::CUptiResult::CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS,
    ] {
        fake::force(UM_CONFIGURE, Some(code));
        let e = activity::configure_unified_memory(&cupti, &U::ALL, true).unwrap_err();
        assert!(matches!(e, Error::NotSupported(_)), "{code:?}: {e:?}");
    }
    fake::force(
        UM_CONFIGURE,
        Some(sys::CUptiResult::CUPTI_ERROR_NOT_INITIALIZED),
    );
    let e = activity::configure_unified_memory(&cupti, &U::ALL, true).unwrap_err();
    assert!(matches!(e, Error::NotInitialized(_)), "{e:?}");
    fake::force(UM_CONFIGURE, None);
    // An old CUPTI without the function: a typed error, not a crash.
    let old = common::cupti(&["cuptiActivityConfigureUnifiedMemoryCounter"]);
    assert!(matches!(
        activity::configure_unified_memory(&old, &U::ALL, true),
        Err(Error::MissingSymbol(_))
    ));
}
