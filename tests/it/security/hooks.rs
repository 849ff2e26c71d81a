//! The webhook findings of the security reviews that belong to verification: a signed GitHub
//! delivery sent again under new `X-GitHub-Delivery` IDs (the header is not signed, and
//! GitHub sends no timestamp) is a replay of the first, not a new event (issue 21); a source
//! whose key is empty, short or not `whsec_` does not start, a delivery signed with an
//! empty key is refused, and stalled unsigned posts hold no more memory than their budget
//! (issue 45).

use std::sync::Arc;
use std::time::{Duration, Instant};

use onceform::app::Application;
use onceform::db::Pool;
use onceform::web::hooks::verify::{github, standard_webhooks};

use crate::on_both_backends;
use crate::support::hooks::{hook, secret_var, spawn_hook_app};
use crate::support::receiver::Receiver;
use crate::support::{test_config, test_keyring, Backend, TestDb};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

on_both_backends!(a_github_delivery_re_keyed_under_new_delivery_ids_runs_once);

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// Issue 45: `whsec_` decodes to an empty key; a source holding it started, and a delivery
/// signed with the empty key was stored (200). `AA==` (no prefix) and a 16-byte key started
/// too. Now the server does not start with any of them, and says which variable is wrong
/// without showing it; a delivery signed with an empty key is refused by a source that did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_signed_with_an_empty_key_is_refused() {
    for value in ["whsec_", "AA==", "whsec_MDEyMzQ1Njc4OWFiY2RlZg=="] {
        let var = secret_var("empty_key", value);
        let db = TestDb::new(Backend::Sqlite);
        let mut config = test_config(&db.url);
        let source = format!("verify = \"standard-webhooks\"\nsecret_env = \"{var}\"");
        config.hooks.insert("sw".into(), hook(&source));
        let database = config.database.clone();
        let pool = tokio::task::spawn_blocking(move || Pool::connect(&database)).await.unwrap().unwrap();
        let built = Application::build(Arc::new(config), pool, test_keyring(), Default::default());
        let error =
            built.err().map(|e| e.to_string()).unwrap_or_else(|| panic!("{value}: the server started"));
        assert!(error.contains(&format!("hooks.sw: {var}:")), "{value}: {error}");
        assert!(value == "whsec_" || !error.contains(value), "the value is never shown: {error}");
    }

    let var = secret_var("real_key", WHSEC);
    let app = spawn_hook_app(
        Backend::Sqlite,
        vec![("sw", hook(&format!("verify = \"standard-webhooks\"\nsecret_env = \"{var}\"")))],
    )
    .await;
    let body = r#"{"type":"invoice.paid","id":"evt_empty"}"#;
    let ts = chrono::Utc::now().timestamp();
    for key in [&b""[..], b"short key"] {
        let headers = vec![
            ("webhook-id", "msg_empty".to_string()),
            ("webhook-timestamp", ts.to_string()),
            ("webhook-signature", standard_webhooks::sign(key, "msg_empty", ts, body.as_bytes())),
        ];
        assert_eq!(app.post("sw", &headers, body).await.status(), 401, "a {}-byte key", key.len());
    }
    assert_eq!(app.inbound().await.events, 0, "nothing stored");
    assert_eq!(app.post_signed("sw", WHSEC, "msg_real", body).await.status(), 200);
}

async fn a_github_delivery_re_keyed_under_new_delivery_ids_runs_once(backend: Backend) {
    let receiver = Receiver::start().await;
    let var = secret_var("gh", "It's a Secret to Everybody");
    let cfg = format!(
        "verify = \"github\"\nsecret_env = \"{var}\"\n[[handlers]]\nname = \"relay\"\nkind = \"forward\"\nurl = \"{}\"\n",
        receiver.events_url()
    );
    let app = spawn_hook_app(backend, vec![("gh", hook(&cfg))]).await;
    let body = r#"{"action":"opened","issue":{"number":7,"title":"printer on fire"}}"#;
    let signature = github::sign(b"It's a Secret to Everybody", body.as_bytes());
    let deliver = |delivery: &'static str| {
        let headers = vec![
            ("x-github-delivery", delivery.to_string()),
            ("x-hub-signature-256", signature.clone()),
            ("x-github-event", "issues".to_string()),
        ];
        let app = &app;
        async move { app.post("gh", &headers, body).await }
    };
    let first = deliver("delivery-A").await;
    assert_eq!(first.status(), 200);
    assert!(first.headers().get("idempotent-replayed").is_none());
    for delivery in ["delivery-B", "delivery-C", "delivery-A"] {
        let again = deliver(delivery).await;
        assert_eq!(again.status(), 200, "{delivery}");
        assert_eq!(again.headers()["idempotent-replayed"], "true", "{delivery}: a replay");
    }
    let inbound = app.inbound().await;
    assert_eq!((inbound.events, inbound.deliveries, inbound.conflicts), (1, 4, 0));

    // Another signed body is another event, whatever its delivery ID says.
    let other = r#"{"action":"closed","issue":{"number":7}}"#;
    let headers = vec![
        ("x-github-delivery", "delivery-A".to_string()),
        ("x-hub-signature-256", github::sign(b"It's a Secret to Everybody", other.as_bytes())),
    ];
    assert_eq!(app.post("gh", &headers, other).await.status(), 200);
    assert_eq!(app.inbound().await.events, 2);

    let worker = app.worker();
    app.settle(&worker).await;
    let bodies: Vec<String> = receiver.calls().into_iter().map(|(_, b)| b).collect();
    assert_eq!(bodies.len(), 2, "each event forwarded once: {bodies:?}");
    assert_eq!(bodies.iter().filter(|b| b.as_str() == body).count(), 1);
}

/// Opens a post to `/hooks/sw` declaring a 256 KiB body (the source's limit) and sends 1 KB
/// of it, then stalls.
async fn stalled_post(address: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address.trim_start_matches("http://")).await.unwrap();
    let head = "POST /hooks/sw HTTP/1.1\r\nHost: onceform\r\ncontent-type: application/json\r\n\
                content-length: 262144\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&[b' '; 1000]).await.unwrap();
    stream
}

/// The head of the answer on `stream` if one comes within `wait`.
async fn answer_within(stream: &mut TcpStream, wait: Duration) -> Option<String> {
    let mut buf = vec![0u8; 2048];
    match tokio::time::timeout(wait, stream.read(&mut buf)).await {
        Ok(Ok(n)) if n > 0 => Some(String::from_utf8_lossy(&buf[..n]).into_owned()),
        _ => None,
    }
}

/// Issue 45: `/hooks/*` read each whole body before checking its signature, so 400 stalled
/// unauthenticated 250 KB posts raised the server's memory from 34 to 172 MiB. Now a client
/// holds at most its budget (1 MiB: four bodies of 256 KiB) of unverified bodies: the posts
/// beyond it are answered 503 with Retry-After at once, their bodies unread; even a signed
/// delivery waits (503) while the stalled posts hold the budget, and goes through once they
/// are cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_unsigned_posts_beyond_the_budget_are_refused_at_once() {
    let var = secret_var("stalled", WHSEC);
    let app = spawn_hook_app(
        Backend::Sqlite,
        vec![("sw", hook(&format!("verify = \"standard-webhooks\"\nsecret_env = \"{var}\"")))],
    )
    .await;
    let mut stalled = Vec::new();
    for _ in 0..12 {
        stalled.push(stalled_post(&app.app.address).await);
    }
    let started = Instant::now();
    let mut refused = 0;
    let mut held = Vec::new();
    for mut stream in stalled {
        match answer_within(&mut stream, Duration::from_millis(500)).await {
            Some(head) => {
                assert!(head.starts_with("HTTP/1.1 503"), "{head}");
                assert!(head.to_ascii_lowercase().contains("retry-after: 1"), "{head}");
                refused += 1;
            }
            None => held.push(stream),
        }
    }
    assert_eq!((refused, held.len()), (8, 4), "four 256 KiB bodies fill a client's 1 MiB");
    assert!(started.elapsed() < Duration::from_secs(8), "answered before the reading deadline");

    let body = r#"{"type":"invoice.paid","id":"evt_after_stall"}"#;
    assert_eq!(app.post_signed("sw", WHSEC, "msg_during", body).await.status(), 503, "the budget is held");
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let status = app.post_signed("sw", WHSEC, "msg_after", body).await.status();
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the cut posts still hold the budget: {status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(app.inbound().await.events, 1);
}
