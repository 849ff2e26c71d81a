//! The HTTP server: routes, shared state, and `Application`, which binds its own listener
//! so tests can start it on port 0.

mod api;
mod body;
mod client_ip;
mod html;
mod journey;
mod ops;
pub(crate) mod pages;
pub mod problem;
mod rate_limit;
mod submit;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Instant;

use actix_web::dev::{Server, Service};
use actix_web::{web, App, HttpResponse, HttpServer};
use futures_util::FutureExt;

use crate::accept::Acceptor;
use crate::config::{Config, FormConfig};
use crate::db::Pool;
use crate::deliveries::DeliveryLog;
pub use client_ip::TrustedProxies;
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
}

impl Application {
    /// Binds `config.server.bind` (port 0 picks a free port) and prepares the server.
    pub fn build(config: Arc<Config>, pool: Pool) -> anyhow::Result<Application> {
        let listener = TcpListener::bind(&config.server.bind)
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.server.bind))?;
        let port = listener.local_addr()?.port();
        let workers = match config.server.http_workers {
            0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
            n => n,
        };
        let acceptor = Acceptor::start(config.clone(), pool.clone())?;
        let deliveries = acceptor.deliveries().clone();
        let state = web::Data::new(AppState {
            acceptor,
            limiter: RateLimiter::new(config.server.rate_limit),
            proxies: TrustedProxies::parse(&config.server.trusted_proxies).map_err(anyhow::Error::msg)?,
            login_throttle: Default::default(),
            config,
            pool,
        });
        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .wrap_fn(|req, srv| {
                    let (method, path, started) =
                        (req.method().clone(), req.path().to_string(), Instant::now());
                    srv.call(req).map(move |res| {
                        if let Ok(r) = &res {
                            let status = r.status().as_u16();
                            let ms = started.elapsed().as_millis();
                            tracing::info!(%method, %path, status, ms, "request");
                        }
                        res
                    })
                })
                .configure(api::routes)
                .configure(html::routes)
                .configure(ops::routes)
                .configure(crate::admin::routes)
                .default_service(web::to(not_found))
        })
        .workers(workers)
        .shutdown_timeout(10)
        .listen(listener)?
        .run();
        Ok(Application { port, server, deliveries })
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
    pub async fn run(self) -> std::io::Result<()> {
        let served = self.server.await;
        self.deliveries.flush().await;
        served
    }
}

async fn not_found() -> HttpResponse {
    Problem::new(ProblemKind::NotFound, "no such resource").response()
}
