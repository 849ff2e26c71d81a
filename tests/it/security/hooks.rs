//! The webhook findings of the security review (issue 21) that belong to verification: a
//! signed GitHub delivery sent again under new `X-GitHub-Delivery` IDs (the header is not
//! signed, and GitHub sends no timestamp) is a replay of the first, not a new event.

use onceform::web::hooks::verify::github;

use crate::on_both_backends;
use crate::support::hooks::{hook, secret_var, spawn_hook_app};
use crate::support::receiver::Receiver;
use crate::support::Backend;

on_both_backends!(a_github_delivery_re_keyed_under_new_delivery_ids_runs_once);

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
