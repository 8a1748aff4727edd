//! For tests and benchmarks only (feature `embed`): a real interpreter
//! in a process that has none, and a way to run Rust code inside a
//! Python call chain of known depth, holding the GIL, as a launch made by
//! a Python extension runs. The product never loads Python.

use std::cell::RefCell;
use std::ffi::{CString, c_char, c_int};

/// The system's shared interpreter on Debian/Ubuntu x86-64.
pub const DEFAULT_LIBPYTHON: &str = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0";

thread_local! {
    static BODY: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
}

extern "C" fn trampoline() {
    BODY.with(|b| {
        if let Some(f) = b.borrow_mut().as_mut() {
            f();
        }
    });
}

/// Loads `libpython` globally (as a `python3` executable exports its
/// symbols) and initialises it; the calling thread then holds the GIL.
pub fn start(libpython: &str) -> Result<(), String> {
    // SAFETY: loading the interpreter runs its initialisers, which are
    // made to be loaded into any process.
    let lib = unsafe {
        libloading::os::unix::Library::open(Some(libpython), libc::RTLD_NOW | libc::RTLD_GLOBAL)
    }
    .map_err(|e| format!("cannot load {libpython}: {e}"))?;
    // SAFETY: the signature of Py_InitializeEx(int).
    let init = unsafe { lib.get::<unsafe extern "C" fn(c_int)>(b"Py_InitializeEx\0") }
        .map_err(|e| e.to_string())?;
    // SAFETY: initialises the interpreter once, without signal handlers.
    unsafe { init(0) };
    std::mem::forget(lib);
    Ok(())
}

/// Runs `body` from inside `depth` nested Python functions (`f0` calls
/// `f1` ... the last calls `body` through a ctypes function that keeps the
/// GIL), in a file named `file`. [`start`] first, on this thread.
pub fn run_nested(depth: usize, file: &str, body: impl FnMut() + 'static) -> Result<(), String> {
    Program::new(depth, file, body)?.run("f0()")
}

type Obj = *mut libc::c_void;

/// Runs `f` with the GIL released, as a C extension runs a long call
/// (`Py_BEGIN_ALLOW_THREADS`): on a thread holding the GIL, inside Python
/// frames.
pub fn without_gil<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    let this = libloading::os::unix::Library::this();
    // SAFETY: lookups of documented CPython functions, typed as they are.
    let (save, restore) = unsafe {
        (
            *this
                .get::<unsafe extern "C" fn() -> Obj>(b"PyEval_SaveThread\0")
                .map_err(|e| e.to_string())?,
            *this
                .get::<unsafe extern "C" fn(Obj)>(b"PyEval_RestoreThread\0")
                .map_err(|e| e.to_string())?,
        )
    };
    // SAFETY: the calling thread holds the GIL (this module's contract:
    // after `start`, inside a `Program`), and takes it back below; a panic
    // in `f` would leave it released, which only ends the test or
    // benchmark that panicked.
    let ts = unsafe { save() };
    let r = f();
    // SAFETY: the thread state `save` returned, on the same thread.
    unsafe { restore(ts) };
    Ok(r)
}

/// The nested functions of [`run_nested`], plus `loop(n)`, which calls
/// `f0()` `n` times: each call a fresh chain of frames, as each training
/// step calls its model afresh.
pub struct Program {
    file: CString,
    globals: Obj,
}

impl Program {
    /// Defines the functions; `body` is what the innermost one calls.
    pub fn new(depth: usize, file: &str, body: impl FnMut() + 'static) -> Result<Program, String> {
        BODY.with(|b| *b.borrow_mut() = Some(Box::new(body)));
        let mut src = String::from("import ctypes\n");
        src += &format!(
            "cb = ctypes.PYFUNCTYPE(None)({})\n",
            trampoline as extern "C" fn() as usize
        );
        let depth = depth.max(1);
        for i in 0..depth {
            let next = if i + 1 == depth {
                "cb()".to_owned()
            } else {
                format!("f{}()", i + 1)
            };
            src += &format!("def f{i}():\n    {next}\n");
        }
        src += "def loop(n):\n    for _ in range(n):\n        f0()\n";
        let api = Embedded::load()?;
        // SAFETY: the GIL is held by this thread since `start`.
        let globals = unsafe {
            let g = (api.new_dict)();
            (api.set_item)(g, c"__builtins__".as_ptr(), (api.builtins)());
            g
        };
        let p = Program {
            file: CString::new(file).map_err(|e| e.to_string())?,
            globals,
        };
        p.run(&src)?;
        Ok(p)
    }

    /// Runs the statements `src` among the functions (with the GIL, on
    /// the thread of [`start`]).
    pub fn run(&self, src: &str) -> Result<(), String> {
        let api = Embedded::load()?;
        let code = CString::new(src).map_err(|e| e.to_string())?;
        // SAFETY: the GIL is held by this thread since `start`; each new
        // reference is released; the code is named after `file`, so its
        // frames carry that file name.
        unsafe {
            let code = (api.compile)(
                code.as_ptr(),
                self.file.as_ptr(),
                257, /* Py_file_input */
            );
            if code.is_null() {
                (api.print)();
                return Err("the program does not compile".into());
            }
            let r = (api.eval)(code, self.globals, self.globals);
            (api.decref)(code);
            if r.is_null() {
                (api.print)();
                return Err("the program raised".into());
            }
            (api.decref)(r);
        }
        Ok(())
    }
}

struct Embedded {
    compile: unsafe extern "C" fn(*const c_char, *const c_char, c_int) -> Obj,
    eval: unsafe extern "C" fn(Obj, Obj, Obj) -> Obj,
    new_dict: unsafe extern "C" fn() -> Obj,
    set_item: unsafe extern "C" fn(Obj, *const c_char, Obj) -> c_int,
    builtins: unsafe extern "C" fn() -> Obj,
    decref: unsafe extern "C" fn(Obj),
    print: unsafe extern "C" fn(),
}

impl Embedded {
    fn load() -> Result<Embedded, String> {
        let this = libloading::os::unix::Library::this();
        macro_rules! get {
            ($name:literal) => {
                // SAFETY: a lookup of a documented CPython function, typed
                // as the field it goes into.
                *unsafe { this.get(concat!($name, "\0").as_bytes()) }.map_err(|e| e.to_string())?
            };
        }
        Ok(Embedded {
            compile: get!("Py_CompileString"),
            eval: get!("PyEval_EvalCode"),
            new_dict: get!("PyDict_New"),
            set_item: get!("PyDict_SetItemString"),
            builtins: get!("PyEval_GetBuiltins"),
            decref: get!("Py_DecRef"),
            print: get!("PyErr_Print"),
        })
    }
}
