//! The screener: judges the pairs the accept path linked, off the accept path. A thread
//! woken after each acceptance (and every few seconds, for pairs left by a process that
//! stopped) takes the submissions whose pairs are still `screening` and judges each against
//! its candidates (`score::judge`): the best repeat is opened for review, else the same
//! sender's new request is listed apart (`same_sender`), and the other pairs are dropped.
//! Under `policy = "hold"` the held effects are released unless an opened repeat scores at
//! least `hold_score`. Any number of processes may screen at once: a pair is
//! finished once, by whoever updates it first.

use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::Duration;

use super::score::{judge, Side, Verdict};
use super::{holds, parse};
use crate::config::Config;
use crate::db::admin::effects::EffectAdminStore;
use crate::db::duplicates::{Candidate, DuplicateStore, Unscreened};
use crate::db::{DbConnection, DbError, Pool, Store, Writes};
use crate::domain::PairStatus;
use crate::with_conn;

/// Pending pairs a transaction batch takes (with their submissions' other pairs).
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
        std::thread::Builder::new().name("duplicate-screener".into()).spawn(move || {
            // libphonenumber's metadata loads on first use: here, not in the first accept.
            let _ = super::canonical::phone("+886 912 345 678", None);
            screen_loop(&rx, &config, &writes)
        })?;
        Ok(Screener { wake })
    }

    /// Asks the thread to look now (never blocks).
    pub fn wake(&self) {
        let _ = self.wake.try_send(());
    }
}

fn screen_loop(rx: &mpsc::Receiver<()>, config: &Arc<Config>, writes: &Writes) {
    loop {
        match rx.recv_timeout(SWEEP) {
            Ok(()) => std::thread::sleep(GATHER),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        loop {
            let config = config.clone();
            match writes.run(move |c| screen_batch(c, &config)) {
                Ok(batch) if batch.full => continue,
                Ok(_) => break,
                Err(error) => {
                    tracing::warn!(%error, "duplicate screening postponed");
                    break;
                }
            }
        }
    }
}

/// Screens up to one batch of pending pairs in one transaction; how many submissions it
/// screened.
pub fn screen_pending(config: &Config, pool: &Pool) -> Result<usize, DbError> {
    with_conn!(pool, |c| c.write_tx(|c| screen_batch(c, config))).map(|b| b.screened)
}

/// What one batch did.
struct Batch {
    /// Submissions screened.
    screened: usize,
    /// The batch took as many pairs as it may: more may be waiting.
    full: bool,
}

fn screen_batch(c: &mut DbConnection, config: &Config) -> Result<Batch, DbError> {
    let pairs = c.unscreened(BATCH)?;
    let mut screened = 0;
    for group in pairs.chunk_by(|a, b| a.duplicate.id == b.duplicate.id) {
        finish(c, config, group)?;
        screened += 1;
    }
    // `unscreened` takes the submissions of up to BATCH pairs, each with all its pairs: a
    // batch of a few submissions with many candidates each is full too.
    Ok(Batch { screened, full: pairs.len() as i64 >= BATCH })
}

/// Judges one submission against its candidates (`pairs`, all naming it as the later one).
pub(super) fn finish<C: DuplicateStore + EffectAdminStore>(
    c: &mut C,
    config: &Config,
    pairs: &[Unscreened],
) -> Result<(), DbError> {
    let Some(first) = pairs.first() else { return Ok(()) };
    let new = &first.duplicate;
    let Some(form) = config.form(&pair_form(first)) else {
        // The form is gone from the configuration: nothing to score against, nothing held.
        for pair in pairs {
            c.finish_screening(&pair.pair_id, None)?;
        }
        c.release_held_of(&new.id, crate::base::clock::now())?;
        return Ok(());
    };
    let new_fields = parse(new.fields_json.as_deref());
    let judged: Vec<_> = pairs
        .iter()
        .map(|pair| {
            let old = &pair.original;
            let old_fields = parse(old.fields_json.as_deref());
            let old_form = config.form(&old.form).unwrap_or(form);
            let verdict = judge(&side(form, &new_fields, new), &side(old_form, &old_fields, old));
            (pair, verdict)
        })
        .collect();
    // The best repeat is reviewed; without one, the best same-sender pair is listed apart.
    // The highest score; among equals, the earliest original.
    let best = |v: Verdict| {
        judged.iter().filter_map(|(p, j)| j.as_ref().filter(|j| j.verdict == v).map(|j| (*p, j))).max_by(
            |a, b| {
                a.1.score.total_cmp(&b.1.score).then(b.0.original.received_at.cmp(&a.0.original.received_at))
            },
        )
    };
    // The best repeat is kept with its judgement (in its cluster: see `into_cluster`); else
    // the best same-sender pair, listed apart.
    let chosen = best(Verdict::Repeat).or_else(|| best(Verdict::SameSender));
    let kept = match chosen {
        Some((pair, j)) if j.verdict == Verdict::Repeat => Some(into_cluster(c, &judged, pair, j)?),
        other => other.map(|(pair, j)| (pair.pair_id.clone(), j)),
    };
    let mut keep_held = false;
    let mut finished = false;
    for (pair, _) in &judged {
        let stored = match &kept {
            Some((id, j)) if *id == pair.pair_id => {
                let status = match j.verdict {
                    Verdict::Repeat => PairStatus::Open,
                    Verdict::SameSender => PairStatus::SameSender,
                };
                keep_held = j.verdict == Verdict::Repeat && j.score >= form.duplicates.hold_score;
                let reasons = serde_json::to_string(&j.reasons).unwrap_or_else(|_| "[]".into());
                Some((j.score, reasons, status))
            }
            _ => None,
        };
        finished |=
            c.finish_screening(&pair.pair_id, stored.as_ref().map(|(s, r, st)| (*s, r.as_str(), *st)))?;
    }
    if finished && holds(form) && !keep_held {
        c.release_held_of(&new.id, crate::base::clock::now())?;
    }
    Ok(())
}

/// Both links scoring at least this, a repeat of a repeat is moved to its cluster's first.
const STRONG: f64 = 0.8;

/// The pair to keep for the repeat `kept`: when its original repeats an earlier one (the
/// cluster's first), the pair with that first if it is a candidate judged a repeat too, else,
/// when both links are strong, `kept` moved to it (one original and its members). A weak
/// earlier link is never followed.
fn into_cluster<'a, C: DuplicateStore>(
    c: &mut C,
    judged: &'a [(&Unscreened, Option<super::Judged>)],
    kept: &Unscreened,
    j: &'a super::Judged,
) -> Result<(String, &'a super::Judged), DbError> {
    let Some(root) = c.cluster_root(&kept.original.id, 0.0)? else { return Ok((kept.pair_id.clone(), j)) };
    let to_root = judged.iter().find_map(|(p, rj)| match rj {
        Some(rj) if p.original.id == root && rj.verdict == Verdict::Repeat => Some((p.pair_id.clone(), rj)),
        _ => None,
    });
    if let Some(found) = to_root {
        return Ok(found);
    }
    if j.score >= STRONG && c.cluster_root(&kept.original.id, STRONG)?.is_some() {
        c.relink(&kept.pair_id, &root)?;
    }
    Ok((kept.pair_id.clone(), j))
}

fn pair_form(pair: &Unscreened) -> String {
    pair.form.clone()
}

fn side<'a>(
    form: &'a crate::config::FormConfig,
    fields: &'a std::collections::BTreeMap<String, String>,
    c: &'a Candidate,
) -> Side<'a> {
    Side { form, fields, received_at: c.received_at, fingerprint: &c.fingerprint, keyless: c.keyless }
}
