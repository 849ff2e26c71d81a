//! The connection: one type for both backends (`diesel::MultiConnection`), so that every
//! query is ordinary Rust written once against `DbConnection`. The few real differences are
//! a visible `match` on the backend: `BEGIN IMMEDIATE` on SQLite (`write_tx`), row locks
//! with `SKIP LOCKED` on PostgreSQL, statements the shared dialect cannot express
//! (`ON CONFLICT`), which run on the backend's own connection (`execute_native`), and
//! inserts of many rows (`insert_rows`: one statement on PostgreSQL, a kept one per row on
//! SQLite).

use std::time::{Duration, Instant};

use diesel::connection::{AnsiTransactionManager, Connection, SimpleConnection, TransactionManager};
use diesel::query_builder::InsertStatement;
use diesel::query_dsl::methods::ExecuteDsl;
use diesel::result::Error;
use diesel::sqlite::Sqlite;
use diesel::{Insertable, PgConnection, QueryResult, RunQueryDsl, SqliteConnection};

use super::prepared::Prepared;

/// How often a waiting writer tries SQLite's write lock again.
pub const LOCK_POLL: Duration = Duration::from_millis(1);

/// `BEGIN IMMEDIATE`, tried again every millisecond while another connection holds the write
/// lock, up to the busy timeout. SQLite's own busy handler sleeps 1, 2, 5 … then 100 ms
/// between tries: against a writer that commits batch after batch with short pauses (a
/// retention pass in a process of its own), it looked while the lock was held nearly every
/// time, and accepts waited seconds (`cargo bench --bench load -- --only-purge`). The limit
/// is the connection's own busy timeout (`database.busy_timeout_ms`, set when it was opened).
fn begin_immediate(c: &mut SqliteConnection) -> QueryResult<()> {
    #[derive(diesel::QueryableByName)]
    struct Busy {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        timeout: i64,
    }
    // Kept prepared on the connection: read at the start of every write transaction.
    let configured = Prepared::<Sqlite>::new("PRAGMA busy_timeout").get_result::<Busy>(c)?.timeout;
    c.batch_execute("PRAGMA busy_timeout = 0")?;
    let started = Instant::now();
    let limit = Duration::from_millis(u64::try_from(configured).unwrap_or(0));
    let begun = loop {
        match AnsiTransactionManager::begin_transaction_sql(c, "BEGIN IMMEDIATE") {
            Err(Error::DatabaseError(_, info))
                if info.message().contains("database is locked") && started.elapsed() < limit =>
            {
                std::thread::sleep(LOCK_POLL)
            }
            other => break other,
        }
    };
    // Statements inside the transaction (and reads on this connection later) wait in the
    // busy handler as configured.
    let restored = c.batch_execute(&format!("PRAGMA busy_timeout = {}", limit.as_millis()));
    if begun.is_ok() && restored.is_err() {
        AnsiTransactionManager::rollback_transaction(c)?;
    }
    begun.and(restored)
}

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
        begin_immediate(sqlite)?;
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
    /// cannot express (`ON CONFLICT … DO NOTHING / DO UPDATE`), still written once.
    pub fn execute_native<Q>(&mut self, query: Q) -> QueryResult<usize>
    where
        Q: ExecuteDsl<SqliteConnection> + ExecuteDsl<PgConnection>,
    {
        match self {
            DbConnection::Sqlite(c) => ExecuteDsl::<SqliteConnection>::execute(query, c),
            DbConnection::Pg(c) => ExecuteDsl::<PgConnection>::execute(query, c),
        }
    }

    /// Inserts `rows`: on PostgreSQL in one statement (one round trip), on SQLite one row at
    /// a time through one kept statement. diesel never keeps a statement of many rows
    /// prepared, so SQLite parsed and planned the accept's effect rows anew on every accept
    /// (6 % of the server's CPU under accepts, by `perf`); with no round trip to save, a kept
    /// single-row statement run per row costs less.
    pub fn insert_rows<'r, T, R>(&mut self, table: T, rows: &'r [R]) -> QueryResult<()>
    where
        T: diesel::Table + Copy,
        &'r R: Insertable<T>,
        &'r [R]: Insertable<T>,
        InsertStatement<T, <&'r R as Insertable<T>>::Values>: ExecuteDsl<SqliteConnection>,
        InsertStatement<T, <&'r [R] as Insertable<T>>::Values>: ExecuteDsl<PgConnection>,
    {
        match self {
            DbConnection::Sqlite(c) => {
                for row in rows {
                    ExecuteDsl::<SqliteConnection>::execute(diesel::insert_into(table).values(row), c)?;
                }
            }
            DbConnection::Pg(c) if !rows.is_empty() => {
                ExecuteDsl::<PgConnection>::execute(diesel::insert_into(table).values(rows), c)?;
            }
            DbConnection::Pg(_) => {}
        }
        Ok(())
    }

    /// The PostgreSQL connection, for the statements written for it alone (`claim_pg`).
    pub fn pg(&mut self) -> Option<&mut PgConnection> {
        match self {
            DbConnection::Pg(c) => Some(c),
            DbConnection::Sqlite(_) => None,
        }
    }
}
