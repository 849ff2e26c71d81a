//! The data lifecycle: keyed digests (conversion of older rows), retention with tombstones
//! (`purge`), erasure of one person, historic import, and the redelivery spread.

pub mod commands;
pub mod csv;
pub mod erase;
pub mod import;
pub mod metrics;
pub mod purge;
pub mod rekey;
pub mod schedule;

use crate::config::Config;
use crate::db::Pool;
use crate::domain::keyring::{self, Keyring};

/// What `serve`, `worker` and the lifecycle commands do at start: load the server secret
/// (`ONCEFORM_SECRET`, else `./data/secret`), connect and migrate, and key any digests
/// that are not keyed with the current secret yet.
pub fn connect(config: &Config) -> anyhow::Result<Pool> {
    keyring::install(Keyring::from_env(&config.server.secret_file)?);
    let pool = Pool::connect(&config.database)?;
    let (submissions, conflicts) =
        rekey::rekey(&pool, config).map_err(|e| anyhow::anyhow!("keying stored digests: {e}"))?;
    if submissions + conflicts > 0 {
        tracing::info!(submissions, conflicts, "stored digests keyed with the current secret");
    }
    Ok(pool)
}
