//! Delivery rows that need not be durable before the response (replays, refused requests)
//! are queued here and written by a background thread, many to a transaction. A delivery
//! is a statistic, not an acceptance: a crash may lose the last queued rows, never a
//! submission. `flush` waits until every row queued before it is written (read-your-writes
//! for the pages and `/metrics`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::db::models::NewDelivery;
use crate::db::DbError;

/// Writes one batch of rows in one transaction.
pub type Sink = Box<dyn FnMut(&[NewDelivery]) -> Result<(), DbError> + Send>;

/// Rows queued at most; beyond that new rows are counted as dropped. The queue takes memory
/// for the rows in it only (a bounded `sync_channel` would hold all 100,000 slots, 13 MiB,
/// from the start).
const CAPACITY: usize = 100_000;
/// Rows written per transaction at most.
const BATCH: usize = 2_000;
/// After a row arrives, the pause that lets the rows of a busy moment gather into one
/// statement: many small transactions cost the database (and so the requests sharing its
/// cores) far more than a few large ones.
const GATHER: Duration = Duration::from_millis(10);
/// The pause while rows keep coming (the last batch held `BUSY` rows or more): each commit
/// writes every index page its rows touched, and rows of one busy moment (a client
/// retrying the same keys) touch the same pages, so fewer, larger batches write each page
/// once for many rows. Under a flood of replays (wrk, 32 connections, SQLite), 10 ms batches
/// took a third of the server's CPU, most of it writing the WAL (perf); 100 ms batches
/// answered 57,000 replays a second instead of 43,000.
const GATHER_BUSY: Duration = Duration::from_millis(100);
const BUSY: usize = 200;
/// Attempts to write a batch while the database is unavailable, a second apart.
const ATTEMPTS: u32 = 10;

enum Msg {
    Row(NewDelivery),
    Flush(oneshot::Sender<()>),
}

/// The handle of the writer thread; the thread writes what is queued and ends when the
/// last handle is dropped.
#[derive(Clone)]
pub struct RequestLog {
    queue: Sender<Msg>,
    /// Rows sent and not yet taken by the writer.
    queued: Arc<AtomicUsize>,
    dropped: Arc<AtomicU64>,
}

impl RequestLog {
    pub fn start(sink: Sink) -> std::io::Result<RequestLog> {
        let (queue, rx) = mpsc::channel();
        let (queued, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicU64::new(0)));
        let (taken, lost) = (queued.clone(), dropped.clone());
        std::thread::Builder::new()
            .name("delivery-log".into())
            .spawn(move || write_loop(sink, &rx, &taken, &lost))?;
        Ok(RequestLog { queue, queued, dropped })
    }

    /// Queues `row` without waiting.
    pub fn record(&self, row: NewDelivery) {
        let full = self.queued.fetch_add(1, Ordering::Relaxed) >= CAPACITY;
        if full || self.queue.send(Msg::Row(row)).is_err() {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Returns once every row queued before this call is written (or given up).
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.queue.send(Msg::Flush(done)).is_ok() {
            let _ = wait.await;
        }
    }

    /// The blocking form of `flush`, for threads outside the async runtime.
    pub fn flush_blocking(&self) {
        let (done, wait) = oneshot::channel();
        if self.queue.send(Msg::Flush(done)).is_ok() {
            let _ = wait.blocking_recv();
        }
    }

    /// Rows lost since start: queue full, or the database unavailable for too long.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

fn write_loop(mut sink: Sink, rx: &Receiver<Msg>, queued: &AtomicUsize, dropped: &AtomicU64) {
    let mut rows = Vec::with_capacity(BATCH);
    let mut waiters = Vec::new();
    let mut busy = false;
    while let Ok(first) = rx.recv() {
        if matches!(first, Msg::Row(_)) {
            std::thread::sleep(if busy { GATHER_BUSY } else { GATHER });
        }
        for msg in std::iter::once(first).chain(rx.try_iter().take(BATCH - 1)) {
            match msg {
                Msg::Row(row) => rows.push(row),
                Msg::Flush(done) => waiters.push(done),
            }
        }
        queued.fetch_sub(rows.len(), Ordering::Relaxed);
        busy = rows.len() >= BUSY;
        if !rows.is_empty() {
            write(&mut sink, &rows, dropped);
            rows.clear();
        }
        for done in waiters.drain(..) {
            let _ = done.send(());
        }
    }
}

fn write(sink: &mut Sink, rows: &[NewDelivery], dropped: &AtomicU64) {
    for attempt in 1..=ATTEMPTS {
        match sink(rows) {
            Ok(()) => return,
            Err(error) if attempt < ATTEMPTS => {
                tracing::warn!(%error, rows = rows.len(), attempt, "delivery rows not written yet");
                std::thread::sleep(Duration::from_secs(1));
            }
            Err(error) => tracing::error!(%error, rows = rows.len(), "delivery rows lost"),
        }
    }
    dropped.fetch_add(rows.len() as u64, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::services::request_log::{self, Channel, DeliveryOutcome};

    fn row(n: usize) -> NewDelivery {
        let now = crate::base::clock::now();
        request_log::row("contact", &format!("op-{n}"), None, Channel::Api, DeliveryOutcome::Replayed, now)
    }

    /// A sink that keeps the batch sizes it was given, takes 10 ms a batch (a transaction)
    /// and fails its first `failures` calls.
    fn sink(batches: Arc<Mutex<Vec<usize>>>, mut failures: usize) -> Sink {
        Box::new(move |rows| {
            std::thread::sleep(Duration::from_millis(10));
            if failures > 0 {
                failures -= 1;
                return Err(DbError::Unavailable("database down".into()));
            }
            batches.lock().unwrap().push(rows.len());
            Ok(())
        })
    }

    #[tokio::test]
    async fn rows_are_written_in_batches_and_flush_waits_for_them() {
        let batches = Arc::new(Mutex::new(Vec::new()));
        let log = RequestLog::start(sink(batches.clone(), 0)).unwrap();
        for n in 0..5000 {
            log.record(row(n));
        }
        log.flush().await;
        let batches = batches.lock().unwrap();
        assert_eq!(batches.iter().sum::<usize>(), 5000, "every row written before flush returns");
        assert!(batches.len() < 100 && batches.iter().all(|&b| b <= BATCH), "{batches:?}");
        assert_eq!(log.dropped(), 0);
    }

    #[tokio::test]
    async fn rows_wait_out_an_unavailable_database() {
        let batches = Arc::new(Mutex::new(Vec::new()));
        let log = RequestLog::start(sink(batches.clone(), 1)).unwrap();
        log.record(row(1));
        log.flush().await;
        assert_eq!(*batches.lock().unwrap(), vec![1], "written on the second attempt");
        assert_eq!(log.dropped(), 0);
    }

    #[tokio::test]
    async fn a_full_queue_drops_what_does_not_fit_and_keeps_the_rest() {
        let (entered, stuck) = mpsc::channel();
        let (release, held) = mpsc::channel::<()>();
        let written = Arc::new(AtomicUsize::new(0));
        let count = written.clone();
        let log = RequestLog::start(Box::new(move |rows| {
            if count.fetch_add(rows.len(), Ordering::Relaxed) == 0 {
                let _ = entered.send(());
                let _ = held.recv(); // the database hangs on the first batch
            }
            Ok(())
        }))
        .unwrap();
        log.record(row(0));
        stuck.recv().unwrap();
        for n in 1..=CAPACITY + 5 {
            log.record(row(n));
        }
        assert_eq!(log.dropped(), 5, "the rows beyond the queue's capacity are counted as dropped");
        drop(release);
        log.flush().await;
        assert_eq!(written.load(Ordering::Relaxed), 1 + CAPACITY, "every row that fitted is written");
    }
}
