//! The safe layer driven by a fake symbol table (no simulator, no SDK): errors keep the raw
//! status and the runtime's text, missing symbols are errors, panics in callbacks are caught
//! and switch the callback off, records too short for their type are not decoded, and the
//! registration refuses SDK 0.x without writing to `client_id`.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use rocprofiler::{
    Buffer, BufferOptions, BufferRecord, CallbackTracingKind, Context, Error, Runtime, StatusKind,
    Tool, ToolCell, sys,
};

type S = sys::rocprofiler_status_t;

static STOPS: AtomicUsize = AtomicUsize::new(0);
static CALLBACK: Mutex<Option<(usize, usize)>> = Mutex::new(None);
static BUFFER_CB: Mutex<Option<(usize, usize)>> = Mutex::new(None);

extern "C" fn status_string(s: S) -> *const c_char {
    if s == S::ERROR_CONFIGURATION_LOCKED {
        c"configuration is locked (fake)".as_ptr()
    } else {
        c"fake status".as_ptr()
    }
}
unsafe extern "C" fn create_context(id: *mut sys::rocprofiler_context_id_t) -> S {
    // SAFETY: valid out-pointer from the safe layer.
    unsafe { (*id).handle = 7 };
    S::SUCCESS
}
extern "C" fn start_context(_: sys::rocprofiler_context_id_t) -> S {
    S::SUCCESS
}
extern "C" fn stop_context(_: sys::rocprofiler_context_id_t) -> S {
    STOPS.fetch_add(1, Ordering::SeqCst);
    S::SUCCESS
}
unsafe extern "C" fn locked_buffer(
    _: sys::rocprofiler_context_id_t,
    _: usize,
    _: usize,
    _: sys::rocprofiler_buffer_policy_t,
    cb: sys::rocprofiler_buffer_tracing_cb_t,
    data: *mut c_void,
    id: *mut sys::rocprofiler_buffer_id_t,
) -> S {
    *BUFFER_CB.lock().unwrap() = Some((cb.unwrap() as usize, data as usize));
    // SAFETY: valid out-pointer.
    unsafe { (*id).handle = 3 };
    S::SUCCESS
}
extern "C" fn flush_buffer(_: sys::rocprofiler_buffer_id_t) -> S {
    S::SUCCESS
}
extern "C" fn destroy_buffer(_: sys::rocprofiler_buffer_id_t) -> S {
    S::ERROR_CONFIGURATION_LOCKED
}
unsafe extern "C" fn configure_callback(
    _: sys::rocprofiler_context_id_t,
    _: sys::rocprofiler_callback_tracing_kind_t,
    _: *const i32,
    _: usize,
    cb: sys::rocprofiler_callback_tracing_cb_t,
    data: *mut c_void,
) -> S {
    *CALLBACK.lock().unwrap() = Some((cb.unwrap() as usize, data as usize));
    S::SUCCESS
}
unsafe extern "C" fn get_version(a: *mut u32, b: *mut u32, c: *mut u32) -> S {
    // SAFETY: valid out-pointers.
    unsafe { (*a, *b, *c) = (1, 0, 0) };
    S::SUCCESS
}

fn fake() -> Runtime {
    let table: &[(&str, *const c_void)] = &[
        (
            "rocprofiler_get_status_string",
            status_string as *const c_void,
        ),
        (
            "rocprofiler_create_context",
            create_context as *const c_void,
        ),
        ("rocprofiler_start_context", start_context as *const c_void),
        ("rocprofiler_stop_context", stop_context as *const c_void),
        ("rocprofiler_create_buffer", locked_buffer as *const c_void),
        (
            "rocprofiler_destroy_buffer",
            destroy_buffer as *const c_void,
        ),
        (
            "rocprofiler_configure_callback_tracing_service",
            configure_callback as *const c_void,
        ),
        ("rocprofiler_get_version", get_version as *const c_void),
        ("rocprofiler_flush_buffer", flush_buffer as *const c_void),
    ];
    // SAFETY: every pointer is a function with the prototype of the name it is listed under.
    let api = unsafe {
        sys::Api::load_with(|name: &CStr| {
            table
                .iter()
                .find(|(n, _)| name.to_bytes() == n.as_bytes())
                .map_or(std::ptr::null(), |(_, p)| *p)
        })
    };
    Runtime::from_api(api)
}

#[test]
fn errors_keep_status_and_runtime_text_and_missing_symbols_are_errors() {
    let rt = fake();
    assert_eq!(rt.version().unwrap().to_string(), "1.0.0");
    match rt.timestamp() {
        Err(Error::MissingSymbol(sys::MissingSymbol(name))) => {
            assert_eq!(name, "rocprofiler_get_timestamp")
        }
        other => panic!("{other:?}"),
    }
    let ctx = Context::new(&rt).unwrap();
    let buffer = Buffer::new(&ctx, BufferOptions::default(), |_| {}).unwrap();
    let err = buffer.close().unwrap_err();
    assert_eq!(err.status(), Some(StatusKind::ConfigurationLocked));
    let text = err.to_string();
    assert!(
        text.contains("rocprofiler_destroy_buffer")
            && text.contains("configuration is locked (fake)"),
        "{text}"
    );
    assert!(
        text.contains("ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED"),
        "{text}"
    );
    assert!(rt.api().missing().contains(&"rocprofiler_get_timestamp"));
}

#[test]
fn drop_stops_only_a_started_context() {
    let rt = fake();
    let before = STOPS.load(Ordering::SeqCst);
    drop(Context::new(&rt).unwrap());
    assert_eq!(STOPS.load(Ordering::SeqCst), before);
    let ctx = Context::new(&rt).unwrap();
    ctx.start().unwrap();
    drop(ctx);
    assert_eq!(STOPS.load(Ordering::SeqCst), before + 1);
}

#[test]
fn a_panicking_callback_is_caught_and_switched_off() {
    let rt = fake();
    let ctx = Context::new(&rt).unwrap();
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    ctx.configure_callback_tracing(CallbackTracingKind::HIP_RUNTIME_API, &[], |_| {
        CALLS.fetch_add(1, Ordering::SeqCst);
        panic!("boom");
    })
    .unwrap();
    let (cb, data) = CALLBACK.lock().unwrap().take().unwrap();
    // SAFETY: the trampoline registered above, with its own data.
    let cb: unsafe extern "C" fn(
        sys::rocprofiler_callback_tracing_record_t,
        *mut sys::rocprofiler_user_data_t,
        *mut c_void,
    ) = unsafe { std::mem::transmute(cb) };
    let record = sys::rocprofiler_callback_tracing_record_t {
        context_id: sys::rocprofiler_context_id_t { handle: 7 },
        thread_id: 1,
        correlation_id: Default::default(),
        kind: CallbackTracingKind::HIP_RUNTIME_API,
        operation: 214,
        phase: sys::rocprofiler_callback_phase_t::ENTER,
        payload: std::ptr::null_mut(),
    };
    let mut ud = sys::rocprofiler_user_data_t::default();
    for _ in 0..3 {
        // SAFETY: as the SDK would call it.
        unsafe { cb(record, &mut ud, data as *mut c_void) };
    }
    assert_eq!(
        CALLS.load(Ordering::SeqCst),
        1,
        "disabled after the first panic"
    );
}

#[test]
fn short_records_are_not_decoded() {
    let rt = fake();
    let ctx = Context::new(&rt).unwrap();
    static SEEN: Mutex<Vec<BufferRecord>> = Mutex::new(Vec::new());
    let _buffer = Buffer::new(&ctx, BufferOptions::default(), |b| {
        SEEN.lock().unwrap().extend(b.records())
    })
    .unwrap();
    let (cb, data) = BUFFER_CB.lock().unwrap().take().unwrap();
    // SAFETY: the trampoline registered above.
    let cb: unsafe extern "C" fn(
        sys::rocprofiler_context_id_t,
        sys::rocprofiler_buffer_id_t,
        *mut *mut sys::rocprofiler_record_header_t,
        usize,
        *mut c_void,
        u64,
    ) = unsafe { std::mem::transmute(cb) };
    // SAFETY: all-zero is a valid record.
    let mut rec: sys::rocprofiler_buffer_tracing_kernel_dispatch_record_t =
        unsafe { std::mem::zeroed() };
    rec.size = 120; // shorter than the struct: must not be read as one
    rec.dispatch_info.size = 72;
    let hash = |c: sys::rocprofiler_buffer_category_t, k: u32| sys::rocprofiler_record_header_u {
        hash: sys::rocprofiler_record_header_compute_hash(c.0, k),
    };
    let kd = sys::rocprofiler_buffer_tracing_kind_t::KERNEL_DISPATCH.0;
    let mut h1 = sys::rocprofiler_record_header_t {
        u: hash(sys::rocprofiler_buffer_category_t::TRACING, kd),
        payload: (&mut rec as *mut _ as *mut c_void),
    };
    let mut rec2 = rec;
    rec2.size = std::mem::size_of_val(&rec2) as u64;
    rec2.start_timestamp = 5;
    rec2.end_timestamp = 9;
    rec2.dispatch_info.grid_size = sys::rocprofiler_dim3_t {
        x: 1024,
        y: 1,
        z: 1,
    };
    rec2.dispatch_info.workgroup_size = sys::rocprofiler_dim3_t { x: 256, y: 1, z: 1 };
    let mut h2 = sys::rocprofiler_record_header_t {
        u: hash(sys::rocprofiler_buffer_category_t::TRACING, kd),
        payload: (&mut rec2 as *mut _ as *mut c_void),
    };
    let mut ptrs = [&mut h1 as *mut _, &mut h2 as *mut _];
    // SAFETY: as the SDK would call it.
    unsafe {
        cb(
            ctx.raw(),
            sys::rocprofiler_buffer_id_t { handle: 3 },
            ptrs.as_mut_ptr(),
            2,
            data as *mut c_void,
            0,
        )
    };
    let seen = SEEN.lock().unwrap();
    assert!(
        matches!(
            seen[0],
            BufferRecord::Unknown {
                category: 1,
                kind: 11
            }
        ),
        "{:?}",
        seen[0]
    );
    let BufferRecord::KernelDispatch(k) = seen[1] else {
        panic!("{:?}", seen[1])
    };
    assert_eq!(
        (k.start_ns, k.end_ns, k.info.grid_in_workgroups().x),
        (5, 9, 4)
    );
}

struct Fake;
impl Tool for Fake {
    const NAME: &'static CStr = c"fake-tool";
    type Session = ();
    fn configure(_: &rocprofiler::ConfigureInfo) -> Option<Self> {
        Some(Fake)
    }
    fn initialize(&self, _: &Runtime) -> rocprofiler::Result<()> {
        Ok(())
    }
    fn finalize(&self, _: &Runtime, _: ()) {}
    fn load_runtime() -> rocprofiler::Result<Runtime> {
        Ok(fake())
    }
}

#[test]
fn registration_refuses_0x_and_fills_1x() {
    static CELL: ToolCell<Fake> = ToolCell::new();
    // A 0.x client id is {name, handle}: nothing may be written.
    let mut legacy = [0xA5u8; 32];
    // SAFETY: the ABI the SDK would use for version 400.
    let r = unsafe { CELL.configure(400, c"0.4.0".as_ptr(), 0, legacy.as_mut_ptr().cast()) };
    assert!(r.is_null());
    assert_eq!(legacy, [0xA5u8; 32]);
    assert_eq!(CELL.refused_version(), Some(400));

    static CELL2: ToolCell<Fake> = ToolCell::new();
    let mut id = sys::rocprofiler_client_id_t {
        size: 24,
        name: std::ptr::null(),
        handle: 9,
    };
    // SAFETY: a 1.x client id.
    let r = unsafe { CELL2.configure(10000, c"1.0.0".as_ptr(), 0, &mut id) };
    assert!(!r.is_null());
    // SAFETY: the result points at static storage in CELL2.
    let res = unsafe { *r };
    assert_eq!(res.size, 32);
    // SAFETY: the tool set a static name.
    assert_eq!(unsafe { CStr::from_ptr(id.name) }, c"fake-tool");
    assert_eq!(id.handle, 9);
    // SAFETY: initialize as the SDK calls it.
    let status: c_int = unsafe { res.initialize.unwrap()(None, res.tool_data) };
    assert_eq!(status, 0);
    assert!(CELL2.is_enabled());
}
