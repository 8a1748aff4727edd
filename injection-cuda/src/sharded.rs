//! A small concurrent map split into independently locked shards, so that
//! application threads rarely meet on a lock (NVTX domain names, looked up
//! on every domain range). Core's correlator has its own copy; core does not
//! export it, a general-purpose map being no part of the event model.

use rustc_hash::FxHashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

const SHARDS: usize = 16;

/// A map split into independently locked shards. Values are copied out.
#[derive(Debug)]
pub(crate) struct Sharded<K, V> {
    shards: [Mutex<FxHashMap<K, V>>; SHARDS],
}

impl<K: Hash + Eq + Copy, V: Copy> Default for Sharded<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Hash + Eq + Copy, V: Copy> Sharded<K, V> {
    /// An empty map.
    pub(crate) fn new() -> Self {
        Self {
            shards: std::array::from_fn(|_| Mutex::new(FxHashMap::default())),
        }
    }

    fn shard(&self, k: &K) -> &Mutex<FxHashMap<K, V>> {
        let mut h = rustc_hash::FxHasher::default();
        k.hash(&mut h);
        &self.shards[(h.finish() as usize >> 7) % SHARDS]
    }

    /// Sets `k` to `v`.
    pub(crate) fn set(&self, k: K, v: V) {
        self.shard(&k)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(k, v);
    }

    /// The value of `k`.
    pub(crate) fn get(&self, k: &K) -> Option<V> {
        self.shard(k)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(k)
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get() {
        let m: Sharded<(u64, u64), u64> = Sharded::new();
        for i in 0..100 {
            m.set((i % 3, i), i * 10);
        }
        assert_eq!(m.get(&(1, 4)), Some(40));
        m.set((1, 4), 7);
        assert_eq!(m.get(&(1, 4)), Some(7));
        assert_eq!(m.get(&(0, 4)), None);
    }
}
