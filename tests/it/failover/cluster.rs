//! Failover of a replicated PostgreSQL (pg_auto_failover: a monitor, a primary and a
//! synchronous secondary, started by `scripts/failover-cluster.sh` for each test): the
//! primary killed with SIGKILL under load, a worker killed mid-delivery during it, and no
//! writable node at all. Skipped where pg_auto_failover is not installed (`./test.sh`
//! installs it). The longer run is `cargo bench --bench chaos`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel::prelude::*;
use serde_json::Value;

use crate::delivery::workers::{config_file, wait_for};
use crate::support::cluster::Cluster;
use crate::support::crm::{FakeCrm, Fault};
use crate::support::smtp::SmtpSink;
use crate::support::worker_process::WorkerProcess;
use crate::support::{inquiry, new_key, seed, spawn_on, test_config, TestApp, TestDb};

async fn cluster() -> Option<Arc<Cluster>> {
    tokio::task::spawn_blocking(Cluster::start).await.unwrap().map(Arc::new)
}

/// Waits (off the runtime's threads) until `port` takes writes; how long that took.
async fn writable(cluster: &Arc<Cluster>, port: u16) -> Duration {
    let c = cluster.clone();
    tokio::task::spawn_blocking(move || c.wait_writable(port, Duration::from_secs(60))).await.unwrap()
}

/// The app in this process on the cluster's multi-host URL.
async fn app_on(cluster: &Cluster, follow: bool) -> TestApp {
    let url = cluster.url(follow);
    let mut config = test_config(&url);
    config.database.acquire_timeout_ms = 1000;
    spawn_on(TestDb::external(url), config).await
}

fn other(cluster: &Cluster, port: u16) -> u16 {
    cluster.nodes().into_iter().find(|p| *p != port).unwrap()
}

/// What the clients saw: acknowledged (key, submission id), and every status code.
#[derive(Default)]
struct Seen {
    acked: Vec<(String, String)>,
    statuses: Vec<u16>,
    without_retry_after: usize,
}

/// `n` clients, each sending a new submission and retrying it with its key on 503 (and 409)
/// until it is acknowledged, until `stop`.
fn clients(
    app: &TestApp,
    n: usize,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..n)
        .map(|i| {
            let (client, url) = (app.client.clone(), app.url("/api/forms/contact/submissions"));
            let (stop, seen) = (stop.clone(), seen.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let key = new_key();
                    let body = inquiry(&format!("Client {i} during the failover"));
                    loop {
                        let sent = client.post(&url).header("Idempotency-Key", &key).json(&body).send().await;
                        let Ok(resp) = sent else { continue };
                        let status = resp.status().as_u16();
                        let retry_after = resp.headers().contains_key("retry-after");
                        let text: Value = resp.json().await.unwrap_or_default();
                        {
                            let mut s = seen.lock().unwrap();
                            s.statuses.push(status);
                            if status == 503 && !retry_after {
                                s.without_retry_after += 1;
                            }
                            if matches!(status, 200 | 201) {
                                let id = text["submission_id"].as_str().unwrap_or("").to_string();
                                s.acked.push((key.clone(), id));
                            }
                        }
                        if matches!(status, 200 | 201) {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_submissions_outlive_a_primary_kill_and_are_on_the_new_primary() {
    let Some(cluster) = cluster().await else { return };
    let app = app_on(&cluster, true).await;
    let primary = cluster.primary().unwrap();
    let standby = other(&cluster, primary);
    let (stop, seen) = (Arc::new(AtomicBool::new(false)), Arc::new(Mutex::new(Seen::default())));
    let tasks = clients(&app, 4, stop.clone(), seen.clone());
    let acked = || seen.lock().unwrap().acked.len();
    wait_for("traffic", Duration::from_secs(10), || acked() >= 20).await;

    cluster.kill(primary);
    let killed_at = acked();
    let promoted = writable(&cluster, standby).await;
    let writable_at = acked();
    wait_for("answers from the new primary", Duration::from_secs(30), || acked() >= writable_at + 20).await;
    stop.store(true, Ordering::SeqCst);
    for t in tasks {
        t.await.unwrap();
    }

    let seen = std::mem::take(&mut *seen.lock().unwrap());
    let unexpected: Vec<u16> =
        seen.statuses.iter().copied().filter(|s| !matches!(s, 200 | 201 | 409 | 503)).collect();
    assert_eq!(unexpected, Vec::<u16>::new(), "no 5xx but 503");
    assert_eq!(seen.without_retry_after, 0, "every 503 says when to retry");
    let unavailable = seen.statuses.iter().filter(|s| **s == 503).count();
    eprintln!(
        "acknowledged {} ({killed_at} before the kill), 503 {unavailable}, standby writable after {promoted:?}",
        seen.acked.len()
    );

    // On the new primary itself: every acknowledged submission, under its id, once.
    let mut direct = onceform::db::establish_pg(&cluster.node_url(standby)).unwrap();
    use onceform::db::schema::{side_effects, submissions};
    let stored: Vec<(String, String)> =
        submissions::table.select((submissions::operation_id, submissions::id)).load(&mut direct).unwrap();
    let stored: std::collections::HashMap<String, String> = stored.into_iter().collect();
    for (key, id) in &seen.acked {
        assert_eq!(stored.get(key), Some(id), "acknowledged {key} is on the new primary");
    }
    assert_eq!(stored.len(), seen.acked.len(), "nothing stored that was not acknowledged, nothing twice");
    let effects: i64 = side_effects::table.count().get_result(&mut direct).unwrap();
    assert_eq!(effects, 3 * seen.acked.len() as i64);

    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);

    // The old primary rejoins as the synchronous secondary, with all of it.
    cluster.restart(primary);
    let c = cluster.clone();
    tokio::task::spawn_blocking(move || c.wait_healthy(60)).await.unwrap();
    assert_eq!(cluster.primary(), Some(standby));
    let mut rejoined = onceform::db::establish_pg(&cluster.node_url(primary)).unwrap();
    let there: i64 = submissions::table.count().get_result(&mut rejoined).unwrap();
    assert_eq!(there, seen.acked.len() as i64, "the rejoined node holds every acknowledged submission");
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    let counter = |name: &str| -> u64 {
        metrics.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
    };
    assert!(counter("onceform_db_failovers_total ") >= 1, "{metrics}");
    assert!(counter("onceform_db_reconnects_total ") >= 1, "{metrics}");
}

/// The effects' (kind, state, count) on the cluster's primary.
async fn effect_states(url: &str) -> Vec<(String, String, i64)> {
    let url = url.to_string();
    tokio::task::spawn_blocking(move || {
        let mut c = onceform::db::establish_pg(&url).ok()?;
        use onceform::db::schema::side_effects::dsl as e;
        e::side_effects
            .group_by((e::kind, e::state))
            .select((e::kind, e::state, diesel::dsl::count_star()))
            .load::<(String, String, i64)>(&mut c)
            .ok()
    })
    .await
    .unwrap()
    .unwrap_or_default()
}

/// A worker is stuck in a CRM call (the lead created, no answer yet) when the primary is
/// killed, and is itself killed with SIGKILL; a second worker on the new primary finishes
/// the queue: each lead and each email exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_delivery_during_a_failover_does_not_deliver_twice() {
    let Some(cluster) = cluster().await else { return };
    let (crm, smtp) = (FakeCrm::start().await, SmtpSink::start().await);
    crm.push_fault(Fault::SlowAfterCreate(Duration::from_secs(30)));
    let db = TestDb::external(cluster.url(true));
    let path = config_file(&db, &crm, &smtp, 2);
    let config = onceform::services::check_config::load(Some(&path), |_| None).unwrap();
    let pool = onceform::db::Pool::connect(&config.database).unwrap();
    seed(&pool, &config, 3).await; // 3 leads, 6 emails
    drop(pool);
    let primary = cluster.primary().unwrap();
    let standby = other(&cluster, primary);

    let mut first = WorkerProcess::start(&path);
    wait_for("the CRM call", Duration::from_secs(20), || !crm.leads().is_empty()).await;
    cluster.kill(primary);
    first.kill9();
    writable(&cluster, standby).await;

    let _second = WorkerProcess::start(&path);
    let url = cluster.url(true);
    let deadline = Instant::now() + Duration::from_secs(40);
    let states = loop {
        let states = effect_states(&url).await;
        let leads_sent = states.iter().any(|(k, s, n)| k == "crm_lead" && s == "SENT" && *n == 3);
        let mail_open =
            states.iter().any(|(k, s, _)| k != "crm_lead" && matches!(s.as_str(), "PENDING" | "SENDING"));
        if leads_sent && !mail_open {
            break states;
        }
        assert!(Instant::now() < deadline, "not finished: {states:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    let mut refs: Vec<String> = crm.leads().into_iter().map(|(r, _)| r).collect();
    refs.sort();
    refs.dedup();
    assert_eq!((refs.len(), crm.leads().len()), (3, 3), "each lead created exactly once");
    let mut ids: Vec<String> = smtp
        .messages()
        .iter()
        .filter_map(|m| m.lines().find(|l| l.starts_with("Message-ID:")).map(String::from))
        .collect();
    let sent_mail: i64 =
        states.iter().filter(|(k, s, _)| k != "crm_lead" && s == "SENT").map(|(_, _, n)| n).sum();
    let total = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), total, "no email twice");
    assert!(sent_mail as usize <= total, "every SENT email reached the sink: {states:?}");
    // An email whose SMTP answer was lost with the worker stays UNKNOWN (it has no lookup):
    // it says why it is not SENT, and it was not sent again.
    let mail: i64 = states.iter().filter(|(k, _, _)| k != "crm_lead").map(|(_, _, n)| n).sum();
    assert_eq!(mail, 6, "{states:?}");
    assert!(
        states
            .iter()
            .filter(|(k, _, _)| k != "crm_lead")
            .all(|(_, s, _)| matches!(s.as_str(), "SENT" | "UNKNOWN")),
        "{states:?}"
    );
    let _ = std::fs::remove_file(&path);
}

/// Both nodes named without `target_session_attrs`: once the primary is gone and nothing
/// promotes the standby (the monitor is stopped), the standby still answers, but no node
/// takes writes, so `/readyz` is 503 and submissions 503 with Retry-After.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_is_503_with_no_writable_node_under_a_url_without_target_session_attrs() {
    let Some(cluster) = cluster().await else { return };
    let app = app_on(&cluster, false).await;
    let ready = || async { app.client.get(app.url("/readyz")).send().await.unwrap() };
    assert_eq!(ready().await.status(), 200);
    let primary = cluster.primary().unwrap();
    let standby = other(&cluster, primary);

    cluster.stop_monitor();
    cluster.kill(primary);
    let mut reach = onceform::db::establish_pg(&cluster.node_url(standby)).unwrap();
    assert!(!onceform::db::primary_pg::writable(&mut reach).unwrap(), "the standby answers, read-only");

    let deadline = Instant::now() + Duration::from_secs(20);
    while ready().await.status() != 503 {
        assert!(Instant::now() < deadline, "/readyz stayed 200 with no writable node");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for _ in 0..3 {
        let probe = ready().await;
        assert_eq!(probe.status(), 503, "and stays 503");
        assert!(probe.headers().contains_key("retry-after"));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let resp = app.submit(&new_key(), &inquiry("No primary anywhere")).await;
    assert_eq!(resp.status(), 503);
    assert!(resp.headers().contains_key("retry-after"));
    assert_eq!(app.client.get(app.url("/healthz")).send().await.unwrap().status(), 200);
}
