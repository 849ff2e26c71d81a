//! `POST /api/v1/duplicates/{id}/decision` with `{"decision": "duplicate" | "not-duplicate" |
//! "undo", "note": "…"}`: the body parsed here, the decision made by the use case.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use super::bearer::ApiCaller;
use super::{json_response, refusal};
use crate::services::duplicates::decide::{Decision, PairAction};
use crate::services::read_api::decisions::{decide, DecisionError};
use crate::web::http::body::{is_json, media_type, read_limited};
use crate::web::http::problem::{Problem, ProblemKind};
use crate::web::state::AppState;

/// The largest body a decision takes.
const MAX_BODY: usize = 16 * 1024;
/// The longest note kept with a decision.
pub const MAX_NOTE: usize = 1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    decision: String,
    #[serde(default)]
    note: Option<String>,
}

fn malformed(detail: &str) -> HttpResponse {
    Problem::new(ProblemKind::MalformedBody, detail).response()
}

/// The action and note the body asks for, or the 400/415 that says why not.
async fn parse(req: &HttpRequest, payload: web::Payload) -> Result<(PairAction, String), HttpResponse> {
    if !is_json(media_type(req.headers()).as_deref()) {
        return Err(
            Problem::new(ProblemKind::UnsupportedMediaType, "send Content-Type: application/json").response()
        );
    }
    let bytes = read_limited(req, payload, MAX_BODY).await.map_err(|p| p.response())?;
    let body: Body = serde_json::from_slice(&bytes)
        .map_err(|_| malformed("send a JSON object: {\"decision\": \"duplicate\", \"note\": \"…\"}"))?;
    let action = match body.decision.as_str() {
        "undo" => PairAction::Undo,
        other => Decision::parse(other)
            .map(PairAction::Decide)
            .ok_or_else(|| malformed("`decision` is one of duplicate, not-duplicate, undo"))?,
    };
    let note = body.note.unwrap_or_default();
    if note.chars().count() > MAX_NOTE {
        return Err(malformed(&format!("`note` is at most {MAX_NOTE} characters")));
    }
    Ok((action, note))
}

pub async fn post(
    state: web::Data<AppState>,
    caller: ApiCaller,
    id: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> HttpResponse {
    let (action, note) = match parse(&req, payload).await {
        Ok(parsed) => parsed,
        Err(resp) => return resp,
    };
    let (pool, forms, id) = (state.pool.clone(), state.forms(), id.into_inner());
    let run =
        move || decide(&pool, &caller.0, &|name: &str| forms.notes_duplicates(name), &id, action, &note);
    match web::block(run).await {
        Ok(Ok(decided)) => json_response(&decided),
        Ok(Err(DecisionError::Read(e))) => refusal(e),
        Ok(Err(DecisionError::Refused(why))) => Problem::new(ProblemKind::DecisionRefused, why).response(),
        Err(_) => Problem::unavailable().response(),
    }
}
