//! Slowly changing tables shared by backends and the emitter: devices and
//! counter descriptions. Each carries a version so that the emitter can
//! re-describe them on a sequence only when they changed.

use crate::model::{CounterId, CounterSpec, Device};
use std::sync::RwLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// Known GPUs.
#[derive(Debug, Default)]
pub struct Devices {
    list: RwLock<Vec<Device>>,
    version: AtomicU32,
}

impl Devices {
    /// Adds or replaces the device with `d.id`.
    pub fn upsert(&self, d: Device) {
        let mut l = self.list.write().unwrap_or_else(|e| e.into_inner());
        match l.iter_mut().find(|x| x.id == d.id) {
            Some(x) if *x == d => return,
            Some(x) => *x = d,
            None => l.push(d),
        }
        l.sort_by_key(|d| d.id);
        self.version.fetch_add(1, Ordering::Release);
    }

    /// A copy of the list, sorted by id.
    pub fn snapshot(&self) -> Vec<Device> {
        self.list.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The device with `id`, if known.
    pub fn get(&self, id: u32) -> Option<Device> {
        self.list
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|d| d.id == id)
            .cloned()
    }

    /// Bumped on every change.
    pub fn version(&self) -> u32 {
        self.version.load(Ordering::Acquire)
    }
}

/// Registered counters.
#[derive(Debug, Default)]
pub struct Counters {
    specs: RwLock<Vec<CounterSpec>>,
    version: AtomicU32,
}

impl Counters {
    /// Registers `spec`, or returns the id of a counter of the same name.
    pub fn register(&self, spec: CounterSpec) -> CounterId {
        let mut l = self.specs.write().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = l.iter().position(|s| s.name == spec.name) {
            return CounterId(i as u32 + 1);
        }
        l.push(spec);
        self.version.fetch_add(1, Ordering::Release);
        CounterId(l.len() as u32)
    }

    /// A copy of the specs; `CounterId(n)` is element `n - 1`.
    pub fn snapshot(&self) -> Vec<CounterSpec> {
        self.specs.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Bumped on every change.
    pub fn version(&self) -> u32 {
        self.version.load(Ordering::Acquire)
    }
}
