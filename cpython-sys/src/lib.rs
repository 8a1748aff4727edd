//! The few CPython C API calls that read the calling thread's Python call
//! stack, resolved at run time from the interpreter the process already
//! has.
//!
//! Nothing is linked and nothing is loaded: [`Python::from_process`] looks
//! the symbols up in the process's global scope (the `python3` executable,
//! or a `libpython3.X.so` the program linked or opened globally), then in a
//! `libpython3.X.so.1.0` that is already loaded (`RTLD_NOLOAD`). A process
//! without Python gets `Ok(None)`.
//!
//! - [`sys`]: the raw symbol table, [`sys::Api::load_with`] over a resolver.
//! - [`Python`] and [`Frame`]: the safe layer. [`Python::walk`] visits
//!   the frames of the calling thread, innermost first, and only when that
//!   thread holds the GIL; it never takes the GIL, runs no Python code and
//!   leaves no new Python object behind (the frame and code references the
//!   C API hands out are released before it returns).
//!
//! Versions: CPython 3.10 to 3.13 (read from `Py_GetVersion`); another is an
//! [`Unsupported`] error.

#[cfg(feature = "embed")]
pub mod embed;
pub mod sys;

use std::ffi::CStr;
use std::fmt;

/// The versions whose API this crate was written against, (major, minor).
pub const SUPPORTED: std::ops::RangeInclusive<(u8, u8)> = (3, 10)..=(3, 13);

/// The interpreter in the process runs a version outside [`SUPPORTED`], or
/// lacks a symbol that version should have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    /// `Py_GetVersion` said this.
    Version(String),
    /// A symbol the version should export is missing.
    MissingSymbol {
        /// The version.
        version: String,
        /// The symbol.
        symbol: &'static str,
    },
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unsupported::Version(v) => write!(
                f,
                "Python {v} is not supported for call stacks (3.10 to 3.13 are)"
            ),
            Unsupported::MissingSymbol { version, symbol } => {
                write!(f, "Python {version} lacks {symbol}, needed for call stacks")
            }
        }
    }
}

impl std::error::Error for Unsupported {}

/// `3.11.7 (main, ...)` → (3, 11).
pub fn parse_version(v: &str) -> Option<(u8, u8)> {
    let head = v.split_whitespace().next()?;
    let mut it = head.split('.');
    let major = it.next()?.parse().ok()?;
    let minor: String = it
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor.parse().ok()?))
}

/// The interpreter of this process, through its C API.
pub struct Python {
    api: sys::Api,
    version: (u8, u8),
    // Keeps a libpython found by soname open while `api` points into it.
    _lib: Option<libloading::Library>,
}

// SAFETY: the table holds function pointers into the interpreter, which
// stays loaded for the life of the process (CPython cannot be unloaded once
// initialised); every call through them is made by `walk` on a thread
// that holds the GIL.
unsafe impl Send for Python {}
// SAFETY: as for Send; the table is never written after loading.
unsafe impl Sync for Python {}

impl fmt::Debug for Python {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Python {}.{}", self.version.0, self.version.1)
    }
}

/// Sonames of the shared interpreters, looked for only among the
/// libraries already loaded.
const SONAMES: [&str; 4] = [
    "libpython3.13.so.1.0",
    "libpython3.12.so.1.0",
    "libpython3.11.so.1.0",
    "libpython3.10.so.1.0",
];

impl Python {
    /// The interpreter already in this process. `Ok(None)`: there is none
    /// (no `Py_GetVersion` anywhere), or it is not initialised.
    pub fn from_process() -> Result<Option<Python>, Unsupported> {
        let this = libloading::os::unix::Library::this();
        // SAFETY: looking a symbol up runs no code of the library.
        let global = unsafe { this.get::<sys::GetVersionFn>(b"Py_GetVersion\0") }.is_ok();
        if global {
            let resolve = |name: &CStr| -> *const libc::c_void {
                // SAFETY: a lookup only; the pointer is typed by the table.
                unsafe { this.get::<*const libc::c_void>(name.to_bytes_with_nul()) }
                    .map(|s| *s)
                    .unwrap_or(std::ptr::null())
            };
            return Self::with_resolver(resolve, None);
        }
        for soname in SONAMES {
            // SAFETY: RTLD_NOLOAD opens nothing new: it only takes a handle
            // on a library that is already loaded, whose initialisers ran.
            let lib = unsafe {
                libloading::os::unix::Library::open(
                    Some(soname),
                    libc::RTLD_NOLOAD | libc::RTLD_LAZY,
                )
            };
            let Ok(lib) = lib else { continue };
            let resolve = |name: &CStr| -> *const libc::c_void {
                // SAFETY: a lookup only.
                unsafe { lib.get::<*const libc::c_void>(name.to_bytes_with_nul()) }
                    .map(|s| *s)
                    .unwrap_or(std::ptr::null())
            };
            let r = Self::with_resolver(resolve, None);
            return r.map(|p| {
                p.map(|mut p| {
                    p._lib = Some(lib.into());
                    p
                })
            });
        }
        Ok(None)
    }

    fn with_resolver(
        resolve: impl Fn(&CStr) -> *const libc::c_void,
        lib: Option<libloading::Library>,
    ) -> Result<Option<Python>, Unsupported> {
        let api = sys::Api::load_with(resolve);
        let Some(get_version) = api.Py_GetVersion else {
            return Ok(None);
        };
        // SAFETY: Py_GetVersion returns a static string, callable at any
        // time, also before initialisation.
        let version = unsafe { CStr::from_ptr(get_version()) }
            .to_string_lossy()
            .into_owned();
        let short = version.split_whitespace().next().unwrap_or("").to_owned();
        let Some(v) = parse_version(&version).filter(|v| SUPPORTED.contains(v)) else {
            return Err(Unsupported::Version(short));
        };
        if let Some(symbol) = api.missing(v) {
            return Err(Unsupported::MissingSymbol {
                version: short,
                symbol,
            });
        }
        Ok(Some(Python {
            api,
            version: v,
            _lib: lib,
        }))
    }

    /// (major, minor) of the interpreter.
    pub fn version(&self) -> (u8, u8) {
        self.version
    }

    /// Visits the Python frames of the calling thread, innermost first,
    /// until `visit` returns false. Returns false without visiting anything
    /// when this thread does not hold the GIL (or the interpreter is not
    /// running).
    pub fn walk(&self, mut visit: impl FnMut(&Frame<'_>) -> bool) -> bool {
        let a = &self.api;
        // SAFETY: each function is callable without the GIL:
        // Py_IsInitialized and PyGILState_Check read runtime state only;
        // PyGILState_GetThisThreadState reads this thread's TSS slot, and
        // the unchecked getter the current thread state.
        let tstate = unsafe {
            if (a.Py_IsInitialized.unwrap_unchecked())() == 0
                || (a.PyGILState_Check.unwrap_unchecked())() != 1
            {
                return false;
            }
            let mine = (a.PyGILState_GetThisThreadState.unwrap_unchecked())();
            let current = (a.current_tstate.unwrap_unchecked())();
            // PyGILState_Check answers 1 whenever its check is off (with
            // sub-interpreters); the thread state holding the GIL must
            // also be this thread's own.
            if mine.is_null() || mine != current {
                return false;
            }
            mine
        };
        // SAFETY: this thread holds the GIL through `tstate`, so the frame
        // API may be called; every new reference it returns is released
        // below before the next step.
        unsafe {
            let mut frame = (a.PyThreadState_GetFrame.unwrap_unchecked())(tstate);
            while !frame.is_null() {
                let code = (a.PyFrame_GetCode.unwrap_unchecked())(frame);
                let f = Frame {
                    py: self,
                    frame,
                    code,
                };
                let more = visit(&f);
                (a.Py_DecRef.unwrap_unchecked())(code);
                if !more {
                    break;
                }
                let back = (a.PyFrame_GetBack.unwrap_unchecked())(frame);
                (a.Py_DecRef.unwrap_unchecked())(frame);
                frame = back;
            }
            if !frame.is_null() {
                (a.Py_DecRef.unwrap_unchecked())(frame);
            }
        }
        true
    }
}

/// One frame of the walk, valid during the visit only.
pub struct Frame<'a> {
    py: &'a Python,
    frame: *mut sys::PyObject,
    code: *mut sys::PyObject,
}

impl Frame<'_> {
    /// The frame's code object, as an address: the same for every call of
    /// one function while that code object lives (see [`Frame::keep_code`]).
    pub fn code(&self) -> usize {
        self.code as usize
    }

    /// Where the frame is in its code: the index of its last instruction
    /// (3.11 and later), else its line. With [`Frame::code`] it names a
    /// code location.
    pub fn position(&self) -> i32 {
        match self.py.api.PyFrame_GetLasti {
            // SAFETY: the GIL is held during the visit; `frame` is alive.
            Some(f) => unsafe { f(self.frame) },
            None => self.line() as i32,
        }
    }

    /// The line being executed (0 if unknown).
    pub fn line(&self) -> u32 {
        // SAFETY: the GIL is held during the visit; `frame` is alive.
        let l = unsafe { (self.py.api.PyFrame_GetLineNumber.unwrap_unchecked())(self.frame) };
        l.max(0) as u32
    }

    /// The function's qualified name (`Model.forward`; its plain name
    /// before 3.11), if it can be read without disturbing the thread.
    pub fn function(&self) -> Option<String> {
        if self.py.version >= (3, 11) {
            self.code_str(c"co_qualname")
        } else {
            self.code_str(c"co_name")
        }
    }

    /// The file of the function's code, as Python names it.
    pub fn file(&self) -> Option<String> {
        self.code_str(c"co_filename")
    }

    /// Keeps the code object alive for the rest of the process, so that
    /// [`Frame::code`] never names another function later: one reference,
    /// taken once per code location a cache remembers.
    pub fn keep_code(&self) {
        // SAFETY: the GIL is held during the visit; `code` is alive.
        unsafe { (self.py.api.Py_IncRef.unwrap_unchecked())(self.code) }
    }

    /// A string attribute of the code object. Code attributes are C member
    /// descriptors: reading one runs no Python code. Refused while an
    /// exception is pending, which a failed lookup would disturb.
    fn code_str(&self, attr: &CStr) -> Option<String> {
        let a = &self.py.api;
        // SAFETY: the GIL is held during the visit; every new reference is
        // released before returning, and the UTF-8 buffer is copied while
        // its string is alive.
        unsafe {
            if !(a.PyErr_Occurred.unwrap_unchecked())().is_null() {
                return None;
            }
            let obj = (a.PyObject_GetAttrString.unwrap_unchecked())(self.code, attr.as_ptr());
            if obj.is_null() {
                (a.PyErr_Clear.unwrap_unchecked())();
                return None;
            }
            let mut len: isize = 0;
            let p = (a.PyUnicode_AsUTF8AndSize.unwrap_unchecked())(obj, &mut len);
            let s = if p.is_null() {
                (a.PyErr_Clear.unwrap_unchecked())();
                None
            } else {
                let bytes = std::slice::from_raw_parts(p.cast::<u8>(), len.max(0) as usize);
                Some(String::from_utf8_lossy(bytes).into_owned())
            };
            (a.Py_DecRef.unwrap_unchecked())(obj);
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::{c_char, c_void};

    #[test]
    fn versions_are_read_from_the_start_of_py_get_version() {
        assert_eq!(
            parse_version("3.11.7 (main, May  9 2026) [GCC 12.2.0]"),
            Some((3, 11))
        );
        assert_eq!(parse_version("3.13.0rc1+ experimental"), Some((3, 13)));
        assert_eq!(parse_version("3.10.12"), Some((3, 10)));
        assert_eq!(parse_version("garbage"), None);
        assert_eq!(parse_version(""), None);
    }

    extern "C" fn py314() -> *const c_char {
        c"3.14.0 (main, Oct  7 2025) [GCC 14]".as_ptr()
    }

    extern "C" fn py311() -> *const c_char {
        c"3.11.9 (main)".as_ptr()
    }

    #[test]
    fn an_unknown_version_is_refused_by_name_and_a_missing_symbol_is_named() {
        let only_version = |f: extern "C" fn() -> *const c_char| {
            move |name: &CStr| -> *const c_void {
                if name == c"Py_GetVersion" {
                    f as *const c_void
                } else {
                    std::ptr::null()
                }
            }
        };
        let e = Python::with_resolver(only_version(py314), None).unwrap_err();
        assert_eq!(e, Unsupported::Version("3.14.0".into()));
        assert_eq!(
            e.to_string(),
            "Python 3.14.0 is not supported for call stacks (3.10 to 3.13 are)"
        );
        let e = Python::with_resolver(only_version(py311), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Python 3.11.9 lacks Py_IsInitialized, needed for call stacks"
        );
        // No interpreter at all: nothing, and no error.
        assert!(
            Python::with_resolver(|_| std::ptr::null(), None)
                .unwrap()
                .is_none()
        );
    }
}
