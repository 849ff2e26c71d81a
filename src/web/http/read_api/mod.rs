//! The read API, `/api/v1` (JSON, bearer tokens): lists of submissions, effect records and
//! duplicate pairs, one submission, and decisions on pairs (`decision`). Handlers parse the query, hand
//! it with the caller to `services::read_api` on a blocking thread, and answer its result.

mod bearer;
mod decision;
mod params;

use actix_web::http::header::{CACHE_CONTROL, WWW_AUTHENTICATE};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use serde_json::json;

use super::problem::{Problem, ProblemKind};
use super::submit::db_problem;
use crate::domain::{EffectState, PairStatus};
use crate::services::files::FileLinks;
use crate::services::read_api::{self, effects, submissions, Caller, Page, ReadError, Reader};
use crate::web::state::AppState;
pub use bearer::ApiCaller;
use params::Params;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/api/v1/submissions", web::get().to(list_submissions))
        .route("/api/v1/submissions/{id}", web::get().to(submission))
        .route("/api/v1/effects", web::get().to(list_effects))
        .route("/api/v1/duplicates", web::get().to(list_duplicates))
        .route("/api/v1/duplicates/{id}/decision", web::post().to(decision::post))
        .route("/api/v1/changes", web::get().to(list_changes));
}

/// A refusal or failure of the use case as a problem (403s with their bearer challenge).
fn refusal(e: ReadError) -> HttpResponse {
    let challenge = match &e {
        ReadError::MissingScope(scope) => {
            Some(format!(r#"Bearer realm="onceform", error="insufficient_scope", scope="{scope}""#))
        }
        ReadError::OtherForm => Some(r#"Bearer realm="onceform", error="insufficient_scope""#.to_string()),
        _ => None,
    };
    let mut resp = match e {
        ReadError::MissingScope(scope) => {
            Problem::new(ProblemKind::InsufficientScope, format!("this token lacks the scope {scope}"))
                .with("scope", scope.as_str())
                .response()
        }
        ReadError::OtherForm => Problem::new(
            ProblemKind::InsufficientScope,
            "this token is limited to another form than this record's or the one asked for",
        )
        .response(),
        ReadError::NotFound => Problem::new(ProblemKind::NotFound, "no such record").response(),
        ReadError::Db(e) => db_problem(e).response(),
    };
    if let Some(v) = challenge.and_then(|c| c.parse().ok()) {
        resp.headers_mut().insert(WWW_AUTHENTICATE, v);
    }
    resp
}

fn json_response(body: &impl Serialize) -> HttpResponse {
    HttpResponse::Ok().insert_header((CACHE_CONTROL, "no-store")).json(body)
}

fn page_response<T: Serialize>(page: Page<T>) -> HttpResponse {
    json_response(&json!({"items": page.items, "next_cursor": page.next.map(|c| c.encode())}))
}

/// Runs `read` with a `Reader` of the forms in force on a blocking thread; its answer as JSON.
async fn read<T, F>(
    state: web::Data<AppState>,
    caller: Caller,
    read: F,
    answer: fn(T) -> HttpResponse,
) -> HttpResponse
where
    T: Send + 'static,
    F: FnOnce(&Reader<'_>, &Caller) -> Result<T, ReadError> + Send + 'static,
{
    let done = web::block(move || {
        let forms = state.forms();
        let base = state.config.server.public_url.as_deref().unwrap_or("");
        let links = FileLinks::new(state.keyring.clone(), base);
        let reader =
            Reader { pool: &state.pool, forms: &forms, links: &links, now: chrono::Utc::now().timestamp() };
        read(&reader, &caller)
    })
    .await;
    match done {
        Ok(Ok(v)) => answer(v),
        Ok(Err(e)) => refusal(e),
        Err(_) => Problem::unavailable().response(),
    }
}

/// `GET /api/v1/submissions?form=&since=&until=&state=&cursor=&limit=`.
async fn list_submissions(state: web::Data<AppState>, caller: ApiCaller, req: HttpRequest) -> HttpResponse {
    let parsed = (|| {
        let p = Params::parse(req.query_string())?;
        Ok::<_, Problem>(submissions::Query {
            form: p.text("form")?,
            since: p.time("since")?,
            until: p.time("until")?,
            state: p.choice("state", &EffectState::ALL)?,
            cursor: p.cursor()?,
            limit: p.limit()?,
        })
    })();
    match parsed {
        Ok(q) => read(state, caller.0, move |r, c| submissions::list(r, c, q), page_response).await,
        Err(p) => p.response(),
    }
}

/// `GET /api/v1/submissions/{id}`.
async fn submission(state: web::Data<AppState>, caller: ApiCaller, id: web::Path<String>) -> HttpResponse {
    let id = id.into_inner();
    read(state, caller.0, move |r, c| submissions::detail(r, c, &id), |d| json_response(&d)).await
}

/// `GET /api/v1/effects?state=&form=&cursor=&limit=`.
async fn list_effects(state: web::Data<AppState>, caller: ApiCaller, req: HttpRequest) -> HttpResponse {
    let parsed = (|| {
        let p = Params::parse(req.query_string())?;
        Ok::<_, Problem>(effects::Query {
            state: p.choice("state", &EffectState::ALL)?,
            form: p.text("form")?,
            cursor: p.cursor()?,
            limit: p.limit()?,
        })
    })();
    match parsed {
        Ok(q) => read(state, caller.0, move |r, c| effects::list(r, c, q), page_response).await,
        Err(p) => p.response(),
    }
}

/// The statuses a pair may be listed in (`screening` is not yet a pair to review).
const LISTED_STATUSES: [PairStatus; 4] =
    [PairStatus::Open, PairStatus::NotDuplicate, PairStatus::Duplicate, PairStatus::SameSender];

/// `GET /api/v1/duplicates?status=&form=&cursor=&limit=`.
async fn list_duplicates(state: web::Data<AppState>, caller: ApiCaller, req: HttpRequest) -> HttpResponse {
    let parsed = (|| {
        let p = Params::parse(req.query_string())?;
        Ok::<_, Problem>(read_api::duplicates::Query {
            status: p.choice("status", &LISTED_STATUSES)?.unwrap_or(PairStatus::Open),
            form: p.text("form")?,
            cursor: p.cursor()?,
            limit: p.limit()?,
        })
    })();
    match parsed {
        Ok(q) => read(state, caller.0, move |r, c| read_api::duplicates::list(r, c, q), page_response).await,
        Err(p) => p.response(),
    }
}

/// `GET /api/v1/changes?cursor=&limit=`: the change feed after the cursor (`services::changes`).
/// A token limited to a form reads that form's changes; one without `read:effects` reads no
/// effect's state. The cursor moves past what it may not read, so it never comes back.
async fn list_changes(state: web::Data<AppState>, caller: ApiCaller, req: HttpRequest) -> HttpResponse {
    use crate::services::changes::{self, Cursor as FeedCursor, What};
    let caller = caller.0;
    if let Err(e) = caller.require(crate::domain::ApiScope::ReadSubmissions) {
        return refusal(e);
    }
    let parsed = (|| {
        let p = Params::parse(req.query_string())?;
        let cursor = p.raw("cursor").map(FeedCursor::parse).transpose().map_err(|_| {
            Problem::new(ProblemKind::InvalidParameter, "`cursor`: not a cursor of this feed")
                .with("parameter", "cursor")
        })?;
        Ok::<_, Problem>((cursor, p.limit()?))
    })();
    let (cursor, limit) = match parsed {
        Ok(q) => q,
        Err(p) => return p.response(),
    };
    let pool = state.pool.clone();
    let limit = u32::try_from(limit).unwrap_or(changes::MAX_LIMIT);
    let page = web::block(move || changes::read(&pool, cursor.as_ref(), limit)).await;
    let page = match page {
        Ok(Ok(page)) => page,
        Ok(Err(changes::ReadError::Expired)) => {
            return Problem::new(
                ProblemKind::CursorExpired,
                "retention removed changes after this cursor: start over",
            )
            .response()
        }
        Ok(Err(changes::ReadError::BadCursor(_))) => {
            return Problem::new(ProblemKind::InvalidParameter, "`cursor`: not a cursor of this feed")
                .response()
        }
        Ok(Err(changes::ReadError::Db(e))) => return db_problem(e).response(),
        Err(_) => return Problem::unavailable().response(),
    };
    let effects = caller.may(crate::domain::ApiScope::ReadEffects);
    let items: Vec<_> = page
        .changes
        .into_iter()
        .filter(|c| caller.form.as_ref().is_none_or(|f| *f == c.form))
        .filter(|c| effects || !matches!(c.what, What::EffectState { .. }))
        .collect();
    json_response(&json!({"items": items, "next_cursor": page.next.as_str()}))
}
