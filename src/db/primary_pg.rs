//! Which PostgreSQL server a connection reached and whether it takes writes, for a
//! replicated database (`ONCEFORM_DATABASE_URL` naming several hosts): the readiness probe,
//! the check-out test after a connection error, and this process's counters of reconnects
//! and failovers seen (`/metrics`).
//!
//! "Writable" is asked of the server, never assumed from a connection that answers: a
//! standby answers `SELECT 1`, and a freshly promoted pg_auto_failover node is out of
//! recovery but still `default_transaction_read_only` until the old primary is known gone.

use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error};
use diesel::sql_types::{Bool, Text};
use diesel::PgConnection;

pub use super::health::Health;
use crate::base::metrics::{Collector, Desc, Family, MetricFamily, Result};

#[derive(QueryableByName)]
struct ServerRow {
    #[diesel(sql_type = Text)]
    server: String,
    #[diesel(sql_type = Bool)]
    writable: bool,
}

/// The server's address and port as it reports them (through a pooler: the database server
/// behind it) and whether a write transaction would be allowed there now.
const SERVER: &str = "SELECT coalesce(host(inet_server_addr()), 'local') || ':' || \
     coalesce(inet_server_port(), 0)::text AS server, \
     NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off' AS writable";
const WRITABLE: &str =
    "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off' AS writable";

fn server(conn: &mut PgConnection) -> QueryResult<ServerRow> {
    diesel::sql_query(SERVER).get_result(conn)
}

/// Whether the server behind `conn` takes writes now.
pub fn writable(conn: &mut PgConnection) -> QueryResult<bool> {
    #[derive(QueryableByName)]
    struct Writable {
        #[diesel(sql_type = Bool)]
        writable: bool,
    }
    Ok(diesel::sql_query(WRITABLE).get_result::<Writable>(conn)?.writable)
}

/// `Ok` when the server takes writes, else the error a write would have met.
pub fn require_writable(conn: &mut PgConnection) -> QueryResult<()> {
    if writable(conn)? {
        Ok(())
    } else {
        Err(read_only())
    }
}

fn read_only() -> Error {
    Error::DatabaseError(
        DatabaseErrorKind::ReadOnlyTransaction,
        Box::new("the server is read-only (a standby, or a primary not yet confirmed)".to_string()),
    )
}

/// A new pooled connection of the pool whose health is `health`: counts a reconnect when
/// `after_error`, and a failover when it reached a writable server other than the last.
pub(super) fn opened(conn: &mut PgConnection, health: &Health, after_error: bool) -> QueryResult<()> {
    let row = server(conn)?;
    health.opened(&row.server, row.writable, after_error);
    Ok(())
}

/// The counters on `/metrics`: their families, read from a pool's health when scraped.
pub struct Counters {
    health: Health,
    reconnects: Family,
    failovers: Family,
}

impl Counters {
    /// The counters of the pool whose health is `health` (`Pool::health`).
    pub fn new(health: Health) -> Result<Counters> {
        Ok(Counters {
            health,
            reconnects: Family::counter(
                "onceform_db_reconnects_total",
                "Database connections opened again after a connection error.",
                &[],
            )?,
            failovers: Family::counter(
                "onceform_db_failovers_total",
                "Times new connections reached a different writable PostgreSQL server.",
                &[],
            )?,
        })
    }
}

impl Collector for Counters {
    fn desc(&self) -> Vec<&Desc> {
        vec![self.reconnects.desc(), self.failovers.desc()]
    }

    fn collect(&self) -> Vec<MetricFamily> {
        vec![
            self.reconnects.single(self.health.reconnects() as f64),
            self.failovers.single(self.health.failovers() as f64),
        ]
    }
}
