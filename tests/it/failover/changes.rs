//! The change feed across a failover of a replicated PostgreSQL: the example consumer
//! (`examples/changes_consumer.rs`) reads while clients submit, the primary is killed and the
//! standby promoted; restarted after every error, it ends with a copy equal to the whole feed
//! read from the new primary, every acknowledged submission accepted once: no change skipped
//! or repeated across the promotion.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::delivery::workers::wait_for;
use crate::support::cluster::Cluster;
use crate::support::{inquiry, new_key, spawn_on, test_config, TestDb};
use crate::web::changes_consumer::consumer::{self, Consumer};
use crate::web::changes_consumer::{token, whole_feed};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_consumer_reading_across_a_promotion_never_skips_or_repeats_a_change() {
    let Some(cluster) = tokio::task::spawn_blocking(Cluster::start).await.unwrap().map(Arc::new) else {
        return;
    };
    let url = cluster.url(true);
    let mut config = test_config(&url);
    config.database.acquire_timeout_ms = 1000;
    let app = spawn_on(TestDb::external(url), config).await;
    let token = token(&app).await;
    let dir = std::env::temp_dir().join(format!("onceform-feed-failover-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let consumer =
        Arc::new(Consumer { base: app.url(""), token, file: dir.join("copy.json"), limit: 5, follow: false });

    // Clients submit (retrying on 503 with the same key) and the consumer reads, restarted
    // after each error, until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let submitting = {
        let (client, url, stop, acked) =
            (app.client.clone(), app.url("/api/forms/contact/submissions"), stop.clone(), acked.clone());
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                let (key, body) = (new_key(), inquiry(&format!("Inquiry {i} across the failover")));
                i += 1;
                loop {
                    let sent = client.post(&url).header("Idempotency-Key", &key).json(&body).send().await;
                    if let Ok(resp) = sent {
                        if matches!(resp.status().as_u16(), 200 | 201) {
                            let v: serde_json::Value = resp.json().await.unwrap();
                            acked.lock().unwrap().push(v["submission_id"].as_str().unwrap().to_string());
                            break;
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        })
    };
    let reading = {
        let (consumer, stop) = (consumer.clone(), stop.clone());
        tokio::spawn(async move {
            let mut errors = 0;
            while !stop.load(Ordering::SeqCst) {
                if consumer.run(|_| {}).await.is_err() {
                    errors += 1;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            errors
        })
    };
    let count = || acked.lock().unwrap().len();
    wait_for("traffic", Duration::from_secs(20), || count() >= 20).await;
    let primary = cluster.primary().unwrap();
    let standby = cluster.nodes().into_iter().find(|p| *p != primary).unwrap();
    cluster.kill(primary);
    let c = cluster.clone();
    tokio::task::spawn_blocking(move || c.wait_writable(standby, Duration::from_secs(60))).await.unwrap();
    let after = count();
    wait_for("submissions on the new primary", Duration::from_secs(30), || count() >= after + 20).await;
    stop.store(true, Ordering::SeqCst);
    submitting.await.unwrap();
    let errors = reading.await.unwrap();

    // Read to the end (the feed serves what every older transaction has ended for).
    let acked = acked.lock().unwrap().clone();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ran = consumer.run(|_| {}).await;
        let copy = consumer::load(&consumer.file).unwrap();
        let (expected, _) = whole_feed(&app, &consumer.token).await;
        let all_in = acked.iter().all(|id| copy.submissions.contains_key(id));
        if ran.is_ok() && all_in && copy == expected {
            for id in &acked {
                assert_eq!(copy.submissions[id].changes, 1, "{id}: accepted once, nothing else");
            }
            assert_eq!(copy.submissions.len(), acked.len(), "nothing that was not acknowledged");
            eprintln!("{} submissions, {errors} consumer error(s) during the failover", acked.len());
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the copy never matched the feed: {ran:?}, {} of {}",
            copy.submissions.len(),
            acked.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
