//! Per-client rate limits on the submit endpoints.

use serde_json::Value;

use crate::support::{inquiry, new_key, problem_type, spawn_app_with, Backend};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_over_its_rate_gets_429_with_retry_after() {
    let app = spawn_app_with(Backend::Sqlite, |c| {
        c.server.rate_limit = true;
        let form = c.forms.get_mut("contact").unwrap();
        form.rate_limit.requests = 3;
        form.rate_limit.per_seconds = 60;
    })
    .await;
    for _ in 0..3 {
        assert_eq!(app.submit(&new_key(), &inquiry("Within the limit")).await.status(), 201);
    }
    let limited = app.submit(&new_key(), &inquiry("Over the limit")).await;
    assert_eq!(limited.status(), 429);
    let retry: u64 = limited.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((19..=20).contains(&retry), "one token per 20 s: {retry}");
    let problem: Value = limited.json().await.unwrap();
    assert_eq!(problem_type(&problem), "rate-limited");

    let html = app.client.post(app.url("/f/contact")).form(&[("name", "x")]).send().await.unwrap();
    assert_eq!(html.status(), 429, "the HTML post shares the client's bucket");

    let stats = app.stats().await;
    assert_eq!(stats.submissions, 3);
    assert_eq!(stats.deliveries_with("rate_limited"), 2);
}
