//! The PostgreSQL accept path: the first acceptance of a key is one statement
//! (`db::claim_pg`); only when the key is taken is the holder read, after the failed claim:
//! a replay (its delivery row queued), a conflict (recorded with its delivery row in one
//! transaction) or a first request still in flight.

use diesel::Connection;
use uuid::Uuid;

use super::plan::Plan;
use super::recipient_cap;
use super::transaction::{run, Taken};
use super::{Outcome, Receipt};
use crate::db::claim_pg::{self, Claim};
use crate::db::{DbConnection, DbError, Store};
use crate::services::duplicates;
use crate::services::request_log::{DeliveryOutcome, RequestLog};

/// What `accept_pg` did besides its outcome.
pub(super) struct Done {
    pub outcome: Outcome,
    /// A pair was linked: the screener has work.
    pub linked: bool,
}

/// Accepts `plan` on `c` exactly once per (form, operation ID); the delivery rows of
/// replays and in-flight answers go to `log`. `Acceptor::accept` is the way in.
pub(super) fn accept_pg(c: &mut DbConnection, plan: &Plan, log: &RequestLog) -> Result<Done, DbError> {
    let form = &*plan.form;
    // An expired issued ID is never claimed again: what is stored answers (`run`), else 410.
    // A test submission (from the admin) takes the general path: the one statement writes
    // visitors' submissions only.
    if plan.expired() || plan.submission.test {
        let outcome = c.transaction(|c| run(c, plan))?;
        return Ok(Done { linked: matches!(outcome, Outcome::Created(_)), outcome });
    }
    let sub = &plan.submission;
    let delivery =
        plan.delivery(if sub.spam { DeliveryOutcome::Spam } else { DeliveryOutcome::Created }, Some(&sub.id));
    let pair_id = Uuid::now_v7().to_string();
    let forms = duplicates::screened_forms(&sub.form, form);
    let link = duplicates::link_keys(sub).map(|keys| claim_pg::Link {
        keys,
        forms: &forms,
        since: duplicates::since(form, plan.now()),
        until: duplicates::until(form, plan.now()),
    });
    let claim = Claim {
        submission: sub,
        effects: &plan.effects,
        files: &plan.files,
        scan_hold: plan.scan_hold,
        delivery: &delivery,
        link,
        pair_id: &pair_id,
        hold_linked: duplicates::holds(form),
        cap: recipient_cap::window(form, plan),
    };
    let pg =
        c.pg().ok_or_else(|| DbError::Unavailable("the one-statement accept needs PostgreSQL".into()))?;
    let claimed = claim_pg::claim(pg, &claim)?;
    if claimed.created {
        let r = Receipt {
            submission_id: sub.id.clone(),
            operation_id: sub.operation_id.clone(),
            body: match (claimed.capped, plan.capped_body.as_ref()) {
                (true, Some(capped)) => capped.clone(),
                _ => sub.response_body.clone(),
            },
            received_at: sub.received_at,
            form_version: sub.form_version.clone(),
        };
        return Ok(Done { outcome: Outcome::Created(r), linked: claimed.linked });
    }
    let holder = claim_pg::holder(pg, &sub.form, &sub.operation_id)?;
    let taken = Taken::judge(c, plan, holder)?;
    match &taken.conflict {
        // A conflict and its delivery row in one transaction; a replay's or an in-flight
        // answer's row goes to the log.
        Some(conflict) => c.transaction(|c| {
            c.record_conflict(conflict)?;
            c.insert_deliveries(&[taken.delivery(plan)])
        })?,
        None => log.record(taken.delivery(plan)),
    }
    let outcome = taken.outcome;
    Ok(Done { outcome, linked: false })
}
