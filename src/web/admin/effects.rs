//! The effects queue by state, and what an admin can do to one record: retry now, mark
//! sent (after checking the CRM or the mail log), mark not sent, cancel, replay as a new batch.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::flash::Flash;
use super::guard::{AdminAction, CsrfForm, SessionUser};
use super::{blocking, db_failure_in, done, Chrome};
use crate::base::format::reference;
use crate::base::i18n::{Locale, TimeZone};
use crate::domain::{EffectId, EffectState, RecordKind};
use crate::services::effect_actions::{self, Action, EffectActionError, EffectRow};
use crate::services::effects::http::encode_segment;
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/effects", web::get().to(queue))
        .route("/admin/effects/{id}/{action}", web::post().to(act));
}

pub struct EffectView {
    pub id: EffectId,
    /// The owner's admin page: the submission's, or the inbound event's.
    pub owner_href: String,
    pub reference: String,
    pub form: String,
    pub kind: String,
    pub batch: i32,
    pub state: EffectState,
    pub held: bool,
    pub attempts: i32,
    pub provider_ref: Option<String>,
    pub last_error: Option<String>,
    pub updated_at: String,
}

impl EffectView {
    /// `e` as listed, its time in `zone`.
    pub fn new(e: EffectRow, zone: TimeZone) -> Self {
        let owner_href = match &e.kind {
            RecordKind::Hook(h) => match encode_segment(h.source()) {
                Some(source) => format!("/admin/inbound/{source}/events/{}", e.submission_id),
                None => "/admin/effects".to_string(),
            },
            RecordKind::Form(_) => format!("/admin/submissions/{}", e.submission_id),
        };
        EffectView {
            owner_href,
            reference: reference(&e.submission_id),
            updated_at: super::when(zone, e.updated_at),
            id: e.id,
            form: e.form,
            kind: e.kind.to_string(),
            batch: e.batch,
            state: e.state,
            held: e.held,
            attempts: e.attempts,
            provider_ref: e.provider_ref,
            last_error: e.last_error,
        }
    }
}

#[derive(Template)]
#[template(path = "admin/effects.html")]
struct QueuePage {
    chrome: Chrome,
    state: EffectState,
    counts: Vec<(EffectState, i64)>,
    rows: Vec<EffectView>,
}

#[derive(Deserialize)]
struct QueueQuery {
    state: Option<String>,
    flash: Option<String>,
}

async fn queue(state: web::Data<AppState>, user: SessionUser, q: web::Query<QueueQuery>) -> HttpResponse {
    let wanted = q.state.as_deref().and_then(EffectState::parse).unwrap_or(EffectState::Unknown);
    let pool = state.pool.clone();
    let read = move || effect_actions::queue(&pool, wanted, 200);
    let (stats, rows) = match blocking(read).await {
        Ok(v) => v,
        Err(e) => return db_failure_in(user.locale, e),
    };
    let counts = EffectState::ALL
        .iter()
        .map(|&s| (s, stats.effects.iter().filter(|(_, st, _)| *st == s).map(|(_, _, n)| n).sum()))
        .collect();
    let page = QueuePage {
        chrome: Chrome::new(&user, "effects", q.flash.as_deref()),
        state: wanted,
        counts,
        rows: rows.into_iter().map(|e| EffectView::new(e, user.zone)).collect(),
    };
    html(actix_web::http::StatusCode::OK, &page)
}

#[derive(Deserialize)]
pub struct EffectForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    note: String,
    #[serde(default)]
    provider_ref: String,
}

impl CsrfForm for EffectForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

impl super::Refusal for EffectActionError {
    fn status(&self) -> StatusCode {
        match self {
            EffectActionError::Db(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::CONFLICT,
        }
    }

    fn text(&self, locale: Locale) -> String {
        locale.text(match self {
            EffectActionError::NoProviderRef => "admin-refused-no-provider-ref",
            EffectActionError::NoSuchEffect => "admin-refused-no-such-effect",
            EffectActionError::NotReplayable => "admin-refused-not-replayable",
            EffectActionError::StateChanged => "admin-refused-state-changed",
            EffectActionError::Db(_) => "admin-db-unavailable",
        })
    }
}

async fn act(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    action: AdminAction<EffectForm>,
) -> Result<HttpResponse, super::Said<EffectActionError>> {
    let locale = action.user.locale;
    super::said(locale, act_on(state, path, action).await)
}

async fn act_on(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    action: AdminAction<EffectForm>,
) -> Result<HttpResponse, EffectActionError> {
    let (id, name) = path.into_inner();
    let AdminAction { user, form } = action;
    let note = form.note.trim().to_string();
    let provider_ref = form.provider_ref.trim().to_string();
    let Some(kind) = Action::parse(&name) else { return Ok(HttpResponse::NotFound().finish()) };
    let pool = state.pool.clone();
    let run = move || Ok(effect_actions::act(&pool, &user.actor(), &id, kind, &note, &provider_ref));
    let from = blocking(run).await??;
    Ok(done(&format!("/admin/effects?state={from}"), Flash::new(flash(kind))))
}

/// Which action buttons a record in `state` gets (`admin/effect_actions.html`): the states
/// each action applies from, so the page offers what the action would accept.
pub struct Buttons {
    pub retry: bool,
    pub mark_sent: bool,
    pub mark_not_sent: bool,
    pub cancel: bool,
    pub replay: bool,
}

impl Buttons {
    /// (By reference: what a template passes.)
    pub fn of(state: &EffectState) -> Buttons {
        let allows = |action: Action| action.from().contains(state);
        Buttons {
            retry: allows(Action::Retry),
            mark_sent: allows(Action::MarkSent),
            mark_not_sent: allows(Action::MarkNotSent),
            cancel: allows(Action::Cancel),
            replay: allows(Action::Replay),
        }
    }
}

/// The message shown after `action` (`admin-flash-…`).
fn flash(action: Action) -> &'static str {
    match action {
        Action::Retry => "effect_retry",
        Action::MarkSent => "effect_mark_sent",
        Action::MarkNotSent => "effect_mark_not_sent",
        Action::Cancel => "effect_cancel",
        Action::Replay => "effect_replay",
    }
}
