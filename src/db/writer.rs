//! SQLite group commit: one writer thread runs the write transactions of concurrent
//! requests together, each in its own savepoint, and commits them with one durable
//! `COMMIT` (one fsync per batch instead of one per request).
//!
//! A job's result reaches its caller only after the batch is committed; when the commit
//! fails every job of the batch gets the error and nothing of it is kept. A job that fails
//! is rolled back to its savepoint and does not disturb the others.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use diesel::connection::{Connection, SimpleConnection};
use diesel::sqlite::Sqlite;
use diesel::RunQueryDsl;

use super::prepared::Prepared;
use super::{ConnPool, DatabaseUrl, DbConnection, DbError, Pool, Store};
use crate::config::DatabaseConfig;

/// Tells a job's caller how the batch's commit went.
type Reply = Box<dyn FnOnce(Result<(), String>) + Send>;
type Job = Box<dyn FnOnce(&mut DbConnection) -> Reply + Send>;

/// Jobs taken into one transaction at most.
const MAX_BATCH: usize = 256;

/// The handle of the writer thread; the thread ends when the last handle is dropped.
#[derive(Clone)]
pub struct SqliteWriter {
    jobs: Arc<Sender<Job>>,
}

/// Where a background task's write transactions go: into this process's SQLite writer when
/// there is one (queued with the accepts, committed with them, no race for the file's lock),
/// else into a transaction of their own on a pooled connection.
#[derive(Clone)]
pub struct Writes {
    pub pool: Pool,
    pub writer: Option<SqliteWriter>,
}

impl Writes {
    /// A transaction of its own on a pooled connection for each call.
    pub fn pooled(pool: Pool) -> Writes {
        Writes { pool, writer: None }
    }

    /// This process's writes on `pool`: through the database file's shared writer on SQLite
    /// (unless `database.group_commit` is off), else pooled transactions.
    pub fn shared(pool: &Pool, database: &DatabaseConfig) -> std::io::Result<Writes> {
        let writer = match (pool, &database.url) {
            (Pool::Sqlite(p), DatabaseUrl::Sqlite(file)) if database.group_commit => {
                Some(SqliteWriter::shared(file, p)?)
            }
            _ => None,
        };
        Ok(Writes { pool: pool.clone(), writer })
    }

    /// Runs `f` in a write transaction; blocks the calling thread.
    pub fn run<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConnection) -> Result<T, DbError> + Send + 'static,
    {
        match &self.writer {
            Some(writer) => writer.run(f),
            None => crate::with_conn!(&self.pool, |c| c.write_tx(f)),
        }
    }
}

/// The live writer of each database file in this process (see `SqliteWriter::shared`). Kept
/// by file, not on a pool, on purpose: SQLite's write lock is the file's, and every pool
/// this process opens on one file (the blob store's own included, `Pool::blobs`) must queue
/// on one writer rather than race for it.
static SHARED: Mutex<Vec<(PathBuf, Weak<Sender<Job>>)>> = Mutex::new(Vec::new());

impl SqliteWriter {
    /// Starts the writer thread on a connection of `pool` (kept for the thread's life).
    pub fn start(pool: ConnPool) -> std::io::Result<SqliteWriter> {
        SqliteWriter::start_restarting_at(pool, RESTART_FRAMES)
    }

    /// `start`, the log started again from its top once it holds `restart_frames`.
    fn start_restarting_at(pool: ConnPool, restart_frames: i64) -> std::io::Result<SqliteWriter> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let jobs = Arc::new(jobs);
        let (alive, checkpoints) = (Arc::downgrade(&jobs), pool.clone());
        let tail_due = Arc::new(AtomicBool::new(false));
        let due = tail_due.clone();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || write_loop(&pool, &queue, &due))?;
        std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || checkpoint_loop(&checkpoints, &alive, &tail_due, restart_frames))?;
        Ok(SqliteWriter { jobs })
    }

    /// The writer of the database file `path` in this process, started on `pool` unless one
    /// runs already: the acceptor and the workers of `serve` queue their transactions on one
    /// thread, in arrival order, and share its commits, instead of racing for SQLite's lock
    /// (whose busy handler sleeps and retries, so a writer that never pauses starves the others).
    pub fn shared(path: &Path, pool: &ConnPool) -> std::io::Result<SqliteWriter> {
        let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
        shared.retain(|(_, w)| w.strong_count() > 0);
        if let Some(jobs) = shared.iter().find(|(p, _)| p == path).and_then(|(_, w)| w.upgrade()) {
            return Ok(SqliteWriter { jobs });
        }
        let writer = SqliteWriter::start(pool.clone())?;
        shared.push((path.to_path_buf(), Arc::downgrade(&writer.jobs)));
        Ok(writer)
    }

    /// Runs `f` inside the next batch's transaction (in a savepoint of its own) and returns
    /// its result once the batch is durably committed. Blocks the calling thread.
    pub fn run<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConnection) -> Result<T, DbError> + Send + 'static,
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

/// `tail_due`: set by `checkpoint_loop` when the log has grown long (see `copy_tail`).
fn write_loop(pool: &ConnPool, queue: &Receiver<Job>, tail_due: &AtomicBool) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        batch.extend(queue.try_iter().take(MAX_BATCH - 1));
        let jobs = batch.len();
        // A panicking job must not stop the writer: the batch is rolled back (the connection
        // is dropped, not reused) and its callers hear that it was dropped.
        let replies = std::panic::catch_unwind(AssertUnwindSafe(|| commit(pool, batch)));
        match replies {
            Ok((committed, replies)) => {
                if let Err(reason) = &committed {
                    tracing::warn!(%reason, jobs, "SQLite batch not committed");
                }
                for reply in replies {
                    reply(committed.clone());
                }
            }
            Err(_) => tracing::error!(jobs, "SQLite batch abandoned: a job panicked"),
        }
        if tail_due.swap(false, Ordering::Relaxed) {
            copy_tail(pool);
        }
    }
}

/// Copies into the database file the few frames committed since `checkpoint_loop`'s last
/// checkpoint, between two batches, once the log has grown long. Under a steady stream of
/// batches the companion thread alone never finds the log wholly copied (each batch appends
/// while it copies), and SQLite starts the log again from its top only when it is: the WAL
/// file grew without bound (500 MB in 8 s of accepts), each frame a fresh page of the file to
/// allocate and zero. Once this copy has caught up, the next batch writes from the top again.
fn copy_tail(pool: &ConnPool) {
    if let Err(error) = checkpoint(pool) {
        tracing::debug!(%error, "WAL tail checkpoint skipped");
    }
}

/// Runs `batch` in one transaction: the commit's result and each job's reply. Jobs never
/// started (no connection, BEGIN failed) are dropped: their callers hear "dropped the batch".
/// The commit does not copy the WAL into the database file (SQLite's automatic checkpoint,
/// tens of milliseconds after a large write): `checkpoint_loop` does, beside it.
fn commit(pool: &ConnPool, mut batch: Vec<Job>) -> (Result<(), String>, Vec<Reply>) {
    let mut replies = Vec::with_capacity(batch.len());
    let committed = match pool.get() {
        Ok(mut conn) => {
            let committed =
                conn.batch_execute("PRAGMA wal_autocheckpoint = 0").map_err(DbError::from).and_then(|()| {
                    conn.write_transaction(|c| {
                        replies.extend(batch.drain(..).map(|job| job(c)));
                        Ok::<_, DbError>(())
                    })
                });
            // Whatever came of the commit (a failure here does not undo it).
            if let Err(error) = conn.batch_execute(AUTO_CHECKPOINT) {
                tracing::warn!(%error, "could not restore the connection's automatic checkpoint");
            }
            committed.map_err(|e| e.to_string())
        }
        Err(e) => Err(DbError::from(e).to_string()),
    };
    (committed, replies)
}

/// SQLite's default, back on the connection once the writer's commit is done (the pool's
/// other users checkpoint as usual).
const AUTO_CHECKPOINT: &str = "PRAGMA wal_autocheckpoint = 1000";

/// Copies what it can of the WAL into the database file, waiting for no one.
const CHECKPOINT: &str = "PRAGMA wal_checkpoint(PASSIVE)";

/// How many frames (pages) the log may hold before the writer copies its tail (`copy_tail`):
/// 16 MiB of 4 KiB pages, a few hundred milliseconds of accepts under load. The copy costs the
/// writer two fsyncs; the file's pages are written again from the top after it.
const RESTART_FRAMES: i64 = 4096;

/// How often the writer's companion thread copies committed WAL frames into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(100);

/// Frames the writer copies at most when it copies the tail: the companion thread's passes
/// follow each other until the last one found no more than this to copy (each copies what
/// the writer appended during the one before, fewer each time), `MOST_PASSES` at most.
const SHORT_TAIL: i64 = 128;
const MOST_PASSES: usize = 8;

/// While the writer lives: a passive checkpoint every `CHECKPOINT_EVERY`, off the writer's
/// thread. It waits for no one and no one waits for it (readers and the writer go on), and it
/// copies the bulk of what the writer skips. Once the log holds `restart_frames`, it copies
/// until a short tail is left, and the writer copies that (`tail_due`), so that the log starts
/// again from its top.
fn checkpoint_loop(pool: &ConnPool, alive: &Weak<Sender<Job>>, tail_due: &AtomicBool, restart_frames: i64) {
    while alive.strong_count() > 0 {
        std::thread::sleep(CHECKPOINT_EVERY);
        let mut before = None;
        for _ in 0..MOST_PASSES {
            match checkpoint(pool) {
                Ok(log) if log < restart_frames => break,
                Ok(log) if before.is_some_and(|b| log - b <= SHORT_TAIL) => {
                    tail_due.store(true, Ordering::Relaxed);
                    break;
                }
                Ok(log) => before = Some(log),
                Err(error) => {
                    tracing::debug!(%error, "WAL checkpoint skipped");
                    break;
                }
            }
        }
    }
}

/// A passive checkpoint: the frames in the log (all of them copied unless a reader holds
/// some back).
fn checkpoint(pool: &ConnPool) -> Result<i64, DbError> {
    #[derive(diesel::QueryableByName)]
    struct Checkpointed {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        log: i64,
    }
    match &mut *pool.get()? {
        DbConnection::Sqlite(c) => Ok(Prepared::<Sqlite>::new(CHECKPOINT).get_result::<Checkpointed>(c)?.log),
        DbConnection::Pg(_) => Ok(0),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::config::DatabaseConfig;
    use crate::db::{Pool, Store};
    use crate::services::request_log::{self, Channel, DeliveryOutcome};

    fn sqlite_pool(dir: &std::path::Path) -> ConnPool {
        let url = crate::db::DatabaseUrl::Sqlite(dir.join("writer.db"));
        match Pool::connect(&DatabaseConfig { url, ..DatabaseConfig::default() }).unwrap() {
            Pool::Sqlite(p) => p,
            Pool::Pg(..) => unreachable!(),
        }
    }

    fn delivery(n: usize) -> crate::db::models::NewDelivery {
        let now = crate::base::clock::now();
        request_log::row("contact", &format!("op-{n}"), None, Channel::Api, DeliveryOutcome::Created, now)
    }

    #[test]
    fn concurrent_jobs_commit_together_and_a_failed_job_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("onceform-writer-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let pool = sqlite_pool(&dir);
        let writer = Arc::new(SqliteWriter::start(pool.clone()).unwrap());
        let barrier = Arc::new(std::sync::Barrier::new(64));
        let threads: Vec<_> = (0..64)
            .map(|n| {
                let (writer, barrier) = (writer.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    writer.run(move |c| {
                        c.insert_deliveries(&[delivery(n)])?;
                        // Every fourth job fails after writing: its savepoint is rolled back.
                        if n % 4 == 0 {
                            return Err(DbError::Unavailable(format!("job {n} fails")));
                        }
                        Ok(n)
                    })
                })
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        for (n, result) in results.iter().enumerate() {
            assert_eq!(result.is_ok(), n % 4 != 0, "job {n}: {:?}", result.as_ref().err());
        }
        let stats = pool.get().unwrap().stats().unwrap();
        assert_eq!(stats.deliveries_total(), 48, "the 48 jobs that succeeded, none of the 16 that failed");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn committed_rows_reach_the_database_file_without_the_writer_checkpointing() {
        let dir = std::env::temp_dir().join(format!("onceform-writer-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let pool = sqlite_pool(&dir);
        let file = dir.join("writer.db");
        let size = || std::fs::metadata(&file).unwrap().len();
        let before = size();
        let writer = SqliteWriter::start(pool.clone()).unwrap();
        for chunk in 0..20 {
            let rows: Vec<_> = (0..200).map(|n| delivery(chunk * 200 + n)).collect();
            writer.run(move |c| c.insert_deliveries(&rows).map_err(DbError::from)).unwrap();
        }
        // The commits leave their pages in the WAL (no automatic checkpoint on the writer's
        // thread); the companion thread copies them into the file soon after.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while size() <= before && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(size() > before, "4,000 rows checkpointed into the database file ({before} bytes before)");
        assert_eq!(pool.get().unwrap().stats().unwrap().deliveries_total(), 4000);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_steady_stream_of_batches_writes_the_wal_from_its_top_again() {
        let dir = std::env::temp_dir().join(format!("onceform-writer-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let pool = sqlite_pool(&dir);
        pool.get().unwrap().batch_execute("CREATE TABLE pages (b BLOB)").unwrap();
        // Started again past 1 MiB of frames (16 MiB in service) to keep the test short.
        let writer = Arc::new(SqliteWriter::start_restarting_at(pool.clone(), 256).unwrap());
        // Four callers keep the writer busy for a second and a half (batch after batch, never
        // a pause for the companion thread to catch up in), each job a page or so.
        let until = std::time::Instant::now() + Duration::from_millis(1500);
        let callers: Vec<_> = (0..4)
            .map(|_| {
                let writer = writer.clone();
                std::thread::spawn(move || {
                    let mut jobs = 0u64;
                    while std::time::Instant::now() < until {
                        let insert = |c: &mut DbConnection| {
                            Ok(c.batch_execute("INSERT INTO pages VALUES (randomblob(3000))")?)
                        };
                        writer.run(insert).unwrap();
                        jobs += 1;
                    }
                    jobs
                })
            })
            .collect();
        let jobs: u64 = callers.into_iter().map(|t| t.join().unwrap()).sum();
        let written = jobs * 3000;
        let wal = std::fs::metadata(dir.join("writer.db-wal")).unwrap().len();
        assert!(jobs > 200, "{jobs} jobs: too few to tell");
        // Without the writer's own copy of the tail, the log is never wholly copied, never
        // started again, and holds every frame written (more than `written`).
        assert!(wal < written / 2, "WAL of {wal} bytes after {written} bytes written in {jobs} jobs");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_panicking_job_loses_its_batch_but_not_the_writer() {
        let dir = std::env::temp_dir().join(format!("onceform-writer-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let pool = sqlite_pool(&dir);
        let writer = SqliteWriter::start(pool.clone()).unwrap();
        let lost = writer.run(|c| -> Result<(), DbError> {
            c.insert_deliveries(&[delivery(1)])?;
            panic!("a job panics")
        });
        assert!(matches!(lost, Err(DbError::Unavailable(_))), "{lost:?}");
        writer.run(|c| c.insert_deliveries(&[delivery(2)]).map_err(DbError::from)).unwrap();
        assert_eq!(pool.get().unwrap().stats().unwrap().deliveries_total(), 1, "only the later job's row");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
