//! The screener: judges the pairs the accept path linked, off the accept path. A thread
//! woken after each acceptance (and every few seconds, for pairs left by a process that
//! stopped) takes the submissions whose pairs are still `screening` and judges each against
//! its candidates (`score::judge`): the best repeat is opened for review, else the same
//! sender's new request is listed apart (`same_sender`), and the other pairs are dropped.
//! Under `policy = "hold"` the held effects are released unless an opened repeat scores at
//! least `hold_score`. The pairs are read and scored outside any write transaction; only the
//! decisions are written (on SQLite, by the writer the accepts share). Any number of
//! processes may screen at once: a pair is finished once, by whoever updates it first.

use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::Duration;

use super::reason::Reason;
use super::score::{judge, Judged, Side, Verdict};
use super::{holds, parse};
use crate::config::Config;
use crate::db::admin::effects::EffectAdminStore;
use crate::db::duplicates::{Candidate, DuplicateStore, Kept, Unscreened};
use crate::db::{DbError, Pool, Store, Writes};
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
            match screen_batch(config, writes) {
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
    with_conn!(pool, |c| c.write_tx(|c| {
        let pairs = c.unscreened(BATCH)?;
        let judged = judge_all(config, &pairs);
        let screened = judged.len();
        decide_all(c, config, judged)?;
        Ok(screened)
    }))
}

/// What one batch did.
struct Batch {
    /// The batch took as many pair rows as it may: more may be waiting.
    full: bool,
}

/// One batch: the pairs are read and scored on this thread, from a pooled connection, and
/// only the decisions go through `writes` (on SQLite, the writer the accepts wait for).
fn screen_batch(config: &Arc<Config>, writes: &Writes) -> Result<Batch, DbError> {
    let pairs = with_conn!(&writes.pool, |c| c.unscreened(BATCH).map_err(DbError::from))?;
    // `unscreened` takes the submissions of up to BATCH rows, each with all its rows and
    // candidates: as many rows as that, and more may be waiting.
    let mut rows: Vec<&str> = pairs.iter().map(|p| p.pair_id.as_str()).collect();
    rows.sort_unstable();
    rows.dedup();
    let full = rows.len() as i64 >= BATCH;
    let judged = judge_all(config, &pairs);
    if !judged.is_empty() {
        let config = config.clone();
        writes.run(move |c| decide_all(c, &config, judged))?;
    }
    Ok(Batch { full })
}

/// One submission's pairs (all naming it as the later one), each with its judgement; no
/// judgement at all when its form is gone from the configuration.
struct Judgement {
    pairs: Vec<Unscreened>,
    verdicts: Option<Vec<Option<Judged>>>,
}

fn judge_all(config: &Config, pairs: &[Unscreened]) -> Vec<Judgement> {
    pairs.chunk_by(|a, b| a.duplicate.id == b.duplicate.id).map(|group| judge_one(config, group)).collect()
}

fn decide_all<C: DuplicateStore + EffectAdminStore>(
    c: &mut C,
    config: &Config,
    judged: Vec<Judgement>,
) -> Result<(), DbError> {
    judged.into_iter().try_for_each(|j| decide(c, config, j))
}

/// Scores one submission against each of its candidates (`pairs`): no database, no lock.
fn judge_one(config: &Config, pairs: &[Unscreened]) -> Judgement {
    let verdicts = pairs.first().and_then(|first| {
        let new = &first.duplicate;
        let form = config.form(&first.form)?;
        let new_fields = parse(new.fields_json.as_deref());
        let verdicts = pairs.iter().map(|pair| {
            let old = &pair.original;
            let old_fields = parse(old.fields_json.as_deref());
            let old_form = config.form(&old.form).unwrap_or(form);
            judge(&side(form, &new_fields, new), &side(old_form, &old_fields, old))
        });
        Some(verdicts.collect())
    });
    Judgement { pairs: pairs.to_vec(), verdicts }
}

/// Stores what the screening of one submission found.
fn decide<C: DuplicateStore + EffectAdminStore>(
    c: &mut C,
    config: &Config,
    judgement: Judgement,
) -> Result<(), DbError> {
    let Some(new_id) = judgement.pairs.first().map(|p| p.duplicate.id.clone()) else { return Ok(()) };
    let (Some(form), Some(verdicts)) =
        (judgement.pairs.first().and_then(|p| config.form(&p.form)), judgement.verdicts)
    else {
        // The form is gone from the configuration: nothing to score against, nothing held.
        for pair in &judgement.pairs {
            c.finish_screening(&pair.pair_id, None)?;
        }
        c.release_held_of(&new_id, crate::base::clock::now())?;
        return Ok(());
    };
    let judged: Vec<(&Unscreened, Option<Judged>)> = judgement.pairs.iter().zip(verdicts).collect();
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
    let kept = match best(Verdict::Repeat).or_else(|| best(Verdict::SameSender)) {
        Some((pair, j)) if j.verdict == Verdict::Repeat => Some(into_cluster(c, &judged, pair, j)?),
        other => other.map(|(pair, j)| (pair.pair_id.as_str(), pair.original.id.clone(), j)),
    };
    // The other rows go first: the kept row may take an original one of them named.
    let mut rows: Vec<&str> = judged.iter().map(|(p, _)| p.pair_id.as_str()).collect();
    rows.dedup();
    let mut finished = false;
    for row in rows.into_iter().filter(|r| kept.as_ref().is_none_or(|k| k.0 != *r)) {
        finished |= c.finish_screening(row, None)?;
    }
    let mut keep_held = false;
    if let Some((row, original_id, j)) = kept {
        let status = match j.verdict {
            Verdict::Repeat => PairStatus::Open,
            Verdict::SameSender => PairStatus::SameSender,
        };
        keep_held = j.verdict == Verdict::Repeat && j.score >= form.duplicates.hold_score;
        let reasons = Reason::store_list(&j.reasons);
        let kept = Kept { original_id: &original_id, score: j.score, reasons: &reasons, status };
        finished |= c.finish_screening(row, Some(kept))?;
    }
    if finished && holds(form) && !keep_held {
        c.release_held_of(&new_id, crate::base::clock::now())?;
    }
    Ok(())
}

/// Both links scoring at least this, a repeat of a repeat is moved to its cluster's first.
const STRONG: f64 = 0.8;

/// The row and original to keep for the repeat `kept`: when its original repeats an earlier
/// one (the cluster's first), that first if it is a candidate judged a repeat too, else, when
/// both links are strong and no pair of the two was stored before, `kept` moved to it (one
/// original and its members). A weak earlier link is never followed.
fn into_cluster<'a, C: DuplicateStore>(
    c: &mut C,
    judged: &'a [(&'a Unscreened, Option<Judged>)],
    kept: &'a Unscreened,
    j: &'a Judged,
) -> Result<(&'a str, String, &'a Judged), DbError> {
    let as_found = (kept.pair_id.as_str(), kept.original.id.clone(), j);
    let Some(root) = c.cluster_root(&kept.original.id, 0.0)? else { return Ok(as_found) };
    let to_root = judged.iter().find_map(|(p, rj)| match rj {
        Some(rj) if p.original.id == root && rj.verdict == Verdict::Repeat => {
            Some((p.pair_id.as_str(), root.clone(), rj))
        }
        _ => None,
    });
    if let Some(found) = to_root {
        return Ok(found);
    }
    if j.score >= STRONG
        && c.cluster_root(&kept.original.id, STRONG)?.is_some()
        && !c.pair_exists(&root, &kept.duplicate.id)?
    {
        return Ok((kept.pair_id.as_str(), root, j));
    }
    Ok(as_found)
}

fn side<'a>(
    form: &'a crate::config::FormConfig,
    fields: &'a std::collections::BTreeMap<String, String>,
    c: &'a Candidate,
) -> Side<'a> {
    Side { form, fields, received_at: c.received_at, fingerprint: &c.fingerprint, keyless: c.keyless }
}
