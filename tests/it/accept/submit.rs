//! The JSON API's core promises: created once, replayed byte for byte, conflicts kept apart.

use serde_json::{json, Value};

use crate::on_both_backends;
use crate::support::{inquiry, new_key, problem_type, spawn_app, Backend};

on_both_backends!(
    first_submit_creates_and_a_retry_replays_the_same_body,
    same_key_different_content_is_a_conflict_and_the_original_stays,
    different_keys_with_identical_text_are_two_inquiries,
    invalid_fields_store_nothing_and_leave_the_key_unused,
    four_deliveries_of_two_operations_are_two_submissions,
    status_shows_states_but_never_content,
    operations_are_issued_for_api_clients,
    repeated_retries_replay_from_memory_and_a_changed_one_is_still_a_conflict,
);

async fn first_submit_creates_and_a_retry_replays_the_same_body(backend: Backend) {
    let app = spawn_app(backend).await;
    let key = new_key();

    let first = app.submit(&key, &inquiry("Please call me")).await;
    assert_eq!(first.status(), 201);
    assert_eq!(first.headers()["location"], format!("/api/forms/contact/submissions/{key}"));
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first_body = first.text().await.unwrap();

    let again = app.submit(&key, &inquiry("Please call me")).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.text().await.unwrap(), first_body, "a replay returns the first body byte for byte");

    let body: Value = serde_json::from_str(&first_body).unwrap();
    assert_eq!(body["operation_id"], key.as_str());
    assert_eq!(body["form"], "contact");
    assert_eq!(body["status"], "accepted");
    let kinds: Vec<&str> =
        body["effects"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["crm_lead", "confirmation_email", "owner_notification"]);

    let stats = app.stats().await;
    assert_eq!(stats.submissions, 1);
    let mut effects = app.effects_of(&key).await;
    effects.sort();
    assert_eq!(
        effects,
        [("confirmation_email", "PENDING"), ("crm_lead", "PENDING"), ("owner_notification", "PENDING")]
            .map(|(k, s)| (k.to_string(), s.to_string()))
    );
}

async fn same_key_different_content_is_a_conflict_and_the_original_stays(backend: Backend) {
    let app = spawn_app(backend).await;
    let key = new_key();
    let created: Value = app.submit(&key, &inquiry("Original")).await.json().await.unwrap();

    for _ in 0..2 {
        let conflict = app.submit(&key, &inquiry("Edited after the fact")).await;
        assert_eq!(conflict.status(), 409);
        assert_eq!(conflict.headers()["content-type"], "application/problem+json");
        let problem: Value = conflict.json().await.unwrap();
        assert_eq!(problem_type(&problem), "operation-conflict");
        assert_eq!(problem["submission_id"], created["submission_id"]);
        assert_eq!(problem["status"], 409);
        assert!(problem["detail"].as_str().unwrap().len() > 10);
    }

    assert_eq!(app.stored_fields(&key).await.unwrap()["message"], "Original");
    let stats = app.stats().await;
    assert_eq!(stats.submissions, 1);
    assert_eq!(stats.effects_total(), 3);
    assert_eq!(stats.open_conflicts, 1, "a repeated conflicting attempt is one conflict, counted");
    assert_eq!(stats.deliveries_with("conflict"), 2);

    // The original still replays.
    assert_eq!(app.submit(&key, &inquiry("Original")).await.status(), 200);
}

/// From the second retry on, a byte-identical retry is answered without normalising it
/// again; what differs in bytes is still compared by content.
async fn repeated_retries_replay_from_memory_and_a_changed_one_is_still_a_conflict(backend: Backend) {
    let app = spawn_app(backend).await;
    let key = new_key();
    let first = app.submit(&key, &inquiry("Please call me")).await;
    assert_eq!(first.status(), 201);
    let first_body = first.text().await.unwrap();
    for _ in 0..3 {
        let again = app.submit(&key, &inquiry("Please call me")).await;
        assert_eq!(again.status(), 200);
        assert_eq!(again.text().await.unwrap(), first_body);
    }
    // Other bytes, the same content once normalised: a replay.
    let spaced = app.submit(&key, &inquiry("  Please call me  ")).await;
    assert_eq!(spaced.status(), 200);
    assert_eq!(spaced.text().await.unwrap(), first_body);
    // Other content: a conflict, however often the original was replayed before.
    assert_eq!(app.submit(&key, &inquiry("Please call me tomorrow")).await.status(), 409);
    assert_eq!(app.submit(&key, &inquiry("Please call me")).await.status(), 200);

    let stats = app.stats().await;
    assert_eq!((stats.submissions, stats.effects_total(), stats.open_conflicts), (1, 3, 1));
    assert_eq!(stats.deliveries_with("replayed"), 5, "every replay is counted as a delivery");
}

async fn different_keys_with_identical_text_are_two_inquiries(backend: Backend) {
    let app = spawn_app(backend).await;
    let a: Value = app.submit(&new_key(), &inquiry("Same words")).await.json().await.unwrap();
    let b: Value = app.submit(&new_key(), &inquiry("Same words")).await.json().await.unwrap();
    assert_ne!(a["submission_id"], b["submission_id"]);
    let stats = app.stats().await;
    assert_eq!(stats.submissions, 2);
    assert_eq!(stats.effects_total(), 6);
}

async fn invalid_fields_store_nothing_and_leave_the_key_unused(backend: Backend) {
    let app = spawn_app(backend).await;
    let key = new_key();
    let mut bad = inquiry("Hello");
    bad["email"] = "not-an-email".into();
    bad["topic"] = "Gossip".into();
    bad["name"] = "   ".into();

    let resp = app.submit(&key, &bad).await;
    assert_eq!(resp.status(), 422);
    let problem: Value = resp.json().await.unwrap();
    assert_eq!(problem_type(&problem), "validation-failed");
    assert_eq!(problem["errors"]["email"][0], "Email is not a valid email address");
    assert_eq!(problem["errors"]["name"][0], "Your name is required");
    assert!(problem["errors"]["topic"][0].as_str().unwrap().starts_with("Topic must be one of"));
    assert_eq!(
        problem["codes"],
        json!({"email": ["invalid_email"], "name": ["required"], "topic": ["not_an_option"]})
    );
    assert!(problem["errors"].get("message").is_none());

    let stats = app.stats().await;
    assert_eq!((stats.submissions, stats.effects_total()), (0, 0));
    assert_eq!(stats.deliveries_total(), 0, "a refusal is a counter, not a row");
    assert_eq!(app.refused("contact", "validation-failed").await, 1);

    assert_eq!(app.submit(&key, &inquiry("Hello")).await.status(), 201, "the key was not consumed");
}

async fn four_deliveries_of_two_operations_are_two_submissions(backend: Backend) {
    let app = spawn_app(backend).await;
    let (a, b) = (new_key(), new_key());
    let statuses = [
        app.submit(&a, &inquiry("First inquiry")).await.status(),
        app.submit(&a, &inquiry("First inquiry")).await.status(),
        app.submit(&b, &inquiry("Second inquiry")).await.status(),
        app.submit(&b, &inquiry("Second inquiry")).await.status(),
    ];
    assert_eq!(statuses.map(|s| s.as_u16()), [201, 200, 201, 200]);
    let stats = app.stats().await;
    assert_eq!(stats.deliveries_total(), 4);
    assert_eq!(stats.submissions, 2);
    assert_eq!((stats.deliveries_with("created"), stats.deliveries_with("replayed")), (2, 2));

    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("onceform_deliveries_total{outcome=\"created\"} 2"), "{metrics}");
    assert!(metrics.contains("onceform_deliveries_total{outcome=\"replayed\"} 2"), "{metrics}");
    assert!(metrics.contains("onceform_submissions_total 2"), "{metrics}");
}

async fn status_shows_states_but_never_content(backend: Backend) {
    let app = spawn_app(backend).await;
    let key = new_key();
    let created: Value = app.submit(&key, &inquiry("Secret plans")).await.json().await.unwrap();

    let resp =
        app.client.get(app.url(&format!("/api/forms/contact/submissions/{key}"))).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    assert!(!text.contains("Secret plans") && !text.contains("ada@example.com"), "{text}");
    let status: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status["submission_id"], created["submission_id"]);
    assert_eq!(status["effects"].as_array().unwrap().len(), 3);
    assert!(status["effects"].as_array().unwrap().iter().all(|e| e["state"] == "PENDING"));

    let missing = app
        .client
        .get(app.url(&format!("/api/forms/contact/submissions/{}", new_key())))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(missing.headers()["content-type"], "application/problem+json");
    let malformed =
        app.client.get(app.url("/api/forms/contact/submissions/not%20a%20key")).send().await.unwrap();
    assert_eq!(malformed.status(), 400);
    assert_eq!(problem_type(&malformed.json().await.unwrap()), "operation-id-invalid");
}

async fn operations_are_issued_for_api_clients(backend: Backend) {
    let app = spawn_app(backend).await;
    let resp = app.client.post(app.url("/api/forms/contact/operations")).send().await.unwrap();
    assert_eq!(resp.status(), 201);
    let issued: Value = resp.json().await.unwrap();
    let key = issued["operation_id"].as_str().unwrap().to_string();
    assert!(issued["expires_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(app.submit(&key, &inquiry("Using an issued key")).await.status(), 201);
    let unknown = app.client.post(app.url("/api/forms/nope/operations")).send().await.unwrap();
    assert_eq!(unknown.status(), 404);
}
