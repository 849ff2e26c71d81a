//! The accept use case: `Acceptor::submit` (`submit.rs`) validates, screens and accepts; one
//! transaction claims (form, operation ID) through the unique constraint and writes the
//! submission, one record per side effect and the delivery. A second request with the same
//! key reads what the first one committed.

mod acceptor;
mod cache;
pub mod import;
mod pg;
mod plan;
mod recipient_cap;
mod submit;

use std::sync::Arc;

use crate::config::FormConfig;
use crate::db::duplicates::DuplicateStore;
use crate::db::models::{NewConflict, NewDelivery, NewEffect, Submission};
use crate::db::recipient_cap::RecipientCapStore;
use crate::db::{DbError, Store};
use crate::deliveries::{Channel, DeliveryOutcome};
use crate::domain::{NormalisedFields, OperationId, SubmissionId};
use crate::duplicates;
pub use acceptor::Acceptor;
pub use submit::{SubmitError, SubmitRequest};

use plan::Plan;
pub use plan::ResultBody;

/// A validated submission, ready to be accepted. It owns what it needs, so the accept
/// transaction can run on another thread (the blocking pool, SQLite's writer).
pub struct Intake {
    pub form_name: String,
    pub form: Arc<FormConfig>,
    /// `None` for a keyless HTML post.
    pub operation_id: Option<OperationId>,
    pub channel: Channel,
    pub fields: NormalisedFields,
}

/// What became of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// This request created the submission (201).
    Created(Receipt),
    /// The same content was accepted before under this key (200, the stored body).
    Replayed(Receipt),
    /// Different content under an accepted key (409); the original is untouched.
    Conflict { submission_id: SubmissionId, operation_id: String },
    /// The key is taken but its submission is not readable yet (409, retry).
    InProgress { operation_id: String },
    /// An issued operation ID past its form's `keys` window, with nothing stored (410).
    Expired { operation_id: String },
}

/// The stored result of an accepted submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub submission_id: SubmissionId,
    pub operation_id: String,
    /// The result body, byte for byte as first returned.
    pub body: String,
    pub received_at: chrono::NaiveDateTime,
}

/// The fast path of a retry: the committed receipt when the same content was accepted
/// under this key, from a plain read without the write lock. Anything else: `None`.
fn committed<C: Store>(c: &mut C, plan: &Plan) -> Result<Option<Receipt>, DbError> {
    let sub = &plan.submission;
    if sub.keyless {
        return Ok(None);
    }
    Ok(c.find_submission(&sub.form, &sub.operation_id)?.filter(|s| plan.same_content(s)).map(receipt))
}

/// A lock wait that timed out means the first request with this key is still in flight.
fn in_progress_on_lock_timeout(
    result: Result<Outcome, DbError>,
    operation_id: &str,
) -> Result<Outcome, DbError> {
    match result {
        Err(DbError::LockTimeout) => Ok(Outcome::InProgress { operation_id: operation_id.into() }),
        other => other,
    }
}

/// The write transaction: claim the key, or find what holds it.
fn run<C: Store + DuplicateStore + RecipientCapStore>(c: &mut C, plan: &Plan) -> Result<Outcome, DbError> {
    let (sub, form) = (&plan.submission, &*plan.form);
    // An expired issued ID is never inserted again: what is stored answers, else 410.
    if !plan.expired() && c.insert_submission(sub)? {
        if duplicates::link(c, form, sub, plan.now())? {
            let held: Vec<NewEffect> =
                plan.effects.iter().cloned().map(|e| NewEffect { held: true, ..e }).collect();
            c.insert_effects(&held)?;
        } else {
            c.insert_effects(&plan.effects)?;
        }
        let body = recipient_cap::apply(c, form, plan)?.unwrap_or_else(|| sub.response_body.clone());
        let outcome = if sub.spam { DeliveryOutcome::Spam } else { DeliveryOutcome::Created };
        c.insert_deliveries(&[plan.delivery(outcome, Some(&sub.id))])?;
        return Ok(Outcome::Created(Receipt {
            submission_id: sub.id.clone(),
            operation_id: sub.operation_id.clone(),
            body,
            received_at: sub.received_at,
        }));
    }
    let taken = Taken::by(plan, c.find_submission(&sub.form, &sub.operation_id)?);
    if let Some(conflict) = &taken.conflict {
        c.record_conflict(conflict)?;
    }
    c.insert_deliveries(&[taken.delivery(plan)])?;
    Ok(taken.outcome)
}

/// A key that was taken when this request tried to claim it (both backends): what answers,
/// and the conflict to record when the holder's content differs.
struct Taken {
    outcome: Outcome,
    conflict: Option<NewConflict>,
}

impl Taken {
    /// Decides by `holder`, the submission that holds the key (`None`: not readable yet, or
    /// an expired key with nothing stored).
    fn by(plan: &Plan, holder: Option<Submission>) -> Taken {
        let operation_id = plan.submission.operation_id.clone();
        let (outcome, conflict) = match holder {
            None if plan.expired() => (Outcome::Expired { operation_id }, None),
            None => (Outcome::InProgress { operation_id }, None),
            Some(s) if plan.same_content(&s) => (Outcome::Replayed(receipt(s)), None),
            Some(s) => {
                let mut conflict = plan.conflict_with(&s.id);
                if s.content_purged_at.is_some() {
                    conflict.fields_json = None; // a tombstone's conflicts keep no content either
                }
                (Outcome::Conflict { submission_id: s.id, operation_id: s.operation_id }, Some(conflict))
            }
        };
        Taken { outcome, conflict }
    }

    /// This request's delivery row.
    fn delivery(&self, plan: &Plan) -> NewDelivery {
        plan.delivery(delivery_outcome(&self.outcome), submission_id(&self.outcome))
    }
}

fn receipt(s: Submission) -> Receipt {
    Receipt {
        submission_id: s.id,
        operation_id: s.operation_id,
        body: s.response_body,
        received_at: s.received_at,
    }
}

fn delivery_outcome(outcome: &Outcome) -> DeliveryOutcome {
    match outcome {
        Outcome::Created(_) => DeliveryOutcome::Created,
        Outcome::Replayed(_) => DeliveryOutcome::Replayed,
        Outcome::Conflict { .. } => DeliveryOutcome::Conflict,
        Outcome::InProgress { .. } => DeliveryOutcome::InProgress,
        Outcome::Expired { .. } => DeliveryOutcome::Expired,
    }
}

fn submission_id(outcome: &Outcome) -> Option<&SubmissionId> {
    match outcome {
        Outcome::Created(r) | Outcome::Replayed(r) => Some(&r.submission_id),
        Outcome::Conflict { submission_id, .. } => Some(submission_id),
        Outcome::InProgress { .. } | Outcome::Expired { .. } => None,
    }
}
