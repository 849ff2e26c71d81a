//! The workers' side of a reload (`SIGHUP`, `onceform reload`): the configuration is read
//! and checked again (`services::reload::load`) and the effects are built anew from it (the
//! `Kind::effect(deps)` objects: endpoints, credentials, templates, the forms' effect
//! settings, with the secrets of a fresh snapshot of the environment), then swapped whole (`Worker::put_registry`). The calls in flight finish with
//! the previous settings; the records claimed from then on go out with the new ones. A bad
//! file changes nothing; it is logged with the count of refused reloads. The `[worker]`
//! timings and `[database]` take effect at the next restart.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::signal::unix::Signal;

use crate::config::{Config, Secrets};
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
    /// The configuration in force (its forms merged with the admin-defined ones) and the
    /// snapshot of the environment its effects were built with; held while the next is made
    /// from it, so that a reload and a merge never undo each other.
    current: Arc<Mutex<(Arc<Config>, Arc<Secrets>)>>,
}

impl Reload {
    pub fn new(
        source: Option<PathBuf>,
        worker: Arc<Worker>,
        pool: Pool,
        keyring: Arc<Keyring>,
        current: (Arc<Config>, Arc<Secrets>),
    ) -> Reload {
        let current = Arc::new(Mutex::new(current));
        let reload = Reload { source, worker, pool, keyring, refused: Arc::default(), current };
        // A record of a form saved since the last look is not delivered without its settings.
        let again = reload.clone();
        reload.worker.refresh_with(Arc::new(move || {
            if let Err(error) = again.refresh() {
                tracing::warn!(%error, "admin-defined forms not merged: the workers' effects are unchanged");
            }
        }));
        reload
    }

    /// Reads, checks and puts in force the configuration (blocking work: call it off the
    /// async threads, inside the workers' runtime, which the SMTP pool needs).
    pub fn run(&self) -> Reloaded {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        // Operators rotate a secret by setting it and reloading: the environment is read again.
        let secrets = Arc::new(Secrets::from_env());
        let built =
            crate::services::reload::load(self.source.as_deref(), &self.pool, &secrets).and_then(|config| {
                let config = Arc::new(config);
                super::registry_with(config.clone(), self.keyring.clone(), &secrets)
                    .map(|registry| (config, registry))
                    .map_err(|e| format!("the effects could not be built: {e}"))
            });
        match built {
            Ok((config, registry)) => {
                *current = (config, secrets);
                self.put(registry)
            }
            Err(error) => {
                let refused = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::error!(%error, refused, "worker settings not reloaded: the effects in force are unchanged");
                Reloaded::Refused(error, refused)
            }
        }
    }

    /// Merges the admin-defined forms again if they changed since the last merge, and puts
    /// the effects built from the result in force (blocking work, as `run`); whether they
    /// changed. Effects that cannot be built change nothing (the next look tries again).
    pub fn refresh(&self) -> Result<bool, String> {
        use crate::services::admin_forms;
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        let (config, secrets) = &*current;
        if !admin_forms::changed(&self.pool, config).map_err(|e| e.to_string())? {
            return Ok(false);
        }
        let config = Arc::new(
            admin_forms::merge_stored(&self.pool, (**config).clone(), secrets).map_err(|e| e.to_string())?,
        );
        let registry = super::registry_with(config.clone(), self.keyring.clone(), secrets)
            .map_err(|e| format!("the effects could not be built: {e}"))?;
        current.0 = config;
        self.worker.put_registry(registry);
        tracing::info!("admin-defined forms changed: the workers' effects are built again");
        Ok(true)
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

/// Follows the admin-defined forms for as long as the runtime runs: every
/// `admin_forms::POLL`, the workers' effects are built again if they changed.
pub async fn follow_admin_forms(reload: Reload) {
    let mut tick = tokio::time::interval(crate::services::admin_forms::POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let reload = reload.clone();
        if let Ok(Err(error)) = tokio::task::spawn_blocking(move || reload.refresh()).await {
            tracing::warn!(%error, "admin-defined forms not merged: the workers' effects are unchanged");
        }
    }
}

/// Catches `SIGHUP` from now on (its default would end the process).
pub fn catch_hangups() -> std::io::Result<Signal> {
    crate::services::reload::catch_hangups()
}
