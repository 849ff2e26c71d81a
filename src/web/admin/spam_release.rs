//! Reviewing spam: an admin releases a submission set aside (honeypot, fill time, captcha,
//! an unverified captcha above all) as a real inquiry; it then gets its side-effect records.

use crate::base::i18n::Locale;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;

use crate::base::clock::now;
use crate::config::FormConfig;
use crate::db::admin::spam::SpamStore;
use crate::db::files::FileRefs;
use crate::db::models::NewEffect;
use crate::db::{DbError, Store};
use crate::domain::{EffectId, EffectState};
use crate::web::admin::audit;
use crate::web::admin::guard::{AdminAction, CsrfForm};
use crate::web::admin::{blocking, done};
use crate::web::state::AppState;
use crate::with_conn;

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

/// Why a submission was not released.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error("No such submission.")]
    NotFound,
    #[error("This submission is not marked as spam (or its form is gone); reload the page.")]
    NotSpam,
    #[error("A file of this submission is malware: it is never released, so nothing delivers it.")]
    Malware,
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for ReleaseError {
    fn from(e: diesel::result::Error) -> Self {
        ReleaseError::Db(e.into())
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
    let (pool, config, sid) = (state.pool.clone(), state.config.clone(), id.clone());
    let note = form.note.trim().to_string();
    let n = blocking(move || {
        with_conn!(&pool, |c| Ok(c.write_tx(|c| {
            let Some(found) = c.spam_candidate(&sid)? else { return Err(ReleaseError::NotFound) };
            let Some(form) = config.form(&found.form).filter(|_| found.spam) else {
                return Err(ReleaseError::NotSpam);
            };
            // The store refuses malware; its reason read above says which refusal this is.
            if !c.release_spam(&sid)? {
                return Err(if found.is_malware() { ReleaseError::Malware } else { ReleaseError::NotSpam });
            }
            // A file waiting for a scan, or one clamd could not scan, keeps them held.
            let held = c.files_of(&sid)?.iter().any(|f| f.scan.holds());
            let effects = effects_for(&sid, form, found.fields_json.as_deref(), held);
            c.insert_effects(&effects)?;
            audit::record(c, &user, "submission.release", ("submission", &sid), Some(&note))?;
            Ok(effects.len())
        })))
    })
    .await??;
    let page = format!("/admin/submissions/{id}");
    Ok(done(&page, crate::web::admin::flash::Flash::new("submission_released").arg(n)))
}

/// The records the accept transaction would have written (batch 0 was never used: spam gets
/// none), each kind where it applies to the stored fields; `held` while a file holds them.
fn effects_for(
    submission_id: &str,
    form: &FormConfig,
    fields_json: Option<&str>,
    held: bool,
) -> Vec<NewEffect> {
    let fields = crate::domain::stored_fields::shown(fields_json);
    let at = now();
    form.effects
        .iter()
        .filter(|k| crate::services::effects::applies(k, form, &|name| fields.contains_key(name)))
        .map(|kind| NewEffect {
            id: EffectId::generate(),
            submission_id: submission_id.into(),
            kind: kind.clone().into(),
            batch: 0,
            effect_key: format!("{submission_id}:{}:0", kind.as_str()),
            state: EffectState::Pending,
            held,
            last_error: None,
            next_attempt_at: at,
            created_at: at,
            updated_at: at,
        })
        .collect()
}
