//! The `wecom` effect against a loopback WeCom group robot (support/wecom.rs): one plain-text
//! message per submission in the form's locale, visitor text only for the named fields; a
//! 200 with a non-zero errcode did not send: 45009 (over the rate) is retried, another code
//! fails with WeCom's errmsg on the attempt; a timeout is UNKNOWN (never resent).

use std::time::Duration;

use onceform::base::i18n::Locale;
use onceform::config::LocaleChoice;

use crate::on_both_backends;
use crate::support::chat::{admin_page, attempts, chat_app, env_var, scenario, Fault, PUBLIC_URL};
use crate::support::delivery::DeliveryApp;
use crate::support::wecom::{FakeWecom, KEY};
use crate::support::{inquiry, new_key, Backend};

on_both_backends!(
    one_wecom_message_per_submission_in_the_forms_locale_with_only_the_named_fields,
    a_timeout_after_wecom_sent_is_unknown_and_never_resent,
    wecoms_rate_limit_code_is_retried_and_sends_once,
    a_wrong_robot_key_fails_with_wecoms_errmsg_on_the_attempt,
);

/// The demo form (in simplified Chinese) sending through the robot at `url`, showing `message`.
async fn app(backend: Backend, url: &str) -> DeliveryApp {
    let table = format!("url_env = \"{}\"\nfields = [\"message\"]", env_var(url));
    chat_app(backend, "wecom", &table, |c| {
        c.forms.get_mut("contact").unwrap().locale = LocaleChoice::Fixed(Locale::ZhCn);
    })
    .await
}

async fn one_wecom_message_per_submission_in_the_forms_locale_with_only_the_named_fields(backend: Backend) {
    let wecom = FakeWecom::start().await;
    let d = app(backend, &wecom.url(KEY)).await;
    let key = new_key();
    let created = d.app.submit(&key, &inquiry("请回电 555-0100 **急**")).await;
    assert_eq!(created.status(), 201);
    let body: serde_json::Value = created.json().await.unwrap();
    let worker = d.worker();
    d.settle(&worker).await;

    let posted = wecom.posted();
    assert_eq!(posted.len(), 1, "{:?}", wecom.refused());
    assert_eq!(posted[0].body["msgtype"], "text", "plain text: nothing typed is read as Markdown");
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
    let effect = d.effect(&key, "wecom").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 1));
}

async fn a_timeout_after_wecom_sent_is_unknown_and_never_resent(backend: Backend) {
    let wecom = FakeWecom::start().await;
    let d = app(backend, &wecom.url(KEY)).await;
    scenario::timeout_after_posting(&d, &wecom.state, "wecom").await;
}

async fn wecoms_rate_limit_code_is_retried_and_sends_once(backend: Backend) {
    let wecom = FakeWecom::start().await;
    let d = app(backend, &wecom.url(KEY)).await;
    let fault = Fault::RateLimited(0.0);
    scenario::rate_limited(&d, &wecom.state, "wecom", fault, Duration::ZERO, "45009: api freq out of limit")
        .await;
}

async fn a_wrong_robot_key_fails_with_wecoms_errmsg_on_the_attempt(backend: Backend) {
    let wecom = FakeWecom::start().await;
    let d = app(backend, &wecom.url("0000-not-this-robot")).await;
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;

    let effect = d.effect(&key, "wecom").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("FAILED_FINAL", 1), "a 200 is not sent");
    let tried = attempts(&d, &key, "wecom").await;
    assert_eq!((tried[0].0.as_str(), tried[0].1.as_deref()), ("permanent", Some("errcode_93000")));
    let detail = tried[0].2.clone().unwrap_or_default();
    assert!(detail.contains("93000: invalid webhook url"), "WeCom's errmsg on the attempt: {detail:?}");
    assert!(wecom.posted().is_empty());
    assert_eq!(wecom.refused(), ["key"]);
    assert!(admin_page(&d, &key).await.contains("invalid webhook url"), "WeCom's errmsg on the page");
}
