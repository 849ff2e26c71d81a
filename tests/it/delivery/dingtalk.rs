//! The `dingtalk` effect against a loopback DingTalk custom robot (support/dingtalk.rs): one
//! signed plain-text message per submission in the form's locale, visitor text only for the
//! named fields; a 200 with a non-zero errcode did not send: 130101 (too fast) is retried,
//! another code fails with DingTalk's errmsg on the attempt; a timeout is UNKNOWN (never
//! resent); a wrong secret is refused by the robot.

use std::time::Duration;

use onceform::base::i18n::Locale;
use onceform::config::LocaleChoice;

use crate::on_both_backends;
use crate::support::chat::{admin_page, attempts, chat_app, env_var, scenario, Fault, PUBLIC_URL};
use crate::support::delivery::DeliveryApp;
use crate::support::dingtalk::{FakeDingtalk, SECRET, TOKEN};
use crate::support::{inquiry, new_key, Backend};

on_both_backends!(
    one_signed_dingtalk_message_per_submission_in_the_forms_locale_with_only_the_named_fields,
    a_timeout_after_dingtalk_sent_is_unknown_and_never_resent,
    dingtalks_too_fast_code_is_retried_and_sends_once,
    an_unknown_robot_token_fails_with_dingtalks_errmsg_on_the_attempt,
    a_wrong_secret_is_refused_by_dingtalks_signature_check,
);

/// The demo form (in simplified Chinese) sending through the robot at `url`, signed with
/// `secret`, showing `message`.
async fn app(backend: Backend, url: &str, secret: &str) -> DeliveryApp {
    let table = format!(
        "url_env = \"{}\"\nsecret_env = \"{}\"\nfields = [\"message\"]",
        env_var(url),
        env_var(secret)
    );
    chat_app(backend, "dingtalk", &table, |c| {
        c.forms.get_mut("contact").unwrap().locale = LocaleChoice::Fixed(Locale::ZhCn);
    })
    .await
}

async fn one_signed_dingtalk_message_per_submission_in_the_forms_locale_with_only_the_named_fields(
    backend: Backend,
) {
    let dingtalk = FakeDingtalk::start().await;
    let d = app(backend, &dingtalk.url(TOKEN), SECRET).await;
    let key = new_key();
    let created = d.app.submit(&key, &inquiry("请回电 555-0100 **急**")).await;
    assert_eq!(created.status(), 201);
    let body: serde_json::Value = created.json().await.unwrap();
    let worker = d.worker();
    d.settle(&worker).await;

    let posted = dingtalk.posted();
    assert_eq!(posted.len(), 1, "{:?}", dingtalk.refused());
    assert_eq!(posted[0].body["msgtype"], "text", "plain text: not markdown");
    let text = posted[0].body["text"]["content"].as_str().unwrap();
    let id = body["submission_id"].as_str().unwrap();
    let reference = onceform::base::format::reference(id);
    assert!(text.starts_with("新咨询：Contact us\n"), "in the form's locale: {text}");
    assert!(text.contains(&format!("编号：{reference}")), "{text}");
    assert!(text.contains("请回电 555-0100 **急**"), "the named field, as typed: {text}");
    assert!(text.ends_with(&format!("在管理后台打开：{PUBLIC_URL}/admin/submissions/{id}")), "{text}");
    for not_named in ["ada@example", "Ada Lovelace", "Analytical Engines"] {
        assert!(!text.contains(not_named), "no visitor text but the named fields: {text}");
    }
    let effect = d.effect(&key, "dingtalk").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 1));
}

async fn a_timeout_after_dingtalk_sent_is_unknown_and_never_resent(backend: Backend) {
    let dingtalk = FakeDingtalk::start().await;
    let d = app(backend, &dingtalk.url(TOKEN), SECRET).await;
    scenario::timeout_after_posting(&d, &dingtalk.state, "dingtalk").await;
}

async fn dingtalks_too_fast_code_is_retried_and_sends_once(backend: Backend) {
    let dingtalk = FakeDingtalk::start().await;
    let d = app(backend, &dingtalk.url(TOKEN), SECRET).await;
    let fault = Fault::RateLimited(0.0);
    scenario::rate_limited(&d, &dingtalk.state, "dingtalk", fault, Duration::ZERO, "130101: send too fast")
        .await;
}

async fn an_unknown_robot_token_fails_with_dingtalks_errmsg_on_the_attempt(backend: Backend) {
    let dingtalk = FakeDingtalk::start().await;
    let d = app(backend, &dingtalk.url("0000not0this0robot"), SECRET).await;
    let key = failed_once(&d).await;
    let tried = attempts(&d, &key, "dingtalk").await;
    assert_eq!((tried[0].0.as_str(), tried[0].1.as_deref()), ("permanent", Some("errcode_300001")));
    let detail = tried[0].2.clone().unwrap_or_default();
    assert!(detail.contains("300001: token is not exist"), "DingTalk's errmsg on the attempt: {detail:?}");
    assert!(dingtalk.posted().is_empty());
    assert_eq!(dingtalk.refused(), ["token"]);
    assert!(admin_page(&d, &key).await.contains("token is not exist"), "DingTalk's errmsg on the page");
}

async fn a_wrong_secret_is_refused_by_dingtalks_signature_check(backend: Backend) {
    let dingtalk = FakeDingtalk::start().await;
    let d = app(backend, &dingtalk.url(TOKEN), "SECnot0the0robots0secret").await;
    let key = failed_once(&d).await;
    let tried = attempts(&d, &key, "dingtalk").await;
    assert_eq!((tried[0].0.as_str(), tried[0].1.as_deref()), ("permanent", Some("errcode_310000")));
    assert!(dingtalk.posted().is_empty());
    assert_eq!(dingtalk.refused(), ["sign"]);
}

/// Submits once and settles: the record failed for good on its first attempt; its key.
async fn failed_once(d: &DeliveryApp) -> String {
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;
    let effect = d.effect(&key, "dingtalk").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("FAILED_FINAL", 1), "a 200 is not sent");
    key
}
