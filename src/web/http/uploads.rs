//! Files for the JSON API: `POST /api/forms/{form}/uploads` streams one file (the raw body)
//! into the file store, if one of the form's file fields takes its type, and answers its
//! `upl_…` ID, which a submission then names in its file field; the uploads a submission
//! names are resolved here, before validation.

use actix_web::{web, HttpRequest, HttpResponse};
use futures_util::StreamExt;
use serde_json::json;

use super::body::{late, malformed, too_large, unreadable};
use super::connections::declared_length;
use super::multipart::not_stored;
use super::problem::{Problem, ProblemKind};
use super::submit::{check_rate, record_refusal, Gate, Refusal, SubmitForm};
use super::upload_pace::Paced;
use crate::config::Form;
use crate::domain::{accepts_type, safe_file_name, Attached, RawFields};
use crate::services::files::gate::{FileGate, Refused};
use crate::services::files::{self, ResolveError};
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    super::cors::api(cfg).route("/api/forms/{form}/uploads", web::post().to(upload));
}

/// `POST /api/forms/{form}/uploads` → 201 `{upload_id, sha256, size, content_type}`.
async fn upload(
    state: web::Data<AppState>,
    submit: SubmitForm,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Problem> {
    let body = receive(&state, &submit.gate(), &submit.form, &req, payload)
        .await
        .inspect_err(|problem| record_refusal(&state, Some(&submit.name), problem))?;
    Ok(HttpResponse::Created().json(body))
}

async fn receive(
    state: &AppState,
    gate: &Gate<'_>,
    form: &Form,
    req: &HttpRequest,
    mut payload: web::Payload,
) -> Result<serde_json::Value, Problem> {
    check_rate(gate, form, req)?;
    // The largest file any of its fields takes (the field is checked again on submission),
    // no larger than clamd scans when the form scans.
    let Some(limit) = form
        .fields
        .iter()
        .filter(|f| f.is_file())
        .map(|f| f.max_bytes.unwrap_or(form.max_files_bytes).min(form.max_files_bytes))
        .max()
    else {
        return Err(Problem::new(ProblemKind::NotFound, "this form takes no files"));
    };
    let limit = state.files.file_limit(form, limit);
    let too_big = || too_large(usize::try_from(limit).unwrap_or(usize::MAX));
    if declared_length(req.headers()).is_some_and(|n| n > limit) {
        return Err(too_big());
    }
    let deadline = std::time::Duration::from_millis(state.config.server.body_timeout_ms);
    // Percent-encoded (or raw UTF-8) by the client; made safe to show.
    let name = req.headers().get("Onceform-File-Name").map(|v| String::from_utf8_lossy(v.as_bytes()));
    let name = percent_encoding::percent_decode_str(name.as_deref().unwrap_or("file")).decode_utf8_lossy();
    let name = safe_file_name(&name);
    // A type none of the form's file fields takes is refused before it reaches the store.
    let allowed = |content_type: &str| {
        form.fields.iter().filter(|f| f.is_file()).any(|f| accepts_type(f, content_type, &name))
    };
    let stored = tokio::time::timeout(deadline, async {
        let _turn = state.files.turn().await;
        let mut payload = Paced::new(&mut payload);
        let mut gate = FileGate::new(&state.files);
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|e| unreadable(&e))?;
            gate.write(&chunk, allowed).await.map_err(refused_type)?;
            if gate.size() > limit {
                return Err(too_big());
            }
        }
        let incoming = gate
            .end(allowed)
            .map_err(refused_type)?
            .ok_or_else(|| malformed("the body is empty; send the file's bytes"))?;
        state.files.finish(incoming, &name).await.map_err(not_stored)
    })
    .await
    .unwrap_or_else(|_| Err(late()))?;
    let (pool, name, file) = (state.pool.clone(), form.name().to_string(), stored.clone());
    let id = web::block(move || files::record_upload(&pool, &name, &file)).await??;
    Ok(json!({
        "upload_id": id,
        "sha256": stored.sha256,
        "size": stored.size,
        "content_type": stored.content_type,
    }))
}

/// A type none of the form's fields takes (415), or a file the store could not take (503).
fn refused_type(e: Refused) -> Problem {
    match e {
        Refused::Type(t) => Problem::new(
            ProblemKind::UnsupportedMediaType,
            format!("no file field of this form takes {t} files (the type is read from the content)"),
        ),
        Refused::Store(e) => not_stored(e),
    }
}

/// `raw` without its file fields' values, and the files the uploads they name hold.
pub async fn resolve(
    state: &AppState,
    form: &Form,
    mut raw: RawFields,
) -> Result<(RawFields, Attached), Refusal> {
    if !form.has_file_field() {
        return Ok((raw, Attached::new()));
    }
    let (pool, f) = (state.pool.clone(), form.clone());
    let resolved =
        web::block(move || files::resolve_uploads(&pool, f.name(), &f, &mut raw).map(|a| (raw, a)))
            .await
            .map_err(|_| Problem::unavailable())?;
    resolved.map_err(|e| match e {
        ResolveError::Invalid(errors) => Problem::invalid_fields(errors).into(),
        ResolveError::Store(e) => Problem::from(e).into(),
    })
}
