//! A bounded memory of captcha answers already used, until they expire: a solved answer
//! serves one submission (and that submission's retries), never another.
//!
//! Answers are remembered by what identifies them (an ALTCHA challenge hash, a provider's
//! token), never by the posted bytes, and only once they were accepted: a refused answer
//! costs no memory. Each client (IPv6 by /64) may hold at most [`PER_CLIENT`] live answers,
//! so a client that floods the memory runs out of room for itself, not for everyone; the
//! whole memory is bounded by its capacity.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Live answers one client may hold (a client that needs more within a challenge's
/// lifetime is not a visitor filling in forms).
pub const PER_CLIENT: usize = 64;

/// Whom an answer is counted against: the client's bucket, or one bucket for requests whose
/// address is unknown.
pub type Client = Option<IpAddr>;

/// What [`UsedAnswers::claim`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Not seen before: now remembered for this operation.
    New,
    /// Already used by this same operation (its retry).
    Same,
    /// Used by another submission (or a keyless one).
    Taken,
    /// The client holds [`PER_CLIENT`] live answers already.
    ClientFull,
    /// The memory is full of live answers.
    Full,
}

struct Entry {
    operation_id: Option<String>,
    until: Instant,
}

#[derive(Default)]
struct Memory {
    answers: HashMap<[u8; 32], Entry>,
    /// The expiry of each live answer, per client.
    clients: HashMap<Client, Vec<Instant>>,
}

pub struct UsedAnswers {
    capacity: usize,
    memory: Mutex<Memory>,
}

impl UsedAnswers {
    pub fn new(capacity: usize) -> UsedAnswers {
        UsedAnswers { capacity, memory: Mutex::new(Memory::default()) }
    }

    /// Whether `key` was used already: by `operation_id` (`Same`) or by another (`Taken`);
    /// `New` when it was not (nothing is remembered by this call).
    pub fn seen(&self, key: &[u8; 32], operation_id: Option<&str>) -> Claim {
        let Ok(m) = self.memory.lock() else { return Claim::Taken };
        m.lookup(key, operation_id, Instant::now()).unwrap_or(Claim::New)
    }

    /// Remembers `key` for `operation_id` until `keep_for` from now, unless it was used
    /// already or there is no room for it (then it must not be accepted: its replay could
    /// not be refused).
    pub fn claim(
        &self,
        key: [u8; 32],
        operation_id: Option<&str>,
        client: Client,
        keep_for: Duration,
    ) -> Claim {
        let Ok(mut m) = self.memory.lock() else { return Claim::Full };
        let now = Instant::now();
        if let Some(found) = m.lookup(&key, operation_id, now) {
            return found;
        }
        if m.live(client, now) >= PER_CLIENT {
            return Claim::ClientFull;
        }
        if m.answers.len() >= self.capacity {
            m.forget_expired(now);
            if m.answers.len() >= self.capacity {
                return Claim::Full;
            }
        }
        let until = now + keep_for;
        m.answers.insert(key, Entry { operation_id: operation_id.map(String::from), until });
        m.clients.entry(client).or_default().push(until);
        Claim::New
    }

    /// How long until `client` may claim an answer again; `None` when it may now.
    pub fn client_waits(&self, client: Client) -> Option<Duration> {
        let Ok(mut m) = self.memory.lock() else { return None };
        let now = Instant::now();
        if m.live(client, now) < PER_CLIENT {
            return None;
        }
        m.clients.get(&client)?.iter().min().map(|t| t.saturating_duration_since(now))
    }
}

impl Memory {
    fn lookup(&self, key: &[u8; 32], operation_id: Option<&str>, now: Instant) -> Option<Claim> {
        match self.answers.get(key) {
            Some(e) if e.until <= now => None,
            Some(e) if operation_id.is_some() && e.operation_id.as_deref() == operation_id => {
                Some(Claim::Same)
            }
            Some(_) => Some(Claim::Taken),
            None => None,
        }
    }

    /// `client`'s live answers (its expired ones are dropped on the way).
    fn live(&mut self, client: Client, now: Instant) -> usize {
        let Some(untils) = self.clients.get_mut(&client) else { return 0 };
        untils.retain(|t| *t > now);
        let n = untils.len();
        if n == 0 {
            self.clients.remove(&client);
        }
        n
    }

    fn forget_expired(&mut self, now: Instant) {
        self.answers.retain(|_, e| e.until > now);
        self.clients.retain(|_, untils| {
            untils.retain(|t| *t > now);
            !untils.is_empty()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn client(n: u8) -> Client {
        Some(IpAddr::from([192, 0, 2, n]))
    }

    #[test]
    fn an_answer_serves_one_operation() {
        let used = UsedAnswers::new(10);
        assert_eq!(used.seen(&[1; 32], Some("op-1")), Claim::New);
        assert_eq!(used.claim([1; 32], Some("op-1"), client(1), HOUR), Claim::New);
        assert_eq!(used.seen(&[1; 32], Some("op-1")), Claim::Same);
        assert_eq!(used.claim([1; 32], Some("op-1"), client(1), HOUR), Claim::Same, "its retry");
        assert_eq!(used.claim([1; 32], Some("op-2"), client(2), HOUR), Claim::Taken);
        assert_eq!(used.claim([1; 32], None, client(1), HOUR), Claim::Taken);
    }

    #[test]
    fn a_flooding_client_fills_its_own_share_only() {
        let used = UsedAnswers::new(1_000);
        for i in 0..PER_CLIENT {
            assert_eq!(used.claim([i as u8; 32], None, client(1), HOUR), Claim::New);
        }
        assert_eq!(used.claim([200; 32], None, client(1), HOUR), Claim::ClientFull);
        assert!(used.client_waits(client(1)).is_some_and(|d| d > Duration::from_secs(3500)));
        assert_eq!(used.claim([201; 32], None, client(2), HOUR), Claim::New, "another client is served");
        assert_eq!(used.client_waits(client(2)), None);
    }

    #[test]
    fn the_memory_is_bounded_and_expired_answers_are_forgotten() {
        let used = UsedAnswers::new(2);
        assert_eq!(used.claim([1; 32], None, client(1), Duration::ZERO), Claim::New);
        assert_eq!(used.seen(&[1; 32], Some("op-2")), Claim::New, "expired");
        assert_eq!(used.claim([2; 32], None, client(2), HOUR), Claim::New);
        assert_eq!(used.claim([3; 32], None, client(3), HOUR), Claim::New, "the expired one made room");
        assert_eq!(used.claim([4; 32], None, client(4), HOUR), Claim::Full);
    }
}
