//! Retention: `purge` turns a submission into a tombstone after `content` and deletes it
//! after `keys`; retries still replay, changes are still conflicts, late issued IDs are 410.

use std::time::Duration;

use serde_json::{json, Value};

use crate::lifecycle::{config_with, onceform, stdout, text_columns_containing};
use crate::on_both_backends;
use crate::support::{problem_type, spawn_on, Backend, TestDb};

on_both_backends!(a_submission_is_purged_to_a_tombstone_then_deleted_and_a_late_retry_is_gone);

const WINDOWS: &str = "content = \"2s\"\nkeys = \"6s\"";

fn inquiry(message: &str) -> Value {
    json!({"name": "Grace Hopper", "email": "grace.h@example.org", "phone": "+41 44 123 45 67",
           "topic": "Sales", "message": message})
}

async fn a_submission_is_purged_to_a_tombstone_then_deleted_and_a_late_retry_is_gone(backend: Backend) {
    let db = TestDb::new(backend);
    let config = config_with(&db.url, WINDOWS);
    let app = spawn_on(db, config).await;
    let issued: Value =
        app.client.post(app.url("/api/forms/contact/operations")).send().await.unwrap().json().await.unwrap();
    let key = issued["operation_id"].as_str().unwrap().to_string();
    let original = inquiry("Please call me about the unicorn pricing 7781");
    let first = app.submit(&key, &original).await;
    assert_eq!(first.status(), 201);
    let first_body = first.text().await.unwrap();
    let stored: Value = serde_json::from_str(&first_body).unwrap();
    assert!(
        !first_body.contains("grace") && !first_body.contains("unicorn"),
        "the result body holds no content"
    );

    let before = text_columns_containing(&app, backend, "unicorn").await;
    assert_eq!(before, ["submissions.fields_json"], "the search sees stored content");
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let out = onceform(&app, WINDOWS, &["purge"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout(&out).contains("contact: 1 content purged"), "{}", stdout(&out));

    let replay = app.submit(&key, &original).await;
    assert_eq!(replay.status(), 200);
    assert_eq!(replay.text().await.unwrap(), first_body, "byte for byte after the purge");
    let changed = app.submit(&key, &inquiry("Something else entirely")).await;
    assert_eq!(changed.status(), 409);
    assert_eq!(problem_type(&changed.json().await.unwrap()), "operation-conflict");
    let status: Value = app
        .client
        .get(app.url(&format!("/api/forms/contact/submissions/{key}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(status["content"], "purged");
    assert_eq!(status["effects"].as_array().unwrap().len(), 3, "the effect records stay");
    for needle in ["grace.h@example.org", "+41441234567", "unicorn", "Something else", "Grace Hopper"] {
        let found = text_columns_containing(&app, backend, needle).await;
        assert!(found.is_empty(), "`{needle}` is still in {found:?}");
    }
    let admin = app.sign_in(onceform::services::accounts::Role::Viewer).await;
    let id = stored["submission_id"].as_str().unwrap();
    let page = app.admin_get(Some(&admin), &format!("/admin/submissions/{id}")).await.text().await.unwrap();
    assert!(page.contains("The content was purged on"), "{page}");

    tokio::time::sleep(Duration::from_millis(4200)).await;
    let out = onceform(&app, WINDOWS, &["purge"]);
    assert!(stdout(&out).contains("contact: 1 tombstones deleted"), "{}", stdout(&out));
    let before = app.stats().await.submissions;
    assert_eq!(before, 0);
    let late = app.submit(&key, &original).await;
    assert_eq!(late.status(), 410);
    let body: Value = late.json().await.unwrap();
    assert_eq!(problem_type(&body), "operation-expired");
    assert_eq!(app.stats().await.submissions, 0, "nothing new is stored");
    // A client-chosen key is simply new once its tombstone is gone (documented).
    assert_eq!(app.submit("client-chosen-key-000001", &original).await.status(), 201);
}
