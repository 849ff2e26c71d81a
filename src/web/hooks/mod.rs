//! Inbound webhooks: `POST /hooks/{source}` verifies a third party's delivery, stores each
//! event once per (source, event ID) with one side-effect record per handler, and lets the
//! existing workers run the handlers. See docs/webhooks/.

pub mod admin;
pub mod body_budget;
pub use crate::config::hooks as config;
mod endpoint;
pub mod inbound;
pub mod metrics;
pub mod spool;
pub mod verify;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::base::metrics::{IntCounter, IntCounterVec, SumCount};

pub use config::HookConfig;
pub use endpoint::{replay_spool_periodically, routes};
use inbound::EventIdRule;
use verify::{Keys, Verifier};

/// One configured source with its verifier and secrets, read once at start.
pub struct Source {
    pub name: String,
    pub config: HookConfig,
    pub verifier: &'static dyn Verifier,
    /// Its secrets, and how they open a delivery. No `Debug`.
    pub keys: Box<dyn Keys>,
    /// Where its event IDs come from (the `event_id` spec, resolved once).
    pub event_id: EventIdRule,
    /// Deliveries refused for a bad or stale signature (nothing of them is stored).
    pub signature_failures: IntCounter,
    /// Time from a delivery's arrival to its answer, in seconds: summed, and how many.
    pub ingest: SumCount,
}

/// Every configured source, shared by the HTTP workers, the spool of the sources whose
/// `when_store_down` is `spool` (when there is one), and the budget of bytes their unverified
/// bodies may hold (`body_budget`).
#[derive(Clone)]
pub struct Hooks {
    sources: Arc<BTreeMap<String, Source>>,
    spool: Option<Arc<spool::Spool>>,
    budget: Arc<body_budget::BodyBudget>,
    /// Every source's `signature_failures` (`metrics`).
    signature_failures: IntCounterVec,
}

impl Hooks {
    /// Reads every source's secrets from `env` (a missing one names its variable) and opens
    /// the spool in `server.spool_dir` if a source spools.
    pub fn load(
        config: &crate::config::Config,
        env: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Hooks> {
        let hooks = &config.hooks;
        let spools = hooks.values().any(|h| h.when_store_down == config::StoreDown::Spool);
        let spool = spools
            .then(|| {
                let dir = std::path::Path::new(&config.server.spool_dir);
                spool::Spool::open(dir, config.server.spool_max_bytes)
                    .map(Arc::new)
                    .map_err(|e| anyhow::anyhow!("server.spool_dir {}: {e}", dir.display()))
            })
            .transpose()?;
        let mut sources = BTreeMap::new();
        let signature_failures = metrics::signature_failures()?;
        for (name, config) in hooks {
            let verifier = verify::find(config.verify.as_str())
                .ok_or_else(|| anyhow::anyhow!("hooks.{name}: unknown verifier"))?;
            let keys = verifier.load(config, &env).map_err(|e| anyhow::anyhow!("hooks.{name}: {e}"))?;
            sources.insert(
                name.clone(),
                Source {
                    name: name.clone(),
                    config: config.clone(),
                    verifier,
                    keys,
                    event_id: EventIdRule::of(config),
                    signature_failures: signature_failures.with_label_values(&[name]),
                    ingest: SumCount::default(),
                },
            );
        }
        let largest = hooks.values().map(|h| h.max_body_bytes).max().unwrap_or(0);
        let budget = Arc::new(body_budget::BodyBudget::for_largest_body(largest));
        Ok(Hooks { sources: Arc::new(sources), spool, budget, signature_failures })
    }

    /// The budget of bytes unverified bodies may hold.
    pub fn budget(&self) -> &Arc<body_budget::BodyBudget> {
        &self.budget
    }

    pub fn spool(&self) -> Option<&Arc<spool::Spool>> {
        self.spool.as_ref()
    }

    pub fn source(&self, name: &str) -> Option<&Source> {
        self.sources.get(name)
    }

    pub fn sources(&self) -> impl Iterator<Item = &Source> {
        self.sources.values()
    }
}

impl Source {
    pub fn count_signature_failure(&self) {
        self.signature_failures.inc();
    }

    pub fn count_ingest(&self, micros: u64) {
        self.ingest.observe(micros as f64 / 1e6);
    }
}
