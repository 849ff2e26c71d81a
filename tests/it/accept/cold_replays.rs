//! A retry whose entry has left the replay memory (PostgreSQL): answered by a plain read,
//! so it neither writes nor waits on a lock. Shown with the submissions table locked
//! against writes by another session: the cold replay still answers at once.

use std::sync::mpsc;
use std::time::Duration;

use diesel::{Connection, PgConnection, RunQueryDsl};

use crate::support::{inquiry, new_key, spawn_app_with, Backend};
use onceform::db::DatabaseUrl;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_replay_on_postgres_takes_no_write_lock() {
    let app = spawn_app_with(Backend::Postgres, |c| c.server.replay_cache = 2).await;
    let key = new_key();
    let first = app.submit(&key, &inquiry("First")).await;
    assert_eq!(first.status(), 201);
    let body = first.text().await.unwrap();
    for i in 0..6 {
        assert_eq!(app.submit(&new_key(), &inquiry(&format!("Newer {i}"))).await.status(), 201);
    }

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

    let replay = tokio::time::timeout(Duration::from_secs(3), app.submit(&key, &inquiry("First"))).await;
    release_tx.send(()).unwrap();
    holder.join().unwrap();
    let replay = replay.expect("the cold replay waited on the write lock");
    assert_eq!(replay.status(), 200);
    assert_eq!(replay.text().await.unwrap(), body, "the first body, byte for byte");
    // A changed retry under the same key is still a conflict, recorded.
    assert_eq!(app.submit(&key, &inquiry("Changed")).await.status(), 409);
    assert_eq!(app.stats().await.submissions, 7);
}
