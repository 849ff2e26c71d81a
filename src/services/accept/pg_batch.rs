//! PostgreSQL's group commit: under load, first acceptances share one statement.
//!
//! A claim runs at once, alone, as `claim_pg`'s one statement, while fewer than `RUNNING`
//! statements are in flight. Past that it waits; the next request to start a statement takes
//! its own claim and every waiting one it may share a statement with (`Job::joins`), up to
//! `MOST`, and runs them as `claim_many_pg`'s statement: one round trip, one commit, and one
//! pass of PostgreSQL's executor for all of them, which costs about a third of what each
//! alone did (BENCHMARKS.md). Every waiting request is answered from its own row. A claim
//! that a statement left behind because it may not share it (another form or look-up shape;
//! a retry of a waiting claim's operation ID) starts a statement of its own while fewer than
//! `MOST_RUNNING` are in flight.
//!
//! The claims of one statement see each other as if they ran in turn (`claim_many_pg`), so
//! that one visitor's flood shares statements too; two claims of one operation ID never
//! share one (the second would only find the first's key taken). When such a statement
//! fails for any reason but a lost connection (a lock wait timed out; a constraint), each of
//! its claims runs again alone, so that the error is its own claim's.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use diesel::PgConnection;

use super::plan::Plan;
use super::recipient_cap;
use crate::db::claim_many_pg::claim_many;
use crate::db::claim_pg::{self, Claim, Claimed, Link};
use crate::db::models::NewDelivery;
use crate::db::DbError;
use crate::services::duplicates;

/// Statements in flight before claims wait to share one: one, as in SQLite's group commit
/// (16 and 64 wrk clients, fresh database: one gave 0.66–0.86 × pgbench's one statement at
/// 16, two 0.59–0.69 ×, three and four less).
const RUNNING: usize = 1;
/// Statements in flight at most: past `RUNNING`, only claims that a statement left behind
/// because they may not share it start one.
const MOST_RUNNING: usize = 8;
/// Claims in one statement at most.
const MOST: usize = 32;

/// One acceptance to claim: its plan and what its statement writes besides.
pub(super) struct Job {
    pub plan: Arc<Plan>,
    delivery: NewDelivery,
    pair_id: String,
    /// The forms screened together for its duplicates.
    forms: Vec<String>,
    /// What the statement that ran it said, for a job that waited.
    result: Mutex<Option<Result<Claimed, DbError>>>,
}

impl Job {
    pub fn new(plan: Arc<Plan>, delivery: NewDelivery, pair_id: String) -> Arc<Job> {
        let forms = duplicates::screened_forms(&plan.submission.form, &plan.form);
        Arc::new(Job { plan, delivery, pair_id, forms, result: Mutex::new(None) })
    }

    /// What its statement writes (`claim_pg::Claim`).
    pub fn claim(&self) -> Claim<'_> {
        let (plan, sub) = (&*self.plan, &self.plan.submission);
        let link = duplicates::link_keys(sub).map(|keys| Link {
            keys,
            forms: &self.forms,
            since: duplicates::since(&plan.form, plan.now()),
            until: duplicates::until(&plan.form, plan.now()),
        });
        Claim {
            submission: sub,
            effects: &plan.effects,
            files: &plan.files,
            scan_hold: plan.scan_hold,
            delivery: &self.delivery,
            link,
            pair_id: &self.pair_id,
            hold_linked: duplicates::holds(&plan.form),
            cap: recipient_cap::window(&plan.form, plan),
        }
    }

    /// Whether `other` may share a statement with this one: the same form and look-up
    /// shape and another operation ID. Of one address, only when each was planned within
    /// the other's confirmation window, as the statement caps every row of an address but
    /// the first.
    fn joins(&self, other: &Job) -> bool {
        let (a, b) = (&self.plan.submission, &other.plan.submission);
        let keys =
            |s| duplicates::link_keys(s).map(|k| [k.email, k.phone, k.name, k.content].map(|v| v.is_some()));
        let within = |x: &Job, y: &Job| {
            recipient_cap::window(&x.plan.form, &x.plan).is_none_or(|(since, _)| since < y.plan.now())
        };
        let one_address = a.email_digest.is_some() && a.email_digest == b.email_digest;
        a.form == b.form
            && self.forms == other.forms
            && keys(a) == keys(b)
            && a.operation_id != b.operation_id
            && (!one_address || within(self, other) && within(other, self))
    }

    fn put(&self, result: Result<Claimed, DbError>) {
        *self.result.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
    }

    fn take(&self) -> Option<Result<Claimed, DbError>> {
        self.result.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// The claims waiting to share a statement, and how many statements are in flight.
#[derive(Default)]
pub(super) struct Batches {
    state: Mutex<State>,
    /// A statement finished: its jobs have their results, and another may start.
    finished: Condvar,
}

#[derive(Default)]
struct State {
    waiting: VecDeque<Waiting>,
    running: usize,
}

struct Waiting {
    job: Arc<Job>,
    /// A statement started without it, as it may not share it.
    passed_over: bool,
}

impl Batches {
    /// Claims `job` on `c`, alone or in a statement with others (see the module's doc).
    pub fn claim(&self, c: &mut PgConnection, job: &Arc<Job>) -> Result<Claimed, DbError> {
        let mut state = self.lock();
        state.waiting.push_back(Waiting { job: job.clone(), passed_over: false });
        loop {
            if let Some(result) = job.take() {
                return result;
            }
            let queued = state.waiting.iter().position(|w| Arc::ptr_eq(&w.job, job));
            let may_start = |w: &Waiting| match w.passed_over {
                false => state.running < RUNNING,
                true => state.running < MOST_RUNNING,
            };
            if let Some(at) = queued.filter(|at| may_start(&state.waiting[*at])) {
                state.running += 1;
                let batch = take_batch(&mut state.waiting, at);
                drop(state);
                let finished = Finished { batches: self, batch: &batch };
                for (j, result) in batch.iter().zip(run(c, &batch)) {
                    j.put(result);
                }
                drop(finished);
                state = self.lock();
                continue;
            }
            state = self.finished.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Ends a statement's turn, even if it panicked: a job left without a result gets an error,
/// the count of statements in flight goes down and the waiting requests wake.
struct Finished<'a> {
    batches: &'a Batches,
    batch: &'a [Arc<Job>],
}

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        for job in self.batch {
            let mut result = job.result.lock().unwrap_or_else(PoisonError::into_inner);
            if result.is_none() {
                *result = Some(Err(DbError::Unavailable("the shared accept statement stopped".into())));
            }
        }
        self.batches.lock().running -= 1;
        self.batches.finished.notify_all();
    }
}

/// The job at `at` and the waiting jobs that may share its statement, in their order; those
/// that may not are marked passed over.
fn take_batch(waiting: &mut VecDeque<Waiting>, at: usize) -> Vec<Arc<Job>> {
    let mut batch: Vec<Arc<Job>> = waiting.remove(at).into_iter().map(|w| w.job).collect();
    let mut i = 0;
    while i < waiting.len() && batch.len() < MOST {
        if batch.iter().all(|b| b.joins(&waiting[i].job)) {
            batch.extend(waiting.remove(i).map(|w| w.job));
        } else {
            waiting[i].passed_over = true;
            i += 1;
        }
    }
    batch
}

/// Each job's result: one statement for all, or each alone when that one failed but for a
/// lost connection.
fn run(c: &mut PgConnection, batch: &[Arc<Job>]) -> Vec<Result<Claimed, DbError>> {
    let alone = |c: &mut PgConnection| -> Vec<Result<Claimed, DbError>> {
        batch.iter().map(|j| claim_pg::claim(c, &j.claim()).map_err(DbError::from)).collect()
    };
    if batch.len() == 1 {
        return alone(c);
    }
    let claims: Vec<Claim<'_>> = batch.iter().map(|j| j.claim()).collect();
    match claim_many(c, &claims).map_err(DbError::from) {
        Ok(claimed) => claimed.into_iter().map(Ok).collect(),
        Err(DbError::Unavailable(why)) => {
            batch.iter().map(|_| Err(DbError::Unavailable(why.clone()))).collect()
        }
        Err(error) => {
            tracing::warn!(%error, claims = batch.len(), "a shared accept statement failed: each claim runs alone");
            alone(c)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::secret::Secret;
    use crate::config::{Config, Form};
    use crate::domain::keyring::Keyring;
    use crate::domain::{normalise, OperationId};
    use crate::services::accept::Intake;
    use crate::services::request_log::{Channel, DeliveryOutcome};
    use chrono::Duration;

    /// A first acceptance of the built-in contact form by `email`, under `key`, planned
    /// `minutes` from now.
    fn job(key: &str, email: &str, minutes: i64) -> Arc<Job> {
        let form = Form::new("contact", Config::builtin().unwrap().forms["contact"].clone());
        let raw: Vec<(String, String)> =
            [("name", "Ada Lovelace"), ("email", email), ("topic", "Sales"), ("message", "A quote")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        let intake = Intake {
            fields: normalise(&*form, &raw).unwrap(),
            form,
            operation_id: Some(OperationId::parse(key).unwrap()),
            channel: Channel::Api,
            scans: Default::default(),
            received: None,
            test: false,
        };
        let keyring = Arc::new(Keyring::new(Secret::new("onceform unit-test secret"), Vec::new()));
        let plan = Plan::new(intake, &keyring);
        let at = plan.now() + Duration::minutes(minutes);
        let plan = plan.made_at(at);
        let delivery = plan.delivery(DeliveryOutcome::Created, Some(&plan.submission.id));
        Job::new(Arc::new(plan), delivery, "pair".into())
    }

    #[test]
    fn a_visitors_repeats_share_a_statement_within_one_confirmation_window() {
        let window = i64::from(Config::builtin().unwrap().forms["contact"].confirmation_window_minutes);
        assert!(window > 0, "the contact form caps confirmations");
        let first = job("a-visitors-key-0001", "ada@example.com", 0);
        assert!(
            first.joins(&job("a-visitors-key-0002", "ada@example.com", 1)),
            "one address and name, another key"
        );
        assert!(
            !first.joins(&job("a-visitors-key-0001", "ada@example.com", 0)),
            "one key: the second finds it taken"
        );
        // Planned a window apart, each takes its own slot: the statement would cap the later.
        assert!(!first.joins(&job("a-visitors-key-0002", "ada@example.com", window + 1)));
        assert!(!job("a-visitors-key-0002", "ada@example.com", window + 1).joins(&first));
        assert!(first.joins(&job("a-visitors-key-0002", "grace@example.com", window + 1)), "another address");
    }
}
