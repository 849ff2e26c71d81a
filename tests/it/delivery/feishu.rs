//! The `feishu` effect against a loopback Feishu custom bot (support/feishu.rs): one signed
//! plain-text message per submission in the form's locale, visitor text only for the named
//! fields; a 200 with a non-zero code did not send: 11232 (over the rate) is retried, another
//! code fails with Feishu's msg on the attempt; a timeout is UNKNOWN (never resent); a wrong
//! secret is refused by the bot.

use std::time::Duration;

use onceform::base::i18n::Locale;
use onceform::config::LocaleChoice;

use crate::on_both_backends;
use crate::support::chat::{admin_page, attempts, chat_app, env_var, scenario, Fault, PUBLIC_URL};
use crate::support::delivery::DeliveryApp;
use crate::support::feishu::{FakeFeishu, SECRET, TOKEN};
use crate::support::{inquiry, new_key, Backend};

on_both_backends!(
    one_signed_feishu_message_per_submission_in_the_forms_locale_with_only_the_named_fields,
    a_timeout_after_feishu_sent_is_unknown_and_never_resent,
    feishus_rate_limit_code_is_retried_and_sends_once,
    an_unknown_bot_token_fails_with_feishus_msg_on_the_attempt,
    a_wrong_secret_is_refused_by_feishus_signature_check,
);

/// The demo form (in simplified Chinese) sending through the bot at `url`, signed with
/// `secret`, showing `message`.
async fn app(backend: Backend, url: &str, secret: &str) -> DeliveryApp {
    let table = format!(
        "url_env = \"{}\"\nsecret_env = \"{}\"\nfields = [\"message\"]",
        env_var(url),
        env_var(secret)
    );
    chat_app(backend, "feishu", &table, |c| {
        c.forms.get_mut("contact").unwrap().locale = LocaleChoice::Fixed(Locale::ZhCn);
    })
    .await
}

async fn one_signed_feishu_message_per_submission_in_the_forms_locale_with_only_the_named_fields(
    backend: Backend,
) {
    let feishu = FakeFeishu::start().await;
    let d = app(backend, &feishu.url(TOKEN), SECRET).await;
    let key = new_key();
    let created = d.app.submit(&key, &inquiry("请回电 555-0100 **急**")).await;
    assert_eq!(created.status(), 201);
    let body: serde_json::Value = created.json().await.unwrap();
    let worker = d.worker();
    d.settle(&worker).await;

    let posted = feishu.posted();
    assert_eq!(posted.len(), 1, "{:?}", feishu.refused());
    assert_eq!(posted[0].body["msg_type"], "text", "plain text: not markdown");
    let text = posted[0].body["content"]["text"].as_str().unwrap();
    let id = body["submission_id"].as_str().unwrap();
    let reference = onceform::base::format::reference(id);
    assert!(text.starts_with("新咨询：Contact us\n"), "in the form's locale: {text}");
    assert!(text.contains(&format!("编号：{reference}")), "{text}");
    assert!(text.contains("请回电 555-0100 **急**"), "the named field, as typed: {text}");
    assert!(text.ends_with(&format!("在管理后台打开：{PUBLIC_URL}/admin/submissions/{id}")), "{text}");
    for not_named in ["ada@example", "Ada Lovelace", "Analytical Engines"] {
        assert!(!text.contains(not_named), "no visitor text but the named fields: {text}");
    }
    let effect = d.effect(&key, "feishu").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 1));
}

async fn a_timeout_after_feishu_sent_is_unknown_and_never_resent(backend: Backend) {
    let feishu = FakeFeishu::start().await;
    let d = app(backend, &feishu.url(TOKEN), SECRET).await;
    scenario::timeout_after_posting(&d, &feishu.state, "feishu").await;
}

async fn feishus_rate_limit_code_is_retried_and_sends_once(backend: Backend) {
    let feishu = FakeFeishu::start().await;
    let d = app(backend, &feishu.url(TOKEN), SECRET).await;
    let fault = Fault::RateLimited(0.0);
    scenario::rate_limited(&d, &feishu.state, "feishu", fault, Duration::ZERO, "11232: frequency limited")
        .await;
}

async fn an_unknown_bot_token_fails_with_feishus_msg_on_the_attempt(backend: Backend) {
    let feishu = FakeFeishu::start().await;
    let d = app(backend, &feishu.url("0000not0this0bot"), SECRET).await;
    let key = failed_once(&d).await;
    let tried = attempts(&d, &key, "feishu").await;
    assert_eq!((tried[0].0.as_str(), tried[0].1.as_deref()), ("permanent", Some("code_19001")));
    let detail = tried[0].2.clone().unwrap_or_default();
    assert!(detail.contains("19001: param invalid"), "Feishu's msg on the attempt: {detail:?}");
    assert!(feishu.posted().is_empty());
    assert_eq!(feishu.refused(), ["token"]);
    assert!(
        admin_page(&d, &key).await.contains("incoming webhook access token invalid"),
        "Feishu's msg on the page"
    );
}

async fn a_wrong_secret_is_refused_by_feishus_signature_check(backend: Backend) {
    let feishu = FakeFeishu::start().await;
    let d = app(backend, &feishu.url(TOKEN), "SECnot0the0bots0secret").await;
    let key = failed_once(&d).await;
    let tried = attempts(&d, &key, "feishu").await;
    assert_eq!((tried[0].0.as_str(), tried[0].1.as_deref()), ("permanent", Some("code_19021")));
    assert!(feishu.posted().is_empty());
    assert_eq!(feishu.refused(), ["sign"]);
}

/// Submits once and settles: the record failed for good on its first attempt; its key.
async fn failed_once(d: &DeliveryApp) -> String {
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;
    let effect = d.effect(&key, "feishu").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("FAILED_FINAL", 1), "a 200 is not sent");
    key
}
