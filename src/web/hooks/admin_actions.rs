//! What an admin does with inbound events: give a quarantined delivery its event ID (its
//! handlers then run once, or it joins the stored event with that ID), discard it, or replay
//! one handler of an event as a new batch (a new record and key; the old one stays).

use crate::web::admin::flash::Flash;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse, ResponseError};
use serde::Deserialize;

use crate::base::i18n::Locale;
use crate::services::inbound::decisions::{self, Decided, InboundActionError, QuarantineDecision};
use crate::services::inbound::ingest::Ingested;
use crate::services::storage::DbError;
use crate::web::admin::guard::{AdminAction, CsrfForm};
use crate::web::admin::{blocking, done, Refusal, Said};
use crate::web::hooks::Hooks;
use crate::web::state::AppState;

#[derive(Deserialize)]
pub struct InboundForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    note: String,
    #[serde(default)]
    event_id: String,
    #[serde(default)]
    handler: String,
}

impl CsrfForm for InboundForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

impl Refusal for InboundActionError {
    fn status(&self) -> StatusCode {
        match self {
            InboundActionError::NotFound => StatusCode::NOT_FOUND,
            InboundActionError::Db(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::CONFLICT,
        }
    }

    fn text(&self, locale: Locale) -> String {
        locale.text(match self {
            InboundActionError::NotFound => "admin-refused-not-found",
            InboundActionError::BadEventId => "admin-refused-bad-event-id",
            InboundActionError::AlreadyDecided => "admin-refused-delivery-decided",
            InboundActionError::NoSuchHandler => "admin-refused-no-such-handler",
            InboundActionError::NotReplayable => "admin-refused-not-replayable",
            InboundActionError::Db(_) => "admin-db-unavailable",
        })
    }
}

/// `back` with `flash`, or the refusal in `locale`.
fn finish(
    locale: Locale,
    step: Result<Result<Flash, InboundActionError>, DbError>,
    back: &str,
) -> HttpResponse {
    match step.map_err(InboundActionError::from).and_then(|r| r) {
        Ok(flash) => done(back, flash),
        Err(error) => Said { locale, error }.error_response(),
    }
}

pub async fn quarantine(
    state: web::Data<AppState>,
    hooks: web::Data<Hooks>,
    path: web::Path<(String, String, String)>,
    action: AdminAction<InboundForm>,
) -> HttpResponse {
    let (source, id, name) = path.into_inner();
    let Some(src) = hooks.source(&source) else { return HttpResponse::NotFound().finish() };
    let AdminAction { user, form } = action;
    let locale = user.locale;
    if name != "assign" && name != "discard" {
        return HttpResponse::NotFound().finish();
    }
    let (pool, config, src_name) = (state.pool.clone(), src.config.clone(), source.clone());
    let step = blocking(move || {
        let event_id = form.event_id.trim();
        let decision = match name.as_str() {
            "assign" => QuarantineDecision::Assign { event_id },
            _ => QuarantineDecision::Discard,
        };
        let decided = decisions::decide_quarantined(
            &pool,
            &user.actor(),
            &src_name,
            &config,
            &id,
            decision,
            &form.note,
        );
        Ok(decided.map(|d| match d {
            Decided::Discarded => Flash::new("inbound_discarded"),
            Decided::Assigned(Ingested::Created { .. }) => Flash::new("inbound_assigned"),
            Decided::Assigned(Ingested::Replayed { .. }) => Flash::new("inbound_assigned_replay"),
            Decided::Assigned(Ingested::Conflict { .. }) => Flash::new("inbound_assigned_conflict"),
        }))
    })
    .await;
    finish(locale, step, &format!("/admin/inbound/{source}"))
}

/// A new batch of one handler on one event.
pub async fn replay(
    state: web::Data<AppState>,
    hooks: web::Data<Hooks>,
    path: web::Path<(String, String)>,
    action: AdminAction<InboundForm>,
) -> HttpResponse {
    let (source, id) = path.into_inner();
    let Some(src) = hooks.source(&source) else { return HttpResponse::NotFound().finish() };
    let AdminAction { user, form } = action;
    let locale = user.locale;
    let (pool, config, back) =
        (state.pool.clone(), src.config.clone(), format!("/admin/inbound/{source}/events/{id}"));
    let step = blocking(move || {
        let replayed =
            decisions::replay_handler(&pool, &user.actor(), &source, &config, &id, &form.handler, &form.note);
        Ok(replayed.map(|batch| Flash::new("inbound_handler_replayed").arg(batch)))
    })
    .await;
    finish(locale, step, &back)
}
