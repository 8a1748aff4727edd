//! A small concurrent map for backends' per-call bookkeeping (the last
//! submission per stream, the work behind each recorded event): split into
//! independently locked shards, so application threads working on different
//! streams rarely meet on a lock.

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

    /// Removes `k`.
    pub(crate) fn remove(&self, k: &K) {
        self.shard(k)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(k);
    }

    /// Removes every entry for which `f` says so.
    pub(crate) fn remove_if(&self, mut f: impl FnMut(&K, &V) -> bool) {
        for s in &self.shards {
            s.lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|k, v| !f(k, v));
        }
    }

    /// Calls `f` on every entry (one shard locked at a time).
    pub(crate) fn collect(&self, mut f: impl FnMut(&K, &V)) {
        for s in &self.shards {
            for (k, v) in s.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                f(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_remove_collect() {
        let m: Sharded<(u64, u64), u64> = Sharded::new();
        for i in 0..100 {
            m.set((i % 3, i), i * 10);
        }
        assert_eq!(m.get(&(1, 4)), Some(40));
        m.remove(&(1, 4));
        assert_eq!(m.get(&(1, 4)), None);
        m.remove_if(|k, _| k.0 == 0);
        let mut n = 0;
        m.collect(|k, v| {
            assert_ne!(k.0, 0);
            assert_eq!(*v, k.1 * 10);
            n += 1;
        });
        assert_eq!(n, 100 - 34 - 1);
    }
}
