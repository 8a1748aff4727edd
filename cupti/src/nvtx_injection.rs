//! An NVTX injection of our own.
//!
//! NVTX calls reach a tool only through the library named by
//! `NVTX_INJECTION64_PATH`, whose `InitializeInjectionNvtx2` receives NVTX's
//! export-table getter. Forwarding that to CUPTI works for some calls, but
//! CUPTI's hook does not deliver every form (the wide-string `W` calls went
//! missing on CUDA 13.0), and it sees nothing before the application
//! initialises CUDA. Filling NVTX's function tables ourselves covers every
//! mark, range and push/pop in the A, W and Ex forms, with domains and
//! registered strings, from the first NVTX call on.
//!
//! Each call becomes a typed [`NvtxEvent`] for the handler given to
//! [`install`]; range ids, push depths and domain/string handles are managed
//! here, as NVTX expects of an injection.

use crate::nvtx::{Attributes, NvtxEvent, NvtxMessage, WideStr};
use cupti_sys as sys;
use std::cell::Cell;
use std::ffi::{CStr, c_char, c_int};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

type Handler = Box<dyn Fn(&NvtxEvent<'_>) + Send + Sync>;

static HANDLER: OnceLock<Handler> = OnceLock::new();
static DISABLED: AtomicBool = AtomicBool::new(false);
/// Range ids and handles: unique, non-zero.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static DEPTH: Cell<i32> = const { Cell::new(0) };
}

/// Why the injection could not be installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    /// NVTX passed no export-table getter, or no callbacks table.
    #[error("NVTX offered no callback table")]
    NoCallbackTable,
    /// NVTX refused to hand out its core function table.
    #[error("NVTX refused its function table")]
    NoFunctionTable,
}

/// Installs `handler` as the target of every NVTX call of the process.
///
/// Every library built with NVTX's headers carries an NVTX instance of its
/// own (PyTorch's, cuDNN's, the application's), and each calls the
/// injection's entry point at its first NVTX call. The first call's
/// `handler` is kept; later calls fill their instance's function tables
/// with the same trampolines, so that all instances reach that handler
/// (their `handler` is dropped).
///
/// # Safety
///
/// `get` must be the export-table getter NVTX passed to
/// `InitializeInjectionNvtx2`, called from within that function.
///
/// # Errors
///
/// [`InstallError`]; NVTX then stays a no-op.
pub unsafe fn install(
    get: sys::NvtxGetExportTableFunc_t,
    handler: impl Fn(&NvtxEvent<'_>) + Send + Sync + 'static,
) -> Result<(), InstallError> {
    let get = get.ok_or(InstallError::NoCallbackTable)?;
    // SAFETY: NVTX's own getter, called during its initialisation.
    let etbl = unsafe { get(sys::NvtxExportTableID::NVTX_ETID_CALLBACKS.0) }
        .cast::<sys::NvtxExportTableCallbacks>();
    // SAFETY: NVTX returns null or its static callbacks table.
    let etbl = unsafe { etbl.as_ref() }.ok_or(InstallError::NoCallbackTable)?;
    if etbl.struct_size < std::mem::size_of::<sys::NvtxExportTableCallbacks>() {
        return Err(InstallError::NoCallbackTable);
    }
    let get_table = etbl
        .GetModuleFunctionTable
        .ok_or(InstallError::NoCallbackTable)?;
    // Another NVTX instance may have installed it already: the same one.
    let _ = HANDLER.set(Box::new(handler));

    type C = sys::NvtxCallbackIdCore;
    type D = sys::NvtxCallbackIdCore2;
    macro_rules! f {
        ($f:expr, $t:ty) => {{
            let typed: $t = $f;
            // SAFETY: NVTX calls the slot with the signature of its id (it
            // casts the generic pointer back, nvtxTypes.h).
            Some(unsafe { std::mem::transmute::<$t, unsafe extern "C" fn()>(typed) })
        }};
    }
    let core: &[(u32, sys::NvtxFunctionPointer)] = &[
        (
            C::NVTX_CBID_CORE_MarkEx.0,
            f!(mark_ex, unsafe extern "C" fn(*const Attr)),
        ),
        (
            C::NVTX_CBID_CORE_MarkA.0,
            f!(mark_a, unsafe extern "C" fn(*const c_char)),
        ),
        (
            C::NVTX_CBID_CORE_MarkW.0,
            f!(mark_w, unsafe extern "C" fn(*const u32)),
        ),
        (
            C::NVTX_CBID_CORE_RangeStartEx.0,
            f!(start_ex, unsafe extern "C" fn(*const Attr) -> u64),
        ),
        (
            C::NVTX_CBID_CORE_RangeStartA.0,
            f!(start_a, unsafe extern "C" fn(*const c_char) -> u64),
        ),
        (
            C::NVTX_CBID_CORE_RangeStartW.0,
            f!(start_w, unsafe extern "C" fn(*const u32) -> u64),
        ),
        (
            C::NVTX_CBID_CORE_RangeEnd.0,
            f!(end, unsafe extern "C" fn(u64)),
        ),
        (
            C::NVTX_CBID_CORE_RangePushEx.0,
            f!(push_ex, unsafe extern "C" fn(*const Attr) -> c_int),
        ),
        (
            C::NVTX_CBID_CORE_RangePushA.0,
            f!(push_a, unsafe extern "C" fn(*const c_char) -> c_int),
        ),
        (
            C::NVTX_CBID_CORE_RangePushW.0,
            f!(push_w, unsafe extern "C" fn(*const u32) -> c_int),
        ),
        (
            C::NVTX_CBID_CORE_RangePop.0,
            f!(pop, unsafe extern "C" fn() -> c_int),
        ),
    ];
    let core2: &[(u32, sys::NvtxFunctionPointer)] = &[
        (
            D::NVTX_CBID_CORE2_DomainMarkEx.0,
            f!(d_mark_ex, unsafe extern "C" fn(Domain, *const Attr)),
        ),
        (
            D::NVTX_CBID_CORE2_DomainRangeStartEx.0,
            f!(d_start_ex, unsafe extern "C" fn(Domain, *const Attr) -> u64),
        ),
        (
            D::NVTX_CBID_CORE2_DomainRangeEnd.0,
            f!(d_end, unsafe extern "C" fn(Domain, u64)),
        ),
        (
            D::NVTX_CBID_CORE2_DomainRangePushEx.0,
            f!(
                d_push_ex,
                unsafe extern "C" fn(Domain, *const Attr) -> c_int
            ),
        ),
        (
            D::NVTX_CBID_CORE2_DomainRangePop.0,
            f!(d_pop, unsafe extern "C" fn(Domain) -> c_int),
        ),
        (
            D::NVTX_CBID_CORE2_DomainRegisterStringA.0,
            f!(
                d_register_a,
                unsafe extern "C" fn(Domain, *const c_char) -> StrHandle
            ),
        ),
        (
            D::NVTX_CBID_CORE2_DomainRegisterStringW.0,
            f!(
                d_register_w,
                unsafe extern "C" fn(Domain, *const u32) -> StrHandle
            ),
        ),
        (
            D::NVTX_CBID_CORE2_DomainCreateA.0,
            f!(d_create_a, unsafe extern "C" fn(*const c_char) -> Domain),
        ),
        (
            D::NVTX_CBID_CORE2_DomainCreateW.0,
            f!(d_create_w, unsafe extern "C" fn(*const u32) -> Domain),
        ),
        (
            D::NVTX_CBID_CORE2_DomainDestroy.0,
            f!(d_destroy, unsafe extern "C" fn(Domain)),
        ),
    ];
    let mut installed = 0;
    for (module, entries) in [
        (sys::NvtxCallbackModule::NVTX_CB_MODULE_CORE, core),
        (sys::NvtxCallbackModule::NVTX_CB_MODULE_CORE2, core2),
    ] {
        let mut table: sys::NvtxFunctionTable = std::ptr::null_mut();
        let mut size: u32 = 0;
        // SAFETY: NVTX's own table getter; valid out-pointers.
        if unsafe { get_table(module, &mut table, &mut size) } == 0 || table.is_null() {
            continue;
        }
        for &(id, f) in entries {
            if id >= size {
                continue;
            }
            // SAFETY: `table` holds `size` pointers to NVTX's function-pointer
            // slots; writing a slot is how an injection attaches (nvtxTypes.h).
            unsafe {
                let slot = *table.add(id as usize);
                if !slot.is_null() {
                    *slot = f;
                    installed += 1;
                }
            }
        }
    }
    if installed == 0 {
        return Err(InstallError::NoFunctionTable);
    }
    Ok(())
}

type Attr = sys::nvtxEventAttributes_t;
type Domain = sys::nvtxDomainHandle_t;
type StrHandle = sys::nvtxStringHandle_t;

fn dispatch(ev: NvtxEvent<'_>) {
    if DISABLED.load(Ordering::Relaxed) {
        return;
    }
    gpu_trace_model::guard::contain("the NVTX handler", &DISABLED, || {
        if let Some(h) = HANDLER.get() {
            h(&ev);
        }
    });
}

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

fn push_depth() -> c_int {
    DEPTH
        .try_with(|d| {
            let v = d.get();
            d.set(v + 1);
            v
        })
        .unwrap_or(0)
}

fn pop_depth() -> c_int {
    DEPTH
        .try_with(|d| {
            let v = d.get();
            if v == 0 {
                return -1;
            }
            d.set(v - 1);
            v - 1
        })
        .unwrap_or(-1)
}

fn domain(d: Domain) -> Option<u64> {
    (!d.is_null()).then_some(d as u64)
}

/// # Safety
/// `p` is null or a NUL-terminated string valid for the call.
unsafe fn ascii<'a>(p: *const c_char) -> NvtxMessage<'a> {
    if p.is_null() {
        NvtxMessage::None
    } else {
        // SAFETY: caller contract.
        NvtxMessage::Ascii(unsafe { CStr::from_ptr(p) })
    }
}

/// # Safety
/// `p` is null or a NUL-terminated `wchar_t` (32-bit on Linux) string.
unsafe fn wide<'a>(p: *const u32) -> NvtxMessage<'a> {
    if p.is_null() {
        NvtxMessage::None
    } else {
        // SAFETY: caller contract.
        NvtxMessage::Unicode(unsafe { WideStr::from_ptr(p) })
    }
}

/// # Safety
/// `a` is null or the caller's attributes, valid for the call.
unsafe fn attrs<'a>(a: *const Attr) -> (NvtxMessage<'a>, Attributes) {
    // SAFETY: caller contract.
    unsafe { crate::nvtx::attributes(a) }
}

// Every function below is called by NVTX with the arguments of the NVTX
// call it stands for; each one's contract is that of its NVTX namesake.

unsafe extern "C" fn mark_ex(a: *const Attr) {
    // SAFETY: see above.
    let (message, attributes) = unsafe { attrs(a) };
    dispatch(NvtxEvent::Mark {
        domain: None,
        message,
        attributes,
    });
}

unsafe extern "C" fn mark_a(m: *const c_char) {
    // SAFETY: see above.
    let message = unsafe { ascii(m) };
    dispatch(NvtxEvent::Mark {
        domain: None,
        message,
        attributes: Attributes::default(),
    });
}

unsafe extern "C" fn mark_w(m: *const u32) {
    // SAFETY: see above.
    let message = unsafe { wide(m) };
    dispatch(NvtxEvent::Mark {
        domain: None,
        message,
        attributes: Attributes::default(),
    });
}

fn start(domain: Option<u64>, message: NvtxMessage<'_>, attributes: Attributes) -> u64 {
    let id = next_id();
    dispatch(NvtxEvent::RangeStart {
        domain,
        message,
        attributes,
        id: Some(id),
    });
    id
}

unsafe extern "C" fn start_ex(a: *const Attr) -> u64 {
    // SAFETY: see above.
    let (m, at) = unsafe { attrs(a) };
    start(None, m, at)
}

unsafe extern "C" fn start_a(m: *const c_char) -> u64 {
    // SAFETY: see above.
    start(None, unsafe { ascii(m) }, Attributes::default())
}

unsafe extern "C" fn start_w(m: *const u32) -> u64 {
    // SAFETY: see above.
    start(None, unsafe { wide(m) }, Attributes::default())
}

unsafe extern "C" fn end(id: u64) {
    dispatch(NvtxEvent::RangeEnd { domain: None, id });
}

fn push(domain: Option<u64>, message: NvtxMessage<'_>, attributes: Attributes) -> c_int {
    let depth = push_depth();
    dispatch(NvtxEvent::Push {
        domain,
        message,
        attributes,
    });
    depth
}

unsafe extern "C" fn push_ex(a: *const Attr) -> c_int {
    // SAFETY: see above.
    let (m, at) = unsafe { attrs(a) };
    push(None, m, at)
}

unsafe extern "C" fn push_a(m: *const c_char) -> c_int {
    // SAFETY: see above.
    push(None, unsafe { ascii(m) }, Attributes::default())
}

unsafe extern "C" fn push_w(m: *const u32) -> c_int {
    // SAFETY: see above.
    push(None, unsafe { wide(m) }, Attributes::default())
}

unsafe extern "C" fn pop() -> c_int {
    let depth = pop_depth();
    dispatch(NvtxEvent::Pop { domain: None });
    depth
}

unsafe extern "C" fn d_mark_ex(d: Domain, a: *const Attr) {
    // SAFETY: see above.
    let (message, attributes) = unsafe { attrs(a) };
    dispatch(NvtxEvent::Mark {
        domain: domain(d),
        message,
        attributes,
    });
}

unsafe extern "C" fn d_start_ex(d: Domain, a: *const Attr) -> u64 {
    // SAFETY: see above.
    let (m, at) = unsafe { attrs(a) };
    start(domain(d), m, at)
}

unsafe extern "C" fn d_end(d: Domain, id: u64) {
    dispatch(NvtxEvent::RangeEnd {
        domain: domain(d),
        id,
    });
}

unsafe extern "C" fn d_push_ex(d: Domain, a: *const Attr) -> c_int {
    // SAFETY: see above.
    let (m, at) = unsafe { attrs(a) };
    push(domain(d), m, at)
}

unsafe extern "C" fn d_pop(d: Domain) -> c_int {
    let depth = pop_depth();
    dispatch(NvtxEvent::Pop { domain: domain(d) });
    depth
}

fn register(d: Domain, string: NvtxMessage<'_>) -> StrHandle {
    let h = next_id();
    dispatch(NvtxEvent::RegisterString {
        domain: domain(d),
        string,
        handle: Some(h),
    });
    h as StrHandle
}

unsafe extern "C" fn d_register_a(d: Domain, s: *const c_char) -> StrHandle {
    // SAFETY: see above.
    register(d, unsafe { ascii(s) })
}

unsafe extern "C" fn d_register_w(d: Domain, s: *const u32) -> StrHandle {
    // SAFETY: see above.
    register(d, unsafe { wide(s) })
}

fn create(name: NvtxMessage<'_>) -> Domain {
    let h = next_id();
    dispatch(NvtxEvent::DomainCreate {
        name,
        handle: Some(h),
    });
    h as Domain
}

unsafe extern "C" fn d_create_a(name: *const c_char) -> Domain {
    // SAFETY: see above.
    create(unsafe { ascii(name) })
}

unsafe extern "C" fn d_create_w(name: *const u32) -> Domain {
    // SAFETY: see above.
    create(unsafe { wide(name) })
}

unsafe extern "C" fn d_destroy(d: Domain) {
    dispatch(NvtxEvent::DomainDestroy { domain: d as u64 });
}
