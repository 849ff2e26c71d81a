//! What an admin does with an open conflict: dismiss it, or accept the conflicting content as
//! a new inquiry (its own submission, operation ID and side-effect records).

use crate::base::i18n::{Arg, Locale};
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;

use crate::base::format::reference;
use crate::services::conflicts::{self, ConflictActionError};
use crate::web::admin::flash::Flash;
use crate::web::admin::guard::{AdminAction, CsrfForm, SessionUser};
use crate::web::admin::{blocking, done};
use crate::web::state::AppState;

#[derive(Deserialize)]
pub struct ConflictForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    note: String,
}

impl CsrfForm for ConflictForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

impl crate::web::admin::Refusal for ConflictActionError {
    fn status(&self) -> StatusCode {
        match self {
            ConflictActionError::NotFound => StatusCode::NOT_FOUND,
            ConflictActionError::Db(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::CONFLICT,
        }
    }

    fn text(&self, locale: Locale) -> String {
        match self {
            ConflictActionError::NotFound => locale.text("admin-refused-no-such-conflict"),
            ConflictActionError::NotOpen => locale.text("admin-refused-conflict-not-open"),
            ConflictActionError::Purged => locale.text("admin-refused-conflict-purged"),
            ConflictActionError::FormGone(form) => {
                locale.format("admin-refused-form-gone", &[("form", Arg::Str(form))])
            }
            // The accept rules' own sentence (a field the form no longer takes, …).
            ConflictActionError::Unacceptable(e) => e.to_string(),
            ConflictActionError::DecidedMeanwhile(r) => {
                locale.format("admin-refused-decided-meanwhile", &[("reference", Arg::Str(r))])
            }
            ConflictActionError::Db(_) => locale.text("admin-db-unavailable"),
        }
    }
}

pub async fn act(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    action: AdminAction<ConflictForm>,
) -> Result<HttpResponse, crate::web::admin::Said<ConflictActionError>> {
    let locale = action.user.locale;
    crate::web::admin::said(locale, act_on(state, path, action).await)
}

async fn act_on(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    action: AdminAction<ConflictForm>,
) -> Result<HttpResponse, ConflictActionError> {
    let (id, name) = path.into_inner();
    let AdminAction { user, form } = action;
    let note = form.note.trim().to_string();
    Ok(match name.as_str() {
        "dismiss" => done("/admin/conflicts?status=open", dismiss(&state, &id, user, note).await?),
        "accept" => done(&format!("/admin/conflicts/{id}"), accept_as_new(&state, &id, user, note).await?),
        _ => HttpResponse::NotFound().finish(),
    })
}

async fn dismiss(
    state: &AppState,
    id: &str,
    user: SessionUser,
    note: String,
) -> Result<Flash, ConflictActionError> {
    let (pool, id) = (state.pool.clone(), id.to_string());
    blocking(move || Ok(conflicts::dismiss(&pool, &user.actor(), &id, &note))).await??;
    Ok(Flash::new("conflict_dismissed"))
}

/// Accepts first (idempotent by the derived operation ID), then records the decision.
async fn accept_as_new(
    state: &AppState,
    id: &str,
    user: SessionUser,
    note: String,
) -> Result<Flash, ConflictActionError> {
    let (pool, acceptor, forms, id) =
        (state.pool.clone(), state.acceptor.clone(), state.forms.clone(), id.to_string());
    let accepted =
        blocking(move || Ok(conflicts::accept_as_new(&pool, &acceptor, &forms, &user.actor(), &id, &note)))
            .await??;
    Ok(Flash::new("conflict_accepted").arg(reference(&accepted)))
}
