//! Re-reading the configuration while serving (`SIGHUP`, `onceform reload`): the file is
//! checked by the `check-config` rules first; a good one puts its forms in force at once (a
//! request in flight finishes under the forms it started with), a bad one changes nothing
//! and is logged, counted and shown on the admin dashboard until a good one loads. Settings
//! outside `[forms.*]` (server, database, mail, CRM, workers, hooks) take effect at the next
//! restart.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::signal::unix::Signal;

use crate::config::LiveForms;

/// Reloads the configuration at `path` (`None`: the built-in demo) into `live`; how many
/// forms are in force, or why nothing changed.
pub fn reload(path: Option<&Path>, live: &LiveForms) -> Result<usize, String> {
    match super::check_config::load(path, |k| std::env::var(k).ok()) {
        Ok(config) => {
            let forms = config.forms.len();
            live.put(config);
            tracing::info!(forms, "configuration reloaded: its forms are in force");
            Ok(forms)
        }
        Err(e) => {
            let error = e.to_string();
            tracing::error!(%error, "configuration not reloaded: the forms in force are unchanged");
            live.failed(error.clone());
            Err(error)
        }
    }
}

/// Catches `SIGHUP` from now on (its default would end the process); `on_hangup` then
/// reloads on each.
pub fn catch_hangups() -> std::io::Result<Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
}

/// Reloads on every `SIGHUP` for as long as the runtime runs (`serve`).
pub async fn on_hangup(mut hangups: Signal, path: Option<PathBuf>, live: Arc<LiveForms>) {
    while hangups.recv().await.is_some() {
        let (path, live) = (path.clone(), live.clone());
        // Reading and checking the file is blocking work.
        let _ = tokio::task::spawn_blocking(move || reload(path.as_deref(), &live)).await;
    }
}
