//! Worker processes: a real SIGKILL mid-call, two processes draining one database, and
//! concurrent batch claims that never hand one record to two workers.

use std::time::{Duration, Instant};

use onceform::config::{Config, DEFAULT_CONFIG};

use crate::support::crm::{FakeCrm, Fault};
use crate::support::smtp::SmtpSink;
use crate::support::worker_process::WorkerProcess;
use crate::support::{seed, Backend, TestDb};

/// A configuration file for a worker process: the demo forms, the fakes, quick timings.
pub(crate) fn config_file(
    db: &TestDb,
    crm: &FakeCrm,
    smtp: &SmtpSink,
    lease_seconds: u64,
) -> std::path::PathBuf {
    let forms = &DEFAULT_CONFIG[DEFAULT_CONFIG.find("[forms.contact]").unwrap()..];
    let text = format!(
        "[database]\nurl = {:?}\n\n[crm]\nurl = \"{}/leads\"\nlookup_url = {:?}\n\n[smtp]\nurl = {:?}\n\n\
         [worker]\ncall_timeout_ms = 500\nlease_seconds = {lease_seconds}\npoll_ms = 20\nbackoff_base_ms = 20\n\
         reconcile_after_ms = 50\nconcurrency = 32\n\n{forms}",
        db.url,
        crm.url,
        crm.lookup_url(),
        smtp.url
    );
    let path = std::env::temp_dir().join(format!("onceform-worker-{}.toml", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, text).unwrap();
    path
}

pub(crate) async fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn effect_states(config: &Config) -> Vec<(String, String, i64)> {
    let config = config.clone();
    tokio::task::spawn_blocking(move || {
        let pool = onceform::db::Pool::connect(&config.database).unwrap();
        onceform::with_conn!(&pool, |c| onceform::db::Store::stats(c).map_err(onceform::db::DbError::from))
            .unwrap()
            .effects
            .into_iter()
            .map(|(kind, state, n)| (kind, state.to_string(), n))
            .collect()
    })
    .await
    .unwrap()
}

fn parsed(path: &std::path::Path) -> Config {
    onceform::services::check_config::load(Some(path), |_| None).unwrap()
}

crate::on_both_backends!(
    a_worker_killed_mid_call_leaves_unknown_which_is_reconciled,
    two_worker_processes_deliver_each_effect_exactly_once,
    concurrent_batch_claims_never_share_a_record,
);

async fn a_worker_killed_mid_call_leaves_unknown_which_is_reconciled(backend: Backend) {
    let db = TestDb::new(backend);
    let (crm, smtp) = (FakeCrm::start().await, SmtpSink::start().await);
    crm.push_fault(Fault::SlowAfterCreate(Duration::from_secs(30)));
    let path = config_file(&db, &crm, &smtp, 2);
    let config = parsed(&path);
    seed(&onceform::db::Pool::connect(&config.database).unwrap(), &config, 1).await;

    let mut first = WorkerProcess::start(&path);
    wait_for("the CRM call", Duration::from_secs(10), || !crm.leads().is_empty()).await;
    first.kill9();
    let states = effect_states(&config).await;
    assert!(states.iter().any(|(k, s, _)| k == "crm_lead" && s == "SENDING"), "{states:?}");

    let _second = WorkerProcess::start(&path);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let states = effect_states(&config).await;
        if states.iter().any(|(k, s, _)| k == "crm_lead" && s == "SENT") {
            break;
        }
        assert!(
            !states.iter().any(|(k, s, _)| k == "crm_lead" && s == "PENDING"),
            "never straight back to PENDING"
        );
        assert!(Instant::now() < deadline, "not reconciled: {states:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(crm.leads().len(), 1, "the CRM holds one lead");
    assert_eq!(crm.create_requests(), 1, "the lead was found, not sent again");
}

/// Two `worker` processes on one database (on SQLite each through its own group-commit
/// writer, claiming a batch ahead while delivering one): every effect delivered once.
async fn two_worker_processes_deliver_each_effect_exactly_once(backend: Backend) {
    let db = TestDb::new(backend);
    let (crm, smtp) = (FakeCrm::start().await, SmtpSink::start().await);
    let path = config_file(&db, &crm, &smtp, 30);
    let config = parsed(&path);
    seed(&onceform::db::Pool::connect(&config.database).unwrap(), &config, 334).await; // 1,002 effects

    let _workers = [WorkerProcess::start(&path), WorkerProcess::start(&path)];
    let expected_mail = 2 * 334;
    wait_for("the drain", Duration::from_secs(120), || {
        crm.leads().len() >= 334 && smtp.messages().len() >= expected_mail
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    let states = effect_states(&config).await;
    assert_eq!(states.iter().map(|(_, _, n)| n).sum::<i64>(), 1002);
    assert!(states.iter().all(|(_, s, _)| s == "SENT"), "{states:?}");
    let mut refs: Vec<String> = crm.leads().into_iter().map(|(r, _)| r).collect();
    refs.sort();
    refs.dedup();
    assert_eq!((refs.len(), crm.create_requests()), (334, 334), "each lead exactly once");
    let mut ids: Vec<String> = smtp
        .messages()
        .iter()
        .filter_map(|m| m.lines().find(|l| l.starts_with("Message-ID:")).map(String::from))
        .collect();
    assert_eq!(ids.len(), expected_mail);
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), expected_mail, "each email exactly once");
}

/// Eight claimers take batches of 16 at once until the queue is empty (on SQLite half of them
/// through the process's group-commit writer, half with a transaction of their own; on
/// PostgreSQL with SKIP LOCKED): every record is claimed exactly once, by one of them.
async fn concurrent_batch_claims_never_share_a_record(backend: Backend) {
    use onceform::db::{DbError, Pool, Queue, SqliteWriter, Store};
    let db = TestDb::new(backend);
    let (crm, smtp) = (FakeCrm::start().await, SmtpSink::start().await);
    let config = parsed(&config_file(&db, &crm, &smtp, 30));
    let pool = Pool::connect(&config.database).unwrap();
    seed(&pool, &config, 100).await; // 300 records
    let writer = match (&pool, &config.database.url) {
        (Pool::Sqlite(p), onceform::db::DatabaseUrl::Sqlite(file)) => {
            Some(SqliteWriter::shared(file, p).unwrap())
        }
        _ => None,
    };
    let claimers: Vec<_> = (0..8)
        .map(|n| {
            let (pool, writer) = (pool.clone(), writer.clone().filter(|_| n % 2 == 0));
            std::thread::spawn(move || {
                let owner = format!("claimer-{n}");
                let mut mine: Vec<String> = Vec::new();
                loop {
                    let (now, owner) = (onceform::base::clock::now(), owner.clone());
                    let lease = now + chrono::Duration::seconds(30);
                    let claim =
                        move |c: &mut onceform::db::DbConnection| Ok(c.claim_due(&owner, now, lease, 16)?);
                    let batch = match &writer {
                        Some(w) => w.run(claim),
                        None => onceform::with_conn!(&pool, |c| c.write_tx::<_, DbError, _>(claim)),
                    }
                    .unwrap();
                    if batch.is_empty() {
                        return mine;
                    }
                    let sending = onceform::domain::EffectState::Sending;
                    assert!(batch.iter().all(|r| r.state == sending && r.attempts == 1), "{batch:?}");
                    mine.extend(batch.into_iter().map(|r| r.id.as_str().to_string()));
                }
            })
        })
        .collect();
    let per_claimer: Vec<Vec<String>> = claimers.into_iter().map(|t| t.join().unwrap()).collect();
    let mut all: Vec<String> = per_claimer.iter().flatten().cloned().collect();
    let claimed = all.len();
    all.sort();
    all.dedup();
    assert_eq!((claimed, all.len()), (300, 300), "each record claimed once");
}
