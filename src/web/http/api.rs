//! The JSON API: operation issuance, submit, status.

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::Duration;
use serde_json::json;

use super::body::{is_json, media_type, parse_json, read_limited};
use super::problem::{Problem, ProblemKind};
use super::submit::{
    check_rate, outcome_problem, record_refusal, resolve_key, run_submit, Gate, Refusal, SubmitForm,
};
use crate::base::clock::now;
use crate::base::format::rfc3339;
use crate::config::Form;
use crate::domain::OperationId;
use crate::services::accept::{Outcome, SubmitRequest};
use crate::services::request_log::Channel;
use crate::services::spam::Screening;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    super::cors::api(cfg)
        .route("/api/forms/{form}/operations", web::post().to(issue_operation))
        .route("/api/forms/{form}/submissions", web::post().to(submit))
        .route("/api/forms/{form}/submissions/{operation_id}", web::get().to(status));
}

/// `POST /api/forms/{form}/operations`: a fresh operation ID for an API client.
async fn issue_operation(
    state: web::Data<AppState>,
    form: web::Path<String>,
) -> Result<HttpResponse, Problem> {
    let f = super::form(&state, &form)?;
    let expires = now() + Duration::days(i64::from(f.operation_ttl_days));
    Ok(HttpResponse::Created()
        .json(json!({"operation_id": OperationId::generate().as_str(), "expires_at": rfc3339(expires)})))
}

/// `POST /api/forms/{form}/submissions`.
async fn submit(
    state: web::Data<AppState>,
    form: Result<SubmitForm, Problem>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Problem> {
    let form = form.inspect_err(|problem| record_refusal(&state, None, problem))?;
    let f = &form.form;
    Ok(match submit_json(&state, &form.gate(), f, &req, payload).await {
        Ok(response) => response,
        Err(Refusal { problem, .. }) => {
            record_refusal(&state, Some(&form.name), &problem);
            let accept_language = req.headers().get("Accept-Language").and_then(|v| v.to_str().ok());
            problem.response_in(Some(f), f.locale_for(accept_language))
        }
    })
}

async fn submit_json(
    state: &AppState,
    gate: &Gate<'_>,
    form: &Form,
    req: &HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Refusal> {
    check_rate(gate, form, req)?;
    if !is_json(media_type(req.headers()).as_deref()) {
        return Err(
            Problem::new(ProblemKind::UnsupportedMediaType, "send Content-Type: application/json").into()
        );
    }
    let bytes = read_limited(req, payload, form.max_body_bytes).await?;
    let (body_key, raw) = parse_json(&bytes, form)?;
    let (raw, files) = super::uploads::resolve(state, form, raw).await?;
    let mut raw = super::journey::with_header(req, raw);
    let key = resolve_key(req.headers().get("Idempotency-Key"), body_key.as_deref(), form.allow_keyless_api)?;
    let mut screening = Screening::take(form, &mut raw, false, gate.proxies.client_of(req));
    screening.locale =
        form.visitor_locale(req.headers().get("Accept-Language").and_then(|v| v.to_str().ok()));
    let request = SubmitRequest {
        form,
        channel: Channel::Api,
        operation_id: key.clone(),
        raw: &raw,
        files: &files,
        screening: &screening,
        scans: state.files.scan(form, &files).await,
    };
    let outcome =
        run_submit(state, request).await.map_err(|problem| Refusal { problem, key, raw: Vec::new() })?;
    Ok(match outcome {
        Outcome::Created(r) => HttpResponse::Created()
            .insert_header(("Location", location(form.name(), &r.operation_id)))
            .content_type("application/json")
            .body(r.body),
        Outcome::Replayed(r) => HttpResponse::Ok()
            .insert_header(("Location", location(form.name(), &r.operation_id)))
            .insert_header(("Idempotent-Replayed", "true"))
            .content_type("application/json")
            .body(r.body),
        other => outcome_problem(&other).map(|p| p.response()).unwrap_or_else(|| HttpResponse::Ok().finish()),
    })
}

/// `GET /api/forms/{form}/submissions/{operation_id}`: ids and states, never content.
async fn status(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, Problem> {
    let (form, operation_id) = path.into_inner();
    super::form(&state, &form)?;
    OperationId::parse(&operation_id)
        .map_err(|e| Problem::new(ProblemKind::OperationIdInvalid, e.to_string()))?;
    let pool = state.pool.clone();
    let body = web::block(move || crate::services::status::status(&pool, &form, &operation_id))
        .await??
        .ok_or_else(|| Problem::new(ProblemKind::NotFound, "no submission with this operation ID"))?;
    Ok(HttpResponse::Ok().json(body))
}

fn location(form: &str, operation_id: &str) -> String {
    format!("/api/forms/{form}/submissions/{operation_id}")
}
