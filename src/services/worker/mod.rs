//! The side-effect worker: claims due records under a lease, delivers each with a hard
//! timeout, records the attempt and moves the record on; looks up UNKNOWN outcomes.

mod decide;

use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use chrono::NaiveDateTime;
use futures_util::future::join_all;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::base::clock::now;
use crate::base::traffic::Traffic;
use crate::config::WorkerConfig;
use crate::db::models::{JobRow, NewAttempt, Transition};
use crate::db::{DbConnection, DbError, Queue, Writes};
use crate::domain::{AttemptOutcome, EffectId, EffectState};
use crate::services::effects::{Job, Lookup, Outcome, Registry, Report};

/// Under load (a pass claimed a full batch), leases are expired and UNKNOWN outcomes looked
/// up at most this often; otherwise on every pass.
const HOUSEKEEPING_EVERY: Duration = Duration::from_secs(1);

pub struct Worker {
    db: Db,
    /// The effects in force: a pass takes the set in force when it starts (its calls finish
    /// with it); a reload (`put_registry`) swaps it whole for the next pass.
    registry: RwLock<Arc<Registry>>,
    config: WorkerConfig,
    /// This process's lease owner name.
    owner: String,
    /// When leases were last expired and UNKNOWN outcomes looked up.
    housekeeping: Mutex<Option<Instant>>,
    /// Inside `serve`: its requests in flight; while any is, the worker delivers one batch
    /// per `poll_ms` (`beside`).
    traffic: Option<Traffic>,
    /// Merges the forms saved in the admin again and puts the effects built from them in
    /// force (`put_registry`), when a claimed record's form is not among the registry's
    /// (`app` sets it; blocking work).
    refresher: OnceLock<Refresher>,
}

/// What `Worker::refresh_with` calls.
pub type Refresher = Arc<dyn Fn() + Send + Sync>;

/// The worker's transactions (`Writes`), run off the async threads.
#[derive(Clone)]
struct Db(Writes);

impl Db {
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut DbConnection) -> Result<T, DbError> + Send + 'static,
    ) -> Result<T, DbError> {
        let writes = self.0.clone();
        match tokio::task::spawn_blocking(move || writes.run(f)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "worker database call failed");
                Err(e)
            }
            Err(e) => Err(DbError::Unavailable(e.to_string())),
        }
    }
}

impl Worker {
    /// A worker whose transactions go where `writes` sends them (`Writes::shared` in a
    /// process: SQLite's group-commit writer, shared with the acceptor).
    pub fn new(writes: Writes, registry: Registry, config: WorkerConfig) -> Worker {
        let owner = format!("w{}-{}", std::process::id(), &Uuid::new_v4().simple().to_string()[..8]);
        let registry = RwLock::new(Arc::new(registry));
        Worker {
            db: Db(writes),
            registry,
            config,
            owner,
            housekeeping: Mutex::new(None),
            traffic: None,
            refresher: OnceLock::new(),
        }
    }

    /// Sets what is called (once per batch) when a claimed record's form is not among the
    /// registry's: a form another process saved since the registry was built (its records
    /// are delivered with its settings, never refused as a removed form's).
    pub fn refresh_with(&self, refresher: Refresher) {
        let _ = self.refresher.set(refresher);
    }

    /// A worker beside the HTTP server whose requests `traffic` counts: while any is being
    /// answered it delivers one batch per `poll_ms` (at least `concurrency` records per
    /// poll, so that it never stops), and at full speed as soon as none is. The effects wait
    /// stored; the requests get the database, the disk and the CPU first.
    pub fn beside(mut self, traffic: Traffic) -> Worker {
        self.traffic = Some(traffic);
        self
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Puts `registry` in force (a reloaded configuration's effects): the records claimed
    /// from now on are delivered with it; the calls in flight finish with the previous one.
    pub fn put_registry(&self, registry: Registry) {
        let registry = Arc::new(registry);
        match self.registry.write() {
            Ok(mut current) => *current = registry,
            Err(poisoned) => *poisoned.into_inner() = registry,
        }
    }

    /// The effects in force now.
    fn registry(&self) -> Arc<Registry> {
        match self.registry.read() {
            Ok(registry) => registry.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Works until `stop` turns true; the pass in flight finishes first. Under load the
    /// stages overlap: the next batch is claimed while this one is delivered, and a batch's
    /// attempts are recorded while the next one is delivered (one transaction each, which
    /// SQLite's writer may commit together).
    pub async fn run(&self, mut stop: watch::Receiver<bool>) {
        tracing::info!(owner = %self.owner, "worker started");
        let mut recording: Option<JoinHandle<()>> = None;
        let mut next: Option<JoinHandle<Vec<JobRow>>> = None;
        while !*stop.borrow() {
            let due = match next.take() {
                Some(claimed) => claimed.await.unwrap_or_default(),
                None => self.claim().await,
            };
            let yielding = self.traffic.as_ref().is_some_and(Traffic::busy);
            if due.len() == self.config.concurrency && !yielding {
                let (db, owner, config) = (self.db.clone(), self.owner.clone(), self.config.clone());
                next = Some(tokio::spawn(async move { claim(&db, owner, &config).await }));
            }
            let (handled, results) = self.work(due).await;
            if let Some(previous) = recording.take() {
                let _ = previous.await;
            }
            if !results.is_empty() {
                recording = Some(tokio::spawn(finish(self.db.clone(), self.owner.clone(), results)));
            }
            if handled == 0 || yielding {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(self.config.poll_ms)) => {}
                    _ = stop.changed() => {}
                }
            }
        }
        // A batch claimed ahead is delivered too: left SENDING it would become UNKNOWN.
        if let Some(claimed) = next.take() {
            let (_, results) = self.work(claimed.await.unwrap_or_default()).await;
            finish(self.db.clone(), self.owner.clone(), results).await;
        }
        if let Some(previous) = recording.take() {
            let _ = previous.await;
        }
        tracing::info!(owner = %self.owner, "worker stopped");
    }

    /// One pass: deliver what is due (up to `concurrency` at once), expire dead leases and
    /// look up due UNKNOWN outcomes, and record the attempts. Returns how many records it handled.
    pub async fn run_once(&self) -> usize {
        let due = self.claim().await;
        let (handled, results) = self.work(due).await;
        finish(self.db.clone(), self.owner.clone(), results).await;
        handled
    }

    /// Passes until nothing is due (the tests drain the queue with it; the `worker` command
    /// runs until it is stopped).
    pub async fn run_until_idle(&self) {
        while self.run_once().await > 0 {}
    }

    async fn claim(&self) -> Vec<JobRow> {
        claim(&self.db, self.owner.clone(), &self.config).await
    }

    /// Delivers a claimed batch (what to record comes back), then the housekeeping: expired
    /// leases become UNKNOWN and due UNKNOWN outcomes are looked up.
    async fn work(&self, due: Vec<JobRow>) -> (usize, Vec<Finished>) {
        let t = now();
        let limit = self.config.concurrency as i64;
        let mut registry = self.registry();
        if let Some(refresh) = self.refresher.get() {
            if due.iter().any(|r| r.submission.as_ref().is_some_and(|s| !registry.knows_form(&s.form))) {
                let refresh = refresh.clone();
                let _ = tokio::task::spawn_blocking(move || refresh()).await;
                registry = self.registry();
            }
        }
        let results = join_all(due.iter().cloned().map(|row| self.deliver(&registry, row))).await;
        if due.len() as i64 == limit && !self.housekeeping_due() {
            return (due.len(), results);
        }
        let expired = self.db.write(move |c| Ok(c.expire_leases(t)?)).await.unwrap_or(0);
        if expired > 0 {
            tracing::warn!(expired, "leases ran out while sending: marked UNKNOWN");
        }
        let kinds = registry.reconcilable();
        let retry_at = t + chrono::Duration::milliseconds(self.config.reconcile_after_ms as i64);
        let unknown = self
            .db
            .write(move |c| Ok(c.take_unknown_due(&kinds, t, retry_at, limit)?))
            .await
            .unwrap_or_default();
        join_all(unknown.iter().cloned().map(|row| self.reconcile(&registry, row))).await;
        (due.len() + unknown.len(), results)
    }

    /// Whether the housekeeping is due under load (and, if so, marks it done now).
    fn housekeeping_due(&self) -> bool {
        let mut last = self.housekeeping.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.is_some_and(|at| at.elapsed() < HOUSEKEEPING_EVERY) {
            return false;
        }
        *last = Some(Instant::now());
        true
    }

    /// Runs one claimed record; what to record comes back for `finish`.
    async fn deliver(&self, registry: &Registry, row: JobRow) -> Finished {
        let id = row.id.clone();
        // Its submission's content was purged (retention, erasure) before it went out, e.g.
        // an UNKNOWN found absent afterwards: there is nothing left to send.
        let purged = row.purged();
        let (started, t0) = (now(), Instant::now());
        let job = match Job::from_row(row) {
            Ok(job) => job,
            Err(reason) => return unreadable(id, started, t0, reason, &self.config),
        };
        let Some(effect) = registry.get(&job.kind) else { return (id, unhandled(), None) };
        let timeout = Duration::from_millis(self.config.call_timeout_ms);
        let report = match purged {
            true => Report::failed(Outcome::Permanent, "content_purged"),
            false => tokio::time::timeout(timeout, effect.deliver(&job))
                .await
                .unwrap_or_else(|_| Report::failed(Outcome::Ambiguous, "timeout")),
        };
        let t = decide::after_attempt(&report, job.attempt, effect.idempotent(), &self.config, now());
        tracing::info!(effect = %job.id, submission = %job.submission_id, kind = job.kind.as_str(), attempt = job.attempt,
            outcome = %report.label(), class = report.error_class.as_deref().unwrap_or(""), state = %t.state, "attempt");
        let attempt = attempt_row(&job.id, started, t0, report.label(), &report);
        (id, t, Some(attempt))
    }

    async fn reconcile(&self, registry: &Registry, row: JobRow) {
        let id = row.id.clone();
        let job = match Job::from_row(row) {
            Ok(job) => job,
            Err(reason) => {
                // It stays UNKNOWN for an admin (the Effects page).
                return tracing::warn!(effect = %id, %reason, "an UNKNOWN record cannot be read: not looked up");
            }
        };
        let Some(effect) = registry.get(&job.kind) else { return };
        let (started, t0) = (now(), Instant::now());
        let timeout = Duration::from_millis(self.config.call_timeout_ms);
        let lookup = tokio::time::timeout(timeout, effect.reconcile(&job))
            .await
            .unwrap_or_else(|_| Lookup::Failed { error_class: "timeout".into() });
        let transition = decide::after_lookup(&lookup, now());
        tracing::info!(effect = %job.id, submission = %job.submission_id, kind = job.kind.as_str(),
            outcome = %lookup.label(), "reconciliation");
        let (provider_ref, class) = match &lookup {
            Lookup::Found { provider_ref } => (Some(provider_ref.clone()), None),
            Lookup::Absent => (None, None),
            Lookup::Failed { error_class } => (None, Some(error_class.clone())),
        };
        let report = Report { error_class: class, ..Report::failed(Outcome::Ambiguous, "") };
        let mut attempt = attempt_row(&job.id, started, t0, lookup.label(), &report);
        attempt.provider_ref = provider_ref;
        let id = job.id.clone();
        let result = self
            .db
            .write(move |c| {
                c.insert_attempt(&attempt)?;
                if let Some(t) = &transition {
                    c.resolve_unknown(&id, t, now())?;
                }
                Ok(())
            })
            .await;
        if let Err(error) = result {
            tracing::warn!(%error, "could not record a reconciliation");
        }
    }
}

/// Leases up to `concurrency` due records to `owner` (one transaction).
async fn claim(db: &Db, owner: String, config: &WorkerConfig) -> Vec<JobRow> {
    let t = now();
    let lease_until = t + chrono::Duration::seconds(config.lease_seconds as i64);
    let limit = config.concurrency as i64;
    db.write(move |c| Ok(c.claim_due(&owner, t, lease_until, limit)?)).await.unwrap_or_default()
}

/// Records a pass's attempts and transitions in one transaction (one commit, not one per
/// record; the attempts in one statement); each transition applies only where the lease is
/// still `owner`'s.
async fn finish(db: Db, owner: String, results: Vec<Finished>) {
    if results.is_empty() {
        return;
    }
    let outcome = db
        .write(move |c| {
            let attempts: Vec<NewAttempt> = results.iter().filter_map(|(_, _, a)| a.clone()).collect();
            c.insert_attempts(&attempts)?;
            let done: Vec<(&str, &Transition)> = results.iter().map(|(id, t, _)| (id.as_str(), t)).collect();
            Ok(c.finish_all(&done, &owner, now())?)
        })
        .await;
    match outcome {
        Ok(lost) => {
            for id in lost {
                tracing::warn!(effect = %id, "lease lost before the attempt was recorded");
            }
        }
        // The records stay SENDING; their leases run out and they are reconciled, never resent blindly.
        Err(error) => tracing::error!(%error, "could not record a pass's attempts"),
    }
}

/// A record, its next state, and the attempt to log.
type Finished = (EffectId, Transition, Option<NewAttempt>);

/// A record that cannot be delivered as stored (no owner, fields that do not parse) fails
/// for good, with the reason in the attempts log: it is never sent empty.
fn unreadable(
    id: EffectId,
    started: NaiveDateTime,
    t0: Instant,
    reason: String,
    config: &WorkerConfig,
) -> Finished {
    tracing::error!(effect = %id, %reason, "a claimed record cannot be read");
    let report = Report::failed(Outcome::Permanent, "unreadable_record").with_detail(Some(reason));
    let t = decide::after_attempt(&report, 0, false, config, now());
    let attempt = attempt_row(&id, started, t0, report.label(), &report);
    (id, t, Some(attempt))
}

/// A record of a kind this process cannot deliver goes back to PENDING for another process.
fn unhandled() -> Transition {
    Transition {
        state: EffectState::Pending,
        next_attempt_at: now() + chrono::Duration::minutes(5),
        provider_ref: None,
        last_error: Some("no handler for this kind in this process".into()),
    }
}

fn attempt_row(
    effect_id: &EffectId,
    started: NaiveDateTime,
    t0: Instant,
    outcome: AttemptOutcome,
    r: &Report,
) -> NewAttempt {
    NewAttempt {
        id: Uuid::now_v7().to_string(),
        effect_id: effect_id.clone(),
        started_at: started,
        duration_ms: i32::try_from(t0.elapsed().as_millis()).unwrap_or(i32::MAX),
        outcome,
        http_status: r.http_status.map(i32::from),
        smtp_code: r.smtp_code.map(i32::from),
        error_class: r.error_class.clone(),
        provider_ref: match &r.outcome {
            Outcome::Sent { provider_ref } => Some(provider_ref.clone()),
            _ => None,
        },
        detail: r.detail.clone(),
    }
}
