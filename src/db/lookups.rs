//! Keyed reads of committed submissions, gathered: retries whose entry has left the replay
//! memory are read by one thread, all that arrived while it read the last ones together,
//! instead of a blocking-pool thread and a round trip each. On PostgreSQL that is one
//! statement per form; on SQLite, which has no round trip, each key's kept statement.
//!
//! A plain read, as `services::accept`'s fast path is: it takes no lock and decides nothing.
//! What it does not find (or cannot read, or cannot queue) goes the accept path's way.

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::time::Duration;

use tokio::sync::oneshot;

use super::models::Submission;
use super::{Pool, Store};
use crate::with_conn;

/// Reads waiting at most: past it, a retry takes the accept path's own read.
const QUEUE: usize = 1024;

/// Keys read in one statement at most.
const MAX_BATCH: usize = 128;

struct Lookup {
    form: String,
    operation_id: String,
    reply: oneshot::Sender<Option<Submission>>,
}

/// The handle of the reading thread; the thread ends when the last handle is dropped.
#[derive(Clone)]
pub struct Lookups {
    queue: SyncSender<Lookup>,
    /// How long a caller waits for its answer.
    deadline: Duration,
}

impl Lookups {
    /// Starts the reading thread on `pool` (a connection for each batch); a caller waits at
    /// most `deadline` for its answer.
    pub fn start(pool: Pool, deadline: Duration) -> std::io::Result<Lookups> {
        let (queue, lookups) = mpsc::sync_channel(QUEUE);
        std::thread::Builder::new()
            .name("submission-reads".into())
            .spawn(move || read_loop(&pool, &lookups))?;
        Ok(Lookups { queue, deadline })
    }

    /// The submission committed under (form, operation ID); `None` when there is none, or
    /// when it could not be queued or read in time (the caller's own path then decides).
    pub async fn submission(&self, form: &str, operation_id: &str) -> Option<Submission> {
        let (reply, answer) = oneshot::channel();
        let lookup = Lookup { form: form.into(), operation_id: operation_id.into(), reply };
        self.queue.try_send(lookup).ok()?;
        tokio::time::timeout(self.deadline, answer).await.ok()?.ok().flatten()
    }
}

fn read_loop(pool: &Pool, lookups: &Receiver<Lookup>) {
    while let Ok(first) = lookups.recv() {
        let mut by_form: HashMap<String, Vec<Lookup>> = HashMap::new();
        for lookup in std::iter::once(first).chain(lookups.try_iter().take(MAX_BATCH - 1)) {
            by_form.entry(lookup.form.clone()).or_default().push(lookup);
        }
        for (form, waiting) in by_form {
            let keys: Vec<&str> = waiting.iter().map(|l| l.operation_id.as_str()).collect();
            let found = with_conn!(pool, |c| c.find_submissions(&form, &keys).map_err(super::DbError::from));
            let found: HashMap<String, Submission> = match found {
                Ok(rows) => rows.into_iter().map(|s| (s.operation_id.clone(), s)).collect(),
                Err(error) => {
                    tracing::debug!(%error, "gathered submission read failed");
                    HashMap::new()
                }
            };
            for lookup in waiting {
                // A key may be asked for twice in a batch. A caller that stopped waiting
                // dropped its receiver: nothing to tell.
                let _ = lookup.reply.send(found.get(&lookup.operation_id).cloned());
            }
        }
    }
}
