//! Database unreachable: 503 with Retry-After, `/readyz` 503, nothing half-written; once the
//! database is back, the same key is accepted.

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use serde_json::Value;

use crate::support::proxy::Proxy;
use crate::support::{inquiry, new_key, problem_type, spawn_on, test_config, Backend, TestApp, TestDb};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_behind_a_cut_connection_answers_503_and_writes_nothing() {
    let proxy = Proxy::start("127.0.0.1:5432").await;
    let db = TestDb::new(Backend::Postgres);
    let mut config = test_config(&db.url_via(&format!("127.0.0.1:{}", proxy.port)));
    config.database.acquire_timeout_ms = 500;
    let app = spawn_on(db, config).await;
    let key = new_key();

    proxy.cut();
    assert_unavailable(&app, &key).await;
    proxy.restore();

    assert_recovers(&app, &key).await;
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
    locker.batch_execute("BEGIN EXCLUSIVE").unwrap();
    assert_unavailable(&app, &key).await;
    locker.batch_execute("ROLLBACK").unwrap();

    assert_recovers(&app, &key).await;
}

async fn assert_unavailable(app: &TestApp, key: &str) {
    let resp = app.submit(key, &inquiry("While the database is down")).await;
    assert_eq!(resp.status(), 503);
    assert!(resp.headers().get("retry-after").is_some());
    let problem: Value = resp.json().await.unwrap();
    assert_eq!(problem_type(&problem), "service-unavailable");

    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503);
    assert!(ready.headers().get("retry-after").is_some());
    assert_eq!(app.client.get(app.url("/healthz")).send().await.unwrap().status(), 200);
}

async fn assert_recovers(app: &TestApp, key: &str) {
    let stats = app.stats().await;
    assert_eq!((stats.submissions, stats.effects_total()), (0, 0), "nothing half-written");
    assert_eq!(app.client.get(app.url("/readyz")).send().await.unwrap().status(), 200);
    assert_eq!(app.submit(key, &inquiry("While the database is down")).await.status(), 201);
    assert_eq!(app.stats().await.effects_total(), 3);
}
