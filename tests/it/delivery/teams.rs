//! The `teams` effect against a loopback Teams workflow webhook (support/teams.rs): one
//! Adaptive Card per submission, visitor text only for the named fields and only in plain
//! text runs; a timeout is UNKNOWN (never resent), a 429 (or an old connector's 429 in a 200)
//! waits and retries, a 5xx is retried, a refusal is final with Azure's words.

use std::time::Duration;

use serde_json::Value;

use crate::on_both_backends;
use crate::support::chat::{chat_app, env_var, scenario, Fault, PUBLIC_URL};
use crate::support::delivery::DeliveryApp;
use crate::support::teams::FakeTeams;
use crate::support::{inquiry, new_key, Backend};

on_both_backends!(
    one_card_per_submission_with_the_reference_the_link_and_only_the_named_fields,
    a_timeout_after_teams_accepted_is_unknown_and_never_resent,
    a_429_waits_as_retry_after_says_and_posts_once,
    an_old_connectors_429_in_a_200_is_not_taken_for_delivery,
    a_5xx_is_retried_and_posts_once,
    a_wrong_signature_fails_with_azures_words_on_the_attempt,
);

/// The demo form posting to `url` (the workflow's URL), showing `message` and `company`.
async fn app(backend: Backend, url: &str) -> DeliveryApp {
    let var = env_var(url);
    chat_app(backend, "teams", &format!("url_env = \"{var}\"\nfields = [\"message\", \"company\"]"), |_| {})
        .await
}

/// Every text run of a posted card, in order.
fn texts(card: &Value) -> Vec<String> {
    card["attachments"][0]["content"]["body"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["inlines"].as_array().unwrap())
        .map(|r| r["text"].as_str().unwrap().to_string())
        .collect()
}

async fn one_card_per_submission_with_the_reference_the_link_and_only_the_named_fields(backend: Backend) {
    let teams = FakeTeams::start().await;
    let d = app(backend, &teams.webhook_url()).await;
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

    let posted = teams.posted();
    assert_eq!(posted.len(), 2, "one card per submission, none for the replay: {:?}", teams.refused());
    let id = body["submission_id"].as_str().unwrap();
    let link = format!("{PUBLIC_URL}/admin/submissions/{id}");
    let card = &posted
        .iter()
        .find(|p| p.body["attachments"][0]["content"]["actions"][0]["url"] == link.as_str())
        .expect("a card links the submission")
        .body;
    let runs = texts(card);
    let reference = onceform::base::format::reference(id);
    assert_eq!(runs[..2], ["New inquiry: Contact us".to_string(), format!("Reference: {reference}")]);
    assert!(runs.contains(&typed.to_string()), "the named field as one plain run: {runs:?}");
    assert!(runs.contains(&"Analytical Engines".to_string()), "{runs:?}");
    let all = card.to_string();
    for not_named in ["ada@example", "Ada Lovelace"] {
        assert!(!all.contains(not_named), "no visitor text but the named fields: {all}");
    }
    let effect = d.effect(&first, "teams").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 1));
}

async fn a_timeout_after_teams_accepted_is_unknown_and_never_resent(backend: Backend) {
    let teams = FakeTeams::start().await;
    let d = app(backend, &teams.webhook_url()).await;
    scenario::timeout_after_posting(&d, &teams.state, "teams").await;
}

async fn a_429_waits_as_retry_after_says_and_posts_once(backend: Backend) {
    let teams = FakeTeams::start().await;
    let d = app(backend, &teams.webhook_url()).await;
    let words = "TooManyRequests: Rate limit is exceeded.";
    scenario::rate_limited(&d, &teams.state, "teams", Fault::RateLimited(1.0), Duration::from_secs(1), words)
        .await;
}

async fn an_old_connectors_429_in_a_200_is_not_taken_for_delivery(backend: Backend) {
    let teams = FakeTeams::start().await;
    let d = app(backend, &teams.webhook_url()).await;
    let words = "Microsoft Teams endpoint returned HTTP error 429";
    scenario::rate_limited(&d, &teams.state, "teams", Fault::ThrottledIn200, Duration::ZERO, words).await;
}

async fn a_5xx_is_retried_and_posts_once(backend: Backend) {
    let teams = FakeTeams::start().await;
    let d = app(backend, &teams.webhook_url()).await;
    scenario::server_error(&d, &teams.state, "teams", 502).await;
}

async fn a_wrong_signature_fails_with_azures_words_on_the_attempt(backend: Backend) {
    let teams = FakeTeams::start().await;
    let d = app(backend, &teams.webhook_url_signed("not-the-signature")).await;
    let words = "DirectApiInvalidAuthorizationSignature: The provided callback signature is not valid.";
    scenario::refused(&d, &teams.state, "teams", 401, words).await;
    assert_eq!(teams.refused(), ["sig"]);
}
