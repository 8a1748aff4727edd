//! The Python call sites of API calls: which Python frames made a launch,
//! a copy or a synchronisation, read on the calling thread while it waits
//! in the API callback.
//!
//! Cost is kept down by caching by code location: a frame is named once
//! per (code object, instruction) pair; afterwards a capture walks the
//! frames, looks each location up and interns the stack of ids (see the
//! measurements in the book's "Python call sites" page). Only a thread
//! holding the GIL is read; others get no stack.

use crate::warn;
use cpython_sys::{Frame, Python};
use gpu_trace_model::callstack::{CallstackId, Callstacks, FrameId, SourceFrame};
use gpu_trace_model::names::Names;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::sync::{Arc, Mutex};

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
    py: Python,
    names: Arc<Names>,
    stacks: Arc<Callstacks>,
    depth: usize,
    /// (code object address, position in it) → frame.
    locations: Mutex<FxHashMap<(usize, i32), FrameId>>,
}

impl CallSites {
    /// Over the interpreter already in this process. `Ok(None)`: there is
    /// none. Nothing is loaded.
    pub fn from_process(
        names: Arc<Names>,
        stacks: Arc<Callstacks>,
        depth: usize,
    ) -> Result<Option<CallSites>, Unsupported> {
        Ok(Python::from_process()?.map(|py| CallSites {
            py,
            names,
            stacks,
            depth: depth.max(1),
            locations: Mutex::new(FxHashMap::default()),
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

    /// The calling thread's Python stack, if it holds the GIL and runs
    /// Python code.
    pub fn capture(&self) -> Option<CallstackId> {
        let mut ids: SmallVec<[FrameId; DEPTH]> = SmallVec::new();
        // Never waits: a capture re-entered on this thread (a finaliser
        // that launches, run while a name was read) gets no stack.
        let mut locations = match self.locations.try_lock() {
            Ok(l) => l,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
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
