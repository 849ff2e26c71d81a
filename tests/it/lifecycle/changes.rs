//! The change feed (`services::changes`): every change of a submission (accepted, conflict,
//! effect states, a duplicate decision, erasure) in commit order; resuming from any cursor
//! never skips or repeats one, across a new pool and, on PostgreSQL, across transactions
//! that commit out of ID order; a tampered cursor is refused, one older than retention kept
//! is expired.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel::prelude::*;
use diesel::sql_types::BigInt;
use onceform::config::{Config, Form};
use onceform::db::admin::review::ReviewStore;
use onceform::db::changes::{self, Noted, Position};
use onceform::db::schema::{duplicate_pairs, submissions};
use onceform::db::{DbError, Pool};
use onceform::domain::{ChangeKind, PairStatus};
use onceform::services::accept::{Acceptor, Intake};
use onceform::services::changes::{read, Change, Cursor, ReadError, What};
use onceform::with_conn;

use crate::on_both_backends;
use crate::support::delivery::spawn_delivery_app;
use crate::support::{inquiry, new_key, test_config, test_keyring, Backend, TestDb};

/// Every change after `from`, read in pages of `limit` until a page comes back empty.
fn read_all(pool: &Pool, from: Option<&Cursor>, limit: u32) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    let mut cursor = from.cloned();
    loop {
        let page = read(pool, cursor.as_ref(), limit).unwrap();
        assert!(page.changes.len() <= limit as usize);
        if page.changes.is_empty() {
            assert_eq!(Some(&page.next), cursor.as_ref().or(Some(&page.next)), "an empty page stays put");
            return out;
        }
        cursor = Some(page.next.clone());
        assert_eq!(Some(&page.next), page.changes.last().map(|c| &c.cursor));
        out.extend(page.changes);
    }
}

/// Waits (PostgreSQL: for the horizon, which another test's open transaction may hold
/// back) until the feed serves every committed change; all of them.
async fn feed_of(pool: &Pool) -> Vec<Change> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let p = pool.clone();
        let (all, stored) = tokio::task::spawn_blocking(move || {
            let stored: i64 = with_conn!(&p, |c| onceform::db::schema::changes::table
                .count()
                .get_result(c)
                .map_err(DbError::from))
            .unwrap();
            (read_all(&p, None, 500), stored)
        })
        .await
        .unwrap();
        if all.len() as i64 >= stored {
            return all;
        }
        assert!(Instant::now() < deadline, "{} of {stored} changes served", all.len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn submission_id(pool: &Pool, key: &str) -> String {
    let key = key.to_string();
    with_conn!(pool, |c| submissions::table
        .filter(submissions::operation_id.eq(&key))
        .select(submissions::id)
        .first::<String>(c)
        .map_err(DbError::from))
    .unwrap()
}

on_both_backends!(every_change_of_a_submission_is_in_the_feed_in_commit_order_and_resumable);

async fn every_change_of_a_submission_is_in_the_feed_in_commit_order_and_resumable(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let (first, second) = (new_key(), new_key());
    assert_eq!(d.app.submit(&first, &inquiry("Feed me once")).await.status(), 201);
    assert_eq!(d.app.submit(&second, &inquiry("Feed me once")).await.status(), 201);
    assert_eq!(d.app.submit(&first, &inquiry("Something else")).await.status(), 409);
    d.settle(&d.worker()).await;
    // The second repeats the first: an admin (or the API) decides the pair.
    let pool = d.app.pool.clone();
    let (one, two) = (submission_id(&pool, &first), submission_id(&pool, &second));
    d.app.until_screened().await;
    let two_ = two.clone();
    let pair: (String, String) = d
        .app
        .query(move |pool| {
            with_conn!(pool, |c| duplicate_pairs::table
                .filter(duplicate_pairs::duplicate_id.eq(&two_))
                .select((duplicate_pairs::id, duplicate_pairs::status))
                .first(c)
                .map_err(DbError::from))
        })
        .await;
    let from = PairStatus::parse(&pair.1).unwrap();
    let pair_id = pair.0.clone();
    let decided = d
        .app
        .query(move |pool| {
            with_conn!(pool, |c| c
                .decide_pair(&pair_id, &[from], PairStatus::Duplicate, Some("admin@example.com"), None)
                .map_err(DbError::from))
        })
        .await;
    assert!(decided);
    // The first's content goes (retention or erasure): a tombstone.
    let ids = vec![one.clone()];
    d.app
        .query(move |pool| {
            with_conn!(pool, |c| c
                .write_transaction(|c| {
                    onceform::db::purge::tombstone(
                        c,
                        &ids,
                        &Default::default(),
                        chrono::Utc::now().naive_utc(),
                    )
                    .map(|_| ())
                })
                .map_err(DbError::from))
        })
        .await;

    let effects = d.effects(None).await;
    let all = feed_of(&pool).await;
    let kinds: Vec<(&str, &What)> = all.iter().map(|c| (c.submission_id.as_str(), &c.what)).collect();
    assert_eq!(kinds.first(), Some(&(one.as_str(), &What::Accepted)), "{kinds:#?}");
    assert_eq!(kinds.get(1), Some(&(two.as_str(), &What::Accepted)), "{kinds:#?}");
    assert_eq!(kinds.get(2), Some(&(one.as_str(), &What::Conflict)), "{kinds:#?}");
    assert_eq!(kinds.last(), Some(&(one.as_str(), &What::Erased)), "{kinds:#?}");
    let decision = What::Decision { pair_id: pair.0.clone(), status: PairStatus::Duplicate };
    assert_eq!(kinds.iter().filter(|(s, w)| *s == two && **w == decision).count(), 1, "{kinds:#?}");
    // Each record's states in the order they were taken, ending where the record is now.
    let mut states: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in &all {
        if let What::EffectState { effect_id, state, .. } = &c.what {
            states.entry(effect_id.to_string()).or_default().push(state.to_string());
        }
        assert!(["contact"].contains(&c.form.as_str()));
    }
    // Every record that moved (the repeat's confirmation was written CANCELLED by the
    // recipient cap at its acceptance: no move).
    let moved = effects.iter().filter(|e| !(e.state == "CANCELLED" && e.attempts == 0)).count();
    assert_eq!(states.len(), moved, "every record of both submissions that moved: {states:#?} {effects:#?}");
    for (id, seen) in &states {
        // Claimed by a worker, or (the repeat's, held for the screening) cancelled by the
        // decision.
        assert!(matches!(seen.first().map(String::as_str), Some("SENDING" | "CANCELLED")), "{id}: {seen:?}");
        assert!(seen.windows(2).all(|w| w[0] != w[1] || w[0] == "UNKNOWN"), "{id}: {seen:?}");
    }
    let sent = states.values().filter(|s| s.last().map(String::as_str) == Some("SENT")).count();
    assert_eq!(sent, effects.iter().filter(|e| e.state == "SENT").count(), "{states:#?}");
    assert!(sent >= 2, "the CRM lead and the emails were sent: {states:#?}");
    // No field value travels in the feed.
    let json = serde_json::to_string(&all).unwrap();
    for personal in ["Ada", "ada@example.com", "Feed me once", "Analytical"] {
        assert!(!json.contains(personal), "{personal} in {json}");
    }

    // From every cursor, in pages of 2, on a new pool (a restarted consumer or server):
    // exactly what follows it.
    let restarted = Pool::connect(&d.app.config.database).unwrap();
    let (p, expected) = (restarted.clone(), all.clone());
    tokio::task::spawn_blocking(move || {
        assert_eq!(read_all(&p, None, 2), expected);
        for (i, change) in expected.iter().enumerate() {
            assert_eq!(read_all(&p, Some(&change.cursor), 2), expected[i + 1..], "after change {i}");
        }
    })
    .await
    .unwrap();

    // A tampered cursor is refused, not read from somewhere else.
    let text = all[1].cursor.to_string();
    let flipped = if text.ends_with('A') { "B" } else { "A" };
    let tampered = format!("{}{flipped}", &text[..text.len() - 1]);
    assert!(Cursor::parse(&tampered).is_err());
    assert!(Cursor::parse(&text[1..]).is_err());

    // Retention deletes the feed's front: a cursor from before it is expired; the feed goes
    // on after it, never repeating a position.
    let until = chrono::Utc::now().naive_utc() + chrono::Duration::days(1);
    let writes = onceform::db::Writes::pooled(pool.clone());
    let purged = onceform::services::changes::purge(&writes, until, 2).unwrap();
    assert_eq!(purged as usize, all.len(), "every change is older than a day from now");
    assert!(matches!(read(&pool, Some(&all[0].cursor), 10), Err(ReadError::Expired)));
    let last = all.last().unwrap().cursor.clone();
    assert_eq!(read(&pool, Some(&last), 10).unwrap().changes, vec![]);
    assert_eq!(read(&pool, None, 10).unwrap().changes, vec![]);
    let third = new_key();
    assert_eq!(d.app.submit(&third, &inquiry("After the purge")).await.status(), 201);
    let after = feed_of(&pool).await;
    assert_eq!(after.len(), 1, "{after:#?}");
    assert_eq!(after[0].what, What::Accepted);
    assert!(after[0].cursor.position() > last.position(), "positions go on after the purged ones");
    assert_eq!(read(&pool, Some(&last), 10).unwrap().changes, after);
}

#[derive(QueryableByName)]
struct Xid {
    #[diesel(sql_type = BigInt)]
    xid: i64,
}

/// A valid contact intake, its own visitor.
fn intake(form: &Form, i: usize) -> Intake {
    let mut body = inquiry(&format!("Concurrent inquiry {i}"));
    body["email"] = format!("feed-{i}@example.com").into();
    let raw =
        body.as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
    Intake {
        form: form.clone(),
        operation_id: Some(onceform::domain::OperationId::generate()),
        channel: onceform::services::request_log::Channel::Api,
        fields: onceform::domain::normalise(&**form, &raw).unwrap(),
        scans: Default::default(),
        received: None,
        test: false,
    }
}

/// Holds a transaction open that took its ID at once, until `release` is set; then writes a
/// change in it and commits. Its ID.
fn held_transaction(pool: &Pool, submission: &str, taken: &Mutex<Vec<i64>>, release: &AtomicBool) -> i64 {
    let mut c = pool.get().unwrap();
    c.write_transaction(|c| {
        let xid: Xid = diesel::sql_query("SELECT pg_current_xact_id()::text::bigint AS xid").get_result(c)?;
        taken.lock().unwrap().push(xid.xid);
        while !release.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        changes::record(c, &[Noted::of(ChangeKind::Conflict, submission)], chrono::Utc::now().naive_utc())?;
        Ok::<_, diesel::result::Error>(xid.xid)
    })
    .unwrap()
}

#[derive(QueryableByName)]
struct Key {
    #[diesel(sql_type = BigInt)]
    xid: i64,
    #[diesel(sql_type = BigInt)]
    seq: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_committing_out_of_id_order_are_read_without_gap_or_repeat() {
    let db = TestDb::new(Backend::Postgres);
    let config: Config = test_config(&db.url);
    let pool = Pool::connect(&config.database).unwrap();
    let form = Form::new("contact", config.form("contact").unwrap().clone());
    let acceptor = Acceptor::start(Arc::new(config.clone()), pool.clone(), test_keyring()).unwrap();
    let writers_done = Arc::new(AtomicBool::new(false));
    let seen: Arc<Mutex<Vec<Change>>> = Arc::default();
    let (taken, release_early, release_last) = (
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (form_, acceptor_, pool_, seen_) = (form.clone(), acceptor.clone(), pool.clone(), seen.clone());
    let result = tokio::task::spawn_blocking(move || {
        let (form, acceptor, pool, seen) = (form_, acceptor_, pool_, seen_);
        // One submission the held transactions write their changes for.
        acceptor.accept(intake(&form, 9999)).unwrap();
        let anchor = with_conn!(&pool, |c| submissions::table
            .select(submissions::id)
            .first::<String>(c)
            .map_err(DbError::from))
        .unwrap();
        std::thread::scope(|s| {
            // Two transactions take their IDs first; one commits midway, one after every other.
            let early = s.spawn(|| held_transaction(&pool, &anchor, &taken, &release_early));
            let last = s.spawn(|| held_transaction(&pool, &anchor, &taken, &release_last));
            while taken.lock().unwrap().len() < 2 {
                std::thread::sleep(Duration::from_millis(1));
            }
            // The reader follows the feed meanwhile, page by page, from its cursor.
            let reader = s.spawn(|| {
                let mut cursor: Option<Cursor> = None;
                let deadline = Instant::now() + Duration::from_secs(90);
                loop {
                    let page = read(&pool, cursor.as_ref(), 7).unwrap();
                    let empty = page.changes.is_empty();
                    cursor = Some(page.next);
                    seen.lock().unwrap().extend(page.changes);
                    if empty && writers_done.load(Ordering::SeqCst) {
                        // Everything committed: the feed ends once the horizon passes it all.
                        let total: i64 = with_conn!(&pool, |c| onceform::db::schema::changes::table
                            .count()
                            .get_result(c)
                            .map_err(DbError::from))
                        .unwrap();
                        if seen.lock().unwrap().len() as i64 >= total || Instant::now() > deadline {
                            return;
                        }
                    }
                    std::thread::sleep(Duration::from_millis(3));
                }
            });
            let writers: Vec<_> = (0..6)
                .map(|w| {
                    let (acceptor, form) = (&acceptor, &form);
                    s.spawn(move || {
                        for i in 0..40 {
                            acceptor.accept(intake(form, w * 100 + i)).unwrap();
                        }
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_millis(200));
            release_early.store(true, Ordering::SeqCst);
            let early_xid = early.join().unwrap();
            for w in writers {
                w.join().unwrap();
            }
            release_last.store(true, Ordering::SeqCst);
            let last_xid = last.join().unwrap();
            writers_done.store(true, Ordering::SeqCst);
            reader.join().unwrap();
            (early_xid, last_xid)
        })
    })
    .await
    .unwrap();
    let (early_xid, last_xid) = result;
    let committed: Vec<Key> = with_conn!(&pool, |c| diesel::sql_query("SELECT xid, seq FROM changes")
        .load(c)
        .map_err(DbError::from))
    .unwrap();
    let committed: BTreeSet<Position> =
        committed.iter().map(|k| Position { xid: k.xid, seq: k.seq }).collect();
    let seen = seen.lock().unwrap().clone();
    let served: Vec<Position> = seen.iter().map(|c| c.cursor.position()).collect();
    let unique: BTreeSet<Position> = served.iter().copied().collect();
    assert_eq!(unique.len(), served.len(), "no change served twice");
    assert!(served.windows(2).all(|w| w[0] < w[1]), "served in feed order");
    let missed: Vec<&Position> = committed.difference(&unique).collect();
    let extra: Vec<&Position> = unique.difference(&committed).collect();
    assert!(missed.is_empty() && extra.is_empty(), "skipped {missed:?}; served but not stored {extra:?}");
    assert_eq!(committed.len(), 1 + 240 + 2);
    let accepted = seen.iter().filter(|c| c.what == What::Accepted).count();
    assert_eq!(accepted, 241);
    // The last transaction took its ID before the accepts and committed after them all:
    // a reader by sequence alone would have passed its change.
    let later_accepts =
        seen.iter().filter(|c| c.what == What::Accepted && c.cursor.position().xid > last_xid).count();
    assert!(later_accepts >= 200, "{later_accepts} accepts took later IDs and committed first");
    assert!(served.iter().any(|p| p.xid == last_xid) && served.iter().any(|p| p.xid == early_xid));

    // Resumed on a new pool (another process) from a cursor midway: the same tail.
    let restarted = Pool::connect(&config.database).unwrap();
    let middle = seen[seen.len() / 2].cursor.clone();
    let tail = tokio::task::spawn_blocking(move || read_all(&restarted, Some(&middle), 50)).await.unwrap();
    assert_eq!(tail, seen[seen.len() / 2 + 1..]);
}

/// SQLite: each position is the one before plus one, and a change that writes no row (its
/// submission does not exist: an inbound event's record) takes no position.
#[tokio::test]
async fn sqlite_positions_follow_each_other_past_a_change_that_writes_nothing() {
    let db = TestDb::new(Backend::Sqlite);
    let config: Config = test_config(&db.url);
    let pool = Pool::connect(&config.database).unwrap();
    let form = Form::new("contact", config.form("contact").unwrap().clone());
    let acceptor =
        Acceptor::one_transaction_each(Arc::new(config.clone()), pool.clone(), test_keyring()).unwrap();
    let pool_ = pool.clone();
    tokio::task::spawn_blocking(move || {
        let first = intake(&form, 1);
        let key = first.operation_id.as_ref().map(|k| k.as_str().to_string()).unwrap();
        acceptor.accept(first).unwrap();
        let id = submission_id(&pool_, &key);
        let rows = [
            Noted::of(ChangeKind::Conflict, &id),
            Noted::of(ChangeKind::Conflict, "an-inbound-event-record"),
            Noted::of(ChangeKind::Erased, &id),
        ];
        let now = chrono::Utc::now().naive_utc();
        with_conn!(&pool_, |c| c
            .write_transaction(|c| changes::record(c, &rows, now))
            .map_err(DbError::from))
        .unwrap();
    })
    .await
    .unwrap();
    let stored: Vec<Key> =
        with_conn!(&pool, |c| diesel::sql_query("SELECT xid, seq FROM changes ORDER BY seq")
            .load(c)
            .map_err(DbError::from))
        .unwrap();
    let positions: Vec<(i64, i64)> = stored.iter().map(|k| (k.xid, k.seq)).collect();
    assert_eq!(positions, [(0, 1), (0, 2), (0, 3)], "accepted, conflict, erased");
    let kinds: Vec<What> = feed_of(&pool).await.into_iter().map(|c| c.what).collect();
    assert_eq!(kinds.len(), 3, "{kinds:?}");
}
