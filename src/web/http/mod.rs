//! The public HTTP surface: the form pages, the JSON API, operations endpoints, the
//! middleware every response passes through (deadlines, security headers, request IDs), and
//! the origin check (CORS) of the form routes, run once the router has matched them.
//! `app` mounts these routes beside the admin's and serves them with [`server`].

mod api;
pub(crate) mod body;
#[cfg(test)]
mod body_proptest;
mod captcha_widget;
mod client_ip;
mod connections;
mod cors;
mod file_links;
mod html;
mod journey;
mod metrics_access;
mod multipart;
pub mod openapi;
mod ops;
pub(crate) mod pages;
pub mod problem;
mod rate_limit;
mod read_api;
mod read_credit;
mod request_id;
mod security_headers;
mod static_sites;
mod submit;
mod upload_pace;
mod uploads;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Instant;

use actix_http::error::DispatchError;
use actix_http::HttpService;
use actix_service::{fn_service, map_config, IntoServiceFactory, ServiceFactoryExt};
use actix_web::dev::{AppConfig, Server, Service};
use actix_web::http::Method;
use actix_web::rt::net::TcpStream;
use actix_web::{web, App};
use futures_util::FutureExt;
use tracing::Instrument;

use crate::base::traffic::Traffic;
use crate::config::{Config, Form};
use crate::web::state::AppState;
pub use client_ip::{client_bucket, TrustedProxies};
pub use connections::declared_length;
use connections::{with_body_deadline, ConnectionLimits};
pub use metrics_access::{admits_bearer, MetricsCache};
pub use rate_limit::RateLimiter;
use read_credit::Metered;
pub use submit::db_problem;

/// The public routes: JSON API, form pages, operations endpoints, OpenAPI, static sites.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.configure(api::routes)
        .configure(read_api::routes)
        .configure(uploads::routes)
        .configure(file_links::routes)
        .configure(html::routes)
        .configure(ops::routes)
        .configure(openapi::routes)
        .configure(static_sites::routes);
}

/// The form named in the request, or 404.
fn form(state: &AppState, name: &str) -> Result<Form, problem::Problem> {
    state.form(name).ok_or_else(|| {
        problem::Problem::new(problem::ProblemKind::NotFound, "there is no form with this name")
    })
}

/// HTTP workers when `http_workers = 0`: one per core but one, at least one. The core left
/// over is for what serves the requests' writes and retries' records: the database (on the
/// same machine, or SQLite's writer thread), the delivery log, the side-effect workers. An
/// event loop on every core is preempted by them, and every connection it holds waits
/// (replays at 32 clients on 2 cores: p99 7–8 ms with 2 workers, 4 ms with 1;
/// docs/benchmarks/history.md, third session).
fn default_workers(cores: usize) -> usize {
    cores.saturating_sub(1).max(1)
}

/// Serves `listener` with the routes and data `mount` registers, behind the middleware and
/// connection limits of `config.server`, counting the requests in flight in `traffic`;
/// paths nothing answers get the OpenAPI fallback, from the document built here once. It is actix-web's `HttpServer::listen`
/// (HTTP/1) with each connection's socket read within its `ReadCredit`.
pub fn server(
    listener: TcpListener,
    config: &Arc<Config>,
    traffic: Traffic,
    mount: impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static,
) -> std::io::Result<Server> {
    let workers = match config.server.http_workers {
        0 => default_workers(std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)),
        n => n,
    };
    let limits = ConnectionLimits::of(&config.server);
    let secure = config.secure_cookies();
    let addr = listener.local_addr()?;
    // Built once for all workers: every unknown path and `/openapi.json` read it.
    let published = web::Data::new(openapi::Publisher::new(config.clone()));
    let builder = actix_server::Server::build()
        .workers(workers)
        .max_concurrent_connections(limits.max_connections_per_worker)
        .shutdown_timeout(10);
    let shutdown = builder.graceful_shutdown_signal();
    let builder = builder.listen("onceform", listener, move || {
        let traffic = traffic.clone();
        let app = App::new()
            .app_data(connections::form_config())
            .app_data(published.clone())
            // HEAD is answered wherever GET is: routed as GET; the connection, which saw
            // HEAD, sends the headers without the body.
            .wrap_fn(|mut req, srv| {
                if req.method() == Method::HEAD {
                    req.head_mut().method = Method::GET;
                }
                srv.call(req)
            })
            .wrap_fn(move |req, srv| {
                srv.call(with_body_deadline(req, limits.body)).map(move |res| {
                    res.map(|mut r| {
                        security_headers::apply(r.headers_mut(), secure);
                        r
                    })
                })
            })
            .wrap_fn(move |req, srv| {
                let in_flight = traffic.enter();
                let (method, path, started) = (req.method().clone(), req.path().to_string(), Instant::now());
                let (id, span) = request_id::start(&req);
                let call = span.in_scope(|| srv.call(req));
                async move {
                    let mut res = call.await;
                    drop(in_flight);
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
            .configure(mount.clone())
            .default_service(web::to(openapi::fallback));
        let shutdown = shutdown.clone();
        let http = HttpService::build()
            .graceful_shutdown_signal(move || {
                let shutdown = shutdown.clone();
                async move { shutdown.notified().await }
            })
            // Deadlines and caps on every connection: see `connections`.
            .client_request_timeout(limits.request_head)
            .client_disconnect_timeout(limits.disconnect)
            .keep_alive(limits.keep_alive)
            .local_addr(addr)
            .on_connect_ext(|io: &Metered<TcpStream>, data| {
                data.insert(io.credit());
            })
            .h1(map_config(app.into_factory().map_err(|e| e.error_response()), |_| AppConfig::default()));
        fn_service(|io: TcpStream| {
            let peer = io.peer_addr().ok();
            std::future::ready(Ok::<_, DispatchError>((Metered::new(io), peer)))
        })
        .and_then(http)
    })?;
    Ok(builder.run())
}

#[cfg(test)]
mod tests {
    use super::default_workers;

    #[test]
    fn by_default_one_core_is_left_to_the_database_and_background_threads() {
        assert_eq!([1, 2, 4, 8].map(default_workers), [1, 1, 3, 7]);
    }
}
