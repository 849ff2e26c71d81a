//! Database unreachable: 503 with Retry-After, `/readyz` 503, nothing half-written; once the
//! database is back, the same key is accepted.

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use serde_json::Value;

use crate::support::proxy::Proxy;
use crate::support::{inquiry, new_key, problem_type, spawn_on, test_config, Backend, TestApp, TestDb};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_behind_a_cut_connection_answers_503_and_writes_nothing() {
    let db = TestDb::new(Backend::Postgres);
    let proxy = Proxy::start(db.host_port()).await;
    let mut config = test_config(&db.url_via(&format!("127.0.0.1:{}", proxy.port)));
    config.database.acquire_timeout_ms = 500;
    let app = spawn_on(db, config).await;
    let key = new_key();

    proxy.cut();
    assert_unavailable(&app, &key, 503).await;
    proxy.restore();

    assert_recovers(&app, &key).await;
}

/// The connection is cut in the middle of the accept transaction (a trigger holds it there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_cut_mid_transaction_leaves_nothing_half_written() {
    let db = TestDb::new(Backend::Postgres);
    let proxy = Proxy::start(db.host_port()).await;
    let direct_url = db.url.clone();
    let mut config = test_config(&db.url_via(&format!("127.0.0.1:{}", proxy.port)));
    config.database.acquire_timeout_ms = 500;
    let app = spawn_on(db, config).await;
    let mut direct = onceform::db::establish_pg(&direct_url).unwrap();
    direct
        .batch_execute(
            "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1); RETURN NULL; END $$;
             CREATE TRIGGER slow BEFORE INSERT ON side_effects FOR EACH STATEMENT EXECUTE FUNCTION slow();",
        )
        .unwrap();
    let key = new_key();

    let pending = {
        let (client, url, key) = (app.client.clone(), app.url("/api/forms/contact/submissions"), key.clone());
        tokio::spawn(async move {
            client.post(url).header("Idempotency-Key", key).json(&inquiry("Cut short")).send().await.unwrap()
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    proxy.cut();
    let resp = pending.await.unwrap();
    assert_eq!(resp.status(), 503);
    assert!(resp.headers().get("retry-after").is_some());
    proxy.restore();
    direct.batch_execute("DROP TRIGGER slow ON side_effects").unwrap();

    assert_recovers(&app, &key).await;
}

/// A second request while the first still holds the key gets 409 operation-in-progress.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_held_by_an_open_transaction_is_in_progress() {
    let db = TestDb::new(Backend::Postgres);
    let direct_url = db.url.clone();
    let app = spawn_on(db, test_config(&direct_url)).await;
    let key = new_key();
    let mut holder = onceform::db::establish_pg(&direct_url).unwrap();
    holder
        .batch_execute(&format!(
            "BEGIN; INSERT INTO submissions (id, form, operation_id, fingerprint, response_body, channel, \
             received_at, operation_expires_at) VALUES ('held', 'contact', '{key}', 'x', '{{}}', 'api', now(), now())"
        ))
        .unwrap();
    let resp = app.submit(&key, &inquiry("Second click")).await;
    assert_eq!(resp.status(), 409);
    assert!(resp.headers().get("retry-after").is_some());
    assert_eq!(problem_type(&resp.json().await.unwrap()), "operation-in-progress");
    holder.batch_execute("ROLLBACK").unwrap();
    assert_eq!(app.submit(&key, &inquiry("Second click")).await.status(), 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_locked_by_another_writer_answers_503_and_writes_nothing() {
    let db = TestDb::new(Backend::Sqlite);
    let mut config = test_config(&db.url);
    config.database.busy_timeout_ms = 200;
    let path = db.url.trim_start_matches("sqlite://").to_string();
    let app = spawn_on(db, config).await;
    let key = new_key();

    let mut locker = SqliteConnection::establish(&path).unwrap();
    // Wait out the app's own brief locks (its pool opening connections), then hold the lock.
    locker.batch_execute("PRAGMA busy_timeout = 5000; BEGIN EXCLUSIVE").unwrap();
    assert_unavailable(&app, &key, 200).await;
    locker.batch_execute("ROLLBACK").unwrap();

    assert_recovers(&app, &key).await;
}

/// `ready`: what `/readyz` answers meanwhile: 503 when the database cannot be reached, 200
/// while SQLite's write lock is merely held (the probe reads; it never queues for the lock).
async fn assert_unavailable(app: &TestApp, key: &str, ready: u16) {
    let resp = app.submit(key, &inquiry("While the database is down")).await;
    assert_eq!(resp.status(), 503);
    assert!(resp.headers().get("retry-after").is_some());
    let problem: Value = resp.json().await.unwrap();
    assert_eq!(problem_type(&problem), "service-unavailable");

    let probe = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(probe.status(), ready);
    assert_eq!(probe.headers().get("retry-after").is_some(), ready == 503);
    assert_eq!(app.client.get(app.url("/healthz")).send().await.unwrap().status(), 200);
}

async fn assert_recovers(app: &TestApp, key: &str) {
    let stats = app.stats().await;
    assert_eq!((stats.submissions, stats.effects_total()), (0, 0), "nothing half-written");
    assert_eq!(app.client.get(app.url("/readyz")).send().await.unwrap().status(), 200);
    assert_eq!(app.submit(key, &inquiry("While the database is down")).await.status(), 201);
    assert_eq!(app.stats().await.effects_total(), 3);
}
