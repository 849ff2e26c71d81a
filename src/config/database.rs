//! `[database]`: which database, and the pool's and the backends' settings.

use serde::Deserialize;
use validator::Validate;

use super::{parsed, DatabaseUrl};

/// `Debug` is written by hand in `redact.rs`: the URL may hold a password.
#[derive(Clone, Deserialize, Validate)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseConfig {
    #[serde(deserialize_with = "parsed::de_database_url")]
    pub url: DatabaseUrl,
    /// Connections in the pool; 0 picks a default for the backend.
    #[validate(range(max = 512))]
    pub pool_size: u32,
    /// How long a request waits for a connection before answering 503.
    #[validate(range(min = 50, max = 60000))]
    pub acquire_timeout_ms: u64,
    /// SQLite: how long a writer waits for the lock before giving up (then 503).
    #[validate(range(min = 0, max = 60000))]
    pub busy_timeout_ms: u64,
    /// SQLite: commit concurrent accepts together (one fsync per batch, a savepoint each).
    pub group_commit: bool,
    /// PostgreSQL: keep prepared statements per connection; `false` behind a pooler in
    /// transaction mode (pgbouncer), where a statement prepared on one server connection
    /// may be executed on another.
    pub prepared_statements: bool,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self {
            url: DatabaseUrl::Sqlite("./data/onceform.db".into()),
            pool_size: 0,
            acquire_timeout_ms: 3000,
            busy_timeout_ms: 5000,
            group_commit: true,
            prepared_statements: true,
        }
    }
}
