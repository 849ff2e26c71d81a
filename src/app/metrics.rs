//! `GET /metrics`: the one endpoint that reports on every area (database and queue, sign-in
//! throttle, inbound webhooks, data lifecycle), so it lives where every area is known.

use actix_web::http::header::{HeaderValue, WWW_AUTHENTICATE};
use actix_web::{web, HttpRequest, HttpResponse};

use crate::base::clock::now;
use crate::db::hooks::HookStore;
use crate::db::{DbError, Queue, Store};
use crate::services::accounts::LoginThrottle;
use crate::web::hooks::Hooks;
use crate::web::http::problem::{Problem, ProblemKind};
use crate::web::http::{db_problem, MetricsCache};
use crate::web::state::AppState;
use crate::with_conn;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/metrics", web::get().to(metrics));
}

/// Prometheus text: the database figures at most `server.metrics_cache_ms` old, then this
/// process's live counters.
async fn metrics(
    state: web::Data<AppState>,
    cache: web::Data<MetricsCache>,
    throttle: web::Data<LoginThrottle>,
    hooks: web::Data<Hooks>,
    req: HttpRequest,
) -> HttpResponse {
    if let Some(token) = &state.config.server.metrics_token {
        if !crate::web::http::admits_bearer(token, &req) {
            let mut resp =
                Problem::new(ProblemKind::Unauthorized, "send Authorization: Bearer <the metrics token>")
                    .response();
            resp.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return resp;
        }
    }
    let figures = cache.get_or_refresh(|| database_figures(&state, &hooks)).await;
    match figures {
        Ok(text) => {
            let mut out = String::with_capacity(text.len() + 512);
            out.push_str(&text);
            state.refused.render(&mut out);
            out.push_str(&format!(
                "# HELP onceform_config_reload_failures_total Configuration reloads refused since the start \
                 (the forms in force stayed).\n# TYPE onceform_config_reload_failures_total counter\n\
                 onceform_config_reload_failures_total {}\n",
                state.forms.failures()
            ));
            crate::web::hooks::metrics::render_spool(&mut out, &hooks, now());
            throttle.render_metrics(&mut out);
            crate::db::primary_pg::render_metrics(&mut out);
            HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(out)
        }
        Err(problem) => problem.response(),
    }
}

async fn database_figures(state: &AppState, hooks: &Hooks) -> Result<String, Problem> {
    let log = state.acceptor.deliveries();
    log.flush().await;
    let dropped = log.dropped();
    let pool = state.pool.clone();
    let read = move || {
        let lifecycle = crate::services::lifecycle::metrics::read(&pool, now())?;
        with_conn!(&pool, |c| Ok::<_, DbError>((c.stats()?, c.queue_stats()?, c.hook_stats()?, lifecycle)))
    };
    match web::block(read).await {
        Ok(Ok((stats, queue, hook_stats, lifecycle))) => {
            let mut body = crate::services::figures::render(&stats, &queue, dropped, now());
            crate::web::hooks::metrics::render(&mut body, hooks, &hook_stats);
            body.push_str(&crate::services::lifecycle::metrics::render(&lifecycle, now()));
            Ok(body)
        }
        Ok(Err(e)) => Err(db_problem(e)),
        Err(_) => Err(Problem::unavailable()),
    }
}
