//! NVTX's side of an injection, as libnvToolsExt does it: at the first NVTX call, load the
//! library named by `NVTX_INJECTION64_PATH`, call its `InitializeInjectionNvtx2` with the
//! export-table getter, and from then on call whatever it put in the function-table slots.

use std::collections::HashMap;
use std::ffi::{CString, c_char, c_int, c_uint, c_void};
use std::sync::{LazyLock, Mutex, OnceLock};

use cupti_sys as sys;

use super::{FAKE, lock, violation};

/// NVTX calls made, by name (for the report).
pub(crate) static CALLS: LazyLock<Mutex<HashMap<String, u64>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

const SLOTS: usize = 16;

/// A module's slots and the table of pointers to them NVTX hands out; leaked, since the
/// injection keeps writing into them.
struct Table {
    slots: usize,
    ptrs: usize,
}

fn table(module: sys::NvtxCallbackModule) -> Option<&'static Table> {
    static CORE: OnceLock<Table> = OnceLock::new();
    static CORE2: OnceLock<Table> = OnceLock::new();
    let cell = match module {
        sys::NvtxCallbackModule::NVTX_CB_MODULE_CORE => &CORE,
        sys::NvtxCallbackModule::NVTX_CB_MODULE_CORE2 => &CORE2,
        _ => return None,
    };
    Some(cell.get_or_init(|| {
        let slots: &'static mut [sys::NvtxFunctionPointer] =
            Box::leak(vec![None; SLOTS].into_boxed_slice());
        let base = slots.as_mut_ptr();
        let ptrs: &'static mut [*mut sys::NvtxFunctionPointer] = Box::leak(
            (0..SLOTS)
                // SAFETY: `i < SLOTS`, inside the leaked slice.
                .map(|i| unsafe { base.add(i) })
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        Table {
            slots: base as usize,
            ptrs: ptrs.as_mut_ptr() as usize,
        }
    }))
}

unsafe extern "C" fn get_module_table(
    module: sys::NvtxCallbackModule,
    out_table: *mut sys::NvtxFunctionTable,
    out_size: *mut c_uint,
) -> c_int {
    super::guard("GetModuleFunctionTable", 0, || {
        let Some(t) = table(module) else { return 0 };
        if out_table.is_null() || out_size.is_null() {
            return 0;
        }
        // SAFETY: the injection's out-pointers, valid for the call.
        unsafe {
            *out_table = t.ptrs as sys::NvtxFunctionTable;
            *out_size = SLOTS as c_uint;
        }
        1
    })
}

static CALLBACKS: sys::NvtxExportTableCallbacks = sys::NvtxExportTableCallbacks {
    struct_size: size_of::<sys::NvtxExportTableCallbacks>(),
    GetModuleFunctionTable: Some(get_module_table),
};

unsafe extern "C" fn get_export_table(id: u32) -> *const c_void {
    if id == sys::NvtxExportTableID::NVTX_ETID_CALLBACKS.0 {
        (&CALLBACKS as *const sys::NvtxExportTableCallbacks).cast()
    } else {
        std::ptr::null()
    }
}

/// Loads the NVTX injection once, at the first NVTX call.
fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Some(path) = std::env::var_os("NVTX_INJECTION64_PATH") else {
            return;
        };
        type Init = unsafe extern "C" fn(sys::NvtxGetExportTableFunc_t) -> c_int;
        // SAFETY: the library the environment names as the NVTX injection, as NVTX loads it.
        let lib = match unsafe { libloading::Library::new(&path) } {
            Ok(l) => l,
            Err(e) => {
                violation(format!("NVTX injection {}: {e}", path.display()));
                return;
            }
        };
        // SAFETY: NVTX's documented injection entry point and prototype.
        let Ok(f) = (unsafe { lib.get::<Init>(b"InitializeInjectionNvtx2\0") }) else {
            violation("the NVTX injection has no InitializeInjectionNvtx2".into());
            return;
        };
        // SAFETY: our export-table getter, valid for the process.
        let rc = unsafe { f(Some(get_export_table)) };
        lock(&FAKE.report).initialize_nvtx = Some(rc);
        std::mem::forget(lib);
    });
}

/// The function in slot `id` of `module`, counted under `name`.
fn slot(module: sys::NvtxCallbackModule, id: u32, name: &str) -> sys::NvtxFunctionPointer {
    init();
    *lock(&CALLS).entry(name.to_owned()).or_default() += 1;
    let t = table(module)?;
    // SAFETY: `id < SLOTS` (NVTX ids of the two core modules), inside the leaked slots; the
    // injection writes them only during InitializeInjectionNvtx2, which has returned.
    let f = unsafe { *(t.slots as *const sys::NvtxFunctionPointer).add(id as usize) };
    if f.is_none() {
        *lock(&FAKE.report)
            .nvtx_unhandled
            .entry(name.to_owned())
            .or_default() += 1;
    }
    f
}

type C = sys::NvtxCallbackIdCore;
type C2 = sys::NvtxCallbackIdCore2;
const CORE: sys::NvtxCallbackModule = sys::NvtxCallbackModule::NVTX_CB_MODULE_CORE;
const CORE2: sys::NvtxCallbackModule = sys::NvtxCallbackModule::NVTX_CB_MODULE_CORE2;

fn text(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).expect("no NUL")
}

/// A domain's handle, created (`nvtxDomainCreateA`) on first use.
fn domain(name: &str) -> sys::nvtxDomainHandle_t {
    static DOMAINS: LazyLock<Mutex<HashMap<String, usize>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    if let Some(d) = lock(&DOMAINS).get(name) {
        return *d as sys::nvtxDomainHandle_t;
    }
    let Some(f) = slot(
        CORE2,
        C2::NVTX_CBID_CORE2_DomainCreateA.0,
        "nvtxDomainCreateA",
    ) else {
        return std::ptr::null_mut();
    };
    let n = text(name);
    // SAFETY: the slot holds the handler for `nvtxDomainCreateA(const char*)`.
    let d = unsafe {
        std::mem::transmute::<
            unsafe extern "C" fn(),
            unsafe extern "C" fn(*const c_char) -> sys::nvtxDomainHandle_t,
        >(f)(n.as_ptr())
    };
    lock(&DOMAINS).insert(name.to_owned(), d as usize);
    d
}

/// `nvtxRangePushA`, or `nvtxDomainRangePushEx` with an ASCII message.
pub(crate) fn push(message: &str, dom: Option<&str>) {
    let m = text(message);
    match dom {
        None => {
            if let Some(f) = slot(CORE, C::NVTX_CBID_CORE_RangePushA.0, "nvtxRangePushA") {
                // SAFETY: the slot holds the handler for `int nvtxRangePushA(const char*)`.
                unsafe {
                    std::mem::transmute::<
                        unsafe extern "C" fn(),
                        unsafe extern "C" fn(*const c_char) -> c_int,
                    >(f)(m.as_ptr());
                }
            }
        }
        Some(d) => {
            let d = domain(d);
            // SAFETY: plain C data; all zeroes is valid.
            let mut a: sys::nvtxEventAttributes_t = unsafe { std::mem::zeroed() };
            a.version = sys::NVTX_VERSION as u16;
            a.size = size_of::<sys::nvtxEventAttributes_t>() as u16;
            a.messageType = sys::nvtxMessageType_t::NVTX_MESSAGE_TYPE_ASCII.0 as i32;
            a.message.ascii = m.as_ptr();
            if let Some(f) = slot(
                CORE2,
                C2::NVTX_CBID_CORE2_DomainRangePushEx.0,
                "nvtxDomainRangePushEx",
            ) {
                // SAFETY: the slot holds the handler for
                // `int nvtxDomainRangePushEx(nvtxDomainHandle_t, const nvtxEventAttributes_t*)`.
                unsafe {
                    std::mem::transmute::<
                        unsafe extern "C" fn(),
                        unsafe extern "C" fn(
                            sys::nvtxDomainHandle_t,
                            *const sys::nvtxEventAttributes_t,
                        ) -> c_int,
                    >(f)(d, &a);
                }
            }
        }
    }
}

/// `nvtxRangePop`, or `nvtxDomainRangePop`.
pub(crate) fn pop(dom: Option<&str>) {
    match dom {
        None => {
            if let Some(f) = slot(CORE, C::NVTX_CBID_CORE_RangePop.0, "nvtxRangePop") {
                // SAFETY: the slot holds the handler for `int nvtxRangePop(void)`.
                unsafe {
                    std::mem::transmute::<unsafe extern "C" fn(), unsafe extern "C" fn() -> c_int>(
                        f,
                    )();
                }
            }
        }
        Some(d) => {
            let d = domain(d);
            if let Some(f) = slot(
                CORE2,
                C2::NVTX_CBID_CORE2_DomainRangePop.0,
                "nvtxDomainRangePop",
            ) {
                // SAFETY: the slot holds the handler for `int nvtxDomainRangePop(nvtxDomainHandle_t)`.
                unsafe {
                    std::mem::transmute::<
                        unsafe extern "C" fn(),
                        unsafe extern "C" fn(sys::nvtxDomainHandle_t) -> c_int,
                    >(f)(d);
                }
            }
        }
    }
}

/// `nvtxMarkA`.
pub(crate) fn mark(message: &str) {
    let m = text(message);
    if let Some(f) = slot(CORE, C::NVTX_CBID_CORE_MarkA.0, "nvtxMarkA") {
        // SAFETY: the slot holds the handler for `void nvtxMarkA(const char*)`.
        unsafe {
            std::mem::transmute::<unsafe extern "C" fn(), unsafe extern "C" fn(*const c_char)>(f)(
                m.as_ptr(),
            );
        }
    }
}

/// `nvtxRangeStartA`; returns the range id (0 without a handler).
pub(crate) fn start(message: &str) -> u64 {
    let m = text(message);
    match slot(CORE, C::NVTX_CBID_CORE_RangeStartA.0, "nvtxRangeStartA") {
        // SAFETY: the slot holds the handler for `nvtxRangeId_t nvtxRangeStartA(const char*)`.
        Some(f) => unsafe {
            std::mem::transmute::<unsafe extern "C" fn(), unsafe extern "C" fn(*const c_char) -> u64>(
                f,
            )(m.as_ptr())
        },
        None => 0,
    }
}

/// `nvtxRangeEnd`.
pub(crate) fn end(id: u64) {
    if let Some(f) = slot(CORE, C::NVTX_CBID_CORE_RangeEnd.0, "nvtxRangeEnd") {
        // SAFETY: the slot holds the handler for `void nvtxRangeEnd(nvtxRangeId_t)`.
        unsafe {
            std::mem::transmute::<unsafe extern "C" fn(), unsafe extern "C" fn(u64)>(f)(id);
        }
    }
}
