//! Storing one verified delivery, with its delivery row, in the caller's transaction: the
//! (source, event ID) is claimed through the unique constraint, and the event and one
//! side-effect record per handler (owned by the event) are written; for a known ID the replay
//! or conflict is recorded; without an event ID the delivery is quarantined.

use chrono::NaiveDateTime;
use uuid::Uuid;

use crate::base::clock::now;
use crate::config::hooks::HookConfig;
use crate::db::hooks::{Conflict, Delivery, HookStore, NewEvent, NewEventEffect, Quarantined};
use crate::db::DbError;
use crate::domain::{
    digest, ConflictStatus, EffectId, EffectState, InboundOutcome, QuarantineStatus, RecordKind,
};

/// A verified delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The verified body (WeCom: the decrypted XML message), as text.
    pub body: String,
    pub content_type: &'static str,
    /// `None`: no usable event ID (the delivery goes to quarantine).
    pub event_id: Option<String>,
}

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
        let effects: Vec<NewEventEffect> =
            e.config.handlers.iter().map(|h| handler_effect(e, &row.id, &h.name, 0)).collect();
        c.insert_event_effects(&effects)?;
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
pub fn handler_effect(e: &NewInbound<'_>, event_row: &str, handler: &str, batch: i32) -> NewEventEffect {
    NewEventEffect {
        id: EffectId::generate(),
        inbound_event_id: event_row.into(),
        kind: RecordKind::hook(e.source, handler),
        batch,
        effect_key: handler_key(e.source, handler, e.event_id, batch),
        state: EffectState::Pending,
        next_attempt_at: e.now,
        created_at: e.now,
        updated_at: e.now,
    }
}

/// What one delivery became.
pub enum Stored {
    Event(Ingested),
    Quarantined,
}

/// In the caller's transaction: the event (or the quarantine row) and the delivery row.
pub fn store_delivery<C: HookStore>(
    c: &mut C,
    source: &str,
    config: &HookConfig,
    checked: &Checked,
) -> Result<Stored, DbError> {
    let t = now();
    let (stored, row, status) = match &checked.event_id {
        Some(event_id) => {
            let e = NewInbound {
                source,
                config,
                event_id,
                body: &checked.body,
                content_type: checked.content_type,
                now: t,
            };
            let outcome = ingest(c, &e)?;
            let row = outcome.event_row().to_string();
            (Stored::Event(outcome), row, 200)
        }
        None => {
            let id = Uuid::now_v7().to_string();
            c.insert_quarantined(&Quarantined {
                id: id.clone(),
                source: source.into(),
                body: Some(checked.body.clone()),
                content_type: checked.content_type.into(),
                status: QuarantineStatus::Open,
                event_row_id: None,
                decided_by: None,
                decided_at: None,
                received_at: t,
            })?;
            (Stored::Quarantined, id, 202)
        }
    };
    let outcome = match &stored {
        Stored::Event(i) => i.label(),
        Stored::Quarantined => InboundOutcome::Quarantined,
    };
    c.insert_inbound_delivery(&Delivery {
        id: Uuid::now_v7().to_string(),
        source: source.into(),
        event_row_id: Some(row),
        outcome,
        http_status: status,
        received_at: t,
    })?;
    Ok(stored)
}
