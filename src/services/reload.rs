//! Re-reading the configuration while serving (`SIGHUP`, `onceform reload`): the file is
//! checked by the `check-config` rules first and its forms' versions are stored
//! (`form_versions`); a good one puts its forms in force at once (a
//! request in flight finishes under the forms it started with), a bad one changes nothing
//! and is logged, counted and shown on the admin dashboard until a good one loads. The
//! forms defined in the admin are merged in at each reload (`admin_forms`). The
//! workers reload their effect settings from the same file (`load`; `app::worker_reload`);
//! the other settings (server, database, hooks, worker timings) take effect at the next
//! restart.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::signal::unix::Signal;

use crate::config::{Config, LiveForms, Secrets};
use crate::db::Pool;

/// Where a process's configuration came from, so that a reload reads it again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ConfigSource {
    /// `--config PATH`.
    File(PathBuf),
    /// The built-in demo (no `--config`).
    Builtin,
    /// Built in code (a test's app): there is nothing to read again.
    #[default]
    Given,
}

impl ConfigSource {
    /// `serve`'s source: its `--config` file, else the built-in demo.
    pub fn of(path: Option<PathBuf>) -> ConfigSource {
        path.map_or(ConfigSource::Builtin, ConfigSource::File)
    }
}

/// Reloads the configuration from `source` into `live` as `SIGHUP` does (the admin's
/// "Reload configuration" button); how many forms are in force, or why nothing changed (a
/// configuration given in code has no source to read: nothing changes, and that is reported
/// as a failed reload).
pub fn reload_from(source: &ConfigSource, live: &LiveForms, pool: &Pool) -> Result<usize, String> {
    match source {
        ConfigSource::File(path) => reload(Some(path), live, pool),
        ConfigSource::Builtin => reload(None, live, pool),
        ConfigSource::Given => {
            let error = "this server's configuration was not read from a file: nothing to reload".to_string();
            live.failed(error.clone());
            Err(error)
        }
    }
}

/// Reloads the configuration at `path` (`None`: the built-in demo) into `live`, with a fresh
/// snapshot of the environment; how many forms are in force, or why nothing changed. Their
/// versions are stored in `pool` first.
pub fn reload(path: Option<&Path>, live: &LiveForms, pool: &Pool) -> Result<usize, String> {
    let _one_at_a_time = live.updating();
    let secrets = Arc::new(Secrets::from_env());
    match load(path, pool, &secrets) {
        Ok(config) => {
            let forms = config.forms.len();
            live.put_secrets(secrets);
            live.put(config);
            tracing::info!(forms, "configuration reloaded: its forms are in force");
            Ok(forms)
        }
        Err(error) => {
            tracing::error!(%error, "configuration not reloaded: the forms in force are unchanged");
            live.failed(error.clone());
            Err(error)
        }
    }
}

/// Reads and checks the configuration at `path` (`None`: the built-in demo) with the
/// environment `secrets` (a reload's fresh snapshot), merges the admin-defined forms into it
/// (`admin_forms`) and stores its forms' versions in `pool`; why not, if it cannot be put in
/// force.
pub fn load(path: Option<&Path>, pool: &Pool, secrets: &Secrets) -> Result<Config, String> {
    let config = super::check_config::load(path, |k| secrets.var(k)).map_err(|e| e.to_string())?;
    super::admin_forms::merge_stored(pool, config, secrets).map_err(|e| {
        format!("the admin-defined forms could not be merged, or the forms' versions stored: {e}")
    })
}

/// Catches `SIGHUP` from now on (its default would end the process); `on_hangup` then
/// reloads on each.
pub fn catch_hangups() -> std::io::Result<Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
}

/// Reloads on every `SIGHUP` for as long as the runtime runs (`serve`).
pub async fn on_hangup(mut hangups: Signal, path: Option<PathBuf>, live: Arc<LiveForms>, pool: Pool) {
    while hangups.recv().await.is_some() {
        let (path, live, pool) = (path.clone(), live.clone(), pool.clone());
        // Reading and checking the file, and storing its versions, is blocking work.
        let _ = tokio::task::spawn_blocking(move || reload(path.as_deref(), &live, &pool)).await;
    }
}
