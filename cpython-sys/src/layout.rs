//! The calling thread's own frames read by CPython's internal layouts,
//! for a thread that does not hold the GIL (a C extension released it
//! around the call that reached us).
//!
//! Read: the thread state of this thread (`PyGILState_GetThisThreadState`,
//! which needs no GIL), its current frame and each frame's code object,
//! instruction pointer and link to its caller; then the code object's name
//! and file strings and line table. Never written, no reference count
//! touched, no Python object allocated, no Python code run, no lock taken.
//!
//! Why this is safe enough: the thread is inside our callback, so its own
//! frames cannot change under us (the interpreter only pushes and pops a
//! thread's frames on that thread); a frame on a live stack holds a strong
//! reference to its code object, and a code object to its names, file and
//! line table; other threads' frames are never read. What cannot be
//! proven is the layout itself: [`Layout`] is one table per minor version
//! (offsets from `offsetof` over each version's headers, checked by
//! `tests/layout_offsets.rs`), every pointer is null-checked and aligned,
//! every code object's type must be `PyCode_Type`, the chain is bounded,
//! and a walk stops at the first thing unexpected. The caller must also
//! compare this walk with the C API walk before trusting it (see
//! [`crate::Python::check_layout`]).

/// The offsets a walk uses, for one minor version (64-bit, default build).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The version.
    pub version: (u8, u8),
    /// `PyThreadState.frame` (3.10), `.cframe` (3.11, 3.12) or
    /// `.current_frame` (3.13).
    pub tstate_frame: usize,
    /// `_PyCFrame.current_frame` (3.11, 3.12); `None` where the thread
    /// state points at the frame directly.
    pub cframe_current: Option<usize>,
    /// The frame's caller: `f_back` (3.10) or `previous`.
    pub previous: usize,
    /// The frame's code: `f_code` (3.10–3.12) or `f_executable` (3.13).
    pub code: usize,
    /// The instruction: `f_lasti` (3.10, an int counting code units),
    /// `prev_instr` (3.11, 3.12) or `instr_ptr` (3.13), pointers.
    pub instr: usize,
    /// `f_lineno` (3.10 only: set while tracing).
    pub lineno: Option<usize>,
    /// `_PyInterpreterFrame.owner` (3.11+).
    pub owner: Option<usize>,
    /// `PyCodeObject.co_code_adaptive` (3.11+): the first code unit.
    pub co_code: Option<usize>,
    /// `PyCodeObject._co_firsttraceable` (3.11+), an int.
    pub co_firsttraceable: Option<usize>,
    /// `PyCodeObject.co_name`.
    pub co_name: usize,
    /// `PyCodeObject.co_qualname` (3.11+).
    pub co_qualname: Option<usize>,
    /// `PyCodeObject.co_filename`.
    pub co_filename: usize,
    /// `sizeof(PyASCIIObject)`: where a compact ASCII string's data starts.
    pub ascii_size: usize,
    /// `sizeof(PyCompactUnicodeObject)`: where a compact non-ASCII
    /// string's data starts.
    pub compact_size: usize,
}

/// `PyObject.ob_type`.
pub const OB_TYPE: usize = 8;
/// `PyVarObject.ob_size`: a code object's length in code units (3.11+).
pub const OB_SIZE: usize = 16;
/// `PyASCIIObject.length` (`Py_ssize_t`).
pub const STR_LENGTH: usize = 16;
/// `PyASCIIObject.state` (bit field: interned 2, kind 3, compact 1,
/// ascii 1).
pub const STR_STATE: usize = 32;
/// `FRAME_OWNED_BY_GENERATOR`.
pub const OWNED_BY_GENERATOR: u8 = 1;
/// `FRAME_OWNED_BY_CSTACK` (3.12+): the shim frame of a C call into
/// Python.
pub const OWNED_BY_CSTACK: u8 = 3;

/// The table for `version`, or `None`: the walk is then never used.
pub fn layout(version: (u8, u8)) -> Option<Layout> {
    if !cfg!(all(target_pointer_width = "64", target_endian = "little")) {
        return None;
    }
    Some(match version {
        (3, 10) => Layout {
            version,
            tstate_frame: 24,
            cframe_current: None,
            previous: 24,
            code: 32,
            instr: 96,
            lineno: Some(100),
            owner: None,
            co_code: None,
            co_firsttraceable: None,
            co_name: 112,
            co_qualname: None,
            co_filename: 104,
            ascii_size: 48,
            compact_size: 72,
        },
        (3, 11) => Layout {
            version,
            tstate_frame: 56,
            cframe_current: Some(8),
            previous: 48,
            code: 32,
            instr: 56,
            lineno: None,
            owner: Some(69),
            co_code: Some(184),
            co_firsttraceable: Some(168),
            co_name: 120,
            co_qualname: Some(128),
            co_filename: 112,
            ascii_size: 48,
            compact_size: 72,
        },
        (3, 12) => Layout {
            version,
            tstate_frame: 56,
            cframe_current: Some(0),
            previous: 8,
            code: 0,
            instr: 56,
            lineno: None,
            owner: Some(70),
            co_code: Some(192),
            co_firsttraceable: Some(176),
            co_name: 120,
            co_qualname: Some(128),
            co_filename: 112,
            ascii_size: 40,
            compact_size: 56,
        },
        (3, 13) => Layout {
            version,
            tstate_frame: 72,
            cframe_current: None,
            previous: 8,
            code: 0,
            instr: 56,
            lineno: None,
            owner: Some(70),
            co_code: Some(200),
            co_firsttraceable: Some(184),
            co_name: 120,
            co_qualname: Some(128),
            co_filename: 112,
            ascii_size: 40,
            compact_size: 56,
        },
        _ => return None,
    })
}
