//! The pool's connection manager: opens a connection of the configured backend and sets
//! its session up (SQLite pragmas, PostgreSQL lock timeout). On PostgreSQL no ping when a
//! connection is checked out (a round trip per request), except for a while after one of
//! the pool's connections met the server gone (`Health`). Then every check-out is pinged and
//! dead connections (a database restart, a cut network) are replaced instead of failing one
//! request each; on PostgreSQL the ping asks whether the server takes writes, so that a
//! connection to a node demoted or left read-only by a failover is replaced too (with
//! `target_session_attrs=read-write` the new one reaches the new primary).

use diesel::r2d2::{ManageConnection, R2D2Connection};
use diesel::{Connection, SqliteConnection};

use super::health::Health;
use super::{establish_pg, DatabaseUrl, DbConnection, PgSession, SqlitePragmas};

/// Opens connections of one backend; `Pool::connect` builds it from the configuration.
pub struct Manager {
    pub(super) url: DatabaseUrl,
    pub(super) sqlite: SqlitePragmas,
    pub(super) pg: PgSession,
    pub(super) health: Health,
}

impl ManageConnection for Manager {
    type Connection = DbConnection;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<DbConnection, Self::Error> {
        use diesel::r2d2::Error::{ConnectionError, QueryError};
        match &self.url {
            DatabaseUrl::Sqlite(path) => {
                let mut c = SqliteConnection::establish(&path.to_string_lossy()).map_err(ConnectionError)?;
                self.sqlite.apply(&mut c).map_err(QueryError)?;
                Ok(DbConnection::Sqlite(c))
            }
            DatabaseUrl::Postgres(url) => {
                let after_error = self.health.suspected();
                let mut c = establish_pg(url).map_err(ConnectionError)?;
                self.pg.apply(&mut c).map_err(QueryError)?;
                super::primary_pg::opened(&mut c, &self.health, after_error).map_err(QueryError)?;
                Ok(DbConnection::Pg(c))
            }
        }
    }

    fn is_valid(&self, conn: &mut DbConnection) -> Result<(), Self::Error> {
        match conn {
            DbConnection::Pg(_) if !self.health.suspected() => Ok(()),
            DbConnection::Pg(c) => {
                super::primary_pg::require_writable(c).map_err(diesel::r2d2::Error::QueryError)
            }
            // An open file does not drop: no statement per check-out (it was parsed each time).
            DbConnection::Sqlite(_) => Ok(()),
        }
    }

    fn has_broken(&self, conn: &mut DbConnection) -> bool {
        self.health.checked_in();
        conn.is_broken()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `.cargo/config.toml` builds the bundled SQLite with the query planner stability
    /// guarantee: without it every statement with a bound `LIMIT` is compiled again on each
    /// execution (see docs/SCALING.md).
    #[test]
    fn the_bundled_sqlite_keeps_its_prepared_statements() {
        use diesel::sql_types::Integer;
        use diesel::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Used {
            #[diesel(sql_type = Integer)]
            used: i32,
        }
        let mut c = SqliteConnection::establish(":memory:").unwrap();
        let q = diesel::sql_query("SELECT sqlite_compileoption_used('ENABLE_QPSG') AS used");
        assert_eq!(q.get_result::<Used>(&mut c).unwrap().used, 1);
    }
}
