//! The PostgreSQL accept path: the first acceptance of a key is one statement
//! (`db::claim_pg`), shared with other acceptances under load (`pg_batch`); only when the
//! key is taken is the holder read, after the failed claim:
//! a replay (its delivery row queued), a conflict (recorded with its delivery row in one
//! transaction) or a first request still in flight.

use std::sync::Arc;

use diesel::Connection;
use uuid::Uuid;

use super::pg_batch::{Batches, Job};
use super::plan::Plan;
use super::transaction::{run, Taken};
use super::{Outcome, Receipt};
use crate::db::claim_pg;
use crate::db::{DbConnection, DbError, Store};
use crate::services::request_log::{DeliveryOutcome, RequestLog};

/// What `accept_pg` did besides its outcome.
pub(super) struct Done {
    pub outcome: Outcome,
    /// A pair was linked: the screener has work.
    pub linked: bool,
}

/// Accepts `plan` on `c` exactly once per (form, operation ID), its first claim alone or
/// with others' (`batches`); the delivery rows of replays and in-flight answers go to `log`.
/// `Acceptor::accept` is the way in.
pub(super) fn accept_pg(
    c: &mut DbConnection,
    plan: Plan,
    batches: &Batches,
    log: &RequestLog,
) -> Result<Done, DbError> {
    // An expired issued ID is never claimed again: what is stored answers (`run`), else 410.
    // A test submission (from the admin) takes the general path: the one statement writes
    // visitors' submissions only.
    if plan.expired() || plan.submission.test {
        let outcome = c.transaction(|c| run(c, &plan))?;
        return Ok(Done { linked: matches!(outcome, Outcome::Created(_)), outcome });
    }
    let sub = &plan.submission;
    let delivery =
        plan.delivery(if sub.spam { DeliveryOutcome::Spam } else { DeliveryOutcome::Created }, Some(&sub.id));
    let job = Job::new(Arc::new(plan), delivery, Uuid::now_v7().to_string());
    let pg =
        c.pg().ok_or_else(|| DbError::Unavailable("the one-statement accept needs PostgreSQL".into()))?;
    let claimed = batches.claim(pg, &job)?;
    let plan = &*job.plan;
    let sub = &plan.submission;
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
