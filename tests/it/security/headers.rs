//! Security headers on every response, `Secure` `__Host-` cookies when configured, and the
//! operations endpoints: the metrics token and the metrics cache.

use onceform::config::MetricsToken;
use onceform::services::accounts::Role;

use crate::on_both_backends;
use crate::support::{inquiry, new_key, spawn_app, spawn_app_with, Backend, TestApp};

fn assert_headers(resp: &reqwest::Response, what: &str, hsts: bool) {
    let h = resp.headers();
    assert_eq!(h.get("x-content-type-options").map(|v| v.to_str().unwrap()), Some("nosniff"), "{what}");
    assert_eq!(h.get("x-frame-options").map(|v| v.to_str().unwrap()), Some("DENY"), "{what}");
    assert!(h.get("referrer-policy").is_some(), "{what}");
    let csp = h.get("content-security-policy").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    assert!(csp.contains("base-uri 'none'") && csp.contains("frame-ancestors 'none'"), "{what}: {csp}");
    assert_eq!(h.get("strict-transport-security").is_some(), hsts, "{what}: HSTS only with secure cookies");
}

async fn every_kind_of_response(app: &TestApp, hsts: bool) {
    let c = &app.client;
    let gets = [
        "/",
        "/f/contact",
        "/healthz",
        "/readyz",
        "/metrics",
        "/static/onceform.css",
        "/admin/login",
        "/admin",
        "/nowhere",
    ];
    for path in gets {
        let resp = c.get(app.url(path)).send().await.unwrap();
        assert_headers(&resp, path, hsts);
    }
    let created = app.submit(&new_key(), &inquiry("Headers on a 201")).await;
    assert_eq!(created.status(), 201);
    assert_headers(&created, "201", hsts);
    let invalid = app.submit(&new_key(), &serde_json::json!({"name": ""})).await;
    assert_eq!(invalid.status(), 422);
    assert_headers(&invalid, "422", hsts);
    let html = c.post(app.url("/f/contact")).form(&[("name", "x")]).send().await.unwrap();
    assert_headers(&html, "HTML post", hsts);
}

async fn every_response_carries_the_security_headers(backend: Backend) {
    let app = spawn_app_with(backend, |_| {}).await;
    every_kind_of_response(&app, false).await;
    let session = app.sign_in(Role::Admin).await;
    let page = app.admin_get(Some(&session), "/admin/effects").await;
    assert_eq!(page.status(), 200);
    assert_headers(&page, "admin page", false);
    let refused = app.admin_post(Some(&session), "/admin/logout", None, &[]).await;
    assert_eq!(refused.status(), 403);
    assert_headers(&refused, "refused admin POST", false);
}

/// The value of `Set-Cookie` for `name`, whole.
fn set_cookie(resp: &reqwest::Response, name: &str) -> Option<String> {
    resp.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(String::from)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_secure_cookies_the_session_cookie_is_secure_host_prefixed_and_hsts_is_sent() {
    let app = spawn_app_with(Backend::Sqlite, |c| c.server.secure_cookies = Some(true)).await;
    every_kind_of_response(&app, true).await;
    app.create_user("ops@example.com", Role::Admin).await;
    let form = app.client.get(app.url("/admin/login")).send().await.unwrap();
    let login_cookie = set_cookie(&form, "__Host-onceform_login_csrf").expect("a __Host- login cookie");
    assert!(login_cookie.split("; ").any(|p| p == "Secure"), "{login_cookie}");
    let csrf = crate::support::admin::csrf_of(&form.text().await.unwrap());
    let resp = app
        .client
        .post(app.url("/admin/login"))
        .header("Cookie", login_cookie.split(';').next().unwrap())
        .form(&[
            ("csrf", csrf.as_str()),
            ("email", "ops@example.com"),
            ("password", "a long enough password"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 303);
    let session = set_cookie(&resp, "__Host-onceform_session").expect("a __Host- session cookie");
    for part in ["Secure", "HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(session.split("; ").any(|p| p == part), "{part} missing: {session}");
    }
    let page = app
        .client
        .get(app.url("/admin"))
        .header("Cookie", session.split(';').next().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200, "the prefixed cookie is the session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_loopback_by_default_cookies_are_not_secure_and_a_forwarded_proto_changes_nothing() {
    let app = spawn_app_with(Backend::Sqlite, |_| {}).await;
    let form =
        app.client.get(app.url("/admin/login")).header("X-Forwarded-Proto", "https").send().await.unwrap();
    let cookie = set_cookie(&form, "onceform_login_csrf").expect("the plain login cookie");
    assert!(!cookie.split("; ").any(|p| p == "Secure"), "{cookie}");
    assert!(form.headers().get("strict-transport-security").is_none());
}

async fn the_metrics_token_is_enforced(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        c.server.metrics_token = Some(MetricsToken::new("t0ken-for-tests".into()))
    })
    .await;
    let get = |auth: Option<&'static str>| {
        let mut req = app.client.get(app.url("/metrics"));
        if let Some(a) = auth {
            req = req.header("Authorization", a);
        }
        req.send()
    };
    let none = get(None).await.unwrap();
    assert_eq!(none.status(), 401);
    assert_eq!(none.headers()["content-type"], "application/problem+json");
    assert_eq!(get(Some("Bearer wrong-token")).await.unwrap().status(), 401);
    assert_eq!(get(Some("Bearer t0ken-for-tests-and-more")).await.unwrap().status(), 401);
    let ok = get(Some("Bearer t0ken-for-tests")).await.unwrap();
    assert_eq!(ok.status(), 200);
    assert!(ok.text().await.unwrap().contains("onceform_submissions_total 0"));
    assert_eq!(app.client.get(app.url("/healthz")).send().await.unwrap().status(), 200, "only /metrics");
}

async fn metrics_are_counted_at_most_once_per_cache_age(backend: Backend) {
    let app = spawn_app_with(backend, |c| c.server.metrics_cache_ms = 120_000).await;
    let scrape = || async { app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap() };
    assert_eq!(app.submit(&new_key(), &inquiry("Before the first scrape")).await.status(), 201);
    assert!(scrape().await.contains("onceform_submissions_total 1\n"));
    assert_eq!(app.submit(&new_key(), &inquiry("After it")).await.status(), 201);
    let second = scrape().await;
    assert!(second.contains("onceform_submissions_total 1\n"), "served from the cache:\n{second}");
    assert!(
        second.contains("onceform_login_verifications_total 0\n"),
        "live counters are appended:\n{second}"
    );
}

on_both_backends!(
    every_response_carries_the_security_headers,
    the_metrics_token_is_enforced,
    metrics_are_counted_at_most_once_per_cache_age,
);

/// HEAD is answered wherever GET is (uptime monitors, link checkers): the GET's status and
/// headers, no body. Where only POST is, it is still 405.
#[tokio::test]
async fn head_is_answered_like_get_without_a_body() {
    let app = spawn_app(Backend::Sqlite).await;
    for path in ["/healthz", "/f/contact", "/static/onceform.css", "/admin/login"] {
        let get = app.client.get(app.url(path)).send().await.unwrap();
        let head = app.client.head(app.url(path)).send().await.unwrap();
        assert_eq!(head.status(), get.status(), "{path}");
        assert_eq!(head.headers().get("content-type"), get.headers().get("content-type"), "{path}");
        assert_headers(&head, path, false);
        assert!(head.bytes().await.unwrap().is_empty(), "{path}: no body");
        assert!(!get.bytes().await.unwrap().is_empty(), "{path}: GET keeps its body");
    }
    let post_only = app.client.head(app.url("/api/forms/contact/submissions")).send().await.unwrap();
    assert_eq!(post_only.status(), 405);
}
