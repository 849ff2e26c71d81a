//! The workers' side of a reload (`SIGHUP`, `onceform reload`): the configuration is read
//! and checked again (`services::reload::load`) and the effects are built anew from it (the
//! `Kind::effect(deps)` objects: endpoints, credentials, templates, the forms' effect
//! settings), then swapped whole (`Worker::put_registry`). The calls in flight finish with
//! the previous settings; the records claimed from then on go out with the new ones. A bad
//! file changes nothing; it is logged with the count of refused reloads. The `[worker]`
//! timings and `[database]` take effect at the next restart.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::signal::unix::Signal;

use crate::db::Pool;
use crate::domain::keyring::Keyring;
use crate::services::effects::Registry;
use crate::services::worker::Worker;

/// How a reload of the workers' settings went.
pub enum Reloaded {
    /// The new effects are in force.
    InForce,
    /// Nothing changed; why, and how many reloads were refused since the start.
    Refused(String, u64),
}

/// What `worker` reloads from, and into.
#[derive(Clone)]
pub struct Reload {
    pub source: Option<PathBuf>,
    pub worker: Arc<Worker>,
    pub pool: Pool,
    pub keyring: Arc<Keyring>,
    refused: Arc<AtomicU64>,
}

impl Reload {
    pub fn new(source: Option<PathBuf>, worker: Arc<Worker>, pool: Pool, keyring: Arc<Keyring>) -> Reload {
        Reload { source, worker, pool, keyring, refused: Arc::default() }
    }

    /// Reads, checks and puts in force the configuration (blocking work: call it off the
    /// async threads, inside the workers' runtime, which the SMTP pool needs).
    pub fn run(&self) -> Reloaded {
        let built = crate::services::reload::load(self.source.as_deref(), &self.pool).and_then(|config| {
            super::registry(Arc::new(config), self.keyring.clone())
                .map_err(|e| format!("the effects could not be built: {e}"))
        });
        match built {
            Ok(registry) => self.put(registry),
            Err(error) => {
                let refused = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::error!(%error, refused, "worker settings not reloaded: the effects in force are unchanged");
                Reloaded::Refused(error, refused)
            }
        }
    }

    fn put(&self, registry: Registry) -> Reloaded {
        self.worker.put_registry(registry);
        tracing::info!("worker settings reloaded: the next records claimed go out with them");
        Reloaded::InForce
    }
}

/// Reloads on every `SIGHUP` for as long as the runtime runs; `said` hears how each went.
pub async fn on_hangup(mut hangups: Signal, reload: Reload, said: fn(&Reloaded)) {
    while hangups.recv().await.is_some() {
        let reload = reload.clone();
        // The blocking pool's threads are inside this runtime (the SMTP pool needs one).
        if let Ok(reloaded) = tokio::task::spawn_blocking(move || reload.run()).await {
            said(&reloaded);
        }
    }
}

/// Catches `SIGHUP` from now on (its default would end the process).
pub fn catch_hangups() -> std::io::Result<Signal> {
    crate::services::reload::catch_hangups()
}
