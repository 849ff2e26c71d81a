//! The application: builds the state, mounts the public surface (`http`), the admin
//! (`admin`) and the inbound webhooks (`hooks`) on one listener, and runs them; builds the
//! workers' `registry` of effect kinds and webhook handlers; `startup` wires `serve` and
//! `worker`. Only `cli` (and the tests) import this module; `AppState`, which every area
//! reaches, is `web::state`.

mod metrics;
pub mod startup;
mod worker_reload;

use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;

use actix_web::dev::Server;
use actix_web::web;

use crate::base::secret::{self, SECRET_ENV};
use crate::base::traffic::Traffic;
use crate::config::{Config, LiveForms, Secrets};
use crate::db::{Pool, Writes};
use crate::domain::keyring::Keyring;
use crate::services::accept::Acceptor;
use crate::services::accounts::LoginThrottle;
use crate::services::effects::Registry;
use crate::services::reload::ConfigSource;
use crate::services::request_log::RequestLog;
use crate::services::spam::SpamGuard;
use crate::web::admin::oidc::Oidc;
use crate::web::hooks::Hooks;
use crate::web::http::RateLimiter;
pub use crate::web::state::AppState;

/// A bound, not yet running, HTTP server.
pub struct Application {
    port: u16,
    server: Server,
    deliveries: RequestLog,
    pool: Pool,
    /// For the webhook spool's replay (`when_store_down = "spool"`).
    hooks: Hooks,
    /// The acceptor's write path, which the spool's replay shares.
    writes: Writes,
    /// The forms in force, which a reload replaces.
    forms: Arc<LiveForms>,
}

impl Application {
    /// Binds `config.server.bind` (port 0 picks a free port) and prepares the server, whose
    /// digests `keyring` makes (`startup::open_store` loaded it) and whose requests in flight
    /// `traffic` counts.
    pub fn build(
        config: Arc<Config>,
        pool: Pool,
        keyring: Arc<Keyring>,
        traffic: Traffic,
    ) -> anyhow::Result<Application> {
        Application::build_from(config, ConfigSource::Given, pool, keyring, traffic)
    }

    /// `build`, with where the configuration was read from (`source`: the admin's reload
    /// button reads it again); the secrets are those of the environment now.
    pub fn build_from(
        config: Arc<Config>,
        source: ConfigSource,
        pool: Pool,
        keyring: Arc<Keyring>,
        traffic: Traffic,
    ) -> anyhow::Result<Application> {
        let secrets = Arc::new(Secrets::from_env());
        Application::build_with(config, source, pool, (keyring, secrets), traffic)
    }

    /// `build_from`, with the keyring and the environment's snapshot `startup` took
    /// (`open_store`), which every part of the server reads its secrets from.
    pub fn build_with(
        config: Arc<Config>,
        source: ConfigSource,
        pool: Pool,
        (keyring, secrets): (Arc<Keyring>, Arc<Secrets>),
        traffic: Traffic,
    ) -> anyhow::Result<Application> {
        let listener = TcpListener::bind(config.server.bind)
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.server.bind))?;
        let port = listener.local_addr()?.port();
        // The forms defined in the admin join the file's, and every version is stored before
        // any submission is accepted under it.
        let config = Arc::new(
            crate::services::admin_forms::merge_stored(&pool, (*config).clone(), &secrets).map_err(|e| {
                anyhow::anyhow!("merging the admin-defined forms, storing the forms' versions: {e}")
            })?,
        );
        let acceptor = Acceptor::start(config.clone(), pool.clone(), keyring)?;
        // Stamps and challenges are signed with the server secret as `ONCEFORM_SECRET` (else
        // the secret file) gives it.
        let server_secret =
            secret::load_from(secrets.var(SECRET_ENV), Path::new(&config.server.secret_file))?;
        let spam = SpamGuard::new(server_secret, secrets.clone())?;
        spam.warn_missing_secrets(&config);
        let deliveries = acceptor.deliveries().clone();
        let writes = acceptor.writes().clone();
        // `/metrics`' database figures, refreshed at most every few seconds.
        let cache_for = std::time::Duration::from_millis(config.server.metrics_cache_ms);
        let metrics_cache = web::Data::new(metrics::FiguresCache::new(cache_for));
        let limiter = web::Data::new(RateLimiter::new(config.server.rate_limit));
        // Whose `X-Forwarded-For` names the client (rate limits, sign-in throttling).
        let proxies = web::Data::new(config.server.trusted_proxies.clone());
        let throttle = web::Data::new(LoginThrottle::new()?);
        let oidc = web::Data::new(Oidc::of(&config, &secrets)?);
        let hooks = web::Data::new(Hooks::load(&config, |k| secrets.var(k))?);
        let spool = hooks.get_ref().clone();
        let mut state = AppState::new(config.clone(), secrets, pool.clone(), acceptor, spam)?;
        state.source = source;
        let state = web::Data::new(state);
        let registry = metrics::Metrics::new(metrics_cache.clone(), &state, &throttle, &hooks)?;
        let registry = web::Data::new(registry);
        let forms = state.forms.clone();
        let mount = move |cfg: &mut web::ServiceConfig| {
            cfg.app_data(state.clone())
                .app_data(metrics_cache.clone())
                .app_data(registry.clone())
                .app_data(limiter.clone())
                .app_data(proxies.clone())
                .app_data(throttle.clone())
                .app_data(oidc.clone())
                .app_data(hooks.clone())
                .configure(crate::web::http::routes)
                .configure(metrics::routes)
                .configure(crate::web::admin::routes)
                .configure(crate::web::hooks::routes);
        };
        let server = crate::web::http::server(listener, &config, traffic, mount)?;
        Ok(Application { port, server, deliveries, pool, hooks: spool, writes, forms })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The forms in force (`services::reload` puts a new configuration's in).
    pub fn forms(&self) -> Arc<LiveForms> {
        self.forms.clone()
    }

    /// The queue of delivery rows written in the background (tests flush it before counting).
    pub fn deliveries(&self) -> RequestLog {
        self.deliveries.clone()
    }

    /// Serves until the process is told to stop (SIGINT/SIGTERM), then writes the queued
    /// delivery rows.
    /// Expired admin sessions are swept meanwhile, and the webhook spool is replayed.
    pub async fn run(self) -> std::io::Result<()> {
        let sweeper = tokio::spawn(crate::services::accounts::changes::sweep_periodically(self.pool.clone()));
        let spool = tokio::spawn(crate::web::hooks::replay_spool_periodically(
            self.hooks.clone(),
            self.writes.clone(),
        ));
        // Forms saved in the admin by another process are put in force here too.
        let following =
            tokio::spawn(crate::services::admin_forms::follow(self.forms.clone(), self.pool.clone()));
        let served = self.server.await;
        sweeper.abort();
        spool.abort();
        following.abort();
        self.deliveries.flush().await;
        served
    }
}

/// The record kinds this process's workers deliver: the form effect kinds and each inbound
/// webhook handler (`hook:SOURCE:HANDLER`), sharing one CRM adapter and one mailer.
/// Their secrets are read from the environment now.
pub fn registry(config: Arc<Config>, keyring: Arc<Keyring>) -> anyhow::Result<Registry> {
    registry_with(config, keyring, &Secrets::from_env())
}

/// `registry`, the secrets read from `secrets` (the snapshot of the start, or of a reload).
pub fn registry_with(
    config: Arc<Config>,
    keyring: Arc<Keyring>,
    secrets: &Secrets,
) -> anyhow::Result<Registry> {
    Registry::from_config(config, keyring, secrets, crate::services::effects::register_handlers)
}
