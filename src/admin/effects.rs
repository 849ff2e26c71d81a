//! The effects queue by state, and what an admin can do to one record: retry now, mark
//! sent (after checking the CRM or the mail log), mark not sent, cancel, replay as a new batch.

use actix_web::{web, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::audit;
use super::flash::Flash;
use super::guard::{AdminAction, CsrfForm, SessionUser};
use super::{blocking, db_failure, done, refused, Chrome};
use crate::db::admin::effects::{EffectAdminStore, EffectChange, EffectRow};
use crate::db::{DbError, Store};
use crate::deliveries::now;
use crate::domain::EffectState;
use crate::effects::reference;
use crate::http::pages::html;
use crate::http::AppState;
use crate::with_conn;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/effects", web::get().to(queue))
        .route("/admin/effects/{id}/{action}", web::post().to(act));
}

pub struct EffectView {
    pub id: String,
    pub submission_id: String,
    pub reference: String,
    pub form: String,
    pub kind: String,
    pub batch: i32,
    pub state: String,
    pub held: bool,
    pub attempts: i32,
    pub provider_ref: Option<String>,
    pub last_error: Option<String>,
    pub updated_at: String,
}

impl From<EffectRow> for EffectView {
    fn from(e: EffectRow) -> Self {
        EffectView {
            reference: reference(&e.submission_id),
            updated_at: e.updated_at.format("%Y-%m-%d %H:%M:%S").to_string(),
            id: e.id,
            submission_id: e.submission_id,
            form: e.form,
            kind: e.kind,
            batch: e.batch,
            state: e.state.as_str().into(),
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
    state: String,
    counts: Vec<(&'static str, i64)>,
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
        Err(e) => return db_failure(e),
    };
    let counts = EffectState::ALL
        .iter()
        .map(|s| (s.as_str(), stats.effects.iter().filter(|(_, st, _)| st == s).map(|(_, _, n)| n).sum()))
        .collect();
    let page = QueuePage {
        chrome: Chrome::new(&user, "effects", q.flash.as_deref()),
        state: wanted.as_str().into(),
        counts,
        rows: rows.into_iter().map(EffectView::from).collect(),
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

async fn act(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    action: AdminAction<EffectForm>,
) -> HttpResponse {
    let (id, name) = path.into_inner();
    let AdminAction { user, form } = action;
    let note = form.note.trim().to_string();
    let provider_ref = form.provider_ref.trim().to_string();
    if name == "mark-sent" && provider_ref.is_empty() {
        return refused("Marking an effect sent needs the provider's reference.");
    }
    let Some(kind) = Action::parse(&name) else { return HttpResponse::NotFound().finish() };
    let pool = state.pool.clone();
    let target = id.clone();
    let run = move || {
        with_conn!(&pool, |c| c.write_tx(|c| {
            let t = now();
            let Some(row) = c.effect_row(&target)? else { return Ok::<_, DbError>(Err("No such effect.")) };
            if kind == Action::Replay && !REPLAYABLE.contains(&row.state) {
                return Ok(Err(
                    "Only a SENT, FAILED_FINAL or CANCELLED effect can be replayed as a new batch.",
                ));
            }
            let applied = match kind {
                Action::Replay => c.replay_effect(&target, t)?.is_some(),
                other => c.change_effect(&target, &other.change(&note, &provider_ref, &row, t), t)?,
            };
            if !applied {
                return Ok(Err("The effect is not in a state that allows this; reload the page."));
            }
            audit::record(c, &user, kind.audit_name(), ("effect", &target), Some(&note))?;
            Ok(Ok(row.state))
        }))
    };
    match web::block(run).await {
        Ok(Ok(Ok(from))) => done(&format!("/admin/effects?state={from}"), Flash::new(kind.flash())),
        Ok(Ok(Err(message))) => refused(message),
        Ok(Err(e)) => db_failure(e),
        Err(_) => db_failure(DbError::Unavailable("blocking pool".into())),
    }
}

/// The states from which "replay as a new batch" may start: the record's outcome is known
/// (a PENDING, SENDING or UNKNOWN record may still take effect, and a replay would repeat it).
const REPLAYABLE: [EffectState; 3] = [EffectState::Sent, EffectState::FailedFinal, EffectState::Cancelled];

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
                from: &[EffectState::Pending, EffectState::FailedFinal],
                to: EffectState::Pending,
                provider_ref: keep_ref,
                last_error: note,
                next_attempt_at: t,
            },
            Action::MarkSent => EffectChange {
                from: &[EffectState::Unknown, EffectState::FailedFinal, EffectState::Pending],
                to: EffectState::Sent,
                provider_ref: Some(provider_ref.to_string()),
                last_error: note,
                next_attempt_at: t,
            },
            Action::MarkNotSent => EffectChange {
                from: &[EffectState::Unknown],
                to: EffectState::Pending,
                provider_ref: None,
                last_error: note,
                next_attempt_at: t,
            },
            Action::Cancel | Action::Replay => EffectChange {
                from: &[EffectState::Pending, EffectState::Unknown, EffectState::FailedFinal],
                to: EffectState::Cancelled,
                provider_ref: keep_ref,
                last_error: note,
                next_attempt_at: t,
            },
        }
    }
}
