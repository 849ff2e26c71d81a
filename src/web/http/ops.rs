//! Operations endpoints: liveness, readiness, the stylesheets.

use actix_web::{web, HttpResponse};

use super::problem::Problem;
use crate::web::state::AppState;

const STYLESHEET: &str = include_str!("../../../static/onceform.css");
const ADMIN_STYLESHEET: &str = include_str!("../../../static/admin.css");

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz))
        .route("/static/onceform.css", web::get().to(|| stylesheet(STYLESHEET)))
        .route("/static/admin.css", web::get().to(|| stylesheet(ADMIN_STYLESHEET)));
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

/// Ready when a write could be stored now: PostgreSQL's server behind the pool takes writes
/// (not merely answers: a standby does), SQLite's file answers a read (`Pool::ready`).
async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, Problem> {
    let pool = state.pool.clone();
    web::block(move || pool.ready()).await?.map_err(|error| {
        tracing::warn!(%error, "not ready");
        Problem::unavailable()
    })?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"status": "ready", "database": state.pool.backend()})))
}

async fn stylesheet(css: &'static str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .insert_header(("Cache-Control", "public, max-age=3600"))
        .body(css)
}
