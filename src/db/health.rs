//! What one pool knows of its PostgreSQL server's health: until when its check-outs are
//! pinged (after one of its connections met the server gone, `manager`), and the reconnects
//! and failovers its new connections saw (`primary_pg`, `/metrics`). Held by the pool, shared
//! by its manager; no process globals (a thread's own flag carries an error to the pool of
//! the connection it holds).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use std::cell::Cell;

/// How long check-outs are pinged after a connection error.
const SUSPECT_FOR_MS: u64 = 10_000;

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

thread_local! {
    /// This thread met an error saying the server is gone (`DbError::Unavailable`) on the
    /// connection it holds: the connection's pool hears of it when the connection is checked
    /// in (`Health::checked_in`), on this thread, right after.
    static SEEN: Cell<bool> = const { Cell::new(false) };
}

/// A statement on this thread's connection found the server gone.
pub(super) fn seen_unavailable() {
    SEEN.with(|seen| seen.set(true));
}

/// One pool's health; clones share it.
#[derive(Clone, Default)]
pub struct Health(Arc<State>);

#[derive(Default)]
struct State {
    /// Until when (Unix ms) check-outs are pinged.
    suspect_until: AtomicU64,
    /// Connections opened while connections were suspect.
    reconnects: AtomicU64,
    /// Times a new connection reached a writable server other than the last one.
    failovers: AtomicU64,
    /// The writable server (host:port) new connections reached last.
    last_primary: Mutex<Option<String>>,
}

impl Health {
    /// A connection failed: ping check-outs for a while.
    pub(super) fn suspect(&self) {
        self.0.suspect_until.fetch_max(now_ms() + SUSPECT_FOR_MS, Ordering::Relaxed);
    }

    /// Whether check-outs are pinged now.
    pub(super) fn suspected(&self) -> bool {
        now_ms() < self.0.suspect_until.load(Ordering::Relaxed)
    }

    /// At a connection's check-in: when the thread that used it met the server gone
    /// (`seen_unavailable`), the pool suspects its connections.
    pub(super) fn checked_in(&self) {
        if SEEN.with(|seen| seen.replace(false)) {
            self.suspect();
        }
    }

    /// A new connection reached `server` (`writable`: it takes writes); `after_error`: it
    /// replaces one that failed.
    pub(super) fn opened(&self, server: &str, writable: bool, after_error: bool) {
        if after_error {
            self.0.reconnects.fetch_add(1, Ordering::Relaxed);
        }
        if !writable {
            return;
        }
        let mut last = self.0.last_primary.lock().unwrap_or_else(|e| e.into_inner());
        if last.as_deref().is_some_and(|l| l != server) {
            self.0.failovers.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(server = %server, "connected to a new primary");
        }
        *last = Some(server.to_string());
    }

    /// Connections opened again after a connection error.
    pub fn reconnects(&self) -> u64 {
        self.0.reconnects.load(Ordering::Relaxed)
    }

    /// Times new connections reached a different writable server.
    pub fn failovers(&self) -> u64 {
        self.0.failovers.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_error_turns_the_check_out_ping_on_for_a_while() {
        let health = Health::default();
        assert!(!health.suspected());
        health.suspect();
        assert!(health.suspected());
        health.0.suspect_until.store(now_ms().saturating_sub(1), Ordering::Relaxed);
        assert!(!health.suspected(), "off again once the time is up");
        health.suspect();
        assert!(!Health::default().suspected(), "another pool's is its own");
    }

    #[test]
    fn an_error_met_on_a_connection_reaches_its_pool_at_check_in() {
        let health = Health::default();
        health.checked_in();
        assert!(!health.suspected(), "nothing met");
        seen_unavailable();
        health.checked_in();
        assert!(health.suspected());
        let other = Health::default();
        other.checked_in();
        assert!(!other.suspected(), "the flag was taken by the first check-in");
    }

    #[test]
    fn a_new_writable_server_is_a_failover_and_a_connection_after_an_error_a_reconnect() {
        let health = Health::default();
        health.opened("10.0.0.1:5432", true, false);
        health.opened("10.0.0.2:5432", false, true);
        assert_eq!((health.reconnects(), health.failovers()), (1, 0), "a standby is no failover");
        health.opened("10.0.0.2:5432", true, true);
        health.opened("10.0.0.2:5432", true, false);
        assert_eq!((health.reconnects(), health.failovers()), (2, 1));
    }
}
