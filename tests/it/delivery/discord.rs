//! The `discord` effect against a loopback Discord (support/discord.rs): one message per
//! submission, posted with `?wait=true` and kept by the message's ID; visitor text only for
//! the named fields, escaped; a timeout is UNKNOWN (never resent), a 429 waits as Discord
//! asks, a 5xx is retried, a refusal is final with Discord's words.

use std::time::Duration;

use crate::on_both_backends;
use crate::support::chat::{chat_app, env_var, scenario, Fault, PUBLIC_URL};
use crate::support::delivery::DeliveryApp;
use crate::support::discord::{FakeDiscord, WEBHOOK_ID};
use crate::support::{inquiry, new_key, Backend};

on_both_backends!(
    one_message_per_submission_with_the_reference_the_link_and_only_the_named_fields,
    a_timeout_after_discord_saved_the_message_is_unknown_and_never_resent,
    a_429_waits_as_long_as_discord_asks_and_posts_once,
    a_5xx_is_retried_and_posts_once,
    a_refused_webhook_fails_with_discords_words_on_the_attempt,
);

/// The demo form posting to `url` (the webhook's URL), showing `message` and `company`.
async fn app(backend: Backend, url: &str) -> DeliveryApp {
    let var = env_var(url);
    chat_app(backend, "discord", &format!("url_env = \"{var}\"\nfields = [\"message\", \"company\"]"), |_| {})
        .await
}

async fn one_message_per_submission_with_the_reference_the_link_and_only_the_named_fields(backend: Backend) {
    let discord = FakeDiscord::start().await;
    let d = app(backend, &discord.webhook_url()).await;
    let (first, second) = (new_key(), new_key());
    let typed = "Call me at 555-0100, [reset](https://evil.example) @everyone";
    let created = d.app.submit(&first, &inquiry(typed)).await;
    assert_eq!(created.status(), 201);
    let body: serde_json::Value = created.json().await.unwrap();
    assert_eq!(body["effects"], serde_json::json!([{"kind": "discord", "state": "PENDING"}]));
    assert_eq!(d.app.submit(&second, &inquiry("Another question")).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;
    assert_eq!(d.app.submit(&first, &inquiry(typed)).await.status(), 200);
    d.settle(&worker).await;

    let posted = discord.posted();
    assert_eq!(posted.len(), 2, "one message per submission, none for the replay: {:?}", discord.refused());
    let id = body["submission_id"].as_str().unwrap();
    let link = format!("(<{PUBLIC_URL}/admin/submissions/{id}>)");
    let message =
        posted.iter().find(|p| p.body["content"].as_str().unwrap().contains(&link)).expect("linked");
    let content = message.body["content"].as_str().unwrap();
    assert!(content.starts_with("**New inquiry\\: Contact us**\n"), "{content}");
    let reference = onceform::base::format::reference(id).replace('-', "\\-");
    assert!(content.contains(&format!("Reference\\: {reference}")), "{content}");
    assert!(content.contains("555\\-0100"), "the named field: {content}");
    assert!(content.contains("Analytical Engines"), "{content}");
    assert!(content.contains(r"\[reset\]\(https\://evil\.example\) \@everyone"), "escaped: {content}");
    for not_named in ["ada@example", "Ada Lovelace", "Sales"] {
        assert!(!content.contains(not_named), "no visitor text but the named fields: {content}");
    }
    assert_eq!(message.body["allowed_mentions"], serde_json::json!({"parse": []}), "mentions no one");
    let effect = d.effect(&first, "discord").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 1));
    assert_eq!(effect.provider_ref.as_deref(), Some(message.id.as_str()), "kept by Discord's message ID");
}

async fn a_timeout_after_discord_saved_the_message_is_unknown_and_never_resent(backend: Backend) {
    let discord = FakeDiscord::start().await;
    let d = app(backend, &discord.webhook_url()).await;
    scenario::timeout_after_posting(&d, &discord.state, "discord").await;
}

async fn a_429_waits_as_long_as_discord_asks_and_posts_once(backend: Backend) {
    let discord = FakeDiscord::start().await;
    let d = app(backend, &discord.webhook_url()).await;
    let fault = Fault::RateLimited(1.25);
    let words = "The resource is being rate limited.";
    scenario::rate_limited(&d, &discord.state, "discord", fault, Duration::from_millis(1250), words).await;
}

async fn a_5xx_is_retried_and_posts_once(backend: Backend) {
    let discord = FakeDiscord::start().await;
    let d = app(backend, &discord.webhook_url()).await;
    scenario::server_error(&d, &discord.state, "discord", 502).await;
}

async fn a_refused_webhook_fails_with_discords_words_on_the_attempt(backend: Backend) {
    let discord = FakeDiscord::start().await;
    let revoked = format!("{}/api/webhooks/{WEBHOOK_ID}/a-revoked-token", discord.url);
    let d = app(backend, &revoked).await;
    scenario::refused(&d, &discord.state, "discord", 401, "Invalid Webhook Token").await;
    assert_eq!(discord.refused(), ["token"]);
}
