//! The `slack` effect against a loopback incoming webhook: one message per submission, no
//! visitor text but the name, retried on a 5xx, UNKNOWN (never resent) after a timeout.

use std::time::Duration;

use onceform::config::{Config, DEFAULT_CONFIG};

use crate::on_both_backends;
use crate::support::delivery::{spawn_delivery_app, DeliveryApp};
use crate::support::receiver::{Fault, Receiver};
use crate::support::{inquiry, new_key, Backend};

on_both_backends!(
    one_message_per_submission_and_a_replay_sends_nothing,
    a_500_is_retried_and_posts_once,
    a_timeout_is_unknown_and_never_resent,
);

/// The demo form with `slack` as its only effect, posting to `receiver`.
async fn slack_app(backend: Backend, receiver: &Receiver) -> DeliveryApp {
    let var = format!("ONCEFORM_TEST_SLACK_{}", uuid::Uuid::new_v4().simple());
    std::env::set_var(&var, receiver.events_url());
    let effects = r#"effects = ["crm_lead", "confirmation_email", "owner_notification"]"#;
    assert!(DEFAULT_CONFIG.contains(effects));
    let text = DEFAULT_CONFIG.replace(effects, r#"effects = ["slack"]"#)
        + &format!(
            "\n[forms.contact.slack]\nurl_env = \"{var}\"\nadmin_url = \"https://forms.example.com/\"\n"
        );
    let parsed = Config::parse(&text).unwrap();
    assert_eq!(onceform::services::check_config::problems(&parsed), Vec::<String>::new());
    spawn_delivery_app(backend, |c| c.forms = parsed.forms).await
}

async fn one_message_per_submission_and_a_replay_sends_nothing(backend: Backend) {
    let receiver = Receiver::start().await;
    let d = slack_app(backend, &receiver).await;
    let (first, second) = (new_key(), new_key());
    let created = d.app.submit(&first, &inquiry("Call me at 555-0100")).await;
    assert_eq!(created.status(), 201);
    let body: serde_json::Value = created.json().await.unwrap();
    assert_eq!(body["effects"], serde_json::json!([{"kind": "slack", "state": "PENDING"}]));
    assert_eq!(d.app.submit(&second, &inquiry("Another question")).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;
    assert_eq!(d.app.submit(&first, &inquiry("Call me at 555-0100")).await.status(), 200);
    d.settle(&worker).await;

    let calls = receiver.calls();
    assert_eq!(calls.len(), 2, "one message per submission, none for the replay: {calls:?}");
    let id = body["submission_id"].as_str().unwrap();
    let link = format!("<https://forms.example.com/admin/submissions/{id}|");
    let texts: Vec<String> = calls
        .iter()
        .map(|(_, body)| serde_json::from_str::<serde_json::Value>(body).unwrap()["text"].to_string())
        .collect();
    let text = texts.iter().find(|t| t.contains(&link)).expect("a message links the submission");
    assert!(text.contains("Ada Lovelace"), "{text}");
    for typed in ["555-0100", "ada@example.com"] {
        assert!(!text.contains(typed), "no visitor text beyond the name: {text}");
    }
    let effect = d.effect(&first, "slack").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 1));
}

async fn a_500_is_retried_and_posts_once(backend: Backend) {
    let receiver = Receiver::start().await;
    receiver.push_fault(Fault::Status(500));
    let d = slack_app(backend, &receiver).await;
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;

    let effect = d.effect(&key, "slack").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 2));
    let attempts = d.attempts(&key, "slack").await;
    assert_eq!(attempts[0], ("transient".to_string(), Some("http_500".to_string())));
    assert_eq!(receiver.calls().len(), 1);
}

async fn a_timeout_is_unknown_and_never_resent(backend: Backend) {
    let receiver = Receiver::start().await;
    receiver.push_fault(Fault::SlowAfterAct(Duration::from_millis(1500)));
    let d = slack_app(backend, &receiver).await;
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    worker.run_until_idle().await;

    let effect = d.effect(&key, "slack").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("UNKNOWN", 1), "waits for an admin");
    assert_eq!(d.attempts(&key, "slack").await, [("ambiguous".to_string(), Some("timeout".to_string()))]);
    assert_eq!(receiver.calls().len(), 1, "posted once, never resent");
}
