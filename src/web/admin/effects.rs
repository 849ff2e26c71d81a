//! The effects queue by state, and what an admin can do to one record: retry now, mark
//! sent (after checking the CRM or the mail log), mark not sent, cancel, replay as a new batch.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::audit;
use super::flash::Flash;
use super::guard::{AdminAction, CsrfForm, SessionUser};
use super::{blocking, db_failure_in, done, Chrome};
use crate::base::clock::now;
use crate::base::format::reference;
use crate::base::i18n::{Locale, TimeZone};
use crate::db::admin::effects::{EffectAdminStore, EffectChange, EffectRow};
use crate::db::{DbError, Store};
use crate::domain::{EffectId, EffectState, RecordKind};
use crate::services::effects::http::encode_segment;
use crate::web::render::html;
use crate::web::state::AppState;
use crate::with_conn;

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
    let read = move || {
        with_conn!(&pool, |c| {
            let stats = c.stats()?;
            let rows = c.effects_in_state(wanted, 200, 0)?;
            Ok::<_, DbError>((stats, rows))
        })
    };
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

/// Why an action on an effect record did not apply.
#[derive(Debug, thiserror::Error)]
pub enum EffectActionError {
    #[error("Marking an effect sent needs the provider's reference.")]
    NoProviderRef,
    #[error("No such effect.")]
    NoSuchEffect,
    #[error("Only a SENT, FAILED_FINAL or CANCELLED effect can be replayed as a new batch.")]
    NotReplayable,
    #[error("The effect is not in a state that allows this; reload the page.")]
    StateChanged,
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for EffectActionError {
    fn from(e: diesel::result::Error) -> Self {
        EffectActionError::Db(e.into())
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
    if name == "mark-sent" && provider_ref.is_empty() {
        return Err(EffectActionError::NoProviderRef);
    }
    let Some(kind) = Action::parse(&name) else { return Ok(HttpResponse::NotFound().finish()) };
    let pool = state.pool.clone();
    let target = id.clone();
    let run = move || {
        with_conn!(&pool, |c| Ok(c.write_tx(|c| {
            let t = now();
            let row = c.effect_row(&target)?.ok_or(EffectActionError::NoSuchEffect)?;
            if kind == Action::Replay && !REPLAYABLE.contains(&row.state) {
                return Err(EffectActionError::NotReplayable);
            }
            let applied = match kind {
                Action::Replay => c.replay_effect(&target, t)?.is_some(),
                other => c.change_effect(&target, &other.change(&note, &provider_ref, &row, t), t)?,
            };
            if !applied {
                return Err(EffectActionError::StateChanged);
            }
            audit::record(c, &user, kind.audit_name(), ("effect", &target), Some(&note))?;
            Ok(row.state)
        })))
    };
    let from = blocking(run).await??;
    Ok(done(&format!("/admin/effects?state={from}"), Flash::new(kind.flash())))
}

/// The states from which "replay as a new batch" may start: the record's outcome is known
/// (a PENDING, SENDING or UNKNOWN record may still take effect, and a replay would repeat it).
pub const REPLAYABLE: [EffectState; 3] =
    [EffectState::Sent, EffectState::FailedFinal, EffectState::Cancelled];

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Retry,
    MarkSent,
    MarkNotSent,
    Cancel,
    Replay,
}

impl Action {
    fn parse(s: &str) -> Option<Action> {
        Some(match s {
            "retry" => Action::Retry,
            "mark-sent" => Action::MarkSent,
            "mark-not-sent" => Action::MarkNotSent,
            "cancel" => Action::Cancel,
            "replay" => Action::Replay,
            _ => return None,
        })
    }

    fn audit_name(self) -> &'static str {
        match self {
            Action::Retry => "effect.retry",
            Action::MarkSent => "effect.mark_sent",
            Action::MarkNotSent => "effect.mark_not_sent",
            Action::Cancel => "effect.cancel",
            Action::Replay => "effect.replay",
        }
    }

    fn flash(self) -> &'static str {
        match self {
            Action::Retry => "effect_retry",
            Action::MarkSent => "effect_mark_sent",
            Action::MarkNotSent => "effect_mark_not_sent",
            Action::Cancel => "effect_cancel",
            Action::Replay => "effect_replay",
        }
    }

    /// The states the action applies from.
    fn from(self) -> &'static [EffectState] {
        match self {
            Action::Retry => &[EffectState::Pending, EffectState::FailedFinal],
            Action::MarkSent => &[EffectState::Unknown, EffectState::FailedFinal, EffectState::Pending],
            Action::MarkNotSent => &[EffectState::Unknown],
            Action::Cancel => &[EffectState::Pending, EffectState::Unknown, EffectState::FailedFinal],
            Action::Replay => &REPLAYABLE,
        }
    }

    /// Which states allow the action, and where it leads.
    fn change<'a>(
        self,
        note: &str,
        provider_ref: &str,
        row: &EffectRow,
        t: chrono::NaiveDateTime,
    ) -> EffectChange<'a> {
        let note = (!note.is_empty()).then(|| format!("admin: {note}"));
        let keep_ref = row.provider_ref.clone();
        match self {
            Action::Retry => EffectChange {
                from: self.from(),
                to: EffectState::Pending,
                provider_ref: keep_ref,
                last_error: note,
                next_attempt_at: t,
            },
            Action::MarkSent => EffectChange {
                from: self.from(),
                to: EffectState::Sent,
                provider_ref: Some(provider_ref.to_string()),
                last_error: note,
                next_attempt_at: t,
            },
            Action::MarkNotSent => EffectChange {
                from: self.from(),
                to: EffectState::Pending,
                provider_ref: None,
                last_error: note,
                next_attempt_at: t,
            },
            // A replay is no change of this record (`replay_effect`).
            Action::Cancel | Action::Replay => EffectChange {
                from: Action::Cancel.from(),
                to: EffectState::Cancelled,
                provider_ref: keep_ref,
                last_error: note,
                next_attempt_at: t,
            },
        }
    }
}
