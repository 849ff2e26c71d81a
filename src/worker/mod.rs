//! The side-effect worker: claims due records under a lease, delivers each with a hard
//! timeout, records the attempt and moves the record on; looks up UNKNOWN outcomes.

mod decide;

use std::time::{Duration, Instant};

use chrono::NaiveDateTime;
use futures_util::future::join_all;
use tokio::sync::watch;
use uuid::Uuid;

use crate::config::WorkerConfig;
use crate::db::models::{JobRow, NewAttempt, Transition};
use crate::db::{DbError, Pool, Queue, Store};
use crate::deliveries::now;
use crate::domain::{AttemptOutcome, EffectId, EffectState};
use crate::effects::{Job, Lookup, Outcome, Registry, Report};
use crate::with_conn;

pub struct Worker {
    pool: Pool,
    registry: Registry,
    config: WorkerConfig,
    /// This process's lease owner name.
    owner: String,
}

impl Worker {
    pub fn new(pool: Pool, registry: Registry, config: WorkerConfig) -> Worker {
        let owner = format!("w{}-{}", std::process::id(), &Uuid::new_v4().simple().to_string()[..8]);
        Worker { pool, registry, config, owner }
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Works until `stop` turns true; the pass in flight finishes first.
    pub async fn run(&self, mut stop: watch::Receiver<bool>) {
        tracing::info!(owner = %self.owner, "worker started");
        while !*stop.borrow() {
            if self.run_once().await == 0 {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(self.config.poll_ms)) => {}
                    _ = stop.changed() => {}
                }
            }
        }
        tracing::info!(owner = %self.owner, "worker stopped");
    }

    /// One pass: expire dead leases, deliver what is due (up to `concurrency` at once) and
    /// look up due UNKNOWN outcomes. Returns how many records it handled.
    pub async fn run_once(&self) -> usize {
        let t = now();
        let lease_until = t + chrono::Duration::seconds(self.config.lease_seconds as i64);
        let limit = self.config.concurrency as i64;
        let owner = self.owner.clone();
        let expired = self.db(move |p| with_conn!(p, |c| Ok(c.expire_leases(t)?))).await.unwrap_or(0);
        if expired > 0 {
            tracing::warn!(expired, "leases ran out while sending: marked UNKNOWN");
        }
        let due = self.db(move |p| with_conn!(p, |c| Ok(c.claim_due(&owner, t, lease_until, limit)?))).await;
        let due = due.unwrap_or_default();
        let results = join_all(due.iter().cloned().map(|row| self.deliver(row))).await;
        self.finish(results).await;

        let kinds = self.registry.reconcilable();
        let retry_at = t + chrono::Duration::milliseconds(self.config.reconcile_after_ms as i64);
        let unknown = self
            .db(move |p| {
                let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
                with_conn!(p, |c| Ok(c.take_unknown_due(&kinds, t, retry_at, limit)?))
            })
            .await
            .unwrap_or_default();
        join_all(unknown.iter().cloned().map(|row| self.reconcile(row))).await;
        due.len() + unknown.len()
    }

    /// Passes until nothing is due (tests and `worker --drain`).
    pub async fn run_until_idle(&self) {
        while self.run_once().await > 0 {}
    }

    /// Runs one claimed record; what to record comes back for `finish`.
    async fn deliver(&self, row: JobRow) -> Finished {
        let id = row.id.clone();
        // Its submission's content was purged (retention, erasure) before it went out, e.g.
        // an UNKNOWN found absent afterwards: there is nothing left to send.
        let purged = row.fields_json.is_none();
        let (job, started, t0) = (Job::from_row(row), now(), Instant::now());
        let Some(effect) = self.registry.get(&job.kind) else { return (id, unhandled(), None) };
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

    async fn reconcile(&self, row: JobRow) {
        let job = Job::from_row(row);
        let Some(effect) = self.registry.get(&job.kind) else { return };
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
        let report =
            Report { outcome: Outcome::Ambiguous, http_status: None, smtp_code: None, error_class: class };
        let mut attempt = attempt_row(&job.id, started, t0, lookup.label(), &report);
        attempt.provider_ref = provider_ref;
        let id = job.id.clone();
        let result = self
            .db(move |p| {
                with_conn!(p, |c| c.write_tx(|c| {
                    c.insert_attempt(&attempt)?;
                    if let Some(t) = &transition {
                        c.resolve_unknown(&id, t, now())?;
                    }
                    Ok::<_, DbError>(())
                }))
            })
            .await;
        if let Err(error) = result {
            tracing::warn!(%error, "could not record a reconciliation");
        }
    }

    /// Records a pass's attempts and transitions in one transaction (one commit, not one per
    /// record); each transition applies only where the lease is still ours.
    async fn finish(&self, results: Vec<Finished>) {
        if results.is_empty() {
            return;
        }
        let owner = self.owner.clone();
        let outcome = self
            .db(move |p| {
                with_conn!(p, |c| c.write_tx(|c| {
                    let mut lost = Vec::new();
                    for (id, t, attempt) in &results {
                        if let Some(a) = attempt {
                            c.insert_attempt(a)?;
                        }
                        if !c.finish(id, &owner, t, now())? {
                            lost.push(id.clone());
                        }
                    }
                    Ok::<_, DbError>(lost)
                }))
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

    async fn db<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Pool) -> Result<T, DbError> + Send + 'static,
    ) -> Result<T, DbError> {
        let pool = self.pool.clone();
        match tokio::task::spawn_blocking(move || f(&pool)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "worker database call failed");
                Err(e)
            }
            Err(e) => Err(DbError::Unavailable(e.to_string())),
        }
    }
}

/// A record, its next state, and the attempt to log.
type Finished = (EffectId, Transition, Option<NewAttempt>);

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
    }
}
