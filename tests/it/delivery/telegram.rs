//! The `telegram` effect against a loopback Bot API (support/telegram.rs): one plain-text
//! message per submission in the form's locale, visitor text only for the named fields; a
//! timeout is UNKNOWN (never resent), a 429 waits the `retry_after` its body gives, a 5xx is
//! retried, a refusal is final with Telegram's description.

use std::time::Duration;

use onceform::base::i18n::Locale;
use onceform::config::LocaleChoice;

use crate::on_both_backends;
use crate::support::chat::{chat_app, env_var, scenario, Fault, PUBLIC_URL};
use crate::support::delivery::DeliveryApp;
use crate::support::telegram::{FakeTelegram, BOT_TOKEN, CHAT_ID};
use crate::support::{inquiry, new_key, Backend};

on_both_backends!(
    one_message_per_submission_in_the_forms_locale_with_only_the_named_fields,
    a_timeout_after_telegram_sent_is_unknown_and_never_resent,
    a_429_waits_the_retry_after_of_telegrams_body_and_sends_once,
    a_5xx_is_retried_and_sends_once,
    an_unknown_chat_fails_with_telegrams_description_on_the_attempt,
);

/// The demo form sending to `chat` through the fake, showing `message`.
async fn app(backend: Backend, telegram: &FakeTelegram, chat: i64) -> DeliveryApp {
    let var = env_var(BOT_TOKEN);
    let table = format!(
        "token_env = \"{var}\"\nchat_id = {chat}\napi_url = \"{}\"\nfields = [\"message\"]",
        telegram.url
    );
    chat_app(backend, "telegram", &table, |c| {
        c.forms.get_mut("contact").unwrap().locale = LocaleChoice::Fixed(Locale::Ja);
    })
    .await
}

async fn one_message_per_submission_in_the_forms_locale_with_only_the_named_fields(backend: Backend) {
    let telegram = FakeTelegram::start().await;
    let d = app(backend, &telegram, CHAT_ID).await;
    let (first, second) = (new_key(), new_key());
    let created = d.app.submit(&first, &inquiry("Call me at 555-0100 <b>now</b>")).await;
    assert_eq!(created.status(), 201);
    let body: serde_json::Value = created.json().await.unwrap();
    assert_eq!(d.app.submit(&second, &inquiry("Another question")).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;
    assert_eq!(d.app.submit(&first, &inquiry("Call me at 555-0100 <b>now</b>")).await.status(), 200);
    d.settle(&worker).await;

    let posted = telegram.posted();
    assert_eq!(posted.len(), 2, "one message per submission, none for the replay: {:?}", telegram.refused());
    let id = body["submission_id"].as_str().unwrap();
    let link = format!("{PUBLIC_URL}/admin/submissions/{id}");
    let message = posted.iter().find(|p| p.body["text"].as_str().unwrap().contains(&link)).expect("linked");
    let text = message.body["text"].as_str().unwrap();
    let reference = onceform::base::format::reference(id);
    assert!(text.starts_with("新しいお問い合わせ：Contact us\n"), "in the form's locale: {text}");
    assert!(text.contains(&format!("受付番号：{reference}")), "{text}");
    assert!(text.contains("Call me at 555-0100 <b>now</b>"), "the named field, as typed: {text}");
    assert!(text.ends_with(&format!("管理画面で開く：{link}")), "{text}");
    for not_named in ["ada@example", "Ada Lovelace", "Analytical Engines"] {
        assert!(!text.contains(not_named), "no visitor text but the named fields: {text}");
    }
    assert!(message.body.get("parse_mode").is_none(), "plain text: nothing typed is read as markup");
    let effect = d.effect(&first, "telegram").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 1));
    assert_eq!(effect.provider_ref.as_deref(), Some(message.id.as_str()));
}

async fn a_timeout_after_telegram_sent_is_unknown_and_never_resent(backend: Backend) {
    let telegram = FakeTelegram::start().await;
    let d = app(backend, &telegram, CHAT_ID).await;
    scenario::timeout_after_posting(&d, &telegram.state, "telegram").await;
}

async fn a_429_waits_the_retry_after_of_telegrams_body_and_sends_once(backend: Backend) {
    let telegram = FakeTelegram::start().await;
    let d = app(backend, &telegram, CHAT_ID).await;
    let words = "Too Many Requests: retry after 1";
    scenario::rate_limited(
        &d,
        &telegram.state,
        "telegram",
        Fault::RateLimited(1.0),
        Duration::from_secs(1),
        words,
    )
    .await;
}

async fn a_5xx_is_retried_and_sends_once(backend: Backend) {
    let telegram = FakeTelegram::start().await;
    let d = app(backend, &telegram, CHAT_ID).await;
    scenario::server_error(&d, &telegram.state, "telegram", 500).await;
}

async fn an_unknown_chat_fails_with_telegrams_description_on_the_attempt(backend: Backend) {
    let telegram = FakeTelegram::start().await;
    let d = app(backend, &telegram, -100999).await;
    scenario::refused(&d, &telegram.state, "telegram", 400, "Bad Request: chat not found").await;
    assert_eq!(telegram.refused(), ["chat"]);
}
