//! The accept service: the accept transaction plus what makes it fast without weakening it.
//! - Retries of committed operations are answered from memory (`ReplayCache`), else from a
//!   plain read; their delivery rows are queued on the `DeliveryLog`.
//! - On SQLite, write transactions go through the group-commit writer: one fsync per batch
//!   of concurrent accepts, each in its own savepoint, each answered after the commit.
//! - On PostgreSQL, a first acceptance is one statement (`pg`); retries read after it.
//! - Submissions linked to an earlier one wake the duplicate screener.

use std::sync::Arc;

use super::cache::ReplayCache;
use super::{committed, in_progress_on_lock_timeout, pg, run, Intake, Outcome, Plan, Receipt};
use crate::config::Config;
use crate::db::{DbError, Pool, SqliteWriter, Store};
use crate::deliveries::{self, Channel, DeliveryLog, DeliveryOutcome};
use crate::domain::{fingerprint, NormalisedFields, OperationId};
use crate::duplicates::Screener;
use crate::with_conn;

/// Cheap to clone: the clones share the cache, the delivery log and the writer.
#[derive(Clone)]
pub struct Acceptor {
    config: Arc<Config>,
    pool: Pool,
    writer: Option<SqliteWriter>,
    cache: Arc<ReplayCache>,
    deliveries: DeliveryLog,
    screener: Screener,
}

impl Acceptor {
    /// Starts the background threads (delivery log; SQLite writer unless turned off).
    pub fn start(config: Arc<Config>, pool: Pool) -> std::io::Result<Acceptor> {
        let writer = match &pool {
            Pool::Sqlite(p) if config.database.group_commit => Some(SqliteWriter::start(p.clone())?),
            _ => None,
        };
        let deliveries = DeliveryLog::start(delivery_sink(&pool, writer.clone()))?;
        let cache = Arc::new(ReplayCache::new(config.server.replay_cache));
        let screener = Screener::start(config.clone(), pool.clone())?;
        Ok(Acceptor { config, pool, writer, cache, deliveries, screener })
    }

    pub fn deliveries(&self) -> &DeliveryLog {
        &self.deliveries
    }

    /// A retry answered from memory: the stored result when this key's committed content
    /// equals `fields`; `None` sends the request to the database.
    pub fn replay_from_memory(
        &self,
        form: &str,
        operation_id: &OperationId,
        fields: &NormalisedFields,
        channel: Channel,
    ) -> Option<Outcome> {
        let entry = self.cache.get(form, operation_id.as_str())?;
        if entry.fingerprint != fingerprint(fields) {
            return None;
        }
        let receipt = &entry.receipt;
        let now = deliveries::now();
        // Past the form's `keys` window the row may be gone: the database answers (410).
        let keys = self.config.form(form).and_then(|f| f.retention.keys);
        if keys.is_some_and(|k| receipt.received_at + k.duration() <= now) {
            return None;
        }
        let outcome = DeliveryOutcome::Replayed;
        let row =
            deliveries::row(form, operation_id.as_str(), Some(&receipt.submission_id), channel, outcome, now);
        self.deliveries.record(row);
        Some(Outcome::Replayed(receipt.clone()))
    }

    /// Accepts `intake` exactly once per (form, operation ID). Blocks: call it from a
    /// blocking thread.
    pub fn accept(&self, intake: Intake<'_>) -> Result<Outcome, DbError> {
        let (form, form_name) = (intake.form, intake.form_name.to_string());
        let plan = Plan::new(intake);
        let (operation_id, fingerprint, keyless) = (
            plan.submission.operation_id.clone(),
            plan.submission.fingerprint.clone(),
            plan.submission.keyless,
        );
        // On SQLite a retry not in the cache is answered from a plain read.
        let result = match (&self.writer, &self.pool) {
            (None, Pool::Pg(_)) => {
                with_conn!(&self.pool, |c| pg::accept_pg(c, form, &plan, &self.deliveries).map(|done| {
                    if done.linked {
                        self.screener.wake();
                    }
                    done.outcome
                }))
            }
            (Some(writer), _) => match with_conn!(&self.pool, |c| committed(c, &plan))? {
                Some(receipt) => Ok(self.replayed(&plan, receipt)),
                None => {
                    let (config, name) = (self.config.clone(), form_name.clone());
                    writer.run(move |c| {
                        let form = config.form(&name).ok_or(DbError::Unavailable("unknown form".into()))?;
                        run(c, form, &plan)
                    })
                }
            },
            (None, _) => with_conn!(&self.pool, |c| match committed(c, &plan)? {
                Some(receipt) => Ok(self.replayed(&plan, receipt)),
                None => c.write_tx(|c| run(c, form, &plan)),
            }),
        };
        if matches!(result, Ok(Outcome::Created(_))) && matches!(self.pool, Pool::Sqlite(_)) {
            // SQLite: whether this one was linked is not known here; the screener's look
            // for pending pairs is one indexed read, gathered over its pause.
            self.screener.wake();
        }
        let outcome = in_progress_on_lock_timeout(result, &operation_id)?;
        if let (Outcome::Created(r) | Outcome::Replayed(r), false) = (&outcome, keyless) {
            self.cache.put(&form_name, fingerprint, r.clone());
        }
        Ok(outcome)
    }

    /// A replay found outside the write transaction: its delivery row is queued.
    fn replayed(&self, plan: &Plan, receipt: Receipt) -> Outcome {
        self.deliveries.record(plan.delivery(DeliveryOutcome::Replayed, Some(&receipt.submission_id)));
        Outcome::Replayed(receipt)
    }
}

/// Where the log's batches go: into the SQLite writer's next batch (no competing writer),
/// or a transaction of their own that does not wait for the disk.
fn delivery_sink(pool: &Pool, writer: Option<SqliteWriter>) -> deliveries::log::Sink {
    match writer {
        Some(writer) => Box::new(move |rows| {
            let rows = rows.to_vec();
            writer.run(move |c| c.insert_deliveries(&rows).map_err(DbError::from))
        }),
        None => {
            let pool = pool.clone();
            Box::new(move |rows| {
                with_conn!(&pool, |c| c.insert_deliveries_lazily(rows).map_err(DbError::from))
            })
        }
    }
}
