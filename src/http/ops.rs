//! Operations endpoints: liveness, readiness, Prometheus metrics, the stylesheet.

use std::fmt::Write;

use actix_web::{web, HttpResponse};

use super::problem::Problem;
use super::submit::db_problem;
use super::AppState;
use crate::db::{Stats, Store};
use crate::with_conn;

const STYLESHEET: &str = include_str!("../../static/onceform.css");

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz))
        .route("/metrics", web::get().to(metrics))
        .route("/static/onceform.css", web::get().to(stylesheet));
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

/// Ready when the database takes a write.
async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let pool = state.pool.clone();
    match web::block(move || pool.ping()).await {
        Ok(Ok(())) => {
            HttpResponse::Ok().json(serde_json::json!({"status": "ready", "database": state.pool.backend()}))
        }
        Ok(Err(e)) => db_problem(e).response(),
        Err(_) => Problem::unavailable().response(),
    }
}

async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let pool = state.pool.clone();
    match web::block(move || with_conn!(&pool, |c| c.stats().map_err(crate::db::DbError::from))).await {
        Ok(Ok(stats)) => HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(render(&stats)),
        Ok(Err(e)) => db_problem(e).response(),
        Err(_) => Problem::unavailable().response(),
    }
}

fn render(s: &Stats) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# HELP onceform_deliveries_total Requests received by the submit endpoints, by outcome."
    );
    let _ = writeln!(out, "# TYPE onceform_deliveries_total counter");
    for (outcome, n) in &s.deliveries {
        let _ = writeln!(out, "onceform_deliveries_total{{outcome=\"{outcome}\"}} {n}");
    }
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
    out
}

async fn stylesheet() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .insert_header(("Cache-Control", "public, max-age=3600"))
        .body(STYLESHEET)
}
