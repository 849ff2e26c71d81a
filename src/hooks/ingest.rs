//! Storing one verified event: in one transaction the (source, event ID) is claimed through
//! the unique constraint, and the event, its anchor row and one side-effect record per
//! handler are written — or, for a known ID, the replay or conflict is recorded.

use chrono::NaiveDateTime;
use uuid::Uuid;

use super::config::HookConfig;
use crate::db::hooks::{Conflict, HookStore, NewEvent};
use crate::db::models::{NewEffect, NewSubmission};
use crate::db::DbError;
use crate::domain::{digest, Channel, ConflictStatus, EffectId, EffectState, InboundOutcome};

/// What became of an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ingested {
    /// Stored now; its handlers will run (200).
    Created { event_row: String },
    /// The same content under a stored ID (200, `Idempotent-Replayed`).
    Replayed { event_row: String },
    /// Different content under a stored ID (200); the original stays, the conflict is kept.
    Conflict { event_row: String },
}

impl Ingested {
    pub fn event_row(&self) -> &str {
        match self {
            Ingested::Created { event_row }
            | Ingested::Replayed { event_row }
            | Ingested::Conflict { event_row } => event_row,
        }
    }

    pub fn label(&self) -> InboundOutcome {
        match self {
            Ingested::Created { .. } => InboundOutcome::Created,
            Ingested::Replayed { .. } => InboundOutcome::Replayed,
            Ingested::Conflict { .. } => InboundOutcome::Conflict,
        }
    }
}

/// A verified event about to be stored.
pub struct NewInbound<'a> {
    pub source: &'a str,
    pub config: &'a HookConfig,
    pub event_id: &'a str,
    pub body: &'a str,
    pub content_type: &'a str,
    pub now: NaiveDateTime,
}

/// The record kind of a handler's effects: `hook:SOURCE:HANDLER`.
pub fn record_kind(source: &str, handler: &str) -> String {
    format!("hook:{source}:{handler}")
}

/// `{source}:{handler}:{event id}:{batch}`: the handler is in the key, so one handler
/// finishing never marks the event done for another.
pub fn handler_key(source: &str, handler: &str, event_id: &str, batch: i32) -> String {
    format!("{source}:{handler}:{event_id}:{batch}")
}

/// Runs inside the caller's write transaction.
pub fn ingest<C: HookStore>(c: &mut C, e: &NewInbound<'_>) -> Result<Ingested, DbError> {
    let hash = digest(e.body);
    let row = NewEvent {
        id: Uuid::now_v7().to_string(),
        source: e.source.into(),
        event_id: e.event_id.into(),
        content_hash: hash.clone(),
        body: Some(e.body.into()),
        content_type: e.content_type.into(),
        first_received_at: e.now,
        last_received_at: e.now,
    };
    if c.insert_event(&row)? {
        c.insert_submission(&anchor(e, &row))?;
        let effects: Vec<NewEffect> =
            e.config.handlers.iter().map(|h| handler_effect(e, &row.id, &h.name, 0)).collect();
        c.insert_effects(&effects)?;
        return Ok(Ingested::Created { event_row: row.id });
    }
    let stored = c.find_event(e.source, e.event_id)?.ok_or(DbError::LockTimeout)?;
    c.touch_event(&stored.id, e.now)?;
    if stored.content_hash == hash {
        return Ok(Ingested::Replayed { event_row: stored.id });
    }
    c.record_event_conflict(&Conflict {
        id: Uuid::now_v7().to_string(),
        event_row_id: stored.id.clone(),
        content_hash: hash,
        // Past the content window the event is a tombstone: its conflicts keep no content either.
        body: stored.body.is_some().then(|| e.body.into()),
        status: ConflictStatus::Open,
        attempts: 1,
        first_seen_at: e.now,
        last_seen_at: e.now,
    })?;
    Ok(Ingested::Conflict { event_row: stored.id })
}

/// One PENDING record for `handler` on the event, in `batch`.
pub fn handler_effect(e: &NewInbound<'_>, event_row: &str, handler: &str, batch: i32) -> NewEffect {
    NewEffect {
        id: EffectId::generate(),
        submission_id: event_row.into(),
        kind: record_kind(e.source, handler),
        batch,
        effect_key: handler_key(e.source, handler, e.event_id, batch),
        state: EffectState::Pending,
        held: false,
        next_attempt_at: e.now,
        created_at: e.now,
        updated_at: e.now,
    }
}

/// The event's row in `submissions` that its handler records belong to; its fields are what
/// the handlers read (`body`, `content_type`, `source`, `event_id`).
fn anchor(e: &NewInbound<'_>, row: &NewEvent) -> NewSubmission {
    let fields = serde_json::json!({
        "body": e.body,
        "content_type": e.content_type,
        "source": e.source,
        "event_id": e.event_id,
    });
    NewSubmission {
        id: row.id.clone().into(),
        form: crate::domain::anchor_form(e.source),
        operation_id: e.event_id.into(),
        fingerprint: row.content_hash.clone(),
        fields_json: Some(fields.to_string()),
        response_body: "{}".into(),
        channel: Channel::Hook,
        keyless: false,
        spam: false,
        spam_reason: None,
        email_digest: None,
        phone_digest: None,
        name_digest: None,
        received_at: e.now,
        operation_expires_at: e.now + chrono::Duration::days(36_500),
        journey_id: None,
        locale: None,
    }
}
