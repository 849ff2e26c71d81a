//! A flood of refused requests (issue 21): unknown forms, an unlisted origin and the rate
//! limit are counted on `/metrics`, never written as rows, so the database does not grow.

use serde_json::Value;

use crate::on_both_backends;
use crate::support::{inquiry, new_key, spawn_app_with, Backend};

on_both_backends!(a_flood_of_refused_requests_adds_no_row);

const FLOOD: usize = 750;

async fn a_flood_of_refused_requests_adds_no_row(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        c.server.rate_limit = true;
        let form = c.forms.get_mut("contact").unwrap();
        form.allowed_origins = vec!["https://www.example.com".into()];
        form.rate_limit.requests = 1;
        form.rate_limit.per_seconds = 3600;
    })
    .await;
    let first = app.submit(&new_key(), &inquiry("The one that counts")).await;
    assert_eq!(first.status(), 201);
    app.deliveries.flush().await;
    let before = app.row_counts().await;

    let body: Value = inquiry("Flood");
    for i in 0..FLOOD {
        let api = app.client.post(app.url(&format!("/api/forms/nope-{i}/submissions")));
        assert_eq!(api.header("Idempotency-Key", new_key()).json(&body).send().await.unwrap().status(), 404);
        let html =
            app.client.post(app.url(&format!("/f/nope-{i}"))).form(&[("name", "x")]).send().await.unwrap();
        assert_eq!(html.status(), 404);
        let foreign = app.client.post(app.url("/api/forms/contact/submissions"));
        let foreign = foreign.header("Origin", "https://evil.example").header("Idempotency-Key", new_key());
        assert_eq!(foreign.json(&body).send().await.unwrap().status(), 403);
        let limited = app.submit(&new_key(), &body).await;
        assert_eq!(limited.status(), 429);
    }
    app.deliveries.flush().await;
    assert_eq!(app.row_counts().await, before, "no table grew");
    assert_eq!(app.refused("unknown", "not-found").await, 2 * FLOOD as u64);
    assert_eq!(app.refused("contact", "origin-not-allowed").await, FLOOD as u64);
    assert_eq!(app.refused("contact", "rate-limited").await, FLOOD as u64);
    let metrics = app.metrics().await;
    assert!(!metrics.contains("nope-"), "an unknown form's name is never a label");
}
