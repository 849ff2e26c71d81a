//! A bounded memory of captcha answers already used, until they expire: a solved answer
//! serves one submission (and that submission's retries), never another.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::SpamReason;

pub enum Seen {
    Never,
    /// Used by this same operation: its first verdict stands.
    Before(Option<SpamReason>),
    /// Used by another submission (or a keyless one).
    ByAnother,
}

struct Entry {
    operation_id: Option<String>,
    verdict: Option<SpamReason>,
    until: Instant,
}

pub struct UsedAnswers {
    capacity: usize,
    entries: Mutex<HashMap<[u8; 32], Entry>>,
}

impl UsedAnswers {
    pub fn new(capacity: usize) -> UsedAnswers {
        UsedAnswers { capacity, entries: Mutex::new(HashMap::new()) }
    }

    pub fn seen(&self, answer: &str, operation_id: Option<&str>) -> Seen {
        let key: [u8; 32] = Sha256::digest(answer.as_bytes()).into();
        let Ok(entries) = self.entries.lock() else { return Seen::ByAnother };
        match entries.get(&key) {
            Some(e) if e.until <= Instant::now() => Seen::Never,
            Some(e) if operation_id.is_some() && e.operation_id.as_deref() == operation_id => {
                Seen::Before(e.verdict)
            }
            Some(_) => Seen::ByAnother,
            None => Seen::Never,
        }
    }

    /// Remembers `answer` for `keep_for`; false when the memory is full of live entries
    /// (the answer then cannot be accepted: its replay could not be refused).
    pub fn remember(
        &self,
        answer: &str,
        operation_id: Option<&str>,
        verdict: Option<SpamReason>,
        keep_for: Duration,
    ) -> bool {
        let key: [u8; 32] = Sha256::digest(answer.as_bytes()).into();
        let Ok(mut entries) = self.entries.lock() else { return false };
        let now = Instant::now();
        if entries.len() >= self.capacity {
            entries.retain(|_, e| e.until > now);
        }
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            return false;
        }
        let entry = Entry { operation_id: operation_id.map(String::from), verdict, until: now + keep_for };
        entries.insert(key, entry);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_serves_one_operation_and_the_memory_is_bounded() {
        let used = UsedAnswers::new(2);
        let hour = Duration::from_secs(3600);
        assert!(matches!(used.seen("a", Some("op-1")), Seen::Never));
        assert!(used.remember("a", Some("op-1"), None, hour));
        assert!(matches!(used.seen("a", Some("op-1")), Seen::Before(None)));
        assert!(matches!(used.seen("a", Some("op-2")), Seen::ByAnother));
        assert!(matches!(used.seen("a", None), Seen::ByAnother));
        assert!(used.remember("b", None, None, hour));
        assert!(!used.remember("c", None, None, hour), "full of live entries");
    }

    #[test]
    fn expired_answers_are_forgotten() {
        let used = UsedAnswers::new(1);
        assert!(used.remember("a", Some("op-1"), None, Duration::ZERO));
        assert!(matches!(used.seen("a", Some("op-2")), Seen::Never));
        assert!(used.remember("b", Some("op-1"), None, Duration::from_secs(60)), "the expired one made room");
    }
}
