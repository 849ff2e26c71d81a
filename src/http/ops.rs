//! Operations endpoints: liveness, readiness, Prometheus metrics, the stylesheet.

use std::fmt::Write;

use actix_web::http::header::{HeaderValue, WWW_AUTHENTICATE};
use actix_web::{web, HttpRequest, HttpResponse};

use super::problem::{Problem, ProblemKind};
use super::submit::db_problem;
use super::AppState;
use chrono::NaiveDateTime;

use crate::db::{DbError, Queue, QueueStats, Stats, Store};
use crate::deliveries::now;
use crate::domain::EffectState;
use crate::hooks::store::HookStore;
use crate::with_conn;

const STYLESHEET: &str = include_str!("../../static/onceform.css");
const ADMIN_STYLESHEET: &str = include_str!("../../static/admin.css");

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz))
        .route("/metrics", web::get().to(metrics))
        .route("/static/onceform.css", web::get().to(|| stylesheet(STYLESHEET)))
        .route("/static/admin.css", web::get().to(|| stylesheet(ADMIN_STYLESHEET)));
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

/// Ready when the database answers a read (`SELECT 1`; never SQLite's write lock, which a
/// long write would hold and a probe must not queue behind).
async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let pool = state.pool.clone();
    let read = move || {
        with_conn!(&pool, |c| diesel::RunQueryDsl::execute(diesel::sql_query("SELECT 1"), c)
            .map(|_| ())
            .map_err(DbError::from))
    };
    match web::block(read).await {
        Ok(Ok(())) => {
            HttpResponse::Ok().json(serde_json::json!({"status": "ready", "database": state.pool.backend()}))
        }
        Ok(Err(error)) => {
            tracing::warn!(%error, "not ready");
            Problem::unavailable().response()
        }
        Err(_) => Problem::unavailable().response(),
    }
}

/// Prometheus text: the database figures at most `server.metrics_cache_ms` old, then this
/// process's live counters.
async fn metrics(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    if let Some(token) = &state.config.server.metrics_token {
        if !token.admits(&req) {
            let mut resp =
                Problem::new(ProblemKind::Unauthorized, "send Authorization: Bearer <the metrics token>")
                    .response();
            resp.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return resp;
        }
    }
    let figures = state.metrics_cache.get_or_refresh(|| database_figures(&state)).await;
    match figures {
        Ok(text) => {
            let mut out = String::with_capacity(text.len() + 512);
            out.push_str(&text);
            state.login_throttle.render_metrics(&mut out);
            HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(out)
        }
        Err(problem) => problem.response(),
    }
}

async fn database_figures(state: &AppState) -> Result<String, Problem> {
    let log = state.acceptor.deliveries();
    log.flush().await;
    let dropped = log.dropped();
    let pool = state.pool.clone();
    let read = move || {
        let lifecycle = crate::lifecycle::metrics::read(&pool, now())?;
        with_conn!(&pool, |c| Ok::<_, DbError>((c.stats()?, c.queue_stats()?, c.hook_stats()?, lifecycle)))
    };
    match web::block(read).await {
        Ok(Ok((stats, queue, hooks, lifecycle))) => {
            let mut body = render(&stats, &queue, dropped, now());
            crate::hooks::metrics::render(&mut body, &state.hooks, &hooks);
            body.push_str(&crate::lifecycle::metrics::render(&lifecycle, now()));
            Ok(body)
        }
        Ok(Err(e)) => Err(db_problem(e)),
        Err(_) => Err(Problem::unavailable()),
    }
}

fn render(s: &Stats, q: &QueueStats, dropped_deliveries: u64, now: NaiveDateTime) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# HELP onceform_deliveries_total Requests received by the submit endpoints, by outcome."
    );
    let _ = writeln!(out, "# TYPE onceform_deliveries_total counter");
    for (outcome, n) in &s.deliveries {
        let _ = writeln!(out, "onceform_deliveries_total{{outcome=\"{outcome}\"}} {n}");
    }
    let _ = writeln!(
        out,
        "# HELP onceform_deliveries_dropped_total Delivery rows this process could not write (queue full, database down)."
    );
    let _ = writeln!(out, "# TYPE onceform_deliveries_dropped_total counter");
    let _ = writeln!(out, "onceform_deliveries_dropped_total {dropped_deliveries}");
    let _ = writeln!(out, "# HELP onceform_submissions_total Logical submissions stored.");
    let _ = writeln!(out, "# TYPE onceform_submissions_total counter");
    let _ = writeln!(out, "onceform_submissions_total {}", s.submissions);
    let _ = writeln!(out, "# HELP onceform_side_effects Side-effect records by kind and state.");
    let _ = writeln!(out, "# TYPE onceform_side_effects gauge");
    for (kind, state, n) in &s.effects {
        let _ = writeln!(out, "onceform_side_effects{{kind=\"{kind}\",state=\"{state}\"}} {n}");
    }
    let _ = writeln!(out, "# HELP onceform_open_conflicts Conflicting attempts awaiting review.");
    let _ = writeln!(out, "# TYPE onceform_open_conflicts gauge");
    let _ = writeln!(out, "onceform_open_conflicts {}", s.open_conflicts);
    let _ =
        writeln!(out, "# HELP onceform_open_duplicate_pairs Suspected duplicate pairs awaiting a decision.");
    let _ = writeln!(out, "# TYPE onceform_open_duplicate_pairs gauge");
    let _ = writeln!(out, "onceform_open_duplicate_pairs {}", s.open_duplicate_pairs);
    for (state, name) in [(EffectState::Unknown, "unknown"), (EffectState::FailedFinal, "failed_final")] {
        let n: i64 = s.effects.iter().filter(|(_, st, _)| *st == state).map(|(_, _, n)| n).sum();
        let _ = writeln!(out, "# HELP onceform_effects_{name} Side-effect records in state {state}.");
        let _ = writeln!(out, "# TYPE onceform_effects_{name} gauge");
        let _ = writeln!(out, "onceform_effects_{name} {n}");
    }
    let age = q.oldest_pending.map(|t| (now - t).num_milliseconds().max(0) as f64 / 1000.0).unwrap_or(0.0);
    let _ = writeln!(out, "# HELP onceform_oldest_pending_age_seconds Age of the oldest PENDING record.");
    let _ = writeln!(out, "# TYPE onceform_oldest_pending_age_seconds gauge");
    let _ = writeln!(out, "onceform_oldest_pending_age_seconds {age:.3}");
    let (lookups, attempts): (Vec<_>, Vec<_>) =
        q.attempts.iter().partition(|(o, _)| o.starts_with("lookup_"));
    let _ = writeln!(out, "# HELP onceform_attempts_total Delivery attempts by outcome.");
    let _ = writeln!(out, "# TYPE onceform_attempts_total counter");
    for (outcome, n) in attempts {
        let _ = writeln!(out, "onceform_attempts_total{{outcome=\"{outcome}\"}} {n}");
    }
    let _ = writeln!(out, "# HELP onceform_reconciliations_total Lookups of UNKNOWN outcomes by result.");
    let _ = writeln!(out, "# TYPE onceform_reconciliations_total counter");
    for (outcome, n) in lookups {
        let result = outcome.trim_start_matches("lookup_");
        let _ = writeln!(out, "onceform_reconciliations_total{{outcome=\"{result}\"}} {n}");
    }
    out
}

async fn stylesheet(css: &'static str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .insert_header(("Cache-Control", "public, max-age=3600"))
        .body(css)
}
