//! The admin's decisions on suspected duplicate pairs (the use case is
//! `services::duplicates::decide`): the forms in, the flash and the list to go back to out.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse, ResponseError};
use serde::Deserialize;

use crate::base::i18n::Locale;
use crate::domain::PairStatus;
use crate::services::duplicates::decide::{self, Decision, Outcome, PairAction, PairError, BATCH_MAX};
use crate::services::storage::DbError;
use crate::web::admin::flash::Flash;
use crate::web::admin::guard::{authorize, AdminAction, AuthError, CsrfForm, SessionUser};
use crate::web::admin::{blocking, done, Refusal, Said};
use crate::web::state::AppState;

#[derive(Deserialize)]
pub struct PairForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    note: String,
}

impl CsrfForm for PairForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

impl Refusal for PairError {
    fn status(&self) -> StatusCode {
        match self {
            PairError::NotFound => StatusCode::NOT_FOUND,
            PairError::Db(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::CONFLICT,
        }
    }

    fn text(&self, locale: Locale) -> String {
        locale.text(match self {
            PairError::NotFound => "admin-refused-no-such-pair",
            PairError::AlreadyDecided => "admin-refused-pair-decided",
            PairError::NothingToUndo => "admin-refused-nothing-to-undo",
            PairError::NoneOpen => "admin-refused-none-open",
            PairError::Db(_) => "admin-db-unavailable",
        })
    }
}

/// Back to the list (`back`) with `flash`, or the refusal in `locale`.
fn respond(locale: Locale, result: Result<Result<(PairStatus, Flash), PairError>, DbError>) -> HttpResponse {
    match result.map_err(PairError::from).and_then(|r| r) {
        Ok((back, flash)) => done(&format!("/admin/duplicates?status={back}"), flash),
        Err(error) => Said { locale, error }.error_response(),
    }
}

pub async fn act(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    action: AdminAction<PairForm>,
) -> HttpResponse {
    let (id, name) = path.into_inner();
    let asked = match name.as_str() {
        "undo" => PairAction::Undo,
        other => match Decision::parse(other) {
            Some(d) => PairAction::Decide(d),
            None => return HttpResponse::NotFound().finish(),
        },
    };
    let AdminAction { user, form } = action;
    let locale = user.locale;
    let (pool, forms) = (state.pool.clone(), state.forms());
    let run = move || {
        let notes = |name: &str| forms.notes_duplicates(name);
        Ok(decide::apply(&pool, &user.actor(), &notes, &id, asked, &form.note).map(|outcome| match outcome {
            Outcome::Decided { decision, duplicate, original, effects } => {
                let code = match decision {
                    Decision::NotDuplicate => "pair_not_duplicate",
                    Decision::Duplicate => "pair_duplicate",
                };
                (PairStatus::Open, Flash::new(code).arg(duplicate).arg(original).arg(effects))
            }
            Outcome::Undone { was, restored } => (was, Flash::new("pair_undone").arg(restored)),
        }))
    };
    respond(locale, blocking(run).await)
}

/// `ids` repeated (the ticked pairs), `decision`, `note` and `csrf`.
pub async fn batch(state: web::Data<AppState>, user: SessionUser, body: web::Bytes) -> HttpResponse {
    let Ok(fields) = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&body) else {
        return AuthError::BadForm.said_in(user.locale).error_response();
    };
    let field = |name: &str| fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.trim()).unwrap_or("");
    if let Err(e) = authorize(&user, field("csrf")) {
        return e.said_in(user.locale).error_response();
    }
    let locale = user.locale;
    let Some(decision) = Decision::parse(field("decision")) else {
        return crate::web::admin::plain(StatusCode::BAD_REQUEST, user.locale.text("admin-pick-decision"));
    };
    let mut ids: Vec<String> = fields.iter().filter(|(n, _)| n == "ids").map(|(_, v)| v.clone()).collect();
    ids.sort();
    ids.dedup();
    if ids.is_empty() {
        return done("/admin/duplicates?status=open", Flash::new("select_pairs"));
    }
    if ids.len() > BATCH_MAX {
        let max = [("n", crate::base::i18n::Arg::Num(BATCH_MAX as i64))];
        return crate::web::admin::plain(
            StatusCode::BAD_REQUEST,
            user.locale.format("admin-too-many-pairs", &max),
        );
    }
    let note = field("note").to_string();
    let (pool, forms) = (state.pool.clone(), state.forms());
    let run = move || {
        let notes = |name: &str| forms.notes_duplicates(name);
        Ok(decide::apply_batch(&pool, &user.actor(), &notes, &ids, decision, &note).map(
            |(decided, skipped)| {
                let code = match decision {
                    Decision::NotDuplicate => "pairs_not_duplicate",
                    Decision::Duplicate => "pairs_duplicate",
                };
                (PairStatus::Open, Flash::new(code).arg(decided).arg(skipped))
            },
        ))
    };
    respond(locale, blocking(run).await)
}
