//! A commit whose answer is lost (the connection drops after the server committed, as in a
//! failover): the request is answered only once its outcome is known, 503 with Retry-After
//! meanwhile, never 201 with an unknown outcome; the client's retry replays the stored
//! result, and nothing is stored or sent twice.

use std::sync::atomic::Ordering;

use serde_json::Value;

use crate::support::proxy::CommitCutter;
use crate::support::{inquiry, new_key, problem_type, spawn_on, test_config, Backend, TestDb};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_commit_is_answered_503_and_its_retry_replays_the_stored_result() {
    let db = TestDb::new(Backend::Postgres);
    let cutter = CommitCutter::start(db.host_port(), b"INSERT INTO submissions").await;
    let url = format!("{}&sslmode=disable", db.url_via(&format!("127.0.0.1:{}", cutter.port)));
    let mut config = test_config(&url);
    config.database.acquire_timeout_ms = 1000;
    let app = spawn_on(db, config).await;
    let key = new_key();
    let body = inquiry("Cut at the commit");

    let first = app.submit(&key, &body).await;
    assert!(cutter.cut.load(Ordering::SeqCst), "the accept's reply was dropped after it ran");
    assert_eq!(first.status(), 503, "an unknown outcome is not acknowledged");
    assert!(first.headers().get("retry-after").is_some());
    assert_eq!(problem_type(&first.json::<Value>().await.unwrap()), "service-unavailable");
    let stats = app.stats().await;
    assert_eq!((stats.submissions, stats.effects_total()), (1, 3), "the server had committed it");
    let stored = app.stored_fields(&key).await.unwrap();
    assert_eq!(stored["message"], "Cut at the commit");

    let retry = app.submit(&key, &body).await;
    assert_eq!(retry.status(), 200);
    assert_eq!(retry.headers().get("idempotent-replayed").unwrap(), "true");
    let receipt: Value = retry.json().await.unwrap();
    assert_eq!(receipt["operation_id"], key.as_str());
    let submission_id = receipt["submission_id"].as_str().unwrap().to_string();
    let again: Value = app.submit(&key, &body).await.json().await.unwrap();
    assert_eq!(again["submission_id"], submission_id.as_str(), "one stored result, replayed");
    let stats = app.stats().await;
    assert_eq!((stats.submissions, stats.effects_total()), (1, 3), "nothing stored twice");
    let effects = app.effects_of(&key).await;
    assert!(effects.iter().all(|(_, state)| state == "PENDING"), "{effects:?}");
}
