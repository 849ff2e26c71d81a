//! What an admin does with inbound events: give a quarantined delivery its event ID (its
//! handlers then run once, or it joins the stored event with that ID), discard it, or replay
//! one handler of an event as a new batch (a new record and key; the old one stays).

use crate::web::admin::flash::Flash;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse, ResponseError};
use serde::Deserialize;

use crate::base::clock::now;
use crate::base::i18n::Locale;
use crate::db::admin::effects::EffectAdminStore;
use crate::db::hooks::HookStore;
use crate::db::{DbError, Store};
use crate::domain::{QuarantineStatus, RecordKind};
use crate::web::admin::audit;
use crate::web::admin::guard::{AdminAction, CsrfForm};
use crate::web::admin::{blocking, done, Refusal, Said, REPLAYABLE};
use crate::web::hooks::ingest::{handler_effect, ingest, Ingested, NewInbound};
use crate::web::hooks::Hooks;
use crate::web::state::AppState;
use crate::with_conn;

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

/// Why an action on an inbound delivery or event did not apply.
#[derive(Debug, thiserror::Error)]
pub enum InboundActionError {
    #[error("Not found.")]
    NotFound,
    #[error("An event ID is 1 to 255 printable characters.")]
    BadEventId,
    #[error("This delivery was decided already; reload the page.")]
    AlreadyDecided,
    #[error("This source has no handler of that name.")]
    NoSuchHandler,
    #[error("Only a record whose outcome is known (sent, failed or cancelled) can be replayed.")]
    NotReplayable,
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for InboundActionError {
    fn from(e: diesel::result::Error) -> Self {
        InboundActionError::Db(e.into())
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
    let event_id = form.event_id.trim().to_string();
    if name == "assign"
        && (event_id.is_empty() || event_id.len() > 255 || event_id.chars().any(char::is_control))
    {
        return Said { locale, error: InboundActionError::BadEventId }.error_response();
    }
    if name != "assign" && name != "discard" {
        return HttpResponse::NotFound().finish();
    }
    let (pool, config, src_name) = (state.pool.clone(), src.config.clone(), source.clone());
    let step = blocking(move || {
        with_conn!(&pool, |c| Ok(c.write_tx(|c| {
            let Some(q) = c.quarantined(&id)? else { return Err(InboundActionError::NotFound) };
            if q.source != src_name {
                return Err(InboundActionError::NotFound);
            }
            if q.status != QuarantineStatus::Open {
                return Err(InboundActionError::AlreadyDecided);
            }
            let t = now();
            if name == "discard" {
                c.decide_quarantined(&id, QuarantineStatus::Discarded, None, &user.email, t)?;
                audit::record(
                    c,
                    &user,
                    "inbound.quarantine.discard",
                    ("inbound_quarantine", &id),
                    Some(&form.note),
                )?;
                return Ok(Flash::new("inbound_discarded"));
            }
            let body = q.body.clone().unwrap_or_default();
            let e = NewInbound {
                source: &src_name,
                config: &config,
                event_id: &event_id,
                body: &body,
                content_type: &q.content_type,
                now: t,
            };
            let outcome = ingest(c, &e)?;
            c.decide_quarantined(&id, QuarantineStatus::Assigned, Some(outcome.event_row()), &user.email, t)?;
            let note = format!("event ID {event_id}: {}. {}", outcome.label(), form.note.trim());
            audit::record(c, &user, "inbound.quarantine.assign", ("inbound_quarantine", &id), Some(&note))?;
            Ok(match outcome {
                Ingested::Created { .. } => Flash::new("inbound_assigned"),
                Ingested::Replayed { .. } => Flash::new("inbound_assigned_replay"),
                Ingested::Conflict { .. } => Flash::new("inbound_assigned_conflict"),
            })
        })))
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
    if src.config.handler(&form.handler).is_none() {
        return Said { locale, error: InboundActionError::NoSuchHandler }.error_response();
    }
    let (pool, config, src_name, back) = (
        state.pool.clone(),
        src.config.clone(),
        source.clone(),
        format!("/admin/inbound/{source}/events/{id}"),
    );
    let step = blocking(move || {
        with_conn!(&pool, |c| Ok(c.write_tx(|c| {
            let Some(event) = c.event(&id)? else { return Err(InboundActionError::NotFound) };
            if event.source != src_name {
                return Err(InboundActionError::NotFound);
            }
            // A new batch of the handler's record (the same replay as on the Effects page);
            // a handler added after the event arrived gets its first record.
            let kind = RecordKind::hook(&src_name, &form.handler);
            // The latest batch decides, with the Effects page's rule: a record that may
            // still take effect (PENDING, SENDING, UNKNOWN) is not repeated beside it.
            let existing =
                c.effects_of_event(&event.id)?.into_iter().filter(|e| e.kind == kind).max_by_key(|e| e.batch);
            let batch = match existing {
                Some(e) => {
                    if !REPLAYABLE.contains(&e.state) {
                        return Err(InboundActionError::NotReplayable);
                    }
                    c.replay_effect(&e.id, now())?;
                    c.effects_of_event(&event.id)?
                        .iter()
                        .filter(|e| e.kind == kind)
                        .map(|e| e.batch)
                        .max()
                        .unwrap_or(0)
                }
                None => {
                    let body = String::new();
                    let e = NewInbound {
                        source: &src_name,
                        config: &config,
                        event_id: &event.event_id,
                        body: &body,
                        content_type: &event.content_type,
                        now: now(),
                    };
                    c.insert_event_effects(&[handler_effect(&e, &event.id, &form.handler, 0)])?;
                    0
                }
            };
            let note = format!("{} batch {batch}. {}", form.handler, form.note.trim());
            audit::record(c, &user, "inbound.replay", ("inbound_event", &event.id), Some(&note))?;
            Ok(Flash::new("inbound_handler_replayed").arg(batch))
        })))
    })
    .await;
    finish(locale, step, &back)
}
