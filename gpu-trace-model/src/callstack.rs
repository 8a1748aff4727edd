//! Source call stacks of API calls: frames (function, file, line) and the
//! stacks made of them, each interned once per process.
//!
//! A backend that can see the calling code (the Python frames of a launch,
//! say) interns each frame it meets and the stack they form, and puts the
//! stack's id on the [`crate::model::ApiCall`]. The writer resolves ids
//! here; the per-call path copies one id.

use crate::model::NameId;
use rustc_hash::FxHashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, RwLock};

/// An interned frame; ids start at 1 so that they can double as Perfetto
/// interning ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameId(pub u32);

/// An interned call stack; ids start at 1. Never zero, so that the
/// `Option<CallstackId>` every [`crate::model::ApiCall`] carries takes four
/// bytes, not eight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallstackId(NonZeroU32);

impl CallstackId {
    /// The stack with id `id` (`None` for 0, which no stack has).
    pub fn new(id: u32) -> Option<Self> {
        NonZeroU32::new(id).map(Self)
    }

    /// The id, from 1.
    pub fn get(self) -> u32 {
        self.0.get()
    }
}

/// One source frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SourceFrame {
    /// The function, e.g. `Model.forward`.
    pub function: NameId,
    /// Its file, as the language runtime names it.
    pub file: NameId,
    /// The line being executed, from 1 (0: unknown).
    pub line: u32,
}

/// The process's frames and stacks.
#[derive(Debug, Default)]
pub struct Callstacks {
    frames: RwLock<Table<SourceFrame>>,
    stacks: RwLock<Table<Arc<[FrameId]>, CallstackId>>,
}

#[derive(Debug)]
struct Table<T, Id = u32> {
    map: FxHashMap<T, Id>,
    list: Vec<T>,
}

impl<T, Id> Default for Table<T, Id> {
    fn default() -> Self {
        Self {
            map: FxHashMap::default(),
            list: Vec::new(),
        }
    }
}

impl Callstacks {
    /// The id of `f`, added on first use.
    pub fn frame(&self, f: SourceFrame) -> FrameId {
        if let Some(&id) = read(&self.frames).map.get(&f) {
            return FrameId(id);
        }
        let mut w = self.frames.write().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = w.map.get(&f) {
            return FrameId(id);
        }
        w.list.push(f);
        let id = w.list.len() as u32;
        w.map.insert(f, id);
        FrameId(id)
    }

    /// The id of the stack `frames`, outermost first, added on first use.
    /// Allocates only then.
    pub fn stack(&self, frames: &[FrameId]) -> CallstackId {
        if let Some(&id) = read(&self.stacks).map.get(frames) {
            return id;
        }
        let mut w = self.stacks.write().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = w.map.get(frames) {
            return id;
        }
        let arc: Arc<[FrameId]> = Arc::from(frames);
        w.list.push(arc.clone());
        // The list's length after a push: never zero.
        let id = CallstackId(NonZeroU32::new(w.list.len() as u32).unwrap_or(NonZeroU32::MIN));
        w.map.insert(arc, id);
        id
    }

    /// The frame behind `id`.
    pub fn get_frame(&self, id: FrameId) -> Option<SourceFrame> {
        let r = read(&self.frames);
        id.0.checked_sub(1)
            .and_then(|i| r.list.get(i as usize))
            .copied()
    }

    /// The frames of stack `id`, outermost first.
    pub fn get_stack(&self, id: CallstackId) -> Option<Arc<[FrameId]>> {
        read(&self.stacks).list.get(id.get() as usize - 1).cloned()
    }

    /// Number of stacks interned.
    pub fn len(&self) -> usize {
        read(&self.stacks).list.len()
    }

    /// Whether no stack was interned yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_stacks_are_interned_once_and_resolve_back() {
        let c = Callstacks::default();
        let f = |line| SourceFrame {
            function: NameId(1),
            file: NameId(2),
            line,
        };
        let (a, b) = (c.frame(f(3)), c.frame(f(4)));
        assert_eq!((a, b), (FrameId(1), FrameId(2)));
        assert_eq!(c.frame(f(3)), a);
        let s = c.stack(&[a, b]);
        assert_eq!(c.stack(&[a, b]), s);
        assert_ne!(c.stack(&[b, a]), s);
        assert_eq!(&*c.get_stack(s).unwrap(), &[a, b]);
        assert_eq!(c.get_frame(b), Some(f(4)));
        assert_eq!(c.get_frame(FrameId(0)), None);
        assert_eq!(c.get_stack(CallstackId::new(9).unwrap()), None);
        assert_eq!(CallstackId::new(0), None);
        assert_eq!(s.get(), 1);
    }
}
