//! The `line` effect against a loopback LINE Messaging API (support/line.rs): one push
//! message per submission under a retry key derived from the record, visitor text only for
//! the named fields; a timeout after LINE accepted is sent again under the same key and
//! answered 409 (SENT, delivered once), a 429 (rate or monthly limit) and a 5xx are retried
//! under the same key, a refusal is final with LINE's words; a route sends to its own group.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::on_both_backends;
use crate::support::chat::{attempts, chat_app, env_var, scenario, Fault, PUBLIC_URL};
use crate::support::delivery::DeliveryApp;
use crate::support::line::{FakeLine, GROUP_ID, STRANGER_ID, TOKEN};
use crate::support::{inquiry, new_key, Backend};

on_both_backends!(
    one_push_per_submission_with_the_reference_the_link_and_only_the_named_fields,
    a_timeout_after_line_accepted_is_sent_again_under_its_key_and_delivered_once,
    a_429_is_retried_under_the_same_key_and_delivered_once,
    the_monthly_limit_429_is_retried_with_lines_words_on_the_attempt,
    a_5xx_is_retried_under_the_same_key_and_delivered_once,
    a_recipient_who_is_no_friend_fails_with_lines_words_on_the_attempt,
    a_wrong_token_fails_with_lines_words_on_the_attempt,
    a_route_pushes_to_its_own_group_and_names_the_route,
);

/// The `[forms.contact.line]` body pushing to `to` on `line`, with the token `token`.
fn table(line: &FakeLine, token: &str, to: &str) -> String {
    let var = env_var(token);
    format!(
        "token_env = \"{var}\"\nto = \"{to}\"\napi_url = \"{}\"\nfields = [\"message\", \"company\"]",
        line.url
    )
}

async fn app(backend: Backend, line: &FakeLine) -> DeliveryApp {
    chat_app(backend, "line", &table(line, TOKEN, GROUP_ID), |_| {}).await
}

/// The text of a pushed message.
fn text(body: &Value) -> String {
    body["messages"][0]["text"].as_str().unwrap().to_string()
}

/// Runs worker passes (deliveries and lookups) until the `line` record of `key` is SENT.
async fn until_sent(d: &DeliveryApp, key: &str) {
    let worker = d.worker();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        worker.run_once().await;
        if d.effect(key, "line").await.state == "SENT" {
            return;
        }
        assert!(Instant::now() < deadline, "not sent: {:?}", d.effect(key, "line").await);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every retry key the fake saw was the same UUID; `n` of them.
fn one_key_seen(line: &FakeLine, n: usize) {
    let keys = line.keys_seen();
    assert_eq!(keys.len(), n, "{keys:?}");
    let first = keys[0].clone().expect("a retry key on every push");
    assert!(uuid::Uuid::parse_str(&first).is_ok(), "{first}");
    assert!(keys.iter().all(|k| k.as_deref() == Some(first.as_str())), "one key for every attempt: {keys:?}");
}

async fn one_push_per_submission_with_the_reference_the_link_and_only_the_named_fields(backend: Backend) {
    let line = FakeLine::start().await;
    let d = app(backend, &line).await;
    let (first, second) = (new_key(), new_key());
    let typed = "Call me at 555-0100 [reset](https://evil.example)";
    let created = d.app.submit(&first, &inquiry(typed)).await;
    assert_eq!(created.status(), 201);
    let body: Value = created.json().await.unwrap();
    assert_eq!(d.app.submit(&second, &inquiry("Another question")).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;
    assert_eq!(d.app.submit(&first, &inquiry(typed)).await.status(), 200);
    d.settle(&worker).await;

    let posted = line.posted();
    assert_eq!(posted.len(), 2, "one push per submission, none for the replay: {:?}", line.refused());
    let keys = line.keys_seen();
    assert_eq!(keys.len(), 2);
    assert_ne!(keys[0], keys[1], "each record its own retry key");
    let id = body["submission_id"].as_str().unwrap();
    let link = format!("{PUBLIC_URL}/admin/submissions/{id}");
    let pushed = posted.iter().find(|p| text(&p.body).contains(&link)).expect("a push links the submission");
    assert_eq!(pushed.body["to"], GROUP_ID);
    assert_eq!(pushed.body["messages"].as_array().unwrap().len(), 1);
    let t = text(&pushed.body);
    let reference = onceform::base::format::reference(id);
    assert!(t.starts_with(&format!("New inquiry: Contact us\nReference: {reference}\n")), "{t}");
    assert!(t.contains(&format!("Message: {typed}")), "the named field as typed: {t}");
    assert!(t.contains("Company: Analytical Engines"), "{t}");
    for not_named in ["ada@example", "Ada Lovelace"] {
        assert!(!t.contains(not_named), "no visitor text but the named fields: {t}");
    }
    let effect = d.effect(&first, "line").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 1));
    let ids: Vec<&str> = posted.iter().map(|p| p.id.as_str()).collect();
    assert!(ids.contains(&effect.provider_ref.as_deref().unwrap()), "LINE's message ID is the reference");
}

async fn a_timeout_after_line_accepted_is_sent_again_under_its_key_and_delivered_once(backend: Backend) {
    let line = FakeLine::start().await;
    let d = app(backend, &line).await;
    line.state.lock().unwrap().faults.push_back(Fault::SlowAfterPost(Duration::from_millis(1500)));
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    until_sent(&d, &key).await;

    let tried = attempts(&d, &key, "line").await;
    assert_eq!(tried[0], ("ambiguous".to_string(), Some("timeout".to_string()), None), "{tried:?}");
    assert_eq!(tried.last().unwrap().0, "lookup_found", "settled by sending again: {tried:?}");
    assert_eq!(line.posted().len(), 1, "LINE delivered one message");
    assert_eq!(line.conflicts(), 1, "the second push was answered 409");
    one_key_seen(&line, 2);
    let effect = d.effect(&key, "line").await;
    assert_eq!(
        effect.provider_ref.as_deref(),
        Some(line.posted()[0].id.as_str()),
        "the accepted message's ID"
    );
}

async fn a_429_is_retried_under_the_same_key_and_delivered_once(backend: Backend) {
    let line = FakeLine::start().await;
    let d = app(backend, &line).await;
    let words = "The API rate limit has been exceeded. Try again later.";
    scenario::rate_limited(&d, &line.state, "line", Fault::RateLimited(0.0), Duration::ZERO, words).await;
    one_key_seen(&line, 2);
}

async fn the_monthly_limit_429_is_retried_with_lines_words_on_the_attempt(backend: Backend) {
    let line = FakeLine::start().await;
    let d = app(backend, &line).await;
    let words = "You have reached your monthly limit.";
    scenario::rate_limited(&d, &line.state, "line", Fault::OverMonthlyLimit, Duration::ZERO, words).await;
    one_key_seen(&line, 2);
}

async fn a_5xx_is_retried_under_the_same_key_and_delivered_once(backend: Backend) {
    let line = FakeLine::start().await;
    let d = app(backend, &line).await;
    scenario::server_error(&d, &line.state, "line", 500).await;
    one_key_seen(&line, 2);
    assert_eq!(line.conflicts(), 0);
}

async fn a_recipient_who_is_no_friend_fails_with_lines_words_on_the_attempt(backend: Backend) {
    let line = FakeLine::start().await;
    let d = chat_app(backend, "line", &table(&line, TOKEN, STRANGER_ID), |_| {}).await;
    scenario::refused(&d, &line.state, "line", 400, "Failed to send messages").await;
    assert_eq!(line.refused(), ["recipient"]);
}

async fn a_wrong_token_fails_with_lines_words_on_the_attempt(backend: Backend) {
    let line = FakeLine::start().await;
    let d = chat_app(backend, "line", &table(&line, "not-the-token", GROUP_ID), |_| {}).await;
    let words = "Authentication failed due to the following reason: invalid token.";
    scenario::refused(&d, &line.state, "line", 401, words).await;
    assert_eq!(line.refused(), ["auth"]);
}

async fn a_route_pushes_to_its_own_group_and_names_the_route(backend: Backend) {
    let line = FakeLine::start().await;
    let group = env_var(GROUP_ID);
    // The form's own recipient is a stranger; the support route's is the group.
    let routed = format!(
        "{}\n\n[[forms.contact.routes]]\nname = \"support\"\nwhen = {{ topic = \"Sales\" }}\n\
         line = {{ to_env = \"{group}\" }}\n",
        table(&line, TOKEN, STRANGER_ID)
    );
    let d = chat_app(backend, "line", &routed, |_| {}).await;
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;

    let effect = d.effect(&key, "line").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 1), "{:?}", line.refused());
    let posted = line.posted();
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0].body["to"], GROUP_ID, "the route's recipient");
    assert!(text(&posted[0].body).contains("\nRoute: support\n"), "{}", text(&posted[0].body));
}
