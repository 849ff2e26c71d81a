//! `POST /hooks/{source}` (and WeCom's URL check by `GET`): verify, then store or quarantine
//! in one transaction before answering. A body is read only once it has its share of the
//! budget of unverified bodies (`body_budget`), which it holds until its signature is checked.

use std::time::{Duration, Instant};

use futures_util::StreamExt;

use actix_web::{web, HttpRequest, HttpResponse};

use super::config::StoreDown;
use super::inbound::{check, Checked};
use super::spool;
use super::verify::{self, CallbackQuery, VerifyError};
use super::Source;
use crate::base::clock::now;
use crate::config::TrustedProxies;
use crate::services::inbound::ingest::{store_delivery, Ingested, Stored};
use crate::services::storage::{DbError, Writes};
use crate::web::hooks::Hooks;
use crate::web::http::declared_length;
use crate::web::http::problem::{Problem, ProblemKind};
use crate::web::state::AppState;

/// How long a sender may take to send its body.
const READ_DEADLINE: Duration = Duration::from_secs(10);

pub fn routes(cfg: &mut web::ServiceConfig) {
    super::admin::routes(cfg);
    cfg.service(
        web::resource("/hooks/{source}").route(web::post().to(receive)).route(web::get().to(wecom_url_check)),
    );
}

/// Why a body was not read.
enum BodyError {
    Unreadable,
    TooLarge,
    TooSlow,
}

impl BodyError {
    fn response(&self) -> HttpResponse {
        match self {
            BodyError::Unreadable => {
                Problem::new(ProblemKind::MalformedBody, "the request body could not be read").response()
            }
            BodyError::TooLarge => {
                Problem::new(ProblemKind::PayloadTooLarge, "the body is over this source's limit").response()
            }
            BodyError::TooSlow => HttpResponse::RequestTimeout().body("the body did not arrive in time"),
        }
    }
}

/// The body, up to `limit` bytes, within `READ_DEADLINE`.
async fn read_body(mut payload: web::Payload, limit: usize) -> Result<web::Bytes, BodyError> {
    let read = async {
        let mut buf = web::BytesMut::new();
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|_| BodyError::Unreadable)?;
            if buf.len() + chunk.len() > limit {
                return Err(BodyError::TooLarge);
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(buf.freeze())
    };
    tokio::time::timeout(READ_DEADLINE, read).await.unwrap_or(Err(BodyError::TooSlow))
}

async fn receive(
    state: web::Data<AppState>,
    hooks: web::Data<Hooks>,
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
) -> HttpResponse {
    let started = Instant::now();
    let Some(source) = hooks.source(&path) else {
        return Problem::new(ProblemKind::NotFound, "there is no webhook source with this name").response();
    };
    let limit = source.config.max_body_bytes;
    let declared = declared_length(req.headers()).map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    if declared.is_some_and(|n| n > limit) {
        return BodyError::TooLarge.response();
    }
    let client = match req.app_data::<web::Data<TrustedProxies>>() {
        Some(proxies) => proxies.client_of(&req),
        None => req.peer_addr().map(|a| a.ip()),
    };
    let Some(reserved) = hooks.budget().reserve(client, declared.unwrap_or(limit)) else {
        return busy(source);
    };
    let body = match read_body(payload, limit).await {
        Ok(b) => b,
        Err(e) => return e.response(),
    };
    let query = web::Query::<CallbackQuery>::from_query(req.query_string())
        .map(|q| q.into_inner())
        .unwrap_or_default();
    let unix = chrono::Utc::now().timestamp();
    let delivery = verify::Delivery {
        headers: req.headers(),
        query: &query,
        raw: &body,
        now: unix,
        tolerance: source.config.tolerance_seconds,
    };
    let checked = match check(source, &delivery, &state.keyring) {
        Ok(c) => c,
        Err(e) => return refused(source, e),
    };
    // Verified: what is held from here on is a sender's who holds the secret.
    drop(reserved);
    let writes = state.acceptor.writes().clone();
    let name = source.name.clone();
    let config = source.config.clone();
    let spooled = checked.clone();
    let stored = web::block(move || writes.run(move |c| store_delivery(c, &name, &config, &checked))).await;
    let resp = match stored {
        Ok(Ok(outcome)) => answer(source, &outcome),
        Ok(Err(e)) => store_down(source, &hooks, spooled, e).await,
        Err(_) => store_down(source, &hooks, spooled, DbError::Unavailable("blocking pool".into())).await,
    };
    source.count_ingest(u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX));
    resp
}

/// 503 with Retry-After: the unverified bodies being received hold the client's budget, or
/// the whole budget; nothing of this one was read.
fn busy(source: &Source) -> HttpResponse {
    tracing::debug!(source = %source.name, "webhook refused: the budget of unverified bodies is spent");
    Problem::new(
        ProblemKind::Unavailable,
        "too many unverified deliveries are being received; deliver it again later",
    )
    .retry_after(1)
    .response()
}

fn answer(source: &Source, stored: &Stored) -> HttpResponse {
    let (mut resp, status) = match stored {
        Stored::Event(Ingested::Created { .. }) => (HttpResponse::Ok(), "stored"),
        Stored::Event(Ingested::Replayed { .. }) => {
            let mut r = HttpResponse::Ok();
            r.insert_header(("Idempotent-Replayed", "true"));
            (r, "replayed")
        }
        Stored::Event(Ingested::Conflict { .. }) => (HttpResponse::Ok(), "conflict"),
        Stored::Quarantined => (HttpResponse::Accepted(), "quarantined"),
    };
    if source.verifier.answers_empty() {
        return resp.content_type("text/plain; charset=utf-8").body("");
    }
    resp.json(serde_json::json!({ "status": status }))
}

/// 401 (nothing stored) or 400.
fn refused(source: &Source, e: VerifyError) -> HttpResponse {
    match e {
        VerifyError::Unauthorized(reason) => {
            source.count_signature_failure();
            tracing::warn!(source = %source.name, reason, "webhook refused: signature");
            HttpResponse::Unauthorized().content_type("application/problem+json").body(
                serde_json::json!({
                    "type": "https://onceform.dev/problems/signature-invalid",
                    "title": "The signature is missing, wrong or stale",
                    "status": 401,
                    "detail": "nothing was stored",
                })
                .to_string(),
            )
        }
        VerifyError::Malformed(reason) => {
            tracing::info!(source = %source.name, reason, "webhook refused: malformed body");
            Problem::new(ProblemKind::MalformedBody, format!("the body could not be read ({reason})"))
                .response()
        }
    }
}

/// The database could not take the delivery. `when_store_down = "reject"`: 503 with
/// Retry-After, so the sender redelivers later; `"spool"`: 200 once the delivery is in the
/// fsynced spool (503 when the spool cannot take it either).
async fn store_down(source: &Source, hooks: &Hooks, checked: Checked, e: DbError) -> HttpResponse {
    tracing::warn!(source = %source.name, error = %e, "webhook not stored: database");
    if let DbError::Query(_) = e {
        return Problem::new(ProblemKind::Internal, "an internal error occurred; nothing was stored")
            .response();
    }
    if let (StoreDown::Spool, Some(spool)) = (source.config.when_store_down, hooks.spool().cloned()) {
        let record = spool::Record {
            source: source.name.clone(),
            body: checked.body,
            content_type: checked.content_type.into(),
            event_id: checked.event_id,
            received_at: now(),
        };
        match web::block(move || spool.append(&record)).await {
            Ok(Ok(())) => return HttpResponse::Ok().json(serde_json::json!({ "status": "spooled" })),
            Ok(Err(error)) => tracing::error!(source = %source.name, %error, "webhook not spooled"),
            Err(_) => tracing::error!(source = %source.name, "webhook not spooled: blocking pool"),
        }
    }
    Problem::new(ProblemKind::Unavailable, "the event could not be stored; deliver it again later")
        .retry_after(5)
        .response()
}

/// Replays the spool into the store while `serve` runs: at start, then every second.
pub async fn replay_spool_periodically(hooks: Hooks, writes: Writes) {
    let Some(spool) = hooks.spool().cloned() else { return };
    loop {
        let (spool, hooks, writes) = (spool.clone(), hooks.clone(), writes.clone());
        let replayed = web::block(move || {
            spool.replay(|r| {
                let Some(source) = hooks.source(&r.source) else {
                    tracing::error!(source = %r.source, "spooled delivery of a source no longer configured: dropped");
                    return Ok(());
                };
                let (checked, name, config) = (r.checked(), r.source.clone(), source.config.clone());
                writes.run(move |c| store_delivery(c, &name, &config, &checked)).map(|_| ())
            })
        })
        .await;
        match replayed {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => tracing::info!(records = n, "webhook spool replayed into the store"),
            Ok(Err(error)) => tracing::debug!(%error, "webhook spool kept: the store is still down"),
            Err(_) => {}
        }
        tokio::time::sleep(spool::REPLAY_EVERY).await;
    }
}

/// WeCom's URL verification: answer the decrypted `echostr`.
async fn wecom_url_check(hooks: web::Data<Hooks>, req: HttpRequest, path: web::Path<String>) -> HttpResponse {
    let Some(source) = hooks.source(&path) else {
        return Problem::new(ProblemKind::NotFound, "there is no webhook source with this name").response();
    };
    let query = web::Query::<CallbackQuery>::from_query(req.query_string())
        .map(|q| q.into_inner())
        .unwrap_or_default();
    let unix = chrono::Utc::now().timestamp();
    let Some(checked) = source.keys.url_check(&query, unix, source.config.tolerance_seconds) else {
        return HttpResponse::MethodNotAllowed().finish();
    };
    match checked {
        Ok(plain) => HttpResponse::Ok().content_type("text/plain; charset=utf-8").body(plain),
        Err(e) => refused(source, e),
    }
}
