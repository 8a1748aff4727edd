//! Our NVTX injection against a fake NVTX: a callbacks export table whose
//! function slots the injection fills, then NVTX-style calls through them.

use cupti::nvtx::{NvtxEvent, NvtxMessage};
use cupti_sys as sys;
use std::ffi::{c_char, c_int, c_void};
use std::sync::Mutex;

const SLOTS: usize = 16;
static mut CORE: [sys::NvtxFunctionPointer; SLOTS] = [None; SLOTS];
static mut CORE2: [sys::NvtxFunctionPointer; SLOTS] = [None; SLOTS];
static mut CORE_PTRS: [*mut sys::NvtxFunctionPointer; SLOTS] = [std::ptr::null_mut(); SLOTS];
static mut CORE2_PTRS: [*mut sys::NvtxFunctionPointer; SLOTS] = [std::ptr::null_mut(); SLOTS];

unsafe extern "C" fn get_module_function_table(
    module: sys::NvtxCallbackModule,
    out_table: *mut sys::NvtxFunctionTable,
    out_size: *mut u32,
) -> c_int {
    // SAFETY: test-only statics, touched by one test thread; valid out-pointers.
    unsafe {
        let (slots, ptrs) = match module {
            sys::NvtxCallbackModule::NVTX_CB_MODULE_CORE => (&raw mut CORE, &raw mut CORE_PTRS),
            sys::NvtxCallbackModule::NVTX_CB_MODULE_CORE2 => (&raw mut CORE2, &raw mut CORE2_PTRS),
            _ => return 0,
        };
        for i in 0..SLOTS {
            (*ptrs)[i] = (&raw mut (*slots)[i]).cast();
        }
        *out_table = (*ptrs).as_mut_ptr();
        *out_size = SLOTS as u32;
    }
    1
}

static ETBL: sys::NvtxExportTableCallbacks = sys::NvtxExportTableCallbacks {
    struct_size: std::mem::size_of::<sys::NvtxExportTableCallbacks>(),
    GetModuleFunctionTable: Some(get_module_function_table),
};

unsafe extern "C" fn get_export_table(id: u32) -> *const c_void {
    if id == sys::NvtxExportTableID::NVTX_ETID_CALLBACKS.0 {
        (&raw const ETBL).cast()
    } else {
        std::ptr::null()
    }
}

static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn describe(ev: &NvtxEvent<'_>) -> String {
    let msg = |m: &NvtxMessage<'_>| m.to_string();
    match ev {
        NvtxEvent::Push {
            domain, message, ..
        } => format!("push {domain:?} {}", msg(message)),
        NvtxEvent::Pop { domain } => format!("pop {domain:?}"),
        NvtxEvent::Mark {
            domain, message, ..
        } => format!("mark {domain:?} {}", msg(message)),
        NvtxEvent::RangeStart { message, id, .. } => format!("start {id:?} {}", msg(message)),
        NvtxEvent::RangeEnd { id, .. } => format!("end {id}"),
        NvtxEvent::DomainCreate { name, handle } => format!("domain {handle:?} {}", msg(name)),
        NvtxEvent::RegisterString { string, handle, .. } => {
            format!("string {handle:?} {}", msg(string))
        }
        other => format!("{other:?}"),
    }
}

fn slot<F: Copy>(table: &[sys::NvtxFunctionPointer; SLOTS], id: u32) -> F {
    let f = table[id as usize].expect("slot filled by the injection");
    assert_eq!(
        std::mem::size_of::<F>(),
        std::mem::size_of::<unsafe extern "C" fn()>()
    );
    // SAFETY: `F` is the NVTX signature of slot `id` (what NVTX casts it to).
    unsafe { std::mem::transmute_copy(&f) }
}

#[test]
fn every_form_reaches_the_handler_with_ids_and_depths() {
    // SAFETY: the fake getter above, as NVTX would pass it.
    unsafe {
        cupti::nvtx_injection::install(Some(get_export_table), |ev| {
            SEEN.lock().unwrap().push(describe(ev))
        })
    }
    .expect("install");
    type C = sys::NvtxCallbackIdCore;
    type D = sys::NvtxCallbackIdCore2;
    // SAFETY: reading the slots after installation, on this thread only.
    let (core, core2) = unsafe { (CORE, CORE2) };
    let push_a: unsafe extern "C" fn(*const c_char) -> c_int =
        slot(&core, C::NVTX_CBID_CORE_RangePushA.0);
    let push_w: unsafe extern "C" fn(*const u32) -> c_int =
        slot(&core, C::NVTX_CBID_CORE_RangePushW.0);
    let pop: unsafe extern "C" fn() -> c_int = slot(&core, C::NVTX_CBID_CORE_RangePop.0);
    let mark_w: unsafe extern "C" fn(*const u32) = slot(&core, C::NVTX_CBID_CORE_MarkW.0);
    let start_a: unsafe extern "C" fn(*const c_char) -> u64 =
        slot(&core, C::NVTX_CBID_CORE_RangeStartA.0);
    let end: unsafe extern "C" fn(u64) = slot(&core, C::NVTX_CBID_CORE_RangeEnd.0);
    let create_a: unsafe extern "C" fn(*const c_char) -> sys::nvtxDomainHandle_t =
        slot(&core2, D::NVTX_CBID_CORE2_DomainCreateA.0);
    let d_pop: unsafe extern "C" fn(sys::nvtxDomainHandle_t) -> c_int =
        slot(&core2, D::NVTX_CBID_CORE2_DomainRangePop.0);
    let wide: Vec<u32> = "inner_w_é".chars().map(|c| c as u32).chain([0]).collect();
    // SAFETY: NVTX-style calls with valid NUL-terminated strings.
    let (d0, d1, p1, p0, p_extra, id, domain) = unsafe {
        let d0 = push_a(c"outer".as_ptr());
        let d1 = push_w(wide.as_ptr());
        mark_w(wide.as_ptr());
        let p1 = pop();
        let p0 = pop();
        let p_extra = pop();
        let id = start_a(c"cross".as_ptr());
        end(id);
        let domain = create_a(c"mylib".as_ptr());
        d_pop(domain);
        (d0, d1, p1, p0, p_extra, id, domain)
    };
    assert_eq!(
        (d0, d1, p1, p0, p_extra),
        (0, 1, 1, 0, -1),
        "NVTX push/pop levels"
    );
    assert!(id > 0 && !domain.is_null());
    let seen = SEEN.lock().unwrap().clone();
    assert_eq!(seen[0], "push None outer");
    assert_eq!(seen[1], "push None inner_w_é");
    assert_eq!(seen[2], "mark None inner_w_é");
    assert_eq!(seen[3..6], ["pop None", "pop None", "pop None"]);
    assert_eq!(seen[6], format!("start Some({id}) cross"));
    assert_eq!(seen[7], format!("end {id}"));
    assert_eq!(seen[8], format!("domain Some({}) mylib", domain as u64));
    assert_eq!(seen[9], format!("pop Some({})", domain as u64));
    // A second NVTX instance (another library's) installs too, and its
    // calls reach the first handler, not the one it passed.
    // SAFETY: as above; the fake refills the same table.
    unsafe {
        CORE = [None; SLOTS];
        cupti::nvtx_injection::install(Some(get_export_table), |_| {
            panic!("the second instance's handler is not used")
        })
    }
    .expect("a second instance installs");
    // SAFETY: the refilled table, read on this thread only.
    let core = unsafe { CORE };
    let push_a: unsafe extern "C" fn(*const c_char) -> c_int =
        slot(&core, C::NVTX_CBID_CORE_RangePushA.0);
    let pop: unsafe extern "C" fn() -> c_int = slot(&core, C::NVTX_CBID_CORE_RangePop.0);
    // SAFETY: as above.
    unsafe {
        push_a(c"second library".as_ptr());
        pop();
    }
    let seen = SEEN.lock().unwrap().clone();
    assert_eq!(seen[10..], ["push None second library", "pop None"]);
}
