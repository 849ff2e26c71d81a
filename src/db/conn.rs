//! The connection: one type for both backends (`diesel::MultiConnection`), so that every
//! query is ordinary Rust written once against `DbConnection`. The few real differences are
//! a visible `match` on the backend: `BEGIN IMMEDIATE` on SQLite (`write_tx`), row locks
//! with `SKIP LOCKED` on PostgreSQL, and statements the shared dialect cannot express
//! (`ON CONFLICT`, a multi-row `INSERT`), which run on the backend's own connection
//! (`execute_native`).

use diesel::connection::{AnsiTransactionManager, Connection, TransactionManager};
use diesel::query_dsl::methods::ExecuteDsl;
use diesel::{PgConnection, QueryResult, SqliteConnection};

#[derive(diesel::MultiConnection)]
pub enum DbConnection {
    Sqlite(SqliteConnection),
    Pg(PgConnection),
}

impl DbConnection {
    /// A write transaction; on SQLite it takes the write lock up front (`BEGIN IMMEDIATE`),
    /// so that two writers never deadlock upgrading a read lock. Inside a transaction already
    /// (a job of the SQLite group-commit writer, which holds the lock) it is a savepoint.
    pub fn write_transaction<T, E, F>(&mut self, f: F) -> Result<T, E>
    where
        F: FnOnce(&mut Self) -> Result<T, E>,
        E: From<diesel::result::Error>,
    {
        type Manager = <DbConnection as Connection>::TransactionManager;
        if matches!(Manager::transaction_manager_status_mut(self).transaction_depth(), Ok(Some(_))) {
            return self.transaction(f);
        }
        let sqlite = match self {
            DbConnection::Sqlite(c) => c,
            DbConnection::Pg(_) => return self.transaction(f),
        };
        AnsiTransactionManager::begin_transaction_sql(sqlite, "BEGIN IMMEDIATE")?;
        match f(self) {
            Ok(value) => {
                Manager::commit_transaction(self)?;
                Ok(value)
            }
            Err(e) => {
                Manager::rollback_transaction(self)?;
                Err(e)
            }
        }
    }

    /// Runs `query` on the backend's own connection: for statements the shared dialect
    /// cannot express (`ON CONFLICT … DO NOTHING / DO UPDATE`, an `INSERT` of many rows),
    /// still written once.
    pub fn execute_native<Q>(&mut self, query: Q) -> QueryResult<usize>
    where
        Q: ExecuteDsl<SqliteConnection> + ExecuteDsl<PgConnection>,
    {
        match self {
            DbConnection::Sqlite(c) => ExecuteDsl::<SqliteConnection>::execute(query, c),
            DbConnection::Pg(c) => ExecuteDsl::<PgConnection>::execute(query, c),
        }
    }

    /// The PostgreSQL connection, for the statements written for it alone (`claim_pg`).
    pub fn pg(&mut self) -> Option<&mut PgConnection> {
        match self {
            DbConnection::Pg(c) => Some(c),
            DbConnection::Sqlite(_) => None,
        }
    }
}
