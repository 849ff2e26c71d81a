//! What an admin does with an open conflict: dismiss it, or accept the conflicting content as
//! a new inquiry (its own submission, operation ID and side-effect records).

use crate::base::i18n::{Arg, Locale};
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;

use crate::base::format::reference;
use crate::services::conflicts::{self, AcceptAsNewError, ConflictActionError};
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
            ConflictActionError::Unacceptable(e) => match e {
                AcceptAsNewError::Unfit { form, errors } => {
                    let problems = form.admin_error_messages(errors, locale).join("; ");
                    locale.format("admin-refused-unfit", &[("reason", Arg::Str(&problems))])
                }
                AcceptAsNewError::NoOperationId(why) => {
                    locale.format("admin-refused-no-operation-id", &[("value", Arg::Str(why))])
                }
                AcceptAsNewError::OtherContent => locale.text("admin-refused-other-content"),
                AcceptAsNewError::InProgress => locale.text("admin-refused-in-progress"),
                AcceptAsNewError::Expired => locale.text("admin-refused-operation-expired"),
                AcceptAsNewError::Db(_) => locale.text("admin-db-unavailable"),
            },
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Form};
    use crate::domain::{FieldError, FieldErrors};
    use crate::web::admin::Refusal;

    #[test]
    fn a_conflict_the_form_no_longer_takes_is_refused_in_the_admins_words() {
        let form = Form::new("contact", Config::builtin().unwrap().forms["contact"].clone());
        let mut errors = FieldErrors::default();
        errors.add("email", FieldError::Required);
        let refusal = ConflictActionError::Unacceptable(AcceptAsNewError::Unfit { form, errors });
        let (en, zh) = (refusal.text(Locale::En), refusal.text(Locale::ZhTw));
        assert!(en.starts_with("The content does not fit the form now: "), "{en}");
        assert!(zh.starts_with("此內容已不符合目前的表單"), "{zh}");
        assert_ne!(en, zh);
        let late = ConflictActionError::Unacceptable(AcceptAsNewError::Expired);
        assert_eq!(late.text(Locale::Ja), "操作 ID の有効期限が切れています。");
    }
}
