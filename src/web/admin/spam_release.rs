//! Reviewing spam: an admin releases a submission set aside (honeypot, fill time, captcha,
//! an unverified captcha above all) as a real inquiry; it then gets its side-effect records.

use crate::base::i18n::Locale;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;

use crate::services::spam_release::{self as release, ReleaseError};
use crate::web::admin::guard::{AdminAction, CsrfForm};
use crate::web::admin::{blocking, done};
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/submissions/{id}/release", web::post().to(release));
}

#[derive(Deserialize)]
pub struct ReleaseForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    note: String,
}

impl CsrfForm for ReleaseForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

impl crate::web::admin::Refusal for ReleaseError {
    fn status(&self) -> StatusCode {
        match self {
            ReleaseError::NotFound => StatusCode::NOT_FOUND,
            ReleaseError::NotSpam | ReleaseError::Malware => StatusCode::CONFLICT,
            ReleaseError::Db(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn text(&self, locale: Locale) -> String {
        locale.text(match self {
            ReleaseError::NotFound => "admin-no-such-submission-body",
            ReleaseError::NotSpam => "admin-refused-not-spam",
            ReleaseError::Malware => "admin-no-release",
            ReleaseError::Db(_) => "admin-db-unavailable",
        })
    }
}

/// `POST /admin/submissions/{id}/release`: not spam after all; its effects are created.
async fn release(
    state: web::Data<AppState>,
    id: web::Path<String>,
    action: AdminAction<ReleaseForm>,
) -> Result<HttpResponse, crate::web::admin::Said<ReleaseError>> {
    let locale = action.user.locale;
    crate::web::admin::said(locale, release_now(state, id, action).await)
}

async fn release_now(
    state: web::Data<AppState>,
    id: web::Path<String>,
    action: AdminAction<ReleaseForm>,
) -> Result<HttpResponse, ReleaseError> {
    let (id, AdminAction { user, form }) = (id.into_inner(), action);
    let (pool, forms, sid) = (state.pool.clone(), state.forms(), id.clone());
    let note = form.note.trim().to_string();
    let n =
        blocking(move || Ok(release::release(&pool, &forms.config, &user.actor(), &sid, &note))).await??;
    let page = format!("/admin/submissions/{id}");
    Ok(done(&page, crate::web::admin::flash::Flash::new("submission_released").arg(n)))
}
