//! The accept transaction, for both backends: a retry's fast read, the claim of (form,
//! operation ID) with everything the submission writes, and one decision for a key that was
//! taken (`Taken`).

use super::plan::{Content, Plan};
use super::{receipt, recipient_cap, versions, Intake, Outcome, Receipt};
use crate::db::duplicates::DuplicateStore;
use crate::db::files::FileRefs;
use crate::db::form_versions::FormVersions;
use crate::db::models::{NewConflict, NewDelivery, NewSubmission, Submission};
use crate::db::recipient_cap::RecipientCapStore;
use crate::db::{DbError, Store};
use crate::domain::keyring::Keyring;
use crate::domain::SubmissionId;
use crate::services::duplicates;
use crate::services::request_log::DeliveryOutcome;

/// The fast path of a retry: the committed receipt when the same `content` was accepted
/// under this key, from a plain read without the write lock and before any of a first
/// acceptance's rows are planned. Anything else (a keyless post too): `None`.
pub(super) fn committed<C: Store>(
    c: &mut C,
    keyring: &Keyring,
    intake: &Intake,
    content: &Content,
) -> Result<Option<Receipt>, DbError> {
    let Some(operation_id) = &intake.operation_id else { return Ok(None) };
    let stored = c.find_submission(intake.form.name(), operation_id.as_str())?;
    // A key accepted under another version of the form is judged under it (`run`).
    let judged_here =
        |s: &Submission| versions::same_version(intake.form.version(), s.form_version.as_deref());
    Ok(stored.filter(|s| judged_here(s) && content.same_as(keyring, s)).map(receipt))
}

/// A lock wait that timed out means the first request with this key is still in flight.
pub(super) fn in_progress_on_lock_timeout(
    result: Result<Outcome, DbError>,
    operation_id: &str,
) -> Result<Outcome, DbError> {
    match result {
        Err(DbError::LockTimeout) => Ok(Outcome::InProgress { operation_id: operation_id.into() }),
        other => other,
    }
}

/// The write transaction: claim the key, or find what holds it.
pub(super) fn run<C: Store + DuplicateStore + RecipientCapStore + FileRefs + FormVersions>(
    c: &mut C,
    plan: &Plan,
) -> Result<Outcome, DbError> {
    let (sub, form) = (&plan.submission, &*plan.form);
    // A confirmation the cap already rules out is written cancelled, with the body that says
    // so, instead of being updated after its insert.
    let capped = if plan.expired() { None } else { recipient_cap::taken(c, form, plan)? };
    let inserted = match capped {
        Some(body) => c.insert_submission(&NewSubmission { response_body: body.into(), ..sub.clone() })?,
        // An expired issued ID is never inserted again: what is stored answers, else 410.
        None => !plan.expired() && c.insert_submission(sub)?,
    };
    if inserted {
        c.insert_submission_files(&plan.files)?;
        let mut effects = plan.effects.clone();
        if duplicates::link(c, form, sub, plan.now())? {
            effects.iter_mut().for_each(|e| e.held = true);
        }
        if capped.is_some() {
            recipient_cap::capped(&mut effects);
        }
        c.insert_effects(&effects)?;
        let body = match capped {
            Some(body) => body.to_string(),
            None => recipient_cap::apply(c, form, plan)?.unwrap_or_else(|| sub.response_body.clone()),
        };
        let outcome = if sub.spam { DeliveryOutcome::Spam } else { DeliveryOutcome::Created };
        c.insert_deliveries(&[plan.delivery(outcome, Some(&sub.id))])?;
        return Ok(Outcome::Created(Receipt {
            submission_id: sub.id.clone(),
            operation_id: sub.operation_id.clone(),
            body,
            received_at: sub.received_at,
            form_version: sub.form_version.clone(),
        }));
    }
    let holder = c.find_submission(&sub.form, &sub.operation_id)?;
    let taken = Taken::judge(c, plan, holder)?;
    if let Some(conflict) = &taken.conflict {
        c.record_conflict(conflict)?;
    }
    c.insert_deliveries(&[taken.delivery(plan)])?;
    Ok(taken.outcome)
}

/// A key that was taken when this request tried to claim it (both backends): what answers,
/// and the conflict to record when the holder's content differs.
pub(super) struct Taken {
    pub outcome: Outcome,
    pub conflict: Option<NewConflict>,
}

impl Taken {
    /// `by`, with the request judged under the version of the form `holder` was accepted
    /// under when that is not the plan's (`versions`).
    pub fn judge<C: FormVersions>(
        c: &mut C,
        plan: &Plan,
        holder: Option<Submission>,
    ) -> Result<Taken, DbError> {
        let under = match &holder {
            Some(h) => versions::judged_under(c, plan, h)?,
            None => None,
        };
        Ok(Taken::by(plan, holder, under))
    }

    /// Decides by `holder`, the submission that holds the key (`None`: not readable yet, or
    /// an expired key with nothing stored), comparing the plan's content or, when the holder
    /// was accepted under another version, `under` (the request's content under it).
    fn by(plan: &Plan, holder: Option<Submission>, under: Option<Option<Content>>) -> Taken {
        let operation_id = plan.submission.operation_id.clone();
        let same = |s: &Submission| match &under {
            None => plan.same_content(s),
            Some(content) => content.as_ref().is_some_and(|content| plan.same_as(content, s)),
        };
        let (outcome, conflict) = match holder {
            None if plan.expired() => (Outcome::Expired { operation_id }, None),
            None => (Outcome::InProgress { operation_id }, None),
            Some(s) if same(&s) => (Outcome::Replayed(receipt(s)), None),
            Some(s) => {
                let mut conflict = plan.conflict_with(&s.id);
                if let Some(Some(content)) = under {
                    (conflict.fingerprint, conflict.fields_json) = (content.fingerprint, Some(content.json));
                }
                if s.content_purged_at.is_some() {
                    conflict.fields_json = None; // a tombstone's conflicts keep no content either
                }
                (Outcome::Conflict { submission_id: s.id, operation_id: s.operation_id }, Some(conflict))
            }
        };
        Taken { outcome, conflict }
    }

    /// This request's delivery row.
    pub fn delivery(&self, plan: &Plan) -> NewDelivery {
        plan.delivery(delivery_outcome(&self.outcome), submission_id(&self.outcome))
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
