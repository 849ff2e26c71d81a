//! What an admin decides about inbound deliveries and events: give a quarantined delivery its
//! event ID (its handlers then run once, or it joins the stored event with that ID), discard
//! it, or replay one handler of an event as a new batch (a new record and key; the old one
//! stays). Each is one transaction with its audit row.

use crate::base::clock::now;
use crate::config::hooks::HookConfig;
use crate::db::admin::effects::EffectAdminStore;
use crate::db::hooks::HookStore;
use crate::db::{DbError, Pool, Store};
use crate::domain::{QuarantineStatus, RecordKind};
use crate::services::audit::{self, Actor};
use crate::services::effect_actions::REPLAYABLE;
use crate::services::inbound::ingest::{handler_effect, ingest, Ingested, NewInbound};
use crate::with_conn;

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

/// What to do with a quarantined delivery.
pub enum QuarantineDecision<'a> {
    Discard,
    /// Give it this event ID: stored as that event (or joined to the stored one).
    Assign {
        event_id: &'a str,
    },
}

/// What a decision on a quarantined delivery came to.
pub enum Decided {
    Discarded,
    Assigned(Ingested),
}

/// Decides quarantined delivery `id` of `source` (configured as `config`) on `actor`'s word.
pub fn decide_quarantined(
    pool: &Pool,
    actor: &Actor,
    source: &str,
    config: &HookConfig,
    id: &str,
    decision: QuarantineDecision<'_>,
    note: &str,
) -> Result<Decided, InboundActionError> {
    if let QuarantineDecision::Assign { event_id } = decision {
        if event_id.is_empty() || event_id.len() > 255 || event_id.chars().any(char::is_control) {
            return Err(InboundActionError::BadEventId);
        }
    }
    with_conn!(pool, |c| Ok(c.write_tx(|c| {
        let Some(q) = c.quarantined(id)? else { return Err(InboundActionError::NotFound) };
        if q.source != source {
            return Err(InboundActionError::NotFound);
        }
        if q.status != QuarantineStatus::Open {
            return Err(InboundActionError::AlreadyDecided);
        }
        let t = now();
        let QuarantineDecision::Assign { event_id } = decision else {
            c.decide_quarantined(id, QuarantineStatus::Discarded, None, &actor.label, t)?;
            audit::record(c, actor, "inbound.quarantine.discard", ("inbound_quarantine", id), Some(note))?;
            return Ok(Decided::Discarded);
        };
        let body = q.body.clone().unwrap_or_default();
        let e = NewInbound { source, config, event_id, body: &body, content_type: &q.content_type, now: t };
        let outcome = ingest(c, &e)?;
        c.decide_quarantined(id, QuarantineStatus::Assigned, Some(outcome.event_row()), &actor.label, t)?;
        let note = format!("event ID {event_id}: {}. {}", outcome.label(), note.trim());
        audit::record(c, actor, "inbound.quarantine.assign", ("inbound_quarantine", id), Some(&note))?;
        Ok(Decided::Assigned(outcome))
    })))?
}

/// A new batch of `handler`'s record on event row `id` of `source`, on `actor`'s word; the
/// batch.
pub fn replay_handler(
    pool: &Pool,
    actor: &Actor,
    source: &str,
    config: &HookConfig,
    id: &str,
    handler: &str,
    note: &str,
) -> Result<i32, InboundActionError> {
    if config.handler(handler).is_none() {
        return Err(InboundActionError::NoSuchHandler);
    }
    with_conn!(pool, |c| Ok(c.write_tx(|c| {
        let Some(event) = c.event(id)? else { return Err(InboundActionError::NotFound) };
        if event.source != source {
            return Err(InboundActionError::NotFound);
        }
        // A new batch of the handler's record (the same replay as on the Effects page);
        // a handler added after the event arrived gets its first record.
        let kind = RecordKind::hook(source, handler);
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
                let e = NewInbound {
                    source,
                    config,
                    event_id: &event.event_id,
                    body: "",
                    content_type: &event.content_type,
                    now: now(),
                };
                c.insert_event_effects(&[handler_effect(&e, &event.id, handler, 0)])?;
                0
            }
        };
        let note = format!("{handler} batch {batch}. {}", note.trim());
        audit::record(c, actor, "inbound.replay", ("inbound_event", &event.id), Some(&note))?;
        Ok(batch)
    })))?
}
