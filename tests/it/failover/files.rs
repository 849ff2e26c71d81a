//! Files kept in a replicated PostgreSQL (`files = "database"`, the default there) while its
//! primary is killed: every upload answered 201 is on the new primary whole, byte for byte,
//! and every submission naming one replays; an upload cut by the failover left no blob under
//! a digest, only chunks under a temporary key, which the sweep deletes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use diesel::prelude::*;
use serde_json::{json, Value};

use crate::delivery::workers::wait_for;
use crate::files::attach::with_quote;
use crate::support::cluster::Cluster;
use crate::support::files::{age_stored, kept_blobs, pdf, read_stored, sha256};
use crate::support::{new_key, spawn_on, test_config, TestApp, TestDb};
use onceform::config::FileStoreKind;

/// A file of about 1.5 MB (two chunks of the store), unique to `tag`.
fn drawing(tag: &str) -> Vec<u8> {
    let mut bytes = pdf(tag);
    bytes.resize(1_500_000, b'.');
    bytes
}

/// What the clients saw: the uploads answered 201 (digest, bytes), the submissions naming
/// them answered 201 (key, body, submission id), every digest tried, every status.
#[derive(Default)]
struct Seen {
    uploaded: Vec<(String, Vec<u8>)>,
    submitted: Vec<(String, Value, String, String)>,
    tried: Vec<String>,
    statuses: Vec<u16>,
}

/// `n` clients, each uploading a new file and, once it is answered 201, naming it in a
/// submission retried under its key until acknowledged; an upload that fails is not retried
/// (its bytes are tried once), until `stop`.
fn clients(
    app: &TestApp,
    n: usize,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..n)
        .map(|i| {
            let (client, uploads, submissions) = (
                app.client.clone(),
                app.url("/api/forms/quote/uploads"),
                app.url("/api/forms/quote/submissions"),
            );
            let (stop, seen) = (stop.clone(), seen.clone());
            tokio::spawn(async move {
                let mut k = 0;
                while !stop.load(Ordering::SeqCst) {
                    k += 1;
                    let bytes = drawing(&format!("client {i} file {k}"));
                    let digest = sha256(&bytes);
                    seen.lock().unwrap().tried.push(digest.clone());
                    let sent = client
                        .post(&uploads)
                        .header("Content-Type", "application/octet-stream")
                        .header("Onceform-File-Name", "drawing.pdf")
                        .body(bytes.clone())
                        .send()
                        .await;
                    let Ok(resp) = sent else {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    };
                    let status = resp.status().as_u16();
                    let answer: Value = resp.json().await.unwrap_or_default();
                    seen.lock().unwrap().statuses.push(status);
                    if status != 201 {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                    assert_eq!(answer["sha256"], digest.as_str());
                    seen.lock().unwrap().uploaded.push((digest.clone(), bytes));
                    let (key, body) =
                        (new_key(), json!({"email": "mei@example.com", "drawing": [answer["upload_id"]]}));
                    loop {
                        let sent = client
                            .post(&submissions)
                            .header("Idempotency-Key", &key)
                            .json(&body)
                            .send()
                            .await;
                        let Ok(resp) = sent else { continue };
                        let status = resp.status().as_u16();
                        let receipt: Value = resp.json().await.unwrap_or_default();
                        seen.lock().unwrap().statuses.push(status);
                        if matches!(status, 200 | 201) {
                            let id = receipt["submission_id"].as_str().unwrap_or("").to_string();
                            seen.lock().unwrap().submitted.push((key, body, id, digest));
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
async fn every_upload_answered_201_outlives_a_primary_kill_whole() {
    let Some(cluster) = tokio::task::spawn_blocking(Cluster::start).await.unwrap().map(Arc::new) else {
        return;
    };
    let url = cluster.url(true);
    let mut config = test_config(&url);
    config.database.acquire_timeout_ms = 1000;
    with_quote(&mut config);
    let quote = config.forms.get_mut("quote").unwrap();
    quote.max_files_bytes = 4_000_000;
    quote.fields.iter_mut().filter(|f| f.name == "drawing").for_each(|f| f.max_bytes = Some(2_000_000));
    assert_eq!(config.server.file_store(&config.database.url), FileStoreKind::Database);
    let app = spawn_on(TestDb::external(url), config).await;
    let primary = cluster.primary().unwrap();
    let standby = cluster.nodes().into_iter().find(|p| *p != primary).unwrap();

    let (stop, seen) = (Arc::new(AtomicBool::new(false)), Arc::new(Mutex::new(Seen::default())));
    let tasks = clients(&app, 3, stop.clone(), seen.clone());
    let submitted = || seen.lock().unwrap().submitted.len();
    wait_for("uploads", Duration::from_secs(20), || submitted() >= 6).await;
    cluster.kill(primary);
    let c = cluster.clone();
    tokio::task::spawn_blocking(move || c.wait_writable(standby, Duration::from_secs(60))).await.unwrap();
    let writable_at = submitted();
    wait_for("uploads to the new primary", Duration::from_secs(30), || submitted() >= writable_at + 6).await;
    stop.store(true, Ordering::SeqCst);
    for t in tasks {
        t.await.unwrap();
    }
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    let unexpected: Vec<u16> =
        seen.statuses.iter().copied().filter(|s| !matches!(s, 200 | 201 | 503)).collect();
    assert_eq!(unexpected, Vec::<u16>::new(), "no answer but 201, a replay or 503");
    eprintln!(
        "uploads tried {}, answered 201 {}, submitted {}, 503 {}",
        seen.tried.len(),
        seen.uploaded.len(),
        seen.submitted.len(),
        seen.statuses.iter().filter(|s| **s == 503).count()
    );

    // On the new primary: every upload answered 201, whole.
    for (digest, bytes) in &seen.uploaded {
        assert!(read_stored(&app.config, digest) == *bytes, "{digest} is on the new primary, byte for byte");
    }
    // No blob under a digest that is not whole: every complete blob is one of the files tried,
    // and reads back to its digest.
    let kept = kept_blobs(&app.config);
    for digest in &kept {
        assert!(seen.tried.contains(digest), "{digest} is no file a client sent");
        assert_eq!(sha256(&read_stored(&app.config, digest)), *digest, "{digest} is whole");
    }
    // Every submission acknowledged replays, naming its file.
    for (key, body, id, _) in &seen.submitted {
        let url = app.url("/api/forms/quote/submissions");
        let resp = app.client.post(url).header("Idempotency-Key", key).json(body).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{key}");
        let receipt: Value = resp.json().await.unwrap();
        assert_eq!(receipt["submission_id"], id.as_str());
    }
    // What the failover cut short is chunks under a temporary key: the sweep deletes them.
    use onceform::db::schema::blobs;
    let on_primary = |complete: bool| -> Vec<String> {
        let mut c = onceform::db::establish_pg(&cluster.node_url(standby)).unwrap();
        let mut keys: Vec<String> =
            blobs::table.filter(blobs::complete.eq(complete)).select(blobs::sha256).load(&mut c).unwrap();
        keys.sort();
        keys
    };
    assert!(on_primary(false).iter().all(|k| k.starts_with("tmp_")), "{:?}", on_primary(false));
    age_stored(&app.config);
    let files = onceform::services::files::Files::stored(&app.config.server, &app.config.database);
    onceform::services::files::sweep(&app.pool, &files, onceform::base::clock::now()).unwrap();
    assert_eq!(on_primary(false), Vec::<String>::new(), "the sweep deleted what was never finished");
    let kept = on_primary(true);
    for (.., digest) in &seen.submitted {
        assert!(kept.contains(digest), "{digest}, named by a submission, is kept");
    }
}
