//! The PostgreSQL pool's connection manager: no ping when a connection is checked out (a
//! round trip per request), except for a while after a connection error was seen anywhere
//! in the process. Then every check-out is pinged and dead connections (a database restart,
//! a cut network) are replaced instead of failing one request each.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use diesel::r2d2::{ConnectionManager, ManageConnection};
use diesel::PgConnection;

/// How long check-outs are pinged after a connection error.
const SUSPECT_FOR_MS: u64 = 10_000;

/// Until when (Unix ms) check-outs are pinged.
static SUSPECT_UNTIL_MS: AtomicU64 = AtomicU64::new(0);

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A connection failed: ping check-outs for a while.
pub fn suspect_connections() {
    SUSPECT_UNTIL_MS.fetch_max(now_ms() + SUSPECT_FOR_MS, Ordering::Relaxed);
}

fn suspect() -> bool {
    now_ms() < SUSPECT_UNTIL_MS.load(Ordering::Relaxed)
}

#[derive(Debug)]
pub struct PgManager(pub ConnectionManager<PgConnection>);

impl ManageConnection for PgManager {
    type Connection = PgConnection;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<PgConnection, Self::Error> {
        self.0.connect()
    }

    fn is_valid(&self, conn: &mut PgConnection) -> Result<(), Self::Error> {
        if suspect() {
            self.0.is_valid(conn)
        } else {
            Ok(())
        }
    }

    fn has_broken(&self, conn: &mut PgConnection) -> bool {
        self.0.has_broken(conn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_error_turns_the_check_out_ping_on_for_a_while() {
        suspect_connections();
        assert!(suspect());
        SUSPECT_UNTIL_MS.store(now_ms().saturating_sub(1), Ordering::Relaxed);
        assert!(!suspect(), "off again once the time is up");
    }
}
