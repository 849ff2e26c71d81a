//! Sign-in throttling that holds under parallel guesses.
//!
//! - An attempt is counted *before* its password is verified, under one lock, so parallel
//!   guesses cannot all pass the check first; a success refunds it.
//! - Per email (normalised as sign-in does): the first [`EMAIL.free`] failures cost nothing,
//!   then each further attempt must wait a delay that doubles up to [`EMAIL.cap`]. No hard
//!   lockout that anyone could trigger against an admin: the owner waits a minute at most.
//! - Per client (IPv6 by /64, see [`crate::config::proxies::client_bucket`]): more failures are free,
//!   and the delay grows up to 15 minutes.
//! - The maps are bounded ([`MAX_ENTRIES`]) and forget a key [`FORGET`] after its last failure.
//! - argon2 verifications (about 19 MiB each) run at most about one per core at once; others
//!   wait up to [`VERIFY_WAIT`] for a turn, then get a 429.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::base::metrics::{self, Collector, IntCounter, IntGauge};
use crate::domain::digest;

/// Keys kept before the oldest are dropped.
pub const MAX_ENTRIES: usize = 100_000;
/// A key is forgotten this long after its last failure.
pub const FORGET: Duration = Duration::from_secs(15 * 60);
/// How long a sign-in waits for a verification slot before a 429.
pub const VERIFY_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// Failures before any delay.
    pub free: u32,
    /// The longest delay between two attempts.
    pub cap: Duration,
}

pub const EMAIL: Policy = Policy { free: 3, cap: Duration::from_secs(60) };
pub const CLIENT: Policy = Policy { free: 10, cap: Duration::from_secs(15 * 60) };

impl Policy {
    /// The wait after the `failures`-th failure: none while free, then 1 s, 2 s, 4 s … cap.
    pub fn delay(self, failures: u32) -> Duration {
        match failures.checked_sub(self.free) {
            None => Duration::ZERO,
            Some(n) => Duration::from_secs(1u64 << n.min(20)).min(self.cap),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Client(Option<IpAddr>),
    Email(String),
}

impl Key {
    fn policy(&self) -> Policy {
        match self {
            Key::Client(_) => CLIENT,
            Key::Email(_) => EMAIL,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    failures: u32,
    last: Instant,
    next_allowed: Instant,
}

/// An attempt counted by [`LoginThrottle::begin`]: refund it on success or when it was
/// never verified.
#[derive(Debug)]
pub struct Attempt {
    keys: [Key; 2],
    /// The email's digest, for logs.
    pub email_digest: String,
}

/// This process's sign-in counters on `/metrics`.
struct Counters {
    /// `onceform_login_verifications_total`: password verifications run.
    verifications: IntCounter,
    /// `onceform_login_verifications_peak`: most verifications running at once; raised under
    /// its lock so that two new peaks cannot write it out of order.
    peak: Mutex<IntGauge>,
    /// `onceform_login_delayed_total`.
    delayed: IntCounter,
    /// `onceform_login_busy_total`.
    busy: IntCounter,
}

impl Counters {
    fn new() -> metrics::Result<Counters> {
        Ok(Counters {
            verifications: IntCounter::new(
                "onceform_login_verifications_total",
                "Password verifications run.",
            )?,
            peak: Mutex::new(IntGauge::new(
                "onceform_login_verifications_peak",
                "Most verifications running at once.",
            )?),
            delayed: IntCounter::new(
                "onceform_login_delayed_total",
                "Sign-ins refused to wait (per email or client).",
            )?,
            busy: IntCounter::new(
                "onceform_login_busy_total",
                "Sign-ins refused: every verification slot busy.",
            )?,
        })
    }
}

pub struct LoginThrottle {
    entries: Mutex<HashMap<Key, Entry>>,
    verifier: Arc<Semaphore>,
    in_flight: AtomicU64,
    counters: Counters,
}

impl LoginThrottle {
    /// A throttle with a verification slot per core.
    pub fn new() -> metrics::Result<LoginThrottle> {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        LoginThrottle::with_slots(cores)
    }

    pub fn with_slots(slots: usize) -> metrics::Result<LoginThrottle> {
        Ok(LoginThrottle {
            entries: Mutex::default(),
            verifier: Arc::new(Semaphore::new(slots.max(1))),
            in_flight: AtomicU64::new(0),
            counters: Counters::new()?,
        })
    }

    /// Counts an attempt for the client and the (normalised) email, or `Err(seconds)` to wait.
    pub fn begin(&self, client: Option<IpAddr>, email: &str) -> Result<Attempt, u64> {
        let email_digest = short_digest(email);
        let keys = [
            Key::Client(client.map(crate::config::proxies::client_bucket)),
            Key::Email(email_digest.clone()),
        ];
        let now = Instant::now();
        let Ok(mut map) = self.entries.lock() else { return Err(1) };
        if map.len() >= MAX_ENTRIES {
            map.retain(|_, e| now.duration_since(e.last) < FORGET);
        }
        while map.len() >= MAX_ENTRIES {
            let Some(oldest) = map.iter().min_by_key(|(_, e)| e.last).map(|(k, _)| k.clone()) else { break };
            map.remove(&oldest);
        }
        let wait = keys
            .iter()
            .filter_map(|k| map.get(k).filter(|e| now.duration_since(e.last) < FORGET))
            .map(|e| e.next_allowed.saturating_duration_since(now))
            .max()
            .unwrap_or_default();
        if !wait.is_zero() {
            self.counters.delayed.inc();
            return Err(wait.as_secs_f64().ceil().max(1.0) as u64);
        }
        for key in &keys {
            let entry = map.entry(key.clone()).or_insert(Entry { failures: 0, last: now, next_allowed: now });
            if now.duration_since(entry.last) >= FORGET {
                entry.failures = 0;
            }
            entry.failures += 1;
            entry.last = now;
            entry.next_allowed = now + key.policy().delay(entry.failures);
        }
        Ok(Attempt { keys, email_digest })
    }

    /// The password was right: the email starts afresh, the client gets its attempt back.
    pub fn succeeded(&self, attempt: Attempt) {
        let Ok(mut map) = self.entries.lock() else { return };
        let [client, email] = attempt.keys;
        map.remove(&email);
        refund(&mut map, client);
    }

    /// The attempt was never verified (no slot): it does not count.
    pub fn release(&self, attempt: Attempt) {
        let Ok(mut map) = self.entries.lock() else { return };
        for key in attempt.keys {
            refund(&mut map, key);
        }
    }

    /// A turn to verify a password, or `None` when all slots stayed busy for [`VERIFY_WAIT`].
    pub async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        match tokio::time::timeout(VERIFY_WAIT, self.verifier.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Some(permit),
            _ => {
                self.counters.busy.inc();
                None
            }
        }
    }

    /// Runs one password verification (holding a [`slot`](Self::slot)), counting it.
    pub fn verify(&self, password: &str, hash: &str) -> bool {
        self.counters.verifications.inc();
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        if let Ok(peak) = self.counters.peak.lock() {
            if peak.get() < now as i64 {
                peak.set(now as i64);
            }
        }
        let ok = super::credentials::verify_password(password, hash);
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        ok
    }

    /// Keys currently remembered (bounded by [`MAX_ENTRIES`]).
    pub fn len(&self) -> usize {
        self.entries.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// This process's sign-in counters, for the registry of `/metrics`.
    pub fn collectors(&self) -> Vec<Box<dyn Collector>> {
        let c = &self.counters;
        let peak = c.peak.lock().map_or_else(|e| e.into_inner().clone(), |g| g.clone());
        vec![
            Box::new(c.verifications.clone()),
            Box::new(peak),
            Box::new(c.delayed.clone()),
            Box::new(c.busy.clone()),
        ]
    }
}

fn refund(map: &mut HashMap<Key, Entry>, key: Key) {
    if let Some(entry) = map.get_mut(&key) {
        entry.failures = entry.failures.saturating_sub(1);
        entry.next_allowed = entry.last + key.policy().delay(entry.failures);
        if entry.failures == 0 {
            map.remove(&key);
        }
    }
}

/// The email as logs and the throttle name it: a digest of its normalised form, never the email.
pub fn short_digest(email: &str) -> String {
    digest(&super::credentials::normalise_email(email)).chars().take(16).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> Option<IpAddr> {
        Some([10, 0, 0, last].into())
    }

    #[test]
    fn delays_grow_and_are_capped() {
        assert_eq!(EMAIL.delay(1), Duration::ZERO);
        assert_eq!(EMAIL.delay(3), Duration::from_secs(1));
        assert_eq!(EMAIL.delay(4), Duration::from_secs(2));
        assert_eq!(EMAIL.delay(40), EMAIL.cap);
        assert_eq!(CLIENT.delay(100), CLIENT.cap);
    }

    #[test]
    fn attempts_count_before_verifying_and_the_email_is_normalised() {
        let t = LoginThrottle::with_slots(1).unwrap();
        for i in 0..EMAIL.free {
            assert!(t.begin(ip(i as u8), "ada@example.com").is_ok());
        }
        assert_eq!(t.begin(ip(99), "  ADA@example.com ").unwrap_err(), 1, "same email, other client");
        assert!(t.begin(ip(99), "bob@example.com").is_ok());
    }

    #[test]
    fn success_refunds_and_unverified_attempts_do_not_count() {
        let t = LoginThrottle::with_slots(1).unwrap();
        let a = t.begin(ip(1), "a@b.c").unwrap();
        let b = t.begin(ip(1), "a@b.c").unwrap();
        t.release(b);
        t.succeeded(a);
        assert!(t.is_empty());
    }

    #[test]
    fn ipv6_clients_share_a_bucket_per_64() {
        let t = LoginThrottle::with_slots(1).unwrap();
        for i in 0..CLIENT.free {
            let addr: IpAddr = format!("2001:db8:1:2::{i:x}").parse().unwrap();
            assert!(t.begin(Some(addr), &format!("u{i}@example.com")).is_ok());
        }
        let same64: IpAddr = "2001:db8:1:2:ffff::1".parse().unwrap();
        assert!(t.begin(Some(same64), "new@example.com").is_err());
        let other64: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert!(t.begin(Some(other64), "new@example.com").is_ok());
    }
}
