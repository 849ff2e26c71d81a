//! The outbound `webhook` effect against a loopback receiver: signed per Standard Webhooks and
//! verified on the receiving side with the `standardwebhooks` library (PyPI, installed by
//! `./test.sh` into `target/test-tools/venv`); the same `webhook-id` on every retry; a
//! rotated secret sends two signatures; 410 is final and 429's `Retry-After` is honoured.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use onceform::config::{Config, DEFAULT_CONFIG};
use serde_json::Value;

use crate::on_both_backends;
use crate::support::delivery::{spawn_delivery_app, DeliveryApp};
use crate::support::hooks::{hook, secret_var, spawn_hook_app};
use crate::support::receiver::{Fault, Receiver};
use crate::support::{inquiry, new_key, Backend};

on_both_backends!(
    a_webhook_verifies_with_the_reference_library_and_a_replay_sends_nothing,
    a_retry_after_a_timeout_carries_the_same_webhook_id,
    a_410_is_final_and_a_429_waits_its_retry_after,
    an_inbound_event_goes_out_signed_through_a_webhook_handler,
    a_refused_webhook_shows_the_receivers_answer_on_the_admin_page,
);

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const NEXT_SECRET: &str = "whsec_dGhlIG5leHQgc2VjcmV0IGR1cmluZyBhIHJvdGF0aW9u";

/// The demo form with `webhook` as its only effect, posting to `receiver` with `secrets`.
async fn webhook_app(backend: Backend, receiver: &Receiver, secrets: &str) -> DeliveryApp {
    let var = format!("ONCEFORM_TEST_WEBHOOK_{}", uuid::Uuid::new_v4().simple());
    std::env::set_var(&var, secrets);
    let effects = r#"effects = ["crm_lead", "confirmation_email", "owner_notification"]"#;
    assert!(DEFAULT_CONFIG.contains(effects));
    let text = DEFAULT_CONFIG.replace(effects, r#"effects = ["webhook"]"#)
        + &format!(
            "\n[forms.contact.webhook]\nurl = \"{}\"\nsecret_env = \"{var}\"\nidempotency_key = true\n\
             headers = {{ \"X-Tenant\" = \"acme\" }}\n",
            receiver.events_url()
        );
    let parsed = Config::parse(&text).unwrap();
    assert_eq!(onceform::services::check_config::problems(&parsed), Vec::<String>::new());
    spawn_delivery_app(backend, |c| c.forms = parsed.forms).await
}

/// `standardwebhooks.Webhook(secret).verify(body, headers)` in Python: the parsed payload, or
/// the library's error.
fn verify_with_reference(
    secret: &str,
    headers: &BTreeMap<String, String>,
    body: &str,
) -> Result<Value, String> {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-tools/venv/bin/python");
    assert!(python.exists(), "the test venv is missing: run ./test.sh ({})", python.display());
    let script = "import json, sys\n\
                  from standardwebhooks.webhooks import Webhook\n\
                  secret, headers, body = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]\n\
                  print(json.dumps(Webhook(secret).verify(body, headers)))";
    let out = Command::new(python)
        .args(["-c", script, secret, &serde_json::to_string(headers).unwrap(), body])
        .output()
        .unwrap();
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

async fn a_webhook_verifies_with_the_reference_library_and_a_replay_sends_nothing(backend: Backend) {
    let receiver = Receiver::start().await;
    // A secret being rotated: both are sent, each signature verifies on its own.
    let d = webhook_app(backend, &receiver, &format!("{SECRET} {NEXT_SECRET}")).await;
    let key = new_key();
    let mut body = inquiry("Quote for 40 units of X200");
    body["journey_id"] = "jrn-1234567890abcdef".into();
    let created: Value = d.app.submit(&key, &body).await.json().await.unwrap();
    let worker = d.worker();
    d.settle(&worker).await;
    assert_eq!(d.app.submit(&key, &body).await.status(), 200);
    d.settle(&worker).await;

    let requests = receiver.requests();
    assert_eq!(requests.len(), 1, "one webhook, none for the replay");
    let (headers, payload) = &requests[0];
    let id = format!("{}:webhook:0", created["submission_id"].as_str().unwrap());
    assert_eq!(headers["webhook-id"], id, "the effect's key");
    assert_eq!(headers["idempotency-key"], id);
    assert_eq!(headers["x-tenant"], "acme");
    assert_eq!(headers["webhook-signature"].split(' ').count(), 2, "{headers:?}");
    for secret in [SECRET, NEXT_SECRET] {
        let verified = verify_with_reference(secret, headers, payload).unwrap();
        assert_eq!(verified["type"], "submission.accepted");
        assert_eq!(verified["submission_id"], created["submission_id"]);
        assert_eq!(
            (verified["form"].as_str(), verified["journey_id"].as_str()),
            (Some("contact"), Some("jrn-1234567890abcdef"))
        );
        assert_eq!(verified["fields"]["message"], "Quote for 40 units of X200");
        assert!(verified["received_at"].as_str().unwrap().ends_with('Z'));
    }
    let other = "whsec_b3RoZXIgc2VjcmV0IG5vdCB1c2VkIGhlcmUgYXQgYWxs";
    assert!(verify_with_reference(other, headers, payload).is_err(), "another secret does not verify");
    let tampered = payload.replace("X200", "X300");
    assert!(verify_with_reference(SECRET, headers, &tampered).is_err(), "a changed body does not verify");
    let effect = d.effect(&key, "webhook").await;
    assert_eq!(
        (effect.state.as_str(), effect.attempts, effect.provider_ref.as_deref()),
        ("SENT", 1, Some(id.as_str()))
    );
}

async fn a_retry_after_a_timeout_carries_the_same_webhook_id(backend: Backend) {
    let receiver = Receiver::start().await;
    receiver.push_fault(Fault::SlowAfterAct(Duration::from_millis(1500)));
    let d = webhook_app(backend, &receiver, SECRET).await;
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;

    let requests = receiver.requests();
    assert_eq!(requests.len(), 2, "sent again after the timeout (the receiver deduplicates)");
    assert_eq!(requests[0].0["webhook-id"], requests[1].0["webhook-id"], "the same webhook-id");
    assert_eq!(requests[0].1, requests[1].1, "the same payload");
    for (headers, body) in &requests {
        verify_with_reference(SECRET, headers, body).unwrap();
    }
    let effect = d.effect(&key, "webhook").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 2));
    assert_eq!(d.attempts(&key, "webhook").await[0], ("ambiguous".to_string(), Some("timeout".to_string())));
}

async fn a_410_is_final_and_a_429_waits_its_retry_after(backend: Backend) {
    let receiver = Receiver::start().await;
    receiver.push_fault(Fault::Status(410));
    let d = webhook_app(backend, &receiver, SECRET).await;
    let gone = new_key();
    assert_eq!(d.app.submit(&gone, &inquiry("Hello")).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;
    let effect = d.effect(&gone, "webhook").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("FAILED_FINAL", 1), "410 Gone is final");

    receiver.push_fault(Fault::StatusRetryAfter(429, 2));
    let limited = new_key();
    assert_eq!(d.app.submit(&limited, &inquiry("Hello again")).await.status(), 201);
    worker.run_once().await;
    let effect = d.effect(&limited, "webhook").await;
    assert_eq!(effect.state.as_str(), "PENDING");
    let wait = effect.next_attempt_at - onceform::base::clock::now();
    assert!(wait > chrono::Duration::milliseconds(1500) && wait <= chrono::Duration::seconds(3), "{wait}");
    d.settle(&worker).await;
    let effect = d.effect(&limited, "webhook").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 2));
    assert_eq!(receiver.requests().len(), 3);
}

async fn an_inbound_event_goes_out_signed_through_a_webhook_handler(backend: Backend) {
    let receiver = Receiver::start().await;
    let (inbound, outbound) = (secret_var("in", SECRET), secret_var("out", NEXT_SECRET));
    let cfg = format!(
        "verify = \"standard-webhooks\"\nsecret_env = \"{inbound}\"\n[[handlers]]\nname = \"relay\"\n\
         kind = \"webhook\"\nurl = \"{}\"\nsecret_env = \"{outbound}\"\n",
        receiver.events_url()
    );
    let app = spawn_hook_app(backend, vec![("helpdesk", hook(&cfg))]).await;
    let body = r#"{"ticket":"T-9","text":"printer on fire"}"#;
    for _ in 0..2 {
        assert_eq!(app.post_signed("helpdesk", SECRET, "evt-9", body).await.status(), 200);
    }
    let worker = app.worker();
    app.settle(&worker).await;

    let requests = receiver.requests();
    assert_eq!(requests.len(), 1, "one event, one webhook");
    let (headers, payload) = &requests[0];
    assert_eq!(headers["webhook-id"], "helpdesk:relay:evt-9:0");
    let verified = verify_with_reference(NEXT_SECRET, headers, payload).unwrap();
    assert_eq!(
        (verified["type"].as_str(), verified["event_id"].as_str()),
        (Some("event.received"), Some("evt-9"))
    );
    assert_eq!(verified["body"], body);
}

/// Issue 25: an outbound webhook's attempts are shown with their status and the start of
/// what the receiver answered (bounded, on one line, escaped).
async fn a_refused_webhook_shows_the_receivers_answer_on_the_admin_page(backend: Backend) {
    let receiver = Receiver::start().await;
    receiver.push_fault(Fault::StatusBody(
        422,
        "{\"error\": \"<b>unknown</b> field\\n\", \"field\": \"budget\"}\r\n\r\n",
    ));
    let d = webhook_app(backend, &receiver, SECRET).await;
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    d.settle(&d.worker()).await;
    assert_eq!(d.effect(&key, "webhook").await.state, "FAILED_FINAL");
    let admin = d.app.sign_in(onceform::services::accounts::Role::Viewer).await;
    let id = crate::support::vendor::submission_id(&d.app, &key).await;
    let html = d.app.admin_get(Some(&admin), &format!("/admin/submissions/{id}")).await.text().await.unwrap();
    assert!(html.contains("HTTP 422") && html.contains("http_422"), "{html}");
    assert!(html.contains("&#60;b&#62;unknown&#60;/b&#62; field"), "{html}");
    assert!(html.contains("budget") && !html.contains("<b>unknown"), "{html}");
}
