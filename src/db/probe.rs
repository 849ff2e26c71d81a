//! `check-config --connect`: whether the configured database answers, and how many
//! migrations it still lacks, without creating, migrating or locking anything.

use diesel::prelude::*;

use super::{establish_pg, DatabaseUrl, MIGRATIONS};
use crate::config::DatabaseConfig;

/// What a connection attempt found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// It answered; `pending` migrations are not applied yet (`migrate` or a start applies them).
    Answered { pending: usize },
    /// A SQLite file that does not exist yet (`migrate` or a start creates it).
    NoFileYet,
}

/// Connects once to `config.url` (read-only for SQLite) and counts the pending migrations.
/// Blocking: the caller puts a deadline on it.
pub fn probe(config: &DatabaseConfig) -> anyhow::Result<Probe> {
    let pending = match &config.url {
        DatabaseUrl::Sqlite(path) => {
            if !path.exists() {
                return Ok(Probe::NoFileYet);
            }
            let uri = format!("file:{}?mode=ro", path.display());
            let mut conn = SqliteConnection::establish(&uri)
                .map_err(|e| anyhow::anyhow!("cannot open SQLite database {}: {e}", path.display()))?;
            pending(&mut conn)?
        }
        DatabaseUrl::Postgres(url) => {
            let mut conn = establish_pg(url)
                .map_err(|e| anyhow::anyhow!("cannot connect to PostgreSQL: {}", e.to_string().trim()))?;
            pending(&mut conn)?
        }
    };
    Ok(Probe::Answered { pending })
}

#[derive(QueryableByName)]
struct Version {
    #[diesel(sql_type = diesel::sql_types::Text)]
    version: String,
}

/// The embedded migrations not recorded in `__diesel_schema_migrations` (all of them when
/// the table is missing). Read directly: diesel's harness would create the table first.
fn pending<C: Connection>(conn: &mut C) -> anyhow::Result<usize>
where
    C::Backend: diesel::backend::Backend,
    Version: QueryableByName<C::Backend>,
    diesel::query_builder::SqlQuery: diesel::query_dsl::LoadQuery<'static, C, Version>,
{
    let applied: Vec<String> = diesel::sql_query("SELECT version FROM __diesel_schema_migrations")
        .load::<Version>(conn)
        .map(|rows| rows.into_iter().map(|r| r.version).collect())
        .unwrap_or_default();
    let embedded = diesel::migration::MigrationSource::<C::Backend>::migrations(&MIGRATIONS)
        .map_err(|e| anyhow::anyhow!("reading the embedded migrations: {e}"))?;
    Ok(embedded.iter().filter(|m| !applied.contains(&m.name().version().to_string())).count())
}
