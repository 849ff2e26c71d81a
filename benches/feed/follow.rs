//! Following the change feed while four `serve` processes accept and a `worker` delivers,
//! the consumer killed (SIGKILL) and restarted from its stored copy (issue 42); see `feed.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel::sql_types::{BigInt, Nullable, Text};
use diesel::RunQueryDsl;
use onceform::db::{DbError, Pool};
use onceform::with_conn;
use serde_json::{json, Value};

use crate::common::drain::InstantCrm;
use crate::common::{Db, Process};
use crate::consumer::{self, Copy};

/// Client tasks submitting at once.
const CLIENTS: usize = 16;

pub fn run(submissions: usize, kills: usize) {
    let db = Db::new("postgres");
    let crm = InstantCrm::start();
    let mail = db.dir.join("mail").display().to_string();
    let base = format!("[crm]\nurl = {:?}\n\n[smtp]\nmail_dir = {mail:?}\n\n", crm.url);
    let (serving, _) = db.config(&format!("{base}[worker]\nenabled = false"));
    let (working, config) = db.config(&format!("{base}[worker]\nconcurrency = 64\npoll_ms = 10"));
    let servers: Vec<Process> = (0..4).map(|_| crate::serve(&serving)).collect();
    let worker = Process::start(&["worker", "--config", working.to_str().unwrap()], &[]);
    let addrs: Vec<String> = servers.iter().map(Process::address).collect();
    let token = crate::token(&serving, "read:submissions,read:effects");
    let pool = Pool::connect(&config.database).unwrap();
    let file = db.dir.join("copy.json");

    let started = Instant::now();
    let acked = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let supervisor = {
        let (addrs, token, file, acked, stop) =
            (addrs.clone(), token.clone(), file.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || supervise(&addrs, &token, &file, kills, submissions, &acked, &stop))
    };
    let backlog = Arc::new(Mutex::new(Vec::<u64>::new()));
    let sampler = {
        let (pool, file, backlog, stop) = (pool.clone(), file.clone(), backlog.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let written = count(&pool, "SELECT count(*) AS n FROM changes");
                let applied = applied(&consumer::load(&file).unwrap_or_default());
                backlog.lock().unwrap().push(written.saturating_sub(applied) as u64);
                std::thread::sleep(Duration::from_secs(1));
            }
        })
    };

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let sent = rt.block_on(submit_all(&addrs, submissions, acked.clone()));
    let accepting = started.elapsed().as_secs_f64();
    let open = "SELECT count(*) AS n FROM side_effects WHERE state IN ('PENDING', 'SENDING', 'UNKNOWN')";
    while count(&pool, open) > 0 {
        assert!(started.elapsed() < Duration::from_secs(1200), "the effects never settled");
        std::thread::sleep(Duration::from_millis(100));
    }
    let settled = started.elapsed().as_secs_f64();
    let total = count(&pool, "SELECT count(*) AS n FROM changes");
    let copy = loop {
        let copy = consumer::load(&file).unwrap_or_default();
        if applied(&copy) >= total && copy.submissions.len() >= submissions {
            break copy;
        }
        assert!(started.elapsed().as_secs_f64() < settled + 300.0, "the consumer never caught up");
        std::thread::sleep(Duration::from_millis(250));
    };
    let caught_up = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::SeqCst);
    let (killed, exited) = supervisor.join().unwrap();
    sampler.join().unwrap();
    drop(worker);
    drop(servers);

    let mut backlog = backlog.lock().unwrap().clone();
    backlog.sort_unstable();
    println!("| submissions | serve processes | retries (same key, another process) | accepted/s | changes | consumer kills (SIGKILL) | consumer exits on error | changes/s followed | backlog p50 / max (changes) | caught up after the last effect settled |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {submissions} | 4 | {} | {:.0} | {total} | {killed} | {exited} | {:.0} | {} / {} | {:.1} s |",
        sent.retries,
        submissions as f64 / accepting,
        total as f64 / caught_up,
        backlog.get(backlog.len() / 2).copied().unwrap_or(0),
        backlog.last().copied().unwrap_or(0),
        caught_up - settled,
    );
    let problems = check(&pool, &copy, &sent, submissions);
    for p in problems.iter().take(20) {
        println!("MISMATCH: {p}");
    }
    assert!(killed >= kills, "the consumer was killed {killed} times, not {kills}");
    assert!(
        problems.is_empty(),
        "{} mismatches between the consumer's copy and the database",
        problems.len()
    );
    println!(
        "\nfeed check: the copy holds the {submissions} submissions, each of the {total} changes once, \
         every effect record's states in the recorded order: OK\n"
    );
}

/// Changes applied to `copy` so far.
fn applied(copy: &Copy) -> i64 {
    copy.submissions.values().map(|s| s.changes as i64).sum()
}

/// What the clients got: the submission of each operation, retries sent, wrong answers.
struct Sent {
    ids: BTreeSet<String>,
    retries: usize,
    unexpected: Vec<String>,
}

/// `n` new submissions from `CLIENTS` tasks, round robin over `addrs`; every tenth sent
/// again (same key and body) to the next process, which must answer 200 with the same ID.
async fn submit_all(addrs: &[String], n: usize, acked: Arc<AtomicUsize>) -> Sent {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let next = Arc::new(AtomicUsize::new(0));
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let tasks = (0..CLIENTS).map(|_| {
        let (client, next, acked, addrs, tag) =
            (client.clone(), next.clone(), acked.clone(), addrs.to_vec(), tag.clone());
        tokio::spawn(async move {
            let mut sent = Sent { ids: BTreeSet::new(), retries: 0, unexpected: Vec::new() };
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    return sent;
                }
                let key = format!("feed-{tag}-{i}");
                let body = json!({"name": format!("Visitor {i}"), "email": format!("visitor-{i}-{tag}@example.com"),
                                  "topic": "Sales", "message": format!("Inquiry {i} while the feed is followed")});
                let first = post(&client, &addrs[i % addrs.len()], &key, &body).await;
                let Some((status, id)) = first else {
                    sent.unexpected.push(format!("{key}: no answer after retries"));
                    continue;
                };
                if status != 201 {
                    sent.unexpected.push(format!("{key}: {status}"));
                }
                if i % 10 == 0 {
                    sent.retries += 1;
                    match post(&client, &addrs[(i + 1) % addrs.len()], &key, &body).await {
                        Some((200, again)) if again == id => {}
                        other => sent.unexpected.push(format!("{key}: retry answered {other:?}, first {id}")),
                    }
                }
                sent.ids.insert(id);
                acked.fetch_add(1, Ordering::SeqCst);
            }
        })
    });
    let mut all = Sent { ids: BTreeSet::new(), retries: 0, unexpected: Vec::new() };
    for done in futures_util::future::join_all(tasks).await {
        let s = done.unwrap();
        all.ids.extend(s.ids);
        all.retries += s.retries;
        all.unexpected.extend(s.unexpected);
    }
    all
}

/// (status, submission ID) of one submission, sent again (same key) after a transport error
/// or a 503, at most five times.
async fn post(client: &reqwest::Client, addr: &str, key: &str, body: &Value) -> Option<(u16, String)> {
    for _ in 0..5 {
        let resp = client
            .post(format!("{addr}/api/forms/contact/submissions"))
            .header("Idempotency-Key", key)
            .json(body)
            .send()
            .await;
        if let Ok(resp) = resp {
            let status = resp.status().as_u16();
            if status != 503 {
                let v: Value = resp.json().await.unwrap_or_default();
                return Some((status, v["submission_id"].as_str().unwrap_or_default().to_string()));
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

/// Runs the consumer child, each run reading from the next `serve` process; kills it
/// (SIGKILL) `kills` times, spread over the submissions (once `acked` passes each share, a few
/// milliseconds later each time so the kills land at different points of a page), and starts
/// it again whenever it ends. (kills, exits on its own).
fn supervise(
    addrs: &[String],
    token: &str,
    file: &std::path::Path,
    kills: usize,
    submissions: usize,
    acked: &AtomicUsize,
    stop: &AtomicBool,
) -> (usize, usize) {
    let start = |run: usize| -> Child {
        Command::new(std::env::current_exe().unwrap())
            .env(crate::CONSUMER_FILE, file)
            .env("ONCEFORM_URL", &addrs[run % addrs.len()])
            .env("ONCEFORM_TOKEN", token)
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut killed, mut exited) = (0, 0);
    let mut child = start(0);
    while !stop.load(Ordering::SeqCst) {
        if child.try_wait().unwrap().is_some() {
            exited += 1;
            std::thread::sleep(Duration::from_millis(200));
            child = start(killed + exited);
            continue;
        }
        if killed < kills && acked.load(Ordering::SeqCst) >= (killed + 1) * submissions / (kills + 1) {
            std::thread::sleep(Duration::from_millis(13 * killed as u64));
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            killed += 1;
            child = start(killed + exited);
            continue;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    (killed, exited)
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

fn count(pool: &Pool, sql: &'static str) -> i64 {
    with_conn!(pool, |c| diesel::sql_query(sql).get_result::<Count>(c).map_err(DbError::from)).unwrap().n
}

/// What the `changes` table holds of one submission: its changes, its acceptances, and the
/// (effect record, state) of each effect change in feed order.
type Recorded = (u64, u64, Vec<(String, String)>);

#[derive(diesel::QueryableByName)]
struct ChangeRow {
    #[diesel(sql_type = Text)]
    submission_id: String,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Nullable<Text>)]
    subject_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    state: Option<String>,
}

#[derive(diesel::QueryableByName)]
struct EffectRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    submission_id: String,
    #[diesel(sql_type = Text)]
    state: String,
    #[diesel(sql_type = BigInt)]
    deliveries: i64,
}

/// Every way the copy differs from what the clients were answered and the database holds.
fn check(pool: &Pool, copy: &Copy, sent: &Sent, submissions: usize) -> Vec<String> {
    let mut problems: Vec<String> = sent.unexpected.clone();
    if sent.ids.len() != submissions {
        problems.push(format!("{} submission IDs answered for {submissions} operations", sent.ids.len()));
    }
    let copied: BTreeSet<String> = copy.submissions.keys().cloned().collect();
    if copied != sent.ids {
        problems.push(format!(
            "the copy holds {} submissions, {} of them not answered to a client; {} answered ones missing",
            copied.len(),
            copied.difference(&sent.ids).count(),
            sent.ids.difference(&copied).count()
        ));
    }
    let (changes, effects) = with_conn!(pool, |c| (|| {
        let changes = diesel::sql_query(
            "SELECT submission_id, kind, subject_id, state FROM changes ORDER BY xid, seq",
        )
        .load::<ChangeRow>(c)
        .map_err(DbError::from)?;
        let effects = diesel::sql_query(
            "SELECT e.id, e.submission_id, e.state, (SELECT count(*) FROM effect_attempts a WHERE a.effect_id = e.id \
             AND a.outcome IN ('sent', 'transient', 'permanent', 'ambiguous')) AS deliveries \
             FROM side_effects e WHERE e.submission_id IS NOT NULL",
        )
        .load::<EffectRow>(c)
        .map_err(DbError::from)?;
        Ok::<_, DbError>((changes, effects))
    })())
    .unwrap();
    // The database's record of each submission: its changes and, per effect, its states.
    let mut recorded: BTreeMap<&str, Recorded> = BTreeMap::new();
    for row in &changes {
        let entry = recorded.entry(&row.submission_id).or_default();
        entry.0 += 1;
        match row.kind.as_str() {
            "accepted" => entry.1 += 1,
            "effect_state" => entry
                .2
                .push((row.subject_id.clone().unwrap_or_default(), row.state.clone().unwrap_or_default())),
            other => problems.push(format!("{}: an unexpected change {other}", row.submission_id)),
        }
    }
    if recorded.len() != submissions {
        problems.push(format!("the changes table names {} submissions", recorded.len()));
    }
    for (id, (n, accepted, history)) in &recorded {
        let Some(copied) = copy.submissions.get(*id) else {
            problems.push(format!("{id}: in the changes table, not in the copy"));
            continue;
        };
        if *accepted != 1 {
            problems.push(format!("{id}: accepted {accepted} times in the changes table"));
        }
        if copied.changes != *n {
            problems.push(format!("{id}: {} changes applied, {n} recorded", copied.changes));
        }
        if copied.status != "accepted" {
            problems.push(format!("{id}: status {} in the copy", copied.status));
        }
        if copied.history != *history {
            problems.push(format!("{id}: states applied {:?}, recorded {history:?}", copied.history));
        }
    }
    for e in &effects {
        let states: Vec<&str> = copy
            .submissions
            .get(&e.submission_id)
            .map(|s| s.history.iter().filter(|(id, _)| *id == e.id).map(|(_, s)| s.as_str()).collect())
            .unwrap_or_default();
        let claims = states.iter().filter(|s| **s == "SENDING").count() as i64;
        if e.state != "SENT" || states.last() != Some(&e.state.as_str()) {
            problems.push(format!("{}: {} in the database, {states:?} in the copy", e.id, e.state));
        }
        if claims != e.deliveries {
            problems
                .push(format!("{}: {claims} claims in the copy, {} attempts recorded", e.id, e.deliveries));
        }
    }
    problems
}
