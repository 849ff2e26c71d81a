//! Inbound webhooks, issue 13 "what must be shown" 1: each verifier accepts a valid delivery
//! (200, stored) and refuses a tampered body, a wrong secret, an empty signature and a stale
//! timestamp (401, nothing stored). WeCom against a vector made by Python's `cryptography`.

use onceform::web::hooks::verify::{github, standard_webhooks, stripe};
use serde_json::Value;

use crate::on_both_backends;
use crate::support::hooks::{hook, secret_var, spawn_hook_app, HookApp, Inbound};
use crate::support::Backend;

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

async fn assert_refused(app: &HookApp, resp: reqwest::Response, what: &str) {
    assert_eq!(resp.status(), 401, "{what}");
    assert_eq!(app.inbound().await, Inbound::default(), "{what}: nothing stored");
}

fn sw_headers(key: &[u8], id: &str, ts: i64, body: &str) -> Vec<(&'static str, String)> {
    vec![
        ("webhook-id", id.to_string()),
        ("webhook-timestamp", ts.to_string()),
        ("webhook-signature", standard_webhooks::sign(key, id, ts, body.as_bytes())),
    ]
}

async fn standard_webhooks_verifier(backend: Backend) {
    let var = secret_var("sw", WHSEC);
    let app = spawn_hook_app(
        backend,
        vec![("helpdesk", hook(&format!("verify = \"standard-webhooks\"\nsecret_env = \"{var}\"")))],
    )
    .await;
    let key = standard_webhooks::decode_secret(WHSEC).unwrap();
    let body = r#"{"type":"ticket.created","ticket":42}"#;
    let wrong = standard_webhooks::decode_secret("whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY").unwrap();

    let tampered = sw_headers(&key, "msg_1", now(), body);
    assert_refused(
        &app,
        app.post("helpdesk", &tampered, r#"{"type":"ticket.created","ticket":43}"#).await,
        "tampered",
    )
    .await;
    assert_refused(
        &app,
        app.post("helpdesk", &sw_headers(&wrong, "msg_1", now(), body), body).await,
        "wrong secret",
    )
    .await;
    let mut empty = sw_headers(&key, "msg_1", now(), body);
    empty[2].1 = "v1,".into();
    assert_refused(&app, app.post("helpdesk", &empty, body).await, "empty v1,").await;
    assert_refused(
        &app,
        app.post("helpdesk", &sw_headers(&key, "msg_1", now() - 600, body), body).await,
        "stale",
    )
    .await;

    let resp = app.post("helpdesk", &sw_headers(&key, "msg_1", now(), body), body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(app.stored_body("helpdesk", "msg_1").await.as_deref(), Some(body));
    assert_eq!(app.inbound().await.events, 1);
    // During a rotation: the new secret's signature among several.
    let mut rotated = sw_headers(&key, "msg_2", now(), body);
    rotated[2].1 =
        format!("{} {}", standard_webhooks::sign(&wrong, "msg_2", now(), body.as_bytes()), rotated[2].1);
    assert_eq!(app.post("helpdesk", &rotated, body).await.status(), 200);
    assert_eq!(app.inbound().await.events, 2);
}

async fn github_verifier(backend: Backend) {
    let var = secret_var("gh", "It's a Secret to Everybody");
    let app =
        spawn_hook_app(backend, vec![("gh", hook(&format!("verify = \"github\"\nsecret_env = \"{var}\"")))])
            .await;
    let body = r#"{"action":"opened","issue":{"number":7}}"#;
    let headers = |sig: String| {
        vec![
            ("x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958".to_string()),
            ("x-hub-signature-256", sig),
            ("x-github-event", "issues".to_string()),
        ]
    };
    let key = b"It's a Secret to Everybody";
    assert_refused(
        &app,
        app.post("gh", &headers(github::sign(key, body.as_bytes())), r#"{"action":"closed"}"#).await,
        "tampered",
    )
    .await;
    assert_refused(
        &app,
        app.post("gh", &headers(github::sign(b"wrong", body.as_bytes())), body).await,
        "wrong secret",
    )
    .await;
    assert_refused(&app, app.post("gh", &headers("sha256=".into()), body).await, "empty signature").await;
    assert_refused(&app, app.post("gh", &[], body).await, "no signature").await;
    let resp = app.post("gh", &headers(github::sign(key, body.as_bytes())), body).await;
    assert_eq!(resp.status(), 200);
    // GitHub signs no delivery ID: the event is named by its body (see security_hooks).
    let id = format!("body:{}", crate::support::test_keyring().digest(body));
    assert_eq!(app.stored_body("gh", &id).await.as_deref(), Some(body));
}

async fn stripe_verifier(backend: Backend) {
    let var = secret_var("stripe", "whsec_stripe_test_secret_0123456789");
    let app =
        spawn_hook_app(backend, vec![("pay", hook(&format!("verify = \"stripe\"\nsecret_env = \"{var}\"")))])
            .await;
    let body = r#"{"id":"evt_1N","object":"event","type":"invoice.paid"}"#;
    let key = b"whsec_stripe_test_secret_0123456789";
    let h = |v: String| vec![("stripe-signature", v)];
    assert_refused(
        &app,
        app.post(
            "pay",
            &h(stripe::sign(key, now(), body.as_bytes())),
            r#"{"id":"evt_1N","object":"event","type":"invoice.void"}"#,
        )
        .await,
        "tampered",
    )
    .await;
    assert_refused(
        &app,
        app.post("pay", &h(stripe::sign(b"whsec_other", now(), body.as_bytes())), body).await,
        "wrong secret",
    )
    .await;
    assert_refused(&app, app.post("pay", &h(format!("t={},v1=", now())), body).await, "empty v1").await;
    assert_refused(
        &app,
        app.post("pay", &h(stripe::sign(key, now() - 3600, body.as_bytes())), body).await,
        "stale",
    )
    .await;
    assert_eq!(app.post("pay", &h(stripe::sign(key, now(), body.as_bytes())), body).await.status(), 200);
    assert_eq!(app.stored_body("pay", "evt_1N").await.as_deref(), Some(body));
}

fn vector() -> Value {
    serde_json::from_str(include_str!("../../fixtures/wecom/vector.json")).unwrap()
}

async fn wecom_app(backend: Backend, tolerance: u64) -> HookApp {
    let v = vector();
    let token = secret_var("wecom_token", v["token"].as_str().unwrap());
    let aes = secret_var("wecom_aes", v["encoding_aes_key"].as_str().unwrap());
    let corp = v["corp_id"].as_str().unwrap();
    let cfg = format!(
        "verify = \"wecom\"\ntoken_env = \"{token}\"\naes_key_env = \"{aes}\"\ncorp_id = \"{corp}\"\ntolerance_seconds = {tolerance}"
    );
    spawn_hook_app(backend, vec![("wecom", hook(&cfg))]).await
}

fn wecom_query(v: &Value, sig: &str) -> String {
    format!(
        "msg_signature={sig}&timestamp={}&nonce={}",
        v["timestamp"].as_str().unwrap(),
        v["nonce"].as_str().unwrap()
    )
}

async fn wecom_post(app: &HookApp, query: &str, body: &str) -> reqwest::Response {
    app.app
        .client
        .post(app.app.url(&format!("/hooks/wecom?{query}")))
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

async fn wecom_verifier(backend: Backend) {
    let v = vector();
    // The vector's timestamp is fixed (2014): a wide tolerance here, the default below.
    let app = wecom_app(backend, 20 * 365 * 86_400).await;
    let echo = &v["echostr"];
    let enc = |s: &str| url_escape(s);
    let url = format!(
        "/hooks/wecom?{}&echostr={}",
        wecom_query(&v, echo["msg_signature"].as_str().unwrap()),
        enc(echo["echostr"].as_str().unwrap())
    );
    let resp = app.app.client.get(app.app.url(&url)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), echo["plain"].as_str().unwrap());
    let bad = format!(
        "/hooks/wecom?{}&echostr={}",
        wecom_query(&v, "0000"),
        enc(echo["echostr"].as_str().unwrap())
    );
    assert_eq!(app.app.client.get(app.app.url(&bad)).send().await.unwrap().status(), 401);

    let msg = &v["message"];
    let body = msg["body"].as_str().unwrap();
    let sig = msg["msg_signature"].as_str().unwrap();
    let tampered = body.replacen("<Encrypt><![CDATA[", "<Encrypt><![CDATA[AAAA", 1);
    assert_refused(&app, wecom_post(&app, &wecom_query(&v, sig), &tampered).await, "tampered").await;
    assert_refused(&app, wecom_post(&app, &wecom_query(&v, &"0".repeat(40)), body).await, "wrong token")
        .await;
    assert_refused(&app, wecom_post(&app, &wecom_query(&v, ""), body).await, "empty signature").await;
    let other = &v["wrong_corp"];
    let r = wecom_post(
        &app,
        &wecom_query(&v, other["msg_signature"].as_str().unwrap()),
        other["body"].as_str().unwrap(),
    )
    .await;
    assert_refused(&app, r, "another CorpID").await;

    let resp = wecom_post(&app, &wecom_query(&v, sig), body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(app.stored_body("wecom", "4561255354251345929").await.as_deref(), msg["plain"].as_str());
    let ev = &v["event"];
    let resp = wecom_post(
        &app,
        &wecom_query(&v, ev["msg_signature"].as_str().unwrap()),
        ev["body"].as_str().unwrap(),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        app.stored_body("wecom", "zhangsan:1409659900:enter_agent").await.as_deref(),
        ev["plain"].as_str()
    );
}

async fn wecom_stale_timestamp(backend: Backend) {
    let v = vector();
    let app = wecom_app(backend, 300).await;
    let msg = &v["message"];
    let r = wecom_post(
        &app,
        &wecom_query(&v, msg["msg_signature"].as_str().unwrap()),
        msg["body"].as_str().unwrap(),
    )
    .await;
    assert_refused(&app, r, "stale").await;
}

fn url_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

on_both_backends!(
    standard_webhooks_verifier,
    github_verifier,
    stripe_verifier,
    wecom_verifier,
    wecom_stale_timestamp
);
