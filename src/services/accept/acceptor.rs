//! The accept service: the accept transaction plus what makes it fast without weakening it.
//! - Retries of committed operations are answered from memory (`ReplayCache`), else from a
//!   plain read (gathered by `Lookups` for the keys this process saw committed); their
//!   delivery rows are queued on the `RequestLog`.
//! - On SQLite, write transactions go through the group-commit writer: one fsync per batch
//!   of concurrent accepts, each in its own savepoint, each answered after the commit.
//! - On PostgreSQL, a first acceptance is one statement (`pg`), shared by the acceptances
//!   waiting under load (`pg_batch`); retries read after it.
//! - `Acceptor::one_transaction_each` runs each in a transaction of its own instead (the
//!   benchmark's baseline).
//! - Submissions linked to an earlier one wake the duplicate screener.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::cache::{Entry, ReplayCache};
use super::pg_batch::Batches;
use super::plan::Content;
use super::transaction::{committed, in_progress_on_lock_timeout, run};
use super::{pg, receipt, versions, AsReceived, Intake, Outcome, Plan, Receipt};
use crate::config::{Config, Form};
use crate::db::{young_pg, DbError, Lookups, Pool, SqliteWriter, Store, Writes};
use crate::domain::keyring::Keyring;
use crate::domain::{fingerprint, NormalisedFields, OperationId};
use crate::services::duplicates::Screener;
use crate::services::request_log::{self, Channel, DeliveryOutcome, RequestLog};
use crate::with_conn;

/// How a first acceptance reaches the database.
#[derive(Clone)]
enum Path {
    /// PostgreSQL: one statement (`pg`).
    OneStatement,
    /// SQLite: a savepoint in the group-commit writer's next batch.
    GroupCommit(SqliteWriter),
    /// Either backend: a read for a committed retry, then a write transaction of its own
    /// (the benchmark's baseline; seeding tests).
    Transaction,
}

/// The one accept entry point. Cheap to clone: the clones share the cache, the delivery
/// log and the writer.
#[derive(Clone)]
pub struct Acceptor {
    pool: Pool,
    path: Path,
    cache: Arc<ReplayCache>,
    /// Reads the keys `cache` saw committed but no longer holds.
    lookups: Lookups,
    deliveries: RequestLog,
    screener: Screener,
    /// Where other write transactions of this process go (the same group-commit writer).
    writes: Writes,
    /// First acceptances so far (PostgreSQL), counted for the young-database checks.
    created: Arc<AtomicUsize>,
    /// Digests the fingerprints and contacts (the server secret, `app::startup::open_store`).
    keyring: Arc<Keyring>,
    /// PostgreSQL: the first claims waiting to share a statement (`pg_batch`).
    batches: Arc<Batches>,
}

impl Acceptor {
    /// The service's acceptor: one statement on PostgreSQL, SQLite's group commit unless
    /// `database.group_commit` turns it off. Starts the background threads (delivery log;
    /// SQLite writer; duplicate screener). `keyring` digests what it stores.
    pub fn start(config: Arc<Config>, pool: Pool, keyring: Arc<Keyring>) -> std::io::Result<Acceptor> {
        let path = match &pool {
            Pool::Pg(..) => Path::OneStatement,
            Pool::Sqlite(p) if config.database.group_commit => {
                Path::GroupCommit(match &config.database.url {
                    // One writer with the workers of this process (see `SqliteWriter::shared`).
                    crate::db::DatabaseUrl::Sqlite(file) => SqliteWriter::shared(file, p)?,
                    crate::db::DatabaseUrl::Postgres(_) => SqliteWriter::start(p.clone())?,
                })
            }
            Pool::Sqlite(_) => Path::Transaction,
        };
        Acceptor::with_path(config, pool, keyring, path)
    }

    /// An acceptor that runs each acceptance in a transaction of its own on either backend:
    /// the benchmark's baseline, and seeding in tests.
    pub fn one_transaction_each(
        config: Arc<Config>,
        pool: Pool,
        keyring: Arc<Keyring>,
    ) -> std::io::Result<Acceptor> {
        Acceptor::with_path(config, pool, keyring, Path::Transaction)
    }

    fn with_path(
        config: Arc<Config>,
        pool: Pool,
        keyring: Arc<Keyring>,
        path: Path,
    ) -> std::io::Result<Acceptor> {
        let writer = match &path {
            Path::GroupCommit(writer) => Some(writer.clone()),
            Path::OneStatement | Path::Transaction => None,
        };
        let deliveries = RequestLog::start(delivery_sink(&pool, writer.clone()))?;
        let cache = Arc::new(ReplayCache::new(config.server.replay_cache));
        let deadline = std::time::Duration::from_millis(config.database.acquire_timeout_ms);
        let lookups = Lookups::start(pool.clone(), deadline)?;
        let writes = Writes { pool: pool.clone(), writer };
        let screener = Screener::start(config, writes.clone())?;
        let created = Arc::new(AtomicUsize::new(0));
        let batches = Arc::default();
        Ok(Acceptor { pool, path, cache, lookups, deliveries, screener, writes, created, keyring, batches })
    }

    /// The keyring this acceptor digests with.
    pub fn keyring(&self) -> &Arc<Keyring> {
        &self.keyring
    }

    /// Write transactions committed with the accepts: on SQLite, in the group-commit writer's
    /// batches (the inbound webhook endpoint stores its events this way).
    pub fn writes(&self) -> &Writes {
        &self.writes
    }

    /// Retries of these (form, operation ID)s are no longer answered from memory (erasure).
    pub fn forget_replays<'a>(&self, keys: impl IntoIterator<Item = (&'a str, &'a str)>) {
        for (form, operation_id) in keys {
            self.cache.forget(form, operation_id);
        }
    }

    pub fn deliveries(&self) -> &RequestLog {
        &self.deliveries
    }

    /// A retry answered from memory without normalising it: the stored result when this
    /// key's entry has seen a request with exactly these raw fields (`domain::raw_digest`).
    pub(super) fn replay_same_request(
        &self,
        form: &Form,
        operation_id: &OperationId,
        raw: &[u8; 32],
        channel: Channel,
    ) -> Option<Outcome> {
        let entry = self.cache.get(form.name(), operation_id.as_str())?;
        if entry.raw.get() != Some(raw) {
            return None;
        }
        self.replayed_from(&entry, form, operation_id, channel)
    }

    /// A retry answered from memory: the stored result when this key's committed content
    /// equals `fields` (whose raw form, `raw`, is then remembered); `None` sends the request
    /// to the database.
    pub(super) fn replay_from_memory(
        &self,
        form: &Form,
        operation_id: &OperationId,
        fields: &NormalisedFields,
        raw: &[u8; 32],
        channel: Channel,
    ) -> Option<Outcome> {
        let entry = self.cache.get(form.name(), operation_id.as_str())?;
        // Accepted under another version of the form: judged under it, by the database path.
        if !versions::same_version(form.version(), entry.receipt.form_version.as_deref())
            || entry.fingerprint != fingerprint(&self.keyring, fields)
        {
            return None;
        }
        let _ = entry.raw.set(*raw);
        self.replayed_from(&entry, form, operation_id, channel)
    }

    /// A retry of a key this process saw committed whose entry has left the memory: the
    /// stored result when its content equals `fields`, read with the other such retries of
    /// the moment (`Lookups`); `None` sends the request to the accept path.
    pub(super) async fn replay_committed(
        &self,
        form: &Form,
        operation_id: &OperationId,
        fields: &NormalisedFields,
        channel: Channel,
    ) -> Option<Outcome> {
        if !self.cache.seen(form.name(), operation_id.as_str()) {
            return None;
        }
        let stored = self.lookups.submission(form.name(), operation_id.as_str()).await?;
        let content = Content::of(&self.keyring, fields);
        if !versions::same_version(form.version(), stored.form_version.as_deref())
            || !content.same_as(&self.keyring, &stored)
        {
            return None;
        }
        let receipt = receipt(stored);
        self.cache.put(form.name(), content.fingerprint, receipt.clone());
        Some(self.replayed(form.name(), operation_id.as_str(), channel, receipt))
    }

    /// A keyed request the live form refuses: when its key's submission was accepted under
    /// another version of the form, it is judged under that version (`versions`): a replay
    /// when its content there is the stored one, else a conflict, recorded. `None`: no such
    /// submission, and the request is refused as invalid.
    pub(super) async fn judge_refused(
        &self,
        form: &Form,
        operation_id: &OperationId,
        received: AsReceived,
        channel: Channel,
    ) -> Result<Option<Outcome>, DbError> {
        let judged = versions::judge_refused(
            &self.pool,
            &self.writes,
            &self.keyring,
            form,
            operation_id,
            received,
            channel,
        );
        Ok(judged.await?.map(|judged| match judged {
            versions::Judged::Same(receipt) => {
                self.replayed(form.name(), operation_id.as_str(), channel, receipt)
            }
            versions::Judged::Other(outcome) => outcome,
        }))
    }

    fn replayed_from(
        &self,
        entry: &Entry,
        form: &Form,
        operation_id: &OperationId,
        channel: Channel,
    ) -> Option<Outcome> {
        let receipt = &entry.receipt;
        let now = crate::base::clock::now();
        // Past the form's `keys` window the row may be gone: the database answers (410).
        if form.retention.keys.is_some_and(|k| receipt.received_at + k.duration() <= now) {
            return None;
        }
        Some(self.replayed(form.name(), operation_id.as_str(), channel, receipt.clone()))
    }

    /// Accepts `intake` exactly once per (form, operation ID). Blocks: call it from a
    /// blocking thread.
    pub fn accept(&self, intake: Intake) -> Result<Outcome, DbError> {
        let content = Content::of(&self.keyring, &intake.fields);
        let version = intake.form.version().map(String::from);
        let (form_name, operation_id, fingerprint, keyless) = (
            intake.form.name().to_string(),
            intake.operation_id.as_ref().map_or("", OperationId::as_str).to_string(),
            content.fingerprint.clone(),
            intake.operation_id.is_none(),
        );
        // On SQLite a retry whose key is committed is answered from a plain read (`committed`)
        // before the rows of a first acceptance are planned.
        let plan = |intake, content| Plan::with_content(intake, content, &self.keyring);
        let result = match (&self.path, &self.pool) {
            // No read before the claim statement: it answers a taken key itself (a retry this
            // process saw committed was read before, `replay_committed`).
            (Path::OneStatement, Pool::Pg(..)) => with_conn!(&self.pool, |c| {
                pg::accept_pg(c, plan(intake, content), &self.batches, &self.deliveries).map(|done| {
                    if done.linked {
                        self.screener.wake();
                    }
                    if matches!(done.outcome, Outcome::Created(_)) {
                        self.count_created();
                    }
                    done.outcome
                })
            }),
            (Path::GroupCommit(writer), _) => {
                match with_conn!(&self.pool, |c| committed(c, &self.keyring, &intake, &content))? {
                    Some(receipt) => Ok(self.replayed_intake(&intake, receipt)),
                    None => {
                        let plan = plan(intake, content);
                        writer.run(move |c| run(c, &plan))
                    }
                }
            }
            _ => with_conn!(&self.pool, |c| match committed(c, &self.keyring, &intake, &content)? {
                Some(receipt) => Ok(self.replayed_intake(&intake, receipt)),
                None => c.write_tx(|c| run(c, &plan(intake, content))),
            }),
        };
        if matches!(result, Ok(Outcome::Created(_))) && matches!(self.pool, Pool::Sqlite(_)) {
            // SQLite: whether this one was linked is not known here; the screener's look
            // for pending pairs is one indexed read, gathered over its pause.
            self.screener.wake();
        }
        // A lock wait that timed out: a keyed request's first is still in flight; a keyless
        // post was not stored (its error asks for a retry).
        let outcome = if keyless { result? } else { in_progress_on_lock_timeout(result, &operation_id)? };
        if let (Outcome::Created(r) | Outcome::Replayed(r), false) = (&outcome, keyless) {
            // A replay judged under an older version of the form is not remembered: this
            // fingerprint is the live version's content, not the stored one.
            if versions::same_version(version.as_deref(), r.form_version.as_deref()) {
                self.cache.put(&form_name, fingerprint, r.clone());
            }
        }
        Ok(outcome)
    }

    /// PostgreSQL: after this process's first `ANALYZE_AFTER` acceptances (and ten and a
    /// hundred times as many), gives a young database's planner statistics (`db::young_pg`),
    /// on a thread of its own.
    fn count_created(&self) {
        let accepted = self.created.fetch_add(1, Ordering::Relaxed) + 1;
        if !young_pg::looks_at(accepted) {
            return;
        }
        let pool = self.pool.clone();
        let spawned = std::thread::Builder::new().name("planner-statistics".into()).spawn(move || {
            let analysed = with_conn!(&pool, |c| match c.pg() {
                Some(pg) => young_pg::analyze_if_young(pg, accepted).map_err(DbError::from),
                None => Ok(false),
            });
            match analysed {
                Ok(true) => tracing::info!("analysed a young database's tables for the planner"),
                Ok(false) => {}
                Err(error) => tracing::warn!(%error, "planner statistics not gathered"),
            }
        });
        if let Err(error) = spawned {
            tracing::warn!(%error, "planner statistics not gathered");
        }
    }

    fn replayed_intake(&self, intake: &Intake, receipt: Receipt) -> Outcome {
        let operation_id = intake.operation_id.as_ref().map_or("", OperationId::as_str);
        self.replayed(intake.form.name(), operation_id, intake.channel, receipt)
    }

    /// A replay found outside the write transaction: its delivery row is queued.
    fn replayed(&self, form: &str, operation_id: &str, channel: Channel, receipt: Receipt) -> Outcome {
        self.deliveries.record(request_log::row(
            form,
            operation_id,
            Some(&receipt.submission_id),
            channel,
            DeliveryOutcome::Replayed,
            crate::base::clock::now(),
        ));
        Outcome::Replayed(receipt)
    }
}

/// Where the log's batches go: into the SQLite writer's next batch (no competing writer),
/// or a transaction of their own that does not wait for the disk.
fn delivery_sink(pool: &Pool, writer: Option<SqliteWriter>) -> request_log::queue::Sink {
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
