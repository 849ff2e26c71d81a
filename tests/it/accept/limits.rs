//! Per-client rate limits on the submit endpoints.

use serde_json::Value;

use crate::support::{inquiry, new_key, problem_type, spawn_app_with, Backend, TestApp};

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
    assert_eq!(stats.deliveries_with("rate_limited"), 0, "a refusal is a counter, not a row");
    assert_eq!(app.refused("contact", "rate-limited").await, 2);
}

/// Behind a trusted reverse proxy, each client has its own bucket; a client that is not a
/// trusted proxy cannot pick its bucket by sending the header.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_the_forwarded_client_is_limited_not_the_proxy() {
    async fn post_from(app: &TestApp, forwarded_for: &str) -> u16 {
        let resp = app
            .client
            .post(app.url("/api/forms/contact/submissions"))
            .header("Idempotency-Key", new_key())
            .header("X-Forwarded-For", forwarded_for)
            .json(&inquiry("Through the proxy"))
            .send()
            .await
            .unwrap();
        resp.status().as_u16()
    }
    let limited = |trusted: &[&str]| {
        let trusted: Vec<String> = trusted.iter().map(|t| t.to_string()).collect();
        move |c: &mut onceform::config::Config| {
            c.server.rate_limit = true;
            c.server.trusted_proxies = onceform::config::parsed::trusted_proxies(&trusted).unwrap();
            let form = c.forms.get_mut("contact").unwrap();
            form.rate_limit.requests = 1;
            form.rate_limit.per_seconds = 60;
        }
    };

    let proxied = spawn_app_with(Backend::Sqlite, limited(&["127.0.0.0/8"])).await;
    assert_eq!(post_from(&proxied, "198.51.100.1").await, 201);
    assert_eq!(post_from(&proxied, "198.51.100.2").await, 201, "another client, its own bucket");
    assert_eq!(post_from(&proxied, "198.51.100.1").await, 429, "the first client's bucket is empty");
    assert_eq!(
        post_from(&proxied, "198.51.100.1, 198.51.100.3").await,
        201,
        "only the hop the proxy appended counts, not what the client prepended"
    );
    assert_eq!(proxied.stats().await.submissions, 3);

    let direct = spawn_app_with(Backend::Sqlite, limited(&[])).await;
    assert_eq!(post_from(&direct, "198.51.100.1").await, 201);
    assert_eq!(post_from(&direct, "198.51.100.2").await, 429, "the header is ignored: one peer, one bucket");
}

/// IPv6 clients are counted by /64: one subscriber cannot get a fresh bucket per address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ipv6_clients_share_one_bucket_per_64() {
    let app = spawn_app_with(Backend::Sqlite, |c| {
        c.server.rate_limit = true;
        c.server.trusted_proxies =
            onceform::config::parsed::trusted_proxies(&["127.0.0.0/8".into()]).unwrap();
        let form = c.forms.get_mut("contact").unwrap();
        form.rate_limit.requests = 1;
        form.rate_limit.per_seconds = 60;
    })
    .await;
    let post_from = |client: &'static str| {
        app.client
            .post(app.url("/api/forms/contact/submissions"))
            .header("Idempotency-Key", new_key())
            .header("X-Forwarded-For", client)
            .json(&inquiry("From an IPv6 client"))
            .send()
    };
    assert_eq!(post_from("2001:db8:1:2::1").await.unwrap().status(), 201);
    assert_eq!(post_from("2001:db8:1:2:ffff:ffff:ffff:ffff").await.unwrap().status(), 429, "same /64");
    assert_eq!(post_from("2001:db8:1:3::1").await.unwrap().status(), 201, "another /64");
}
