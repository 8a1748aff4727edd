//! The Python call sites of API calls: which Python frames made a launch,
//! a copy or a synchronisation, read on the calling thread while it waits
//! in the API callback.
//!
//! Cost is kept down by caching by code location: a frame is named once
//! per (code object, instruction) pair; afterwards a capture walks the
//! frames, looks each location up and interns the stack of ids (see the
//! measurements in the book's "Python call sites" page).
//!
//! A thread holding the GIL is read through the C API. A Python thread
//! that released it (PyTorch releases it around every operator) is read
//! by CPython's internal frame layout ([`cpython_sys::layout`]), and only
//! once both walks, made on a thread holding the GIL, were found equal
//! (the layout self-check): a mismatch turns that path off for the
//! process. The check runs at the first API call made with the GIL; a
//! program whose calls all release it (PyTorch) has it run by its main
//! thread, which the interpreter asks to (`Py_AddPendingCall`) at the
//! first such call, when next it runs Python code; calls before then get
//! no stack.

use crate::warn;
use cpython_sys::{Frame, Python, RawFrame, ThreadState};
use gpu_trace_model::callstack::{CallstackId, Callstacks, FrameId, SourceFrame};
use gpu_trace_model::names::Names;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

pub use cpython_sys::Unsupported;

/// Frames kept per stack, innermost first (the innermost matters most).
pub const DEPTH: usize = 32;

/// Code locations remembered. Each keeps its code object alive (so that
/// its address never names another function); past this many, frames are
/// named on every capture instead.
const CACHED_LOCATIONS: usize = 1 << 16;

/// Captures the Python stack of the calling thread.
#[derive(Debug)]
pub struct CallSites {
    py: Arc<Python>,
    names: Arc<Names>,
    stacks: Arc<Callstacks>,
    depth: usize,
    /// (code object address, position in it) → frame.
    locations: Mutex<FxHashMap<(usize, i32), FrameId>>,
    /// Locations named by layout, without the GIL (no reference can be
    /// taken then): each with the addresses of its code's strings, which
    /// must still match for the entry to be used.
    unheld: Mutex<FxHashMap<(usize, i32), Unheld>>,
    check: Arc<Check>,
}

/// The layout self-check's state, shared with the main thread's run of it.
#[derive(Debug)]
struct Check {
    py: Arc<Python>,
    /// [`Layout::Pending`], `Trusted` or `Off`.
    layout: AtomicU8,
    /// The main thread was asked to run the check and has not yet.
    asked: AtomicBool,
}

impl Check {
    fn layout(&self) -> Layout {
        match self.layout.load(Ordering::Relaxed) {
            0 => Layout::Pending,
            1 => Layout::Trusted,
            _ => Layout::Off,
        }
    }

    /// Compares the two walks on this thread, which holds the GIL.
    fn run(&self) {
        match self.py.check_layout() {
            Ok(0) => {}
            Ok(n) => {
                if self
                    .layout
                    .compare_exchange(
                        Layout::Pending as u8,
                        Layout::Trusted as u8,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    crate::verbose!(
                        "Python frames read by layout match the C API ({n} frames): threads that released the GIL carry their stacks"
                    );
                }
            }
            Err(e) => {
                if self.layout.swap(Layout::Off as u8, Ordering::Relaxed) != Layout::Off as u8 {
                    crate::verbose!(
                        "Python frames read by layout differ from the C API ({e}): threads that released the GIL carry no stack"
                    );
                }
            }
        }
    }

    /// Asks the main thread to run the check (once at a time).
    fn ask_main_thread(self: &Arc<Self>) {
        if self.asked.swap(true, Ordering::Relaxed) {
            return;
        }
        let me = Arc::downgrade(self);
        let asked = self.py.on_main_thread(move || {
            if let Some(c) = me.upgrade() {
                if c.layout() == Layout::Pending && c.py.thread_state() == ThreadState::HoldsGil {
                    c.run();
                }
                // Without a verdict, the next GIL-less call asks again.
                c.asked.store(false, Ordering::Relaxed);
            }
        });
        if !asked {
            self.asked.store(false, Ordering::Relaxed);
        }
    }
}

/// A location named without the GIL: the addresses of its code's
/// strings when named, and its frame.
type Unheld = ([usize; 3], FrameId);

/// The state of the walk by layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Layout {
    /// Not yet compared with the C API walk: not used without the GIL.
    Pending = 0,
    /// Compared and equal: used for threads that released the GIL.
    Trusted = 1,
    /// No layout for this version, or the comparison failed.
    Off = 2,
}

impl CallSites {
    /// Over the interpreter already in this process. `Ok(None)`: there is
    /// none. Nothing is loaded.
    pub fn from_process(
        names: Arc<Names>,
        stacks: Arc<Callstacks>,
        depth: usize,
    ) -> Result<Option<CallSites>, Unsupported> {
        Ok(Python::from_process()?.map(|py| {
            let py = Arc::new(py);
            CallSites {
                names,
                stacks,
                depth: depth.max(1),
                locations: Mutex::new(FxHashMap::default()),
                unheld: Mutex::new(FxHashMap::default()),
                check: Arc::new(Check {
                    layout: AtomicU8::new(if py.has_layout() {
                        Layout::Pending as u8
                    } else {
                        Layout::Off as u8
                    }),
                    asked: AtomicBool::new(false),
                    py: py.clone(),
                }),
                py,
            }
        }))
    }

    /// [`CallSites::from_process`] for a backend starting up: an
    /// interpreter it cannot read is said in one line, and gives `None`.
    pub fn start(names: Arc<Names>, stacks: Arc<Callstacks>) -> Option<CallSites> {
        match Self::from_process(names, stacks, DEPTH) {
            Ok(Some(c)) => {
                crate::verbose!(
                    "Python {}.{} found: launches carry their Python call stacks",
                    c.py.version().0,
                    c.py.version().1
                );
                Some(c)
            }
            Ok(None) => None,
            Err(e) => {
                warn!("{e}; API calls are recorded without Python call stacks");
                None
            }
        }
    }

    /// The interpreter's (major, minor) version.
    pub fn version(&self) -> (u8, u8) {
        self.py.version()
    }

    /// The state of the walk by layout.
    pub fn layout(&self) -> Layout {
        self.check.layout()
    }

    /// Runs the layout self-check if it is still pending and this thread
    /// holds the GIL: for API calls that carry no stack but may be the
    /// only ones made with the GIL (a library's initialisation).
    pub fn check_layout(&self) {
        if self.layout() == Layout::Pending && self.py.thread_state() == ThreadState::HoldsGil {
            self.check.run();
        }
    }

    /// The calling thread's Python stack: through the C API if it holds
    /// the GIL, by layout if it released it (once trusted), else none.
    pub fn capture(&self) -> Option<CallstackId> {
        match self.py.thread_state() {
            ThreadState::NotPython => None,
            ThreadState::HoldsGil => {
                if self.layout() == Layout::Pending {
                    self.check.run();
                }
                self.capture_held()
            }
            ThreadState::ReleasedGil if self.layout() == Layout::Trusted => self.capture_released(),
            ThreadState::ReleasedGil => {
                if self.layout() == Layout::Pending {
                    self.check.ask_main_thread();
                }
                None
            }
        }
    }

    /// By layout, for a thread that released the GIL (see the module).
    pub fn capture_released(&self) -> Option<CallstackId> {
        let mut ids: SmallVec<[FrameId; DEPTH]> = SmallVec::new();
        let held = try_now(&self.locations)?;
        let mut unheld = try_now(&self.unheld)?;
        let walked = self.py.walk_layout(|f| {
            let key = (f.code(), f.position());
            let id = match held.get(&key) {
                Some(&id) => id,
                None => {
                    let identity = f.identity();
                    match unheld.get(&key) {
                        Some(&(seen, id)) if seen == identity => id,
                        _ => {
                            let id = self.name_raw(f);
                            if unheld.len() < CACHED_LOCATIONS {
                                unheld.insert(key, (identity, id));
                            }
                            id
                        }
                    }
                }
            };
            ids.push(id);
            ids.len() < self.depth
        });
        drop(unheld);
        drop(held);
        if !walked || ids.is_empty() {
            return None;
        }
        ids.reverse();
        Some(self.stacks.stack(&ids))
    }

    /// Through the C API, for a thread holding the GIL.
    fn capture_held(&self) -> Option<CallstackId> {
        let mut ids: SmallVec<[FrameId; DEPTH]> = SmallVec::new();
        // Never waits: a capture re-entered on this thread (a finaliser
        // that launches, run while a name was read) gets no stack.
        let mut locations = try_now(&self.locations)?;
        let walked = self.py.walk(|f| {
            let key = (f.code(), f.position());
            let id = match locations.get(&key) {
                Some(&id) => id,
                None => {
                    let id = self.name(f);
                    if locations.len() < CACHED_LOCATIONS {
                        f.keep_code();
                        locations.insert(key, id);
                    }
                    id
                }
            };
            ids.push(id);
            ids.len() < self.depth
        });
        drop(locations);
        if !walked || ids.is_empty() {
            return None;
        }
        ids.reverse();
        Some(self.stacks.stack(&ids))
    }

    fn name_raw(&self, f: &RawFrame<'_>) -> FrameId {
        let function = f.function();
        let file = f.file();
        self.stacks.frame(SourceFrame {
            function: self.names.intern(function.as_deref().unwrap_or("?")),
            file: self.names.intern(file.as_deref().unwrap_or("?")),
            line: f.line(),
        })
    }

    fn name(&self, f: &Frame<'_>) -> FrameId {
        let function = f.function();
        let file = f.file();
        self.stacks.frame(SourceFrame {
            function: self.names.intern(function.as_deref().unwrap_or("?")),
            file: self.names.intern(file.as_deref().unwrap_or("?")),
            line: f.line(),
        })
    }
}

/// The lock if it is free now (poisoned or not), else `None`: a capture
/// never waits, so one re-entered on its own thread gets no stack.
fn try_now<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(l) => Some(l),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}
