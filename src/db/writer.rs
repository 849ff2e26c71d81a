//! SQLite group commit: one writer thread runs the write transactions of concurrent
//! requests together, each in its own savepoint, and commits them with one durable
//! `COMMIT` (one fsync per batch instead of one per request).
//!
//! A job's result reaches its caller only after the batch is committed; when the commit
//! fails every job of the batch gets the error and nothing of it is kept. A job that fails
//! is rolled back to its savepoint and does not disturb the others.

use std::sync::mpsc::{self, Receiver, Sender, SyncSender};

use diesel::connection::Connection;
use diesel::SqliteConnection;

use super::{DbError, SqlitePool};

/// Tells a job's caller how the batch's commit went.
type Reply = Box<dyn FnOnce(Result<(), String>) + Send>;
type Job = Box<dyn FnOnce(&mut SqliteConnection) -> Reply + Send>;

/// Jobs taken into one transaction at most.
const MAX_BATCH: usize = 256;

/// The handle of the writer thread; the thread ends when the last handle is dropped.
#[derive(Clone)]
pub struct SqliteWriter {
    jobs: Sender<Job>,
}

impl SqliteWriter {
    /// Starts the writer thread on a connection of `pool` (kept for the thread's life).
    pub fn start(pool: SqlitePool) -> std::io::Result<SqliteWriter> {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new().name("sqlite-writer".into()).spawn(move || write_loop(&pool, &queue))?;
        Ok(SqliteWriter { jobs })
    }

    /// Runs `f` inside the next batch's transaction (in a savepoint of its own) and returns
    /// its result once the batch is durably committed. Blocks the calling thread.
    pub fn run<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&mut SqliteConnection) -> Result<T, DbError> + Send + 'static,
    {
        let (reply, answer) = mpsc::sync_channel::<Result<T, DbError>>(1);
        let job: Job = Box::new(move |conn| {
            let result = conn.transaction(f);
            Box::new(move |commit| respond(&reply, commit, result))
        });
        self.jobs.send(job).map_err(|_| DbError::Unavailable("the SQLite writer has stopped".into()))?;
        answer
            .recv()
            .unwrap_or_else(|_| Err(DbError::Unavailable("the SQLite writer dropped the batch".into())))
    }
}

fn respond<T>(
    reply: &SyncSender<Result<T, DbError>>,
    commit: Result<(), String>,
    result: Result<T, DbError>,
) {
    let _ = reply.send(match commit {
        Ok(()) => result,
        Err(reason) => Err(DbError::Unavailable(reason)),
    });
}

fn write_loop(pool: &SqlitePool, queue: &Receiver<Job>) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        batch.extend(queue.try_iter().take(MAX_BATCH - 1));
        let mut replies = Vec::with_capacity(batch.len());
        let committed = match pool.get() {
            Ok(mut conn) => conn
                .immediate_transaction(|c| {
                    replies.extend(batch.drain(..).map(|job| job(c)));
                    Ok::<_, DbError>(())
                })
                .map_err(|e| e.to_string()),
            Err(e) => Err(DbError::from(e).to_string()),
        };
        if let Err(reason) = &committed {
            tracing::warn!(%reason, jobs = replies.len().max(batch.len()), "SQLite batch not committed");
        }
        // Jobs never started (no connection, BEGIN failed) are dropped: their callers get
        // "dropped the batch".
        for reply in replies {
            reply(committed.clone());
        }
    }
}
