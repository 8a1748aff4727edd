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
//! - [`Python::walk_layout`] and [`RawFrame`]: the same frames read by
//!   CPython's internal layouts, for a thread that released the GIL (see
//!   [`layout`] for what is read and why it is safe enough), trusted by
//!   a caller only after [`Python::check_layout`] matched it with the C API
//!   walk.
//!
//! Versions: CPython 3.10 to 3.13 (read from `Py_GetVersion`); another is an
//! [`Unsupported`] error.

#[cfg(feature = "embed")]
pub mod embed;
pub mod layout;
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

/// Where the calling thread stands with the interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadState {
    /// No interpreter running, or no Python thread state on this thread.
    NotPython,
    /// A Python thread that holds the GIL: [`Python::walk`] reads it.
    HoldsGil,
    /// A Python thread that released the GIL: only
    /// [`Python::walk_layout`] can read it.
    ReleasedGil,
}

/// Frames followed at most by a walk by layout (a longer chain is taken
/// as a wrong read).
const MAX_CHAIN: usize = 10_000;

/// Longest string read by layout (a longer one is taken as a wrong read).
const MAX_STR: usize = 1 << 16;

/// Reads a `T` at `addr`, if it is non-null, past the first page and
/// aligned.
///
/// # Safety
/// `addr` must be readable for `size_of::<T>()` bytes when those checks
/// pass: it comes from a layout the caller checked.
unsafe fn rd<T: Copy>(addr: usize) -> Option<T> {
    if addr < 4096 || !addr.is_multiple_of(std::mem::align_of::<T>()) {
        return None;
    }
    // SAFETY: as the function's contract says.
    Some(unsafe { std::ptr::read_volatile(addr as *const T) })
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

/// The function [`Python::on_main_thread`] registered.
type Pending = Box<dyn Fn() + Send + Sync>;
static PENDING: std::sync::OnceLock<Pending> = std::sync::OnceLock::new();

/// What the interpreter calls, on its main thread with the GIL held.
unsafe extern "C" fn run_pending(_: *mut libc::c_void) -> libc::c_int {
    if let Some(f) = PENDING.get() {
        // Never unwinds into the interpreter.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    }
    0
}

impl Python {
    /// Asks the interpreter to call `f` on its main thread, the next time
    /// that thread runs Python code (it then holds the GIL), through
    /// `Py_AddPendingCall`, which needs neither the GIL nor a thread state.
    /// Nothing is taken or waited for here. The first `f` given is the one
    /// called, each time this is asked. False: not scheduled (no symbol,
    /// not running, or the interpreter's queue is full).
    pub fn on_main_thread(&self, f: impl Fn() + Send + Sync + 'static) -> bool {
        let Some(add) = self.api.Py_AddPendingCall else {
            return false;
        };
        let _ = PENDING.set(Box::new(f));
        // SAFETY: Py_IsInitialized reads runtime state; Py_AddPendingCall
        // is documented as callable from any thread without the GIL (it
        // queues the pointer under its own lock); `run_pending` has the
        // signature it calls, never unwinds, and lives as long as this
        // library, which is never unloaded while the process runs Python.
        unsafe {
            (self.api.Py_IsInitialized.unwrap_unchecked())() != 0
                && add(run_pending, std::ptr::null_mut()) == 0
        }
    }

    /// Whether this thread is a Python thread and holds the GIL; reads
    /// only runtime state and this thread's TSS slot (no GIL needed).
    pub fn thread_state(&self) -> ThreadState {
        let a = &self.api;
        // SAFETY: as in `walk`: each is callable without the GIL.
        unsafe {
            if (a.Py_IsInitialized.unwrap_unchecked())() == 0 {
                return ThreadState::NotPython;
            }
            let mine = (a.PyGILState_GetThisThreadState.unwrap_unchecked())();
            if mine.is_null() {
                return ThreadState::NotPython;
            }
            if (a.PyGILState_Check.unwrap_unchecked())() == 1
                && (a.current_tstate.unwrap_unchecked())() == mine
            {
                ThreadState::HoldsGil
            } else {
                ThreadState::ReleasedGil
            }
        }
    }

    /// Whether this interpreter has a layout table (a default build of
    /// 3.10-3.13, not free-threaded, no reference debugging), and the
    /// symbols the walk by layout checks against.
    pub fn has_layout(&self) -> bool {
        layout::layout(self.version).is_some()
            && !self.api.other_build
            && self.api.PyCode_Type != 0
            && self.api.PyUnicode_Type != 0
            && self.api.PyCode_Addr2Line.is_some()
    }

    /// Visits the calling thread's own Python frames, innermost first,
    /// read by CPython's internal layout ([`layout`]) rather than through
    /// the C API: for a thread that released the GIL. Returns false when
    /// there is nothing to read (no layout for this version, not a Python
    /// thread). A read that looks wrong (null, misaligned, not a code
    /// object, an instruction outside its code, a chain too long) ends the
    /// walk there.
    ///
    /// Only frames of the calling thread are read, and only while it is
    /// inside this call, so none of them can be popped meanwhile. Use it
    /// without the GIL only after [`Python::check_layout`] matched.
    pub fn walk_layout(&self, mut visit: impl FnMut(&RawFrame<'_>) -> bool) -> bool {
        let Some(l) = layout::layout(self.version) else {
            return false;
        };
        if !self.has_layout() || self.thread_state() == ThreadState::NotPython {
            return false;
        }
        let a = &self.api;
        // SAFETY: this thread's TSS slot, callable without the GIL.
        let tstate = unsafe { (a.PyGILState_GetThisThreadState.unwrap_unchecked())() } as usize;
        // SAFETY: every `rd` reads an address from the thread state of
        // this thread or the frames linked from it, at the offsets of this
        // version's headers; this thread's frames stay in place while it
        // runs this function, and each frame holds its code object.
        unsafe {
            let Some(mut frame) = rd::<usize>(tstate + l.tstate_frame) else {
                return false;
            };
            if let Some(cur) = l.cframe_current {
                if frame == 0 {
                    return true;
                }
                let Some(f) = rd::<usize>(frame + cur) else {
                    return false;
                };
                frame = f;
            }
            let mut n = 0;
            while frame != 0 && n < MAX_CHAIN {
                n += 1;
                let (Some(code), Some(next)) =
                    (rd::<usize>(frame + l.code), rd::<usize>(frame + l.previous))
                else {
                    break;
                };
                let is_code =
                    code != 0 && rd::<usize>(code + layout::OB_TYPE) == Some(a.PyCode_Type);
                let raw = if let (Some(owner_at), Some(co_code), Some(first_at)) =
                    (l.owner, l.co_code, l.co_firsttraceable)
                {
                    let Some(owner) = rd::<u8>(frame + owner_at) else {
                        break;
                    };
                    if l.version >= (3, 12) && owner == layout::OWNED_BY_CSTACK {
                        frame = next;
                        continue;
                    }
                    if !is_code {
                        break;
                    }
                    let (Some(instr), Some(first), Some(units)) = (
                        rd::<usize>(frame + l.instr),
                        rd::<i32>(code + first_at),
                        rd::<isize>(code + layout::OB_SIZE),
                    ) else {
                        break;
                    };
                    let lasti = (instr as isize).wrapping_sub((code + co_code) as isize) / 2;
                    if lasti < -1 || lasti >= units {
                        break;
                    }
                    if owner != layout::OWNED_BY_GENERATOR && lasti < first as isize {
                        // Incomplete: a frame still setting up.
                        frame = next;
                        continue;
                    }
                    RawFrame {
                        py: self,
                        layout: l,
                        code,
                        lasti: lasti as i32,
                        lineno: 0,
                    }
                } else {
                    if !is_code {
                        break;
                    }
                    let (Some(lasti), Some(lineno)) = (
                        rd::<i32>(frame + l.instr),
                        rd::<i32>(frame + l.lineno.unwrap_or(l.instr)),
                    ) else {
                        break;
                    };
                    RawFrame {
                        py: self,
                        layout: l,
                        code,
                        lasti,
                        lineno,
                    }
                };
                if !visit(&raw) {
                    break;
                }
                frame = next;
            }
        }
        true
    }

    /// Compares [`Python::walk_layout`] with [`Python::walk`] on the
    /// calling thread, which must hold the GIL: the same code objects, the
    /// same positions and lines, the innermost frame's function and file.
    /// `Ok(n)`: they agree on `n` frames (0: nothing to compare, no
    /// verdict); `Err`: what differed.
    pub fn check_layout(&self) -> Result<usize, String> {
        if !self.has_layout() {
            return Err("no layout for this version".into());
        }
        if self.thread_state() != ThreadState::HoldsGil {
            return Ok(0);
        }
        type Seen = (usize, i32, u32, Option<(Option<String>, Option<String>)>);
        let mut api: Vec<Seen> = Vec::new();
        self.walk(|f| {
            let names = api.is_empty().then(|| (f.function(), f.file()));
            api.push((f.code(), f.position(), f.line(), names));
            api.len() < 64
        });
        let mut raw: Vec<Seen> = Vec::new();
        self.walk_layout(|f| {
            let names = raw.is_empty().then(|| (f.function(), f.file()));
            raw.push((f.code(), f.position(), f.line(), names));
            raw.len() < 64
        });
        if api != raw {
            let show = |v: &[Seen]| {
                v.iter()
                    .take(3)
                    .map(|(c, p, l, _)| format!("{c:#x}@{p}:{l}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            return Err(format!(
                "the C API reads {} frames ({}), the layout {} ({})",
                api.len(),
                show(&api),
                raw.len(),
                show(&raw)
            ));
        }
        Ok(api.len())
    }
}

/// One frame read by layout, valid during the visit only.
pub struct RawFrame<'a> {
    py: &'a Python,
    layout: layout::Layout,
    code: usize,
    /// The instruction, in code units from the start (3.10: `f_lasti`).
    lasti: i32,
    /// `f_lineno` (3.10), 0 when not set.
    lineno: i32,
}

impl RawFrame<'_> {
    /// As [`Frame::code`]: the code object's address.
    pub fn code(&self) -> usize {
        self.code
    }

    /// As [`Frame::position`]: the same value for the same frame state.
    pub fn position(&self) -> i32 {
        if self.layout.version >= (3, 11) {
            if self.lasti < 0 { -1 } else { self.lasti * 2 }
        } else {
            self.line() as i32
        }
    }

    /// The line being executed, from the code's line table.
    pub fn line(&self) -> u32 {
        if self.lineno != 0 {
            return self.lineno.max(0) as u32;
        }
        // SAFETY: PyCode_Addr2Line only reads the code object's line
        // table (and, before 3.12, a line array that only a tracing
        // thread holding the GIL creates): it allocates nothing, touches no
        // reference count and raises nothing, so it needs no GIL; the code
        // object is held by a frame of this thread, which cannot be popped
        // during this call; the offset is inside the code (checked by the
        // walk) or negative, which gives the first line.
        let l = unsafe {
            (self.py.api.PyCode_Addr2Line.unwrap_unchecked())(
                self.code as *mut sys::PyObject,
                self.lasti.saturating_mul(2),
            )
        };
        l.max(0) as u32
    }

    /// As [`Frame::function`]: the qualified name (3.11+), else the name.
    pub fn function(&self) -> Option<String> {
        let at = self.layout.co_qualname.unwrap_or(self.layout.co_name);
        self.str_at(at)
    }

    /// As [`Frame::file`].
    pub fn file(&self) -> Option<String> {
        self.str_at(self.layout.co_filename)
    }

    /// The addresses of the code's name, qualified name and file strings:
    /// with [`RawFrame::code`], what a cache may compare to tell that an
    /// address still names the same function.
    pub fn identity(&self) -> [usize; 3] {
        let l = &self.layout;
        // SAFETY: fields of a live code object (see `walk_layout`).
        unsafe {
            [
                rd::<usize>(self.code + l.co_name).unwrap_or(0),
                l.co_qualname
                    .and_then(|q| rd::<usize>(self.code + q))
                    .unwrap_or(0),
                rd::<usize>(self.code + l.co_filename).unwrap_or(0),
            ]
        }
    }

    /// The str object at `self.code + at`, read by its compact layout.
    fn str_at(&self, at: usize) -> Option<String> {
        let l = &self.layout;
        // SAFETY: a field of a live code object, then the str it holds (a
        // code object keeps its strings), checked to be a str and compact,
        // its length bounded; bytes are copied while it is alive.
        unsafe {
            let s = rd::<usize>(self.code + at)?;
            if rd::<usize>(s + layout::OB_TYPE)? != self.py.api.PyUnicode_Type {
                return None;
            }
            let len = rd::<isize>(s + layout::STR_LENGTH)?;
            let state = rd::<u32>(s + layout::STR_STATE)?;
            let (kind, compact, ascii) = ((state >> 2) & 7, (state >> 5) & 1, (state >> 6) & 1);
            if !(0..=MAX_STR as isize).contains(&len) || compact != 1 {
                return None;
            }
            let len = len as usize;
            if ascii == 1 {
                if kind != 1 {
                    return None;
                }
                let b = std::slice::from_raw_parts((s + l.ascii_size) as *const u8, len);
                return Some(String::from_utf8_lossy(b).into_owned());
            }
            let data = s + l.compact_size;
            Some(match kind {
                1 => std::slice::from_raw_parts(data as *const u8, len)
                    .iter()
                    .map(|&c| c as char)
                    .collect(),
                2 => char::decode_utf16(
                    std::slice::from_raw_parts(data as *const u16, len)
                        .iter()
                        .copied(),
                )
                .map(|c| c.unwrap_or('\u{fffd}'))
                .collect(),
                4 => std::slice::from_raw_parts(data as *const u32, len)
                    .iter()
                    .map(|&c| char::from_u32(c).unwrap_or('\u{fffd}'))
                    .collect(),
                _ => return None,
            })
        }
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
