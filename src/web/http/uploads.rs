//! Files for the JSON API: `POST /api/forms/{form}/uploads` streams one file (the raw body)
//! into the file store and answers its `upl_…` ID, which a submission then names in its
//! file field; the uploads a JSON submission names are resolved here, before validation.

use actix_web::{web, HttpRequest, HttpResponse};
use futures_util::StreamExt;
use serde_json::json;

use super::body::{declared_length, late, malformed, too_large, unreadable};
use super::multipart::not_stored;
use super::problem::{Problem, ProblemKind};
use super::submit::{check_rate, db_problem, record_refusal, Gate, Refusal};
use super::{RateLimiter, TrustedProxies};
use crate::config::Form;
use crate::domain::RawFields;
use crate::services::files::{self, ResolveError};
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    super::cors::api(cfg).route("/api/forms/{form}/uploads", web::post().to(upload));
}

/// `POST /api/forms/{form}/uploads` → 201 `{upload_id, sha256, size, content_type}`.
async fn upload(
    state: web::Data<AppState>,
    limiter: web::Data<RateLimiter>,
    proxies: web::Data<TrustedProxies>,
    form: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> HttpResponse {
    let f = match super::form(&state, &form) {
        Ok(f) => f,
        Err(problem) => return problem.response(),
    };
    let gate = Gate { limiter: &limiter, proxies: &proxies };
    match receive(&state, &gate, f, &req, payload).await {
        Ok(body) => HttpResponse::Created().json(body),
        Err(problem) => {
            record_refusal(&state, Some(&form), &problem);
            problem.response()
        }
    }
}

async fn receive(
    state: &AppState,
    gate: &Gate<'_>,
    form: &Form,
    req: &HttpRequest,
    mut payload: web::Payload,
) -> Result<serde_json::Value, Problem> {
    check_rate(gate, form, req)?;
    // The largest file any of its fields takes (the field is checked again on submission).
    let Some(limit) = form
        .fields
        .iter()
        .filter(|f| f.is_file())
        .map(|f| f.max_bytes.unwrap_or(form.max_files_bytes).min(form.max_files_bytes))
        .max()
    else {
        return Err(Problem::new(ProblemKind::NotFound, "this form takes no files"));
    };
    let too_big = || too_large(usize::try_from(limit).unwrap_or(usize::MAX));
    if declared_length(req.headers()).is_some_and(|n| n > limit) {
        return Err(too_big());
    }
    let deadline = std::time::Duration::from_millis(state.config.server.body_timeout_ms);
    let stored = tokio::time::timeout(deadline, async {
        let _turn = state.files.turn().await;
        let mut incoming = state.files.begin().map_err(not_stored)?;
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|e| unreadable(&e))?;
            incoming.write(&chunk).map_err(not_stored)?;
            if incoming.size() > limit {
                return Err(too_big());
            }
        }
        if incoming.size() == 0 {
            return Err(malformed("the body is empty; send the file's bytes"));
        }
        // Percent-encoded (or raw UTF-8) by the client; made safe by `safe_file_name`.
        let name = req.headers().get("Onceform-File-Name").map(|v| String::from_utf8_lossy(v.as_bytes()));
        let name = name.as_deref().unwrap_or("file");
        let name = percent_encoding::percent_decode_str(name).decode_utf8_lossy().into_owned();
        state.files.finish(incoming, &name).await.map_err(not_stored)
    })
    .await
    .unwrap_or_else(|_| Err(late()))?;
    let (pool, name, file) = (state.pool.clone(), form.name().to_string(), stored.clone());
    let id = web::block(move || files::record_upload(&pool, &name, &file))
        .await
        .map_err(|_| Problem::unavailable())?
        .map_err(db_problem)?;
    Ok(json!({
        "upload_id": id,
        "sha256": stored.sha256,
        "size": stored.size,
        "content_type": stored.content_type,
    }))
}

/// `raw` with the uploads its file fields name replaced by their files.
pub async fn resolve(state: &AppState, form: &Form, mut raw: RawFields) -> Result<RawFields, Refusal> {
    if !form.has_file_field() {
        return Ok(raw);
    }
    let (pool, f) = (state.pool.clone(), form.clone());
    let resolved = web::block(move || files::resolve_uploads(&pool, f.name(), &f, &mut raw).map(|()| raw))
        .await
        .map_err(|_| Problem::unavailable())?;
    resolved.map_err(|e| match e {
        ResolveError::Invalid(errors) => Problem::invalid_fields(errors).into(),
        ResolveError::Store(e) => db_problem(e).into(),
    })
}
