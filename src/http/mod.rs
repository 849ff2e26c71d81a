//! The HTTP server: routes, shared state, and `Application`, which binds its own listener
//! so tests can start it on port 0.

mod api;
pub(crate) mod body;
#[cfg(test)]
mod body_proptest;
mod captcha_widget;
mod client_ip;
mod connections;
mod cors;
mod html;
mod journey;
mod metrics_access;
pub mod openapi;
mod ops;
pub(crate) mod pages;
pub mod problem;
mod rate_limit;
mod request_id;
mod security_headers;
mod static_sites;
mod submit;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Instant;

use actix_web::dev::{Server, Service};
use actix_web::{web, App, HttpServer};
use futures_util::FutureExt;
use tracing::Instrument;

use crate::accept::Acceptor;
use crate::config::{Config, FormConfig};
use crate::db::Pool;
use crate::deliveries::DeliveryLog;
pub use client_ip::{client_bucket, TrustedProxies};
use connections::{with_body_deadline, ConnectionLimits};
pub use metrics_access::{MetricsCache, MetricsToken};
use problem::{Problem, ProblemKind};
pub use rate_limit::RateLimiter;

/// What every handler can reach.
pub struct AppState {
    pub config: Arc<Config>,
    pub pool: Pool,
    pub acceptor: Acceptor,
    pub limiter: RateLimiter,
    /// Whose `X-Forwarded-For` names the client (rate limits, sign-in throttling).
    pub proxies: TrustedProxies,
    pub login_throttle: crate::admin::accounts::LoginThrottle,
    /// `/metrics`' database figures, refreshed at most every few seconds.
    pub metrics_cache: MetricsCache,
    /// Fill-time stamps and captcha checks (see `crate::spam`).
    pub spam: crate::spam::SpamGuard,
    /// Inbound webhook sources and their secrets.
    pub hooks: crate::hooks::Hooks,
}

impl AppState {
    pub fn form(&self, name: &str) -> Result<&FormConfig, Problem> {
        self.config
            .form(name)
            .ok_or_else(|| Problem::new(ProblemKind::NotFound, "there is no form with this name"))
    }
}

/// A bound, not yet running, HTTP server.
pub struct Application {
    port: u16,
    server: Server,
    deliveries: DeliveryLog,
    pool: Pool,
}

impl Application {
    /// Binds `config.server.bind` (port 0 picks a free port) and prepares the server.
    pub fn build(config: Arc<Config>, pool: Pool) -> anyhow::Result<Application> {
        let listener = TcpListener::bind(config.server.bind)
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.server.bind))?;
        let port = listener.local_addr()?.port();
        let workers = match config.server.http_workers {
            0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
            n => n,
        };
        let limits = ConnectionLimits::of(&config.server);
        let secure = config.secure_cookies();
        let acceptor = Acceptor::start(config.clone(), pool.clone())?;
        let pool_for_sweep = pool.clone();
        crate::spam::SpamGuard::warn_missing_secrets(&config);
        let deliveries = acceptor.deliveries().clone();
        let state = web::Data::new(AppState {
            acceptor,
            limiter: RateLimiter::new(config.server.rate_limit),
            proxies: config.server.trusted_proxies.clone(),
            login_throttle: Default::default(),
            metrics_cache: MetricsCache::new(std::time::Duration::from_millis(
                config.server.metrics_cache_ms,
            )),
            spam: crate::spam::SpamGuard::new(crate::secret::load(&config)?)?,
            hooks: crate::hooks::Hooks::load(&config.hooks, |k| std::env::var(k).ok())?,
            config,
            pool,
        });
        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .app_data(connections::form_config())
                .wrap(actix_web::middleware::from_fn(cors::guard))
                .wrap_fn(move |req, srv| {
                    srv.call(with_body_deadline(req, limits.body)).map(move |res| {
                        res.map(|mut r| {
                            security_headers::apply(r.headers_mut(), secure);
                            r
                        })
                    })
                })
                .wrap_fn(|req, srv| {
                    let (method, path, started) =
                        (req.method().clone(), req.path().to_string(), Instant::now());
                    let (id, span) = request_id::start(&req);
                    let call = span.in_scope(|| srv.call(req));
                    async move {
                        let mut res = call.await;
                        if let Ok(r) = &mut res {
                            r.headers_mut().insert(request_id::HEADER, id);
                            let status = r.status().as_u16();
                            let ms = started.elapsed().as_millis();
                            tracing::info!(%method, %path, status, ms, "request");
                        }
                        res
                    }
                    .instrument(span)
                })
                .configure(api::routes)
                .configure(html::routes)
                .configure(ops::routes)
                .configure(openapi::routes)
                .configure(static_sites::routes)
                .configure(crate::admin::routes)
                .configure(crate::hooks::routes)
                .default_service(web::to(openapi::fallback))
        })
        .workers(workers)
        // Deadlines and caps on every connection: see `connections`.
        .client_request_timeout(limits.request_head)
        .client_disconnect_timeout(limits.disconnect)
        .keep_alive(limits.keep_alive)
        .max_connections(limits.max_connections_per_worker)
        .shutdown_timeout(10)
        .listen(listener)?
        .run();
        Ok(Application { port, server, deliveries, pool: pool_for_sweep })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The queue of delivery rows written in the background (tests flush it before counting).
    pub fn deliveries(&self) -> DeliveryLog {
        self.deliveries.clone()
    }

    /// Serves until the process is told to stop (SIGINT/SIGTERM), then writes the queued
    /// delivery rows.
    /// Expired admin sessions are swept meanwhile.
    pub async fn run(self) -> std::io::Result<()> {
        let sweeper = tokio::spawn(crate::admin::lifecycle::sweep_periodically(self.pool.clone()));
        let served = self.server.await;
        sweeper.abort();
        self.deliveries.flush().await;
        served
    }
}
