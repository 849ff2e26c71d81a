//! Many simultaneous requests for one key, in one process and across two `serve` processes;
//! a `serve` process killed in the middle of traffic.

use onceform::db::{DbError, Store};
use onceform::with_conn;
use serde_json::Value;
use tokio::task::JoinSet;

use crate::on_both_backends;
use crate::support::serve_process::ServeProcess;
use crate::support::{inquiry, new_key, problem_type, spawn_app, Backend, TestDb};

on_both_backends!(
    sixty_four_simultaneous_requests_with_one_key_create_one_submission,
    simultaneous_first_requests_of_many_visitors_each_take_effect_once
);

async fn sixty_four_simultaneous_requests_with_one_key_create_one_submission(backend: Backend) {
    let app = spawn_app(backend).await;
    let key = new_key();
    let urls = vec![app.url("/api/forms/contact/submissions"); 64];
    let statuses = fire(&app.client, &urls, &key).await;
    assert_one_created(&statuses);
    let stats = app.stats().await;
    assert_eq!(stats.submissions, 1);
    assert_eq!(app.effects_of(&key).await.len(), 3, "one record per effect kind");
    assert_eq!(stats.deliveries_total(), 64);
}

/// Twenty-four visitors at once, each request sent twice (a double click), eight of them
/// with one address: on PostgreSQL these first claims share statements (`pg_batch`). Each
/// key is one submission with its three records and a delivery row per request, and the
/// one address gets one confirmation in the window, the other seven being cancelled.
async fn simultaneous_first_requests_of_many_visitors_each_take_effect_once(backend: Backend) {
    let app = spawn_app(backend).await;
    let url = app.url("/api/forms/contact/submissions");
    let visitors: Vec<(String, Value)> = (0..24)
        .map(|v| {
            let mut body = inquiry(&format!("Visitor {v} asks"));
            body["name"] = format!("Visitor Number{v}").into();
            body["email"] =
                if v < 8 { "shared@example.com".into() } else { format!("v{v}@example.com").into() };
            (new_key(), body)
        })
        .collect();
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(2 * visitors.len()));
    let mut set = JoinSet::new();
    for (n, (key, body)) in visitors.iter().chain(&visitors).enumerate() {
        let (client, url, key, body, barrier) =
            (app.client.clone(), url.clone(), key.clone(), body.clone(), barrier.clone());
        set.spawn(async move {
            barrier.wait().await;
            let resp = client.post(url).header("Idempotency-Key", &key).json(&body).send().await.unwrap();
            (n % 24, resp.status().as_u16(), resp.json::<Value>().await.unwrap())
        });
    }
    let answers = set.join_all().await;
    let mut cancelled = Vec::new();
    for (v, (key, _)) in visitors.iter().enumerate() {
        let mine: Vec<(u16, Value)> =
            answers.iter().filter(|a| a.0 == v).map(|a| (a.1, a.2.clone())).collect();
        assert_one_created(&mine);
        let effects = app.effects_of(key).await;
        assert_eq!(effects.len(), 3, "visitor {v}: {effects:?}");
        if effects.iter().any(|(kind, state)| kind == "confirmation_email" && state == "CANCELLED") {
            cancelled.push(v);
        }
    }
    assert_eq!(cancelled.len(), 7, "one confirmation for the shared address: cancelled {cancelled:?}");
    assert!(cancelled.iter().all(|v| *v < 8), "only the shared address is capped: {cancelled:?}");
    let stats = app.stats().await;
    assert_eq!(stats.submissions, 24);
    assert_eq!(stats.deliveries_total(), 48);
}

/// Two separate `onceform serve` processes on one PostgreSQL database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_serve_processes_on_one_postgres_create_one_submission_per_key() {
    let db = TestDb::new(Backend::Postgres);
    // Both start (and migrate) at once.
    let servers = ServeProcess::start_many(&db.url, 2);
    let client = reqwest::Client::new();
    for round in 0..3 {
        let key = new_key();
        let urls: Vec<String> =
            (0..64).map(|i| format!("{}/api/forms/contact/submissions", servers[i % 2].address)).collect();
        let statuses = fire(&client, &urls, &key).await;
        assert_one_created(&statuses);
        let status: Value = client
            .get(format!("{}/api/forms/contact/submissions/{key}", servers[1].address))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(status["effects"].as_array().unwrap().len(), 3, "round {round}");
    }
    let metrics =
        client.get(format!("{}/metrics", servers[0].address)).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("onceform_submissions_total 3\n"), "{metrics}");
    assert!(metrics.contains("onceform_deliveries_total{outcome=\"created\"} 3\n"), "{metrics}");
}

/// Sends one request per URL, all at once, with the same key and content.
async fn fire(client: &reqwest::Client, urls: &[String], key: &str) -> Vec<(u16, Value)> {
    let mut set = JoinSet::new();
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(urls.len()));
    for url in urls {
        let (client, url, key, barrier) = (client.clone(), url.clone(), key.to_string(), barrier.clone());
        set.spawn(async move {
            barrier.wait().await;
            let resp = client
                .post(url)
                .header("Idempotency-Key", key)
                .json(&inquiry("Clicked many times"))
                .send()
                .await
                .unwrap();
            let status = resp.status().as_u16();
            (status, resp.json::<Value>().await.unwrap())
        });
    }
    set.join_all().await
}

fn assert_one_created(responses: &[(u16, Value)]) {
    let created: Vec<_> = responses.iter().filter(|(s, _)| *s == 201).collect();
    assert_eq!(created.len(), 1, "{:?}", responses.iter().map(|(s, _)| s).collect::<Vec<_>>());
    let id = &created[0].1["submission_id"];
    for (status, body) in responses {
        match status {
            201 => {}
            200 => assert_eq!(&body["submission_id"], id, "a replay names the same submission"),
            409 => assert_eq!(problem_type(body), "operation-in-progress", "{body}"),
            other => panic!("unexpected status {other}: {body}"),
        }
    }
}

/// SQLite's group commit answers 201 only after the batch's commit: a server killed
/// (SIGKILL) in the middle of traffic has lost no acknowledged submission and left none
/// half-written, and after a restart every operation exists exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_traffic_keeps_every_acknowledged_submission() {
    let db = TestDb::new(Backend::Sqlite);
    let mut server = ServeProcess::start_many(&db.url, 1).remove(0);
    let client = reqwest::Client::new();
    let url = format!("{}/api/forms/contact/submissions", server.address);
    let mut set = JoinSet::new();
    for _ in 0..32 {
        let (client, url) = (client.clone(), url.clone());
        set.spawn(async move {
            let mut sent = Vec::new();
            loop {
                let key = new_key();
                let resp =
                    client.post(&url).header("Idempotency-Key", &key).json(&inquiry("Killed")).send().await;
                let Ok(resp) = resp else { return sent };
                let status = resp.status().as_u16();
                let Ok(body) = resp.json::<Value>().await else { return sent };
                assert_eq!(status, 201, "{body}");
                sent.push((key, body["submission_id"].as_str().unwrap().to_string()));
            }
        });
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let acknowledged: Vec<(String, String)> = set.join_all().await.into_iter().flatten().collect();
    assert!(acknowledged.len() > 10, "traffic ran before the kill: {}", acknowledged.len());

    let config = onceform::config::DatabaseConfig { url: db.url.parse().unwrap(), ..Default::default() };
    let pool = onceform::db::Pool::connect(&config).unwrap();
    let keys: Vec<String> = acknowledged.iter().map(|(k, _)| k.clone()).collect();
    let (stats, stored) = tokio::task::spawn_blocking(move || {
        with_conn!(&pool, |c| {
            let stored: Vec<Option<String>> = keys
                .iter()
                .map(|k| c.find_submission("contact", k).map(|s| s.map(|s| s.id.into())))
                .collect::<Result<_, _>>()?;
            Ok::<_, DbError>((c.stats()?, stored))
        })
    })
    .await
    .unwrap()
    .unwrap();
    for ((key, id), found) in acknowledged.iter().zip(&stored) {
        assert_eq!(found.as_ref(), Some(id), "acknowledged {key} is stored under the acknowledged id");
    }
    assert_eq!(stats.effects_total(), 3 * stats.submissions, "no submission half-written");

    let restarted = ServeProcess::start_many(&db.url, 1).remove(0);
    for (key, id) in acknowledged.iter().take(20) {
        let resp = client
            .post(format!("{}/api/forms/contact/submissions", restarted.address))
            .header("Idempotency-Key", key)
            .json(&inquiry("Killed"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "a retry after the restart is a replay");
        assert_eq!(resp.json::<Value>().await.unwrap()["submission_id"], id.as_str());
    }
}
