//! Retries whose entry has left the replay memory: answered by a plain read, gathered with
//! the other such retries of the moment (`db::Lookups`), so they neither write nor wait on a
//! lock. On PostgreSQL this is shown with the submissions table locked against writes by
//! another session: the cold replays still answer at once.

use std::sync::mpsc;
use std::time::Duration;

use diesel::{Connection, PgConnection, RunQueryDsl};
use futures_util::future::join_all;

use crate::on_both_backends;
use crate::support::{inquiry, new_key, spawn_app_with, Backend, TestApp};
use onceform::db::DatabaseUrl;

on_both_backends!(concurrent_cold_replays_each_get_their_own_first_body);

/// Keys accepted first, each with its first body; pushed out of the replay memory (of 2) by
/// six newer submissions.
async fn cold_keys(app: &TestApp, n: usize) -> Vec<(String, String, serde_json::Value)> {
    let mut keys = Vec::new();
    for i in 0..n {
        let (key, body) = (new_key(), inquiry(&format!("First {i}")));
        let first = app.submit(&key, &body).await;
        assert_eq!(first.status(), 201);
        keys.push((key, first.text().await.unwrap(), body));
    }
    for i in 0..6 {
        assert_eq!(app.submit(&new_key(), &inquiry(&format!("Newer {i}"))).await.status(), 201);
    }
    keys
}

/// Every key retried three times at once, out of memory: read together, each request gets its own
/// key's first body, byte for byte, and nothing new is stored.
async fn concurrent_cold_replays_each_get_their_own_first_body(backend: Backend) {
    let app = spawn_app_with(backend, |c| c.server.replay_cache = 2).await;
    let keys = cold_keys(&app, 8).await;
    let app = &app;
    let retries = keys.iter().chain(&keys).chain(&keys).map(|(key, first, body)| async move {
        let replay = app.submit(key, body).await;
        (replay.status(), replay.text().await.unwrap(), first)
    });
    for (status, body, first) in join_all(retries).await {
        assert_eq!((status.as_u16(), &body), (200, first));
    }
    let stats = app.stats().await;
    assert_eq!(stats.submissions, 14);
    assert_eq!(stats.deliveries_with("replayed"), 24);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cold_replays_on_postgres_take_no_write_lock() {
    let app = spawn_app_with(Backend::Postgres, |c| c.server.replay_cache = 2).await;
    let keys = cold_keys(&app, 8).await;

    // Another session holds a lock that every INSERT into submissions waits for.
    let DatabaseUrl::Postgres(url) = app.config.database.url.clone() else { panic!("not PostgreSQL") };
    let (locked_tx, locked_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let mut c = PgConnection::establish(&url).unwrap();
        diesel::sql_query("BEGIN").execute(&mut c).unwrap();
        diesel::sql_query("LOCK TABLE submissions IN SHARE ROW EXCLUSIVE MODE").execute(&mut c).unwrap();
        locked_tx.send(()).unwrap();
        let _ = release_rx.recv_timeout(Duration::from_secs(30));
        diesel::sql_query("ROLLBACK").execute(&mut c).unwrap();
    });
    locked_rx.recv_timeout(Duration::from_secs(10)).unwrap();

    // Each key three times at once: a key asked for more than once in one gathered read is
    // answered each time.
    let app = &app;
    let retries = keys.iter().chain(&keys).chain(&keys).map(|(key, first, body)| async move {
        let replay = app.submit(key, body).await;
        (replay.status(), replay.text().await.unwrap(), first)
    });
    let replays = tokio::time::timeout(Duration::from_secs(3), join_all(retries)).await;
    release_tx.send(()).unwrap();
    holder.join().unwrap();
    for (status, body, first) in replays.expect("a cold replay waited on the write lock") {
        assert_eq!((status.as_u16(), &body), (200, first), "the first body, byte for byte");
    }
    // A changed retry under the same key is still a conflict, recorded.
    assert_eq!(app.submit(&keys[0].0, &inquiry("Changed")).await.status(), 409);
    let stats = app.stats().await;
    assert_eq!(stats.submissions, 14);
    assert_eq!(stats.open_conflicts, 1);
}
