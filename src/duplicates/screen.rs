//! The screener: scores the pairs the accept path linked, off the accept path. A thread
//! woken after each acceptance (and every few seconds, for pairs left by a process that
//! stopped) takes the pairs still `screening`, scores them, opens them for review or drops
//! them when too unlike, and under `policy = "hold"` releases the held effects of a pair
//! scoring below `hold_score`. Any number of processes may screen at once: a pair is
//! finished once, by whoever updates it first.

use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::Duration;

use super::{holds, parse, score, Shared};
use crate::config::Config;
use crate::db::admin::effects::EffectAdminStore;
use crate::db::duplicates::{DuplicateStore, Unscreened};
use crate::db::{DbConnection, DbError, Pool, Store, Writes};
use crate::with_conn;

/// Pairs screened per transaction batch at most.
const BATCH: i64 = 256;
/// How often the thread looks for pairs even when nobody woke it.
const SWEEP: Duration = Duration::from_secs(5);
/// After a wake-up, the pause that lets a flood's pairs gather into one batch.
const GATHER: Duration = Duration::from_millis(20);

/// The handle of the screening thread; the thread ends when the last handle is dropped.
#[derive(Clone)]
pub struct Screener {
    wake: SyncSender<()>,
}

impl Screener {
    /// The screening batches go where `writes` sends them (on SQLite, the acceptor's writer:
    /// queued with the accepts instead of competing for the file's write lock).
    pub fn start(config: Arc<Config>, writes: Writes) -> std::io::Result<Screener> {
        let (wake, rx) = mpsc::sync_channel(1);
        std::thread::Builder::new().name("duplicate-screener".into()).spawn(move || loop {
            match rx.recv_timeout(SWEEP) {
                Ok(()) => std::thread::sleep(GATHER),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            loop {
                let config = config.clone();
                match writes.run(move |c| screen_batch(c, &config)) {
                    Ok(n) if n as i64 == BATCH => continue,
                    Ok(_) => break,
                    Err(error) => {
                        tracing::warn!(%error, "duplicate screening postponed");
                        break;
                    }
                }
            }
        })?;
        Ok(Screener { wake })
    }

    /// Asks the thread to look now (never blocks).
    pub fn wake(&self) {
        let _ = self.wake.try_send(());
    }
}

/// Screens up to one batch of pending pairs in one transaction; how many there were.
pub fn screen_pending(config: &Config, pool: &Pool) -> Result<usize, DbError> {
    with_conn!(pool, |c| c.write_tx(|c| screen_batch(c, config)))
}

fn screen_batch(c: &mut DbConnection, config: &Config) -> Result<usize, DbError> {
    let pairs = c.unscreened(BATCH)?;
    for pair in &pairs {
        finish(c, config, pair)?;
    }
    Ok(pairs.len())
}

fn finish<C: DuplicateStore + EffectAdminStore>(
    c: &mut C,
    config: &Config,
    pair: &Unscreened,
) -> Result<(), DbError> {
    let (new, old) = (&pair.duplicate, &pair.original);
    let Some(form) = config.form(&pair.form) else {
        // The form is gone from the configuration: nothing to score against, nothing held.
        c.finish_screening(&pair.pair_id, None)?;
        c.release_held_of(&new.id, crate::clock::now())?;
        return Ok(());
    };
    let shared = Shared {
        email: new.email_digest.is_some() && new.email_digest == old.email_digest,
        phone: new.phone_digest.is_some() && new.phone_digest == old.phone_digest,
        content: new.keyless && new.fingerprint == old.fingerprint,
    };
    let scored = score(form, &parse(new.fields_json.as_deref()), &parse(old.fields_json.as_deref()), shared);
    let reasons = scored
        .as_ref()
        .map(|(_, r)| serde_json::to_string(r).unwrap_or_else(|_| "[]".into()))
        .unwrap_or_default();
    let finished = c.finish_screening(&pair.pair_id, scored.as_ref().map(|(s, _)| (*s, reasons.as_str())))?;
    let keep_held = scored.is_some_and(|(s, _)| s >= form.duplicates.hold_score);
    if finished && holds(form) && !keep_held {
        c.release_held_of(&new.id, crate::clock::now())?;
    }
    Ok(())
}
