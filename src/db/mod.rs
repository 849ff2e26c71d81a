//! The database: backend picked from the URL, connection pools, embedded migrations.
//!
//! Every query is ordinary diesel code on `DbConnection` (`conn`: one connection type for
//! both backends), a method of the trait of its area (`Store`, `Queue`, `admin::…`) written
//! once; where the backends really differ a `match` on `DbConnection` says so. The caller
//! owns the transaction (`Store::write_tx`). `schema.rs` is generated from the migrations
//! (migrations/README.md). `with_conn!` runs a block on a pooled connection.

pub mod admin;
pub mod admin_forms;
pub mod api_tokens;
pub mod backup;
pub mod blobs;
pub mod changes;
pub mod claim_many_pg;
pub mod claim_pg;
mod conn;
mod deliveries_pg;
pub mod duplicates;
pub mod erasure;
pub mod files;
pub mod form_versions;
pub mod health;
pub mod hooks;
pub mod lifecycle_stats;
mod lookups;
mod manager;
pub mod models;
mod openssl_exit;
mod owner;
mod prepared;
pub mod primary_pg;
pub mod probe;
pub mod purge;
mod queue;
pub mod recipient_cap;
pub mod rekey;
pub mod rescreen;
pub mod schema;
mod store;
mod writer;
pub mod young_pg;

use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::r2d2::{Pool as R2Pool, PooledConnection};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};

pub use crate::config::DatabaseUrl;
pub use conn::{DbConnection, MultiBackend, LOCK_POLL};
pub use lookups::Lookups;
use manager::Manager;
pub use openssl_exit::establish_pg;
pub(crate) use owner::{owned_by, owned_by_one};
pub use queue::{Queue, QueueStats};
pub use store::{Stats, Store};
pub use writer::{SqliteWriter, Writes};

use crate::base::private_files;
use crate::config::DatabaseConfig;

/// One set of migrations for both backends: they use only SQL both understand.
const MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations");
/// Serialises migrations of several processes starting at once on one PostgreSQL.
const PG_MIGRATION_LOCK: i64 = 0x6f6e_6365_666f;

/// A pool of `DbConnection`s of one backend.
pub type ConnPool = R2Pool<Manager>;
pub type Pooled = PooledConnection<Manager>;

/// A pool of connections to one of the two supported backends; the variant tells which.
#[derive(Clone)]
pub enum Pool {
    Sqlite(ConnPool),
    /// With what the pool knows of its server's health (shared with its manager).
    Pg(ConnPool, health::Health),
}

/// Why a database call failed, as far as a caller needs to know.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The database cannot be reached or is locked: try again later (503).
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// Another transaction holds the row this one needs (PostgreSQL `lock_timeout`).
    #[error("lock wait timed out")]
    LockTimeout,
    #[error("database error: {0}")]
    Query(diesel::result::Error),
}

impl From<diesel::result::Error> for DbError {
    fn from(e: diesel::result::Error) -> Self {
        use diesel::result::Error as E;
        match (&e, DbError::unavailable(&e)) {
            (E::DatabaseError(_, info), _) if info.message().contains("lock timeout") => DbError::LockTimeout,
            (_, Some(why)) => {
                health::seen_unavailable();
                DbError::Unavailable(why)
            }
            (_, None) => DbError::Query(e),
        }
    }
}

impl DbError {
    /// Why `e` says the database cannot be reached or take writes now (a closed connection,
    /// a read-only node, a shutdown); `None`: it says something else. The connection's pool
    /// hears of it (`health`).
    fn unavailable(e: &diesel::result::Error) -> Option<String> {
        use diesel::result::{DatabaseErrorKind as K, Error as E};
        match e {
            E::DatabaseError(K::ClosedConnection | K::UnableToSendCommand | K::ReadOnlyTransaction, info) => {
                Some(info.message().to_string())
            }
            E::DatabaseError(_, info) if info.message().contains("lock timeout") => None,
            E::DatabaseError(_, info) if is_transient(info.message()) => Some(info.message().to_string()),
            E::BrokenTransactionManager | E::RollbackErrorOnCommit { .. } => Some(e.to_string()),
            _ => None,
        }
    }
}

impl From<diesel::r2d2::PoolError> for DbError {
    fn from(e: diesel::r2d2::PoolError) -> Self {
        DbError::Unavailable(e.to_string())
    }
}

fn is_transient(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "database is locked",
        "database is busy",
        "connection",
        "terminating",
        "shutting down",
        "canceling statement",
        "read-only",
    ]
    .iter()
    .any(|needle| m.contains(needle))
}

/// Runs `$body` with `$conn: &mut DbConnection` bound to a pooled connection; the body
/// evaluates to `Result<_, DbError>`. Shorthand for `pool.get()` and a block.
#[macro_export]
macro_rules! with_conn {
    ($pool:expr, |$conn:ident| $body:expr) => {
        match $pool.get() {
            Ok(mut pooled) => {
                let $conn = &mut *pooled;
                $body
            }
            Err(e) => Err(e),
        }
    };
}

impl Pool {
    /// Connects (reporting the real error), migrates, and builds the pool.
    pub fn connect(config: &DatabaseConfig) -> anyhow::Result<Pool> {
        let url = migrate(config)?;
        let sqlite = matches!(url, DatabaseUrl::Sqlite(_));
        let health = health::Health::default();
        let manager = Manager {
            url,
            sqlite: SqlitePragmas { busy_timeout_ms: config.busy_timeout_ms },
            pg: PgSession { prepared_statements: config.prepared_statements },
            health: health.clone(),
        };
        // PostgreSQL check-outs are pinged only after a connection error (see `manager`).
        let pool = R2Pool::builder()
            .max_size(pool_size(config.pool_size, if sqlite { 8 } else { 16 }))
            .min_idle(Some(1))
            .test_on_check_out(true)
            .connection_timeout(Duration::from_millis(config.acquire_timeout_ms))
            .build_unchecked(manager);
        Ok(if sqlite { Pool::Sqlite(pool) } else { Pool::Pg(pool, health) })
    }

    /// A small pool for the file store kept in the database (`[server] files = "database"`),
    /// one per process and database (the database is migrated by whoever opened its main
    /// pool): a worker's effects, the retention pass and the CLI reach the blobs without
    /// being handed the main pool. Connects on first use.
    pub fn for_files(config: &DatabaseConfig) -> Pool {
        use std::sync::{Mutex, OnceLock};
        /// Processes open one database; tests a few. Bounded all the same.
        const MAX_POOLS: usize = 16;
        static POOLS: OnceLock<Mutex<Vec<(DatabaseUrl, Pool)>>> = OnceLock::new();
        let mut pools =
            POOLS.get_or_init(|| Mutex::new(Vec::new())).lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, pool)) = pools.iter().find(|(url, _)| *url == config.url) {
            return pool.clone();
        }
        let sqlite = matches!(config.url, DatabaseUrl::Sqlite(_));
        let health = health::Health::default();
        let manager = Manager {
            url: config.url.clone(),
            sqlite: SqlitePragmas { busy_timeout_ms: config.busy_timeout_ms },
            pg: PgSession { prepared_statements: config.prepared_statements },
            health: health.clone(),
        };
        // One connection per upload streaming in at once (`max_concurrent_uploads`, 8 by
        // default) writes its chunks without waiting for another's.
        let pool = R2Pool::builder()
            .max_size(8)
            .min_idle(Some(0))
            .test_on_check_out(true)
            .connection_timeout(Duration::from_millis(config.acquire_timeout_ms))
            .build_unchecked(manager);
        let pool = if sqlite { Pool::Sqlite(pool) } else { Pool::Pg(pool, health) };
        if pools.len() >= MAX_POOLS {
            pools.remove(0);
        }
        pools.push((config.url.clone(), pool.clone()));
        pool
    }

    /// A connection from the pool.
    pub fn get(&self) -> Result<Pooled, DbError> {
        match self {
            Pool::Sqlite(p) | Pool::Pg(p, _) => Ok(p.get()?),
        }
    }

    /// Readiness: on PostgreSQL the server behind a pooled connection takes writes (a
    /// standby or a node not yet confirmed as primary does not: `primary_pg`); on SQLite the
    /// file answers a read (never the write lock, which a long write would hold and a probe
    /// must not queue behind).
    pub fn ready(&self) -> Result<(), DbError> {
        with_conn!(self, |c| match c.pg() {
            Some(pg) => primary_pg::require_writable(pg).map_err(DbError::from),
            None => diesel::sql_query("SELECT 1").execute(c).map(|_| ()).map_err(DbError::from),
        })
    }

    pub fn backend(&self) -> &'static str {
        match self {
            Pool::Sqlite(_) => "sqlite",
            Pool::Pg(..) => "postgres",
        }
    }

    /// What the pool knows of its server's health (SQLite: nothing, a fresh one).
    pub fn health(&self) -> health::Health {
        match self {
            Pool::Sqlite(_) => health::Health::default(),
            Pool::Pg(_, health) => health.clone(),
        }
    }
}

/// Connects once (reporting the real error) and applies pending migrations, without a
/// pool: `onceform migrate` exits right after, with no pool thread still connecting.
pub fn migrate(config: &DatabaseConfig) -> anyhow::Result<DatabaseUrl> {
    let url = config.url.clone();
    match &url {
        DatabaseUrl::Sqlite(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                private_files::create_dir_all(dir).map_err(|e| {
                    anyhow::anyhow!("cannot create database directory {}: {e}", dir.display())
                })?;
            }
            create_sqlite_file(path)
                .map_err(|e| anyhow::anyhow!("cannot create SQLite database {}: {e}", path.display()))?;
            // Processes started at once on one file: SQLite answers some of their steps
            // "database is locked" at once, without its busy handler (switching a fresh file
            // to WAL, reading it while another process's last connection checkpoints it on
            // exit), so the whole start is tried again within the busy timeout.
            let started = std::time::Instant::now();
            let patience = Duration::from_millis(config.busy_timeout_ms);
            loop {
                match migrate_sqlite(path, config.busy_timeout_ms) {
                    Err(e)
                        if e.to_string().contains("database is locked") && started.elapsed() < patience =>
                    {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    other => break other?,
                }
            }
        }
        DatabaseUrl::Postgres(url) => {
            let mut conn = establish_pg(url)
                .map_err(|e| anyhow::anyhow!("cannot connect to PostgreSQL: {}", e.to_string().trim()))?;
            if !config.prepared_statements {
                conn.set_prepared_statement_cache_size(diesel::connection::CacheSize::Disabled);
            }
            migrate_pg(&mut conn)?;
        }
    }
    Ok(url)
}

/// Creates a missing SQLite file, empty and mode 0600, before SQLite opens it: SQLite gives
/// its `-wal` and `-shm` files the database file's mode, so they are the owner's only too
/// (SQLite itself would create it 0644 under the usual umask). An existing file is left as
/// it is; `:memory:` and `file:` URIs are SQLite's to open.
fn create_sqlite_file(path: &std::path::Path) -> std::io::Result<()> {
    let name = path.as_os_str().to_string_lossy();
    if name == ":memory:" || name.starts_with("file:") {
        return Ok(());
    }
    match private_files::create_new(path) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// Opens the SQLite file with the pool's pragmas and applies the pending migrations under the
/// write lock, taken before the migration table is read: processes started at once on a
/// fresh file wait for the first instead of each applying the same migrations (diesel runs
/// each migration in a nested savepoint).
fn migrate_sqlite(path: &std::path::Path, busy_timeout_ms: u64) -> anyhow::Result<()> {
    let path = path.to_string_lossy();
    let mut conn = SqliteConnection::establish(&path)
        .map_err(|e| anyhow::anyhow!("cannot open SQLite database {path}: {e}"))?;
    SqlitePragmas { busy_timeout_ms }.apply(&mut conn)?;
    conn.immediate_transaction(|c| {
        c.run_pending_migrations(MIGRATIONS).map(|_| ()).map_err(|e| anyhow::anyhow!("migrating {path}: {e}"))
    })
}

/// In one transaction under a transaction-scoped advisory lock, so that it also works
/// through a transaction-pooling pooler (a session lock could be taken on one server
/// connection and released on another).
fn migrate_pg(conn: &mut PgConnection) -> anyhow::Result<()> {
    conn.transaction(|c| {
        c.batch_execute(&format!("SELECT pg_advisory_xact_lock({PG_MIGRATION_LOCK})"))?;
        c.run_pending_migrations(MIGRATIONS)
            .map(|_| ())
            .map_err(|e| anyhow::anyhow!("migrating PostgreSQL: {e}"))
    })
}

fn pool_size(configured: u32, default: u32) -> u32 {
    if configured == 0 {
        default
    } else {
        configured
    }
}

/// How long a statement waits for a row lock (a first request with the same key still in
/// flight) before it gives up with `DbError::LockTimeout` (then: 409 in progress).
const PG_LOCK_TIMEOUT_MS: u32 = 2000;

/// The session of every pooled PostgreSQL connection.
#[derive(Debug, Clone, Copy)]
struct PgSession {
    /// false behind a transaction-pooling pooler (pgbouncer): every statement unnamed.
    prepared_statements: bool,
}

impl PgSession {
    fn apply(&self, conn: &mut PgConnection) -> QueryResult<()> {
        if !self.prepared_statements {
            conn.set_prepared_statement_cache_size(diesel::connection::CacheSize::Disabled);
        }
        conn.batch_execute(&format!("SET lock_timeout = '{PG_LOCK_TIMEOUT_MS}ms'"))?;
        // An accept is one autocommit statement: when its client (this process) is gone,
        // the server stops it instead of committing it (PostgreSQL 14+; older ignore it).
        let _ = conn.batch_execute("SET client_connection_check_interval = '250ms'");
        Ok(())
    }
}

/// WAL, a busy timeout and a durable synchronous setting on every SQLite connection, and
/// temporary files in memory: the group-commit writer runs each job in a savepoint, and
/// SQLite keeps the original of every page a savepoint changes in a statement journal, a
/// temporary file once it passes 64 KiB. On disk that was 13 % of the server's CPU under
/// accepts (`perf`: kernel page-cache writes under `subjournalPageIfRequired`); in memory it
/// holds one job's pages at a time (the journal is emptied when the savepoint is released).
/// A statement's temporary tables (a `DISTINCT`, an `IN` list) are held in memory too.
#[derive(Debug, Clone, Copy)]
struct SqlitePragmas {
    busy_timeout_ms: u64,
}

impl SqlitePragmas {
    fn apply(&self, conn: &mut SqliteConnection) -> QueryResult<()> {
        conn.batch_execute(&format!(
            "PRAGMA busy_timeout = {}; PRAGMA journal_mode = WAL; \
             PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY;",
            self.busy_timeout_ms
        ))?;
        admin::browse::register_unicode_lower(conn)
    }
}
