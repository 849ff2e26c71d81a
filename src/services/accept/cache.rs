//! Committed results kept in memory, so that a retry is answered without the database.
//!
//! Safe because a committed (form, operation ID) never changes its submission, content
//! fingerprint or result body, and an entry is added only after its commit. A miss, or a
//! different fingerprint (a conflict, which must be recorded), goes to the database.
//! Bounded: two generations of at most half the capacity each; a hit in the old one moves
//! the entry to the new one, and when the new one is full the old one is dropped.
//!
//! Beyond the entries, the cache remembers (as 8-byte keyed hashes, also in two bounded
//! generations) which keys this process saw committed: a retry whose entry has left the
//! memory is then answered by a plain read, without the claim statement's write.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::mem;
use std::sync::{Arc, Mutex, OnceLock};

use super::Receipt;

pub struct Entry {
    pub fingerprint: String,
    pub receipt: Receipt,
    /// `domain::raw_digest` of a request found to carry this content (set once).
    pub raw: OnceLock<[u8; 32]>,
}

pub struct ReplayCache {
    half: usize,
    generations: Mutex<Generations>,
    /// Hashes of the keys committed through this process, keyed per process (SipHash with a
    /// random key), so that a visitor cannot aim collisions; a false hit costs one read.
    seen: Mutex<[HashSet<u64>; 2]>,
    hasher: RandomState,
}

/// Committed keys remembered per generation beyond the entries: 512 Ki hashes of 8 bytes in
/// a table of 1 Mi slots (9 bytes each), so the two generations hold at most about 19 MB.
const SEEN_HALF: usize = 1 << 19;

#[derive(Default)]
struct Generations {
    new: HashMap<String, Arc<Entry>>,
    old: HashMap<String, Arc<Entry>>,
}

impl ReplayCache {
    /// A cache of about `capacity` entries; 0 turns it off.
    pub fn new(capacity: usize) -> ReplayCache {
        ReplayCache {
            half: capacity / 2,
            generations: Mutex::default(),
            seen: Mutex::default(),
            hasher: RandomState::new(),
        }
    }

    /// Whether this process saw (form, operation ID) committed, though its entry may have
    /// left the memory (a false `true` is possible, and costs one read).
    pub fn seen(&self, form: &str, operation_id: &str) -> bool {
        if self.half == 0 {
            return false;
        }
        let hash = self.hasher.hash_one((form, operation_id));
        let seen = self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        seen.iter().any(|generation| generation.contains(&hash))
    }

    fn remember(&self, form: &str, operation_id: &str) {
        let hash = self.hasher.hash_one((form, operation_id));
        let mut seen = self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        seen[0].insert(hash);
        if seen[0].len() >= SEEN_HALF {
            seen[1] = mem::take(&mut seen[0]);
        }
    }

    pub fn get(&self, form: &str, operation_id: &str) -> Option<Arc<Entry>> {
        if self.half == 0 {
            return None;
        }
        let key = key(form, operation_id);
        let mut g = self.generations.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(entry) = g.new.get(&key) {
            return Some(entry.clone());
        }
        let entry = g.old.remove(&key)?;
        self.insert(&mut g, key, entry.clone());
        Some(entry)
    }

    /// Remembers a committed result.
    pub fn put(&self, form: &str, fingerprint: String, receipt: Receipt) {
        if self.half == 0 {
            return;
        }
        self.remember(form, &receipt.operation_id);
        let key = key(form, &receipt.operation_id);
        let mut g = self.generations.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.insert(&mut g, key, Arc::new(Entry { fingerprint, receipt, raw: OnceLock::new() }));
    }

    /// Drops the entry of (form, operation ID), if any: erasure (`lifecycle::erase`).
    pub fn forget(&self, form: &str, operation_id: &str) {
        let key = key(form, operation_id);
        let mut g = self.generations.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        g.new.remove(&key);
        g.old.remove(&key);
    }

    fn insert(&self, g: &mut Generations, key: String, entry: Arc<Entry>) {
        g.new.insert(key, entry);
        if g.new.len() >= self.half {
            g.old = mem::take(&mut g.new);
        }
    }
}

fn key(form: &str, operation_id: &str) -> String {
    format!("{form}\n{operation_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(op: &str) -> Receipt {
        Receipt {
            submission_id: format!("s-{op}").into(),
            operation_id: op.into(),
            body: "{}".into(),
            received_at: chrono::NaiveDateTime::default(),
            form_version: None,
        }
    }

    #[test]
    fn keeps_what_was_put_per_form_and_key() {
        let cache = ReplayCache::new(10);
        cache.put("contact", "fp".into(), receipt("a"));
        assert_eq!(cache.get("contact", "a").unwrap().receipt.submission_id.as_str(), "s-a");
        assert!(cache.get("other", "a").is_none());
        assert!(cache.get("contact", "b").is_none());
    }

    #[test]
    fn stays_bounded_and_keeps_recently_used_entries() {
        let cache = ReplayCache::new(10);
        cache.put("f", "fp".into(), receipt("kept"));
        for i in 0..100 {
            cache.put("f", "fp".into(), receipt(&i.to_string()));
            assert!(cache.get("f", "kept").is_some(), "used after every insert, so never evicted");
        }
        let g = cache.generations.lock().unwrap();
        assert!(g.new.len() + g.old.len() <= 10);
        drop(g);
        assert!(cache.get("f", "0").is_none(), "the oldest unused entries are gone");
    }

    #[test]
    fn a_forgotten_entry_is_gone_from_both_generations() {
        let cache = ReplayCache::new(4);
        cache.put("f", "fp".into(), receipt("a"));
        cache.put("f", "fp".into(), receipt("b")); // `a` is in the old generation now
        cache.forget("f", "a");
        cache.forget("f", "b");
        assert!(cache.get("f", "a").is_none() && cache.get("f", "b").is_none());
    }

    #[test]
    fn keys_are_remembered_after_their_entries_are_gone() {
        let cache = ReplayCache::new(4);
        cache.put("f", "fp".into(), receipt("a"));
        for i in 0..10 {
            cache.put("f", "fp".into(), receipt(&i.to_string()));
        }
        assert!(cache.get("f", "a").is_none(), "the entry is gone");
        assert!(cache.seen("f", "a"), "the key is remembered");
        assert!(!cache.seen("g", "a") && !cache.seen("f", "never"));
    }

    #[test]
    fn capacity_zero_keeps_nothing() {
        let cache = ReplayCache::new(0);
        cache.put("f", "fp".into(), receipt("a"));
        assert!(cache.get("f", "a").is_none());
    }
}
