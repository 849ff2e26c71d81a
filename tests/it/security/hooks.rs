//! The webhook findings of the security reviews that belong to verification: a signed GitHub
//! delivery sent again under new `X-GitHub-Delivery` IDs (the header is not signed, and
//! GitHub sends no timestamp) is a replay of the first, not a new event (issue 21); a source
//! whose key is empty, short or not `whsec_` does not start, and a delivery signed with an
//! empty key is refused (issue 45).

use std::sync::Arc;

use onceform::app::Application;
use onceform::db::Pool;
use onceform::web::hooks::verify::{github, standard_webhooks};

use crate::on_both_backends;
use crate::support::hooks::{hook, secret_var, spawn_hook_app};
use crate::support::receiver::Receiver;
use crate::support::{test_config, test_keyring, Backend, TestDb};

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
