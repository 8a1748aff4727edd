//! Raw CPython C API items: opaque object pointers and a symbol table
//! filled from a resolver, as `ash` builds its tables. A symbol the
//! resolver does not find is `None`; [`Api::missing`] names the first
//! one a version needs.
#![allow(non_snake_case)]

use std::ffi::{CStr, c_char, c_int, c_void};

/// `PyObject`, `PyFrameObject`, `PyCodeObject`: opaque here.
pub type PyObject = c_void;
/// `PyThreadState`: opaque here.
pub type PyThreadState = c_void;

/// `const char *Py_GetVersion(void)`.
pub type GetVersionFn = unsafe extern "C" fn() -> *const c_char;
/// `int f(void)`.
pub type IntFn = unsafe extern "C" fn() -> c_int;
/// `PyThreadState *f(void)`.
pub type TstateFn = unsafe extern "C" fn() -> *mut PyThreadState;
/// `PyFrameObject *PyThreadState_GetFrame(PyThreadState *)`: new reference.
pub type GetFrameFn = unsafe extern "C" fn(*mut PyThreadState) -> *mut PyObject;
/// `PyObject *f(PyObject *)`: `PyFrame_GetBack`, `PyFrame_GetCode`, both
/// new references.
pub type ObjFn = unsafe extern "C" fn(*mut PyObject) -> *mut PyObject;
/// `int f(PyFrameObject *)`: `PyFrame_GetLasti`, `PyFrame_GetLineNumber`.
pub type FrameIntFn = unsafe extern "C" fn(*mut PyObject) -> c_int;
/// `void f(PyObject *)`: `Py_IncRef`, `Py_DecRef`.
pub type RefFn = unsafe extern "C" fn(*mut PyObject);
/// `PyObject *PyErr_Occurred(void)`: borrowed.
pub type ErrOccurredFn = unsafe extern "C" fn() -> *mut PyObject;
/// `void PyErr_Clear(void)`.
pub type VoidFn = unsafe extern "C" fn();
/// `PyObject *PyObject_GetAttrString(PyObject *, const char *)`: new
/// reference.
pub type GetAttrFn = unsafe extern "C" fn(*mut PyObject, *const c_char) -> *mut PyObject;
/// `const char *PyUnicode_AsUTF8AndSize(PyObject *, Py_ssize_t *)`.
pub type Utf8Fn = unsafe extern "C" fn(*mut PyObject, *mut isize) -> *const c_char;

/// `int PyCode_Addr2Line(PyCodeObject *, int byte_offset)`.
pub type Addr2LineFn = unsafe extern "C" fn(*mut PyObject, c_int) -> c_int;

/// `int Py_AddPendingCall(int (*)(void *), void *)`.
pub type AddPendingCallFn =
    unsafe extern "C" fn(unsafe extern "C" fn(*mut c_void) -> c_int, *mut c_void) -> c_int;

/// The functions a call-stack walk uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct Api {
    /// Since 1.x; callable before initialisation.
    pub Py_GetVersion: Option<GetVersionFn>,
    /// Whether the interpreter is running.
    pub Py_IsInitialized: Option<IntFn>,
    /// 1 when the calling thread holds the GIL (or the check is off).
    pub PyGILState_Check: Option<IntFn>,
    /// The calling thread's own thread state, or null.
    pub PyGILState_GetThisThreadState: Option<TstateFn>,
    /// The current thread state without the fatal error of
    /// `PyThreadState_Get`: `PyThreadState_GetUnchecked` (3.13) or
    /// `_PyThreadState_UncheckedGet` (3.10–3.12).
    pub current_tstate: Option<TstateFn>,
    /// 3.9+.
    pub PyThreadState_GetFrame: Option<GetFrameFn>,
    /// 3.9+.
    pub PyFrame_GetBack: Option<ObjFn>,
    /// 3.9+.
    pub PyFrame_GetCode: Option<ObjFn>,
    /// 3.11+.
    pub PyFrame_GetLasti: Option<FrameIntFn>,
    /// Every version.
    pub PyFrame_GetLineNumber: Option<FrameIntFn>,
    /// Every version.
    pub Py_IncRef: Option<RefFn>,
    /// Every version.
    pub Py_DecRef: Option<RefFn>,
    /// Every version.
    pub PyErr_Occurred: Option<ErrOccurredFn>,
    /// Every version.
    pub PyErr_Clear: Option<VoidFn>,
    /// Every version.
    pub PyObject_GetAttrString: Option<GetAttrFn>,
    /// Every version.
    pub PyUnicode_AsUTF8AndSize: Option<Utf8Fn>,
    /// Every version; the walk by layout only (optional).
    pub PyCode_Addr2Line: Option<Addr2LineFn>,
    /// Every version; asks the main thread to run a function when it next
    /// holds the GIL (optional).
    pub Py_AddPendingCall: Option<AddPendingCallFn>,
    /// The address of the `PyCode_Type` object (null: absent); the walk
    /// by layout only.
    pub PyCode_Type: usize,
    /// The address of the `PyUnicode_Type` object (null: absent).
    pub PyUnicode_Type: usize,
    /// A build whose object header or frames differ from the default
    /// build's: free-threaded (`_Py_DecRefShared`) or with reference
    /// debugging (`_Py_NegativeRefcount`). No walk by layout there.
    pub other_build: bool,
}

macro_rules! sym {
    ($resolve:expr, $name:literal) => {{
        let p = $resolve($name);
        // SAFETY: a non-null symbol of this name has the C signature the
        // field's type spells (CPython's documented API).
        (!p.is_null()).then(|| unsafe { std::mem::transmute::<*const c_void, _>(p) })
    }};
}

impl Api {
    /// The table from `resolve` (name → address, null when absent).
    pub fn load_with(resolve: impl Fn(&CStr) -> *const c_void) -> Api {
        Api {
            Py_GetVersion: sym!(resolve, c"Py_GetVersion"),
            Py_IsInitialized: sym!(resolve, c"Py_IsInitialized"),
            PyGILState_Check: sym!(resolve, c"PyGILState_Check"),
            PyGILState_GetThisThreadState: sym!(resolve, c"PyGILState_GetThisThreadState"),
            current_tstate: sym!(resolve, c"PyThreadState_GetUnchecked")
                .or_else(|| sym!(resolve, c"_PyThreadState_UncheckedGet")),
            PyThreadState_GetFrame: sym!(resolve, c"PyThreadState_GetFrame"),
            PyFrame_GetBack: sym!(resolve, c"PyFrame_GetBack"),
            PyFrame_GetCode: sym!(resolve, c"PyFrame_GetCode"),
            PyFrame_GetLasti: sym!(resolve, c"PyFrame_GetLasti"),
            PyFrame_GetLineNumber: sym!(resolve, c"PyFrame_GetLineNumber"),
            Py_IncRef: sym!(resolve, c"Py_IncRef"),
            Py_DecRef: sym!(resolve, c"Py_DecRef"),
            PyErr_Occurred: sym!(resolve, c"PyErr_Occurred"),
            PyErr_Clear: sym!(resolve, c"PyErr_Clear"),
            PyObject_GetAttrString: sym!(resolve, c"PyObject_GetAttrString"),
            PyUnicode_AsUTF8AndSize: sym!(resolve, c"PyUnicode_AsUTF8AndSize"),
            PyCode_Addr2Line: sym!(resolve, c"PyCode_Addr2Line"),
            Py_AddPendingCall: sym!(resolve, c"Py_AddPendingCall"),
            PyCode_Type: resolve(c"PyCode_Type") as usize,
            PyUnicode_Type: resolve(c"PyUnicode_Type") as usize,
            other_build: !resolve(c"_Py_DecRefShared").is_null()
                || !resolve(c"_Py_NegativeRefcount").is_null(),
        }
    }

    /// The first symbol that version `v` exports but the table lacks.
    pub fn missing(&self, v: (u8, u8)) -> Option<&'static str> {
        let needed: [(&'static str, bool); 15] = [
            ("Py_IsInitialized", self.Py_IsInitialized.is_some()),
            ("PyGILState_Check", self.PyGILState_Check.is_some()),
            (
                "PyGILState_GetThisThreadState",
                self.PyGILState_GetThisThreadState.is_some(),
            ),
            ("_PyThreadState_UncheckedGet", self.current_tstate.is_some()),
            (
                "PyThreadState_GetFrame",
                self.PyThreadState_GetFrame.is_some(),
            ),
            ("PyFrame_GetBack", self.PyFrame_GetBack.is_some()),
            ("PyFrame_GetCode", self.PyFrame_GetCode.is_some()),
            (
                "PyFrame_GetLasti",
                v < (3, 11) || self.PyFrame_GetLasti.is_some(),
            ),
            (
                "PyFrame_GetLineNumber",
                self.PyFrame_GetLineNumber.is_some(),
            ),
            ("Py_IncRef", self.Py_IncRef.is_some()),
            ("Py_DecRef", self.Py_DecRef.is_some()),
            ("PyErr_Occurred", self.PyErr_Occurred.is_some()),
            ("PyErr_Clear", self.PyErr_Clear.is_some()),
            (
                "PyObject_GetAttrString",
                self.PyObject_GetAttrString.is_some(),
            ),
            (
                "PyUnicode_AsUTF8AndSize",
                self.PyUnicode_AsUTF8AndSize.is_some(),
            ),
        ];
        needed.iter().find(|(_, ok)| !ok).map(|(n, _)| *n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_resolver_gives_an_empty_table_that_names_what_is_missing() {
        let api = Api::load_with(|_| std::ptr::null());
        assert!(api.Py_GetVersion.is_none());
        assert_eq!(api.missing((3, 11)), Some("Py_IsInitialized"));
    }
}
