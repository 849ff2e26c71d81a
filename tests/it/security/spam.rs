//! Spam defence: the fill-time stamp and each captcha provider against a loopback fake.
//! Whatever fails a check is stored as spam with its reason, without side effects, and
//! shown in the admin; nothing is lost.

use onceform::config::{CaptchaConfig, Config};
use onceform::services::accounts::Role;
use serde_json::{json, Value};

use crate::on_both_backends;
use crate::support::captcha::{FakeCaptcha, Mode};
use crate::support::{inquiry, new_key, spawn_app_with, Backend, TestApp};

on_both_backends!(
    a_form_sent_too_fast_is_stored_as_spam,
    a_forged_stamp_is_stored_as_spam,
    a_form_filled_at_human_speed_is_accepted,
    turnstile_valid_invalid_replayed_and_provider_down,
    hcaptcha_valid_invalid_replayed_and_provider_down,
    altcha_valid_invalid_and_replayed,
);

const SECRET_VAR: &str = "ONCEFORM_TEST_CAPTCHA_SECRET";

fn hidden(html: &str, name: &str) -> String {
    let needle = format!(r#"name="{name}" value=""#);
    let start = html.find(&needle).unwrap_or_else(|| panic!("no {name} field")) + needle.len();
    html[start..].split('"').next().unwrap().to_string()
}

async fn rendered_form(app: &TestApp) -> (String, String) {
    let html = app.client.get(app.url("/f/contact")).send().await.unwrap().text().await.unwrap();
    (hidden(&html, "operation_id"), hidden(&html, "_stamp"))
}

async fn post_html(app: &TestApp, op: &str, stamp: &str) -> reqwest::Response {
    let form = [
        ("operation_id", op),
        ("_stamp", stamp),
        ("name", "Grace Hopper"),
        ("email", "grace@example.com"),
        ("topic", "Support"),
        ("message", "Please call me back"),
        ("website", ""),
    ];
    app.client.post(app.url("/f/contact")).form(&form).send().await.unwrap()
}

/// (spam, spam_reason, effect records) of the submission under `key`.
pub async fn verdict(app: &TestApp, key: &str) -> (bool, Option<String>, usize) {
    use diesel::prelude::*;
    use onceform::db::schema::submissions::dsl as s;
    let k = key.to_string();
    let (spam, reason): (bool, Option<String>) = app
        .query(move |pool| {
            onceform::with_conn!(pool, |c| s::submissions
                .filter(s::operation_id.eq(&k))
                .select((s::spam, s::spam_reason))
                .first(c)
                .map_err(onceform::db::DbError::from))
        })
        .await;
    (spam, reason, app.effects_of(key).await.len())
}

async fn a_form_sent_too_fast_is_stored_as_spam(backend: Backend) {
    let app = spawn_app_with(backend, |_| {}).await;
    assert_eq!(app.config.forms["contact"].min_fill_seconds, 3, "on by default");
    let (op, stamp) = rendered_form(&app).await;
    let resp = post_html(&app, &op, &stamp).await;
    assert_eq!(resp.status(), 303, "answered like any acceptance");
    assert_eq!(verdict(&app, &op).await, (true, Some("too-fast".into()), 0));
    assert_eq!(app.stats().await.deliveries_with("spam"), 1);
}

async fn a_forged_stamp_is_stored_as_spam(backend: Backend) {
    let app = spawn_app_with(backend, |_| {}).await;
    let (op, stamp) = rendered_form(&app).await;
    let (_, tag) = stamp.split_once('.').unwrap();
    let backdated = format!("1000000000.{tag}");
    assert_eq!(post_html(&app, &op, &backdated).await.status(), 303);
    assert_eq!(verdict(&app, &op).await, (true, Some("forged-stamp".into()), 0));

    let (op, _) = rendered_form(&app).await;
    assert_eq!(post_html(&app, &op, "1000000000.bm90LWEtc2lnbmF0dXJlISE").await.status(), 303);
    assert_eq!(verdict(&app, &op).await, (true, Some("forged-stamp".into()), 0));
}

async fn a_form_filled_at_human_speed_is_accepted(backend: Backend) {
    let app = spawn_app_with(backend, |_| {}).await;
    let (op, _) = rendered_form(&app).await;
    // Issued ten seconds ago with the server's own secret: what a person's post carries.
    let secret = onceform::base::secret::load(&app.config.server.secret_file).unwrap();
    let stamp = onceform::services::spam::stamp::issue(
        &secret,
        "contact",
        onceform::base::clock::unix_seconds() - 10,
    );
    assert_eq!(post_html(&app, &op, &stamp).await.status(), 303);
    assert_eq!(verdict(&app, &op).await, (false, None, 3));
    assert_eq!(post_html(&app, &op, &stamp).await.status(), 303, "a re-post lands on the same receipt");
    assert_eq!(app.stats().await.submissions, 1);
}

fn captcha(config: &mut Config, provider: &str, verify_url: &str) {
    let text = format!(
        "provider = '{provider}'\nsecret_env = '{SECRET_VAR}'\nverify_url = '{verify_url}'\ntimeout_ms = 500\nmax_number = 5000"
    );
    let c: CaptchaConfig = toml::from_str(&text).unwrap();
    config.forms.get_mut("contact").unwrap().captcha = Some(c);
}

fn with_answer(field: &str, answer: Option<&str>) -> Value {
    let mut body = inquiry("Quote for 40 units");
    if let Some(a) = answer {
        body[field] = json!(a);
    }
    body
}

async fn turnstile_valid_invalid_replayed_and_provider_down(backend: Backend) {
    siteverify_cases(backend, "turnstile", "cf-turnstile-response").await
}

async fn hcaptcha_valid_invalid_replayed_and_provider_down(backend: Backend) {
    siteverify_cases(backend, "hcaptcha", "h-captcha-response").await
}

async fn siteverify_cases(backend: Backend, provider: &str, field: &str) {
    std::env::set_var(SECRET_VAR, "s3cret-key");
    let fake = FakeCaptcha::start().await;
    let app = spawn_app_with(backend, |c| captcha(c, provider, &fake.url)).await;

    let valid = new_key();
    let mut typo = with_answer(field, Some("good-1"));
    typo["email"] = json!("not an address");
    assert_eq!(app.submit(&valid, &typo).await.status(), 422);
    assert!(fake.calls().is_empty(), "invalid fields cost no captcha call (nor the answer)");
    assert_eq!(app.submit(&valid, &with_answer(field, Some("good-1"))).await.status(), 201);
    assert_eq!(verdict(&app, &valid).await, (false, None, 3));
    let calls = fake.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0]["secret"].as_str(), calls[0]["response"].as_str(), calls[0]["remoteip"].as_str()),
        ("s3cret-key", "good-1", "127.0.0.1")
    );
    let retry = app.submit(&valid, &with_answer(field, Some("good-1"))).await;
    assert_eq!(retry.status(), 200, "a retry of the same submission is a replay");
    assert_eq!(fake.calls().len(), 1, "and is not verified again");

    let replayed = new_key();
    assert_eq!(app.submit(&replayed, &with_answer(field, Some("good-1"))).await.status(), 201);
    assert_eq!(verdict(&app, &replayed).await, (true, Some("captcha-replayed".into()), 0));

    let invalid = new_key();
    assert_eq!(app.submit(&invalid, &with_answer(field, Some("bad-2"))).await.status(), 201);
    assert_eq!(verdict(&app, &invalid).await, (true, Some("captcha-invalid".into()), 0));

    let missing = new_key();
    assert_eq!(app.submit(&missing, &with_answer(field, None)).await.status(), 201);
    assert_eq!(verdict(&app, &missing).await, (true, Some("captcha-missing".into()), 0));

    fake.set_mode(Mode::Down);
    let down = new_key();
    assert_eq!(app.submit(&down, &with_answer(field, Some("good-3"))).await.status(), 201);
    assert_eq!(verdict(&app, &down).await, (true, Some("captcha-unverified".into()), 0));

    fake.set_mode(Mode::Hang);
    let slow = new_key();
    assert_eq!(app.submit(&slow, &with_answer(field, Some("good-4"))).await.status(), 201);
    assert_eq!(verdict(&app, &slow).await, (true, Some("captcha-unverified".into()), 0), "the deadline held");

    let stats = app.stats().await;
    assert_eq!((stats.submissions, stats.effects_total()), (6, 3), "every one stored, one with effects");

    // Visible for review in the admin, with the reason.
    let session = app.sign_in(Role::Viewer).await;
    let list = app.admin_get(Some(&session), "/admin/submissions?spam=yes").await.text().await.unwrap();
    assert!(list.contains(">unverified</span>"), "{list}");
    assert!(list.contains("captcha answer already used"), "{list}");

    // An admin reviews the unverified one and releases it: it gets its side effects.
    let id: String = {
        use diesel::prelude::*;
        use onceform::db::schema::submissions::dsl as s;
        let k = down.clone();
        app.query(move |pool| {
            onceform::with_conn!(pool, |c| s::submissions
                .filter(s::operation_id.eq(&k))
                .select(s::id)
                .first(c)
                .map_err(onceform::db::DbError::from))
        })
        .await
    };
    let admin = app.sign_in(Role::Admin).await;
    let page = app.admin_get(Some(&admin), &format!("/admin/submissions/{id}")).await.text().await.unwrap();
    assert!(page.contains("unverified (captcha could not be verified"), "{page}");
    let path = format!("/admin/submissions/{id}/release");
    let audits = app.audit_count().await;
    let resp = app.admin_post(Some(&admin), &path, Some(&admin.csrf), &[("note", "provider outage")]).await;
    assert_eq!(resp.status(), 303);
    assert_eq!(verdict(&app, &down).await, (false, None, 3));
    assert_eq!(app.audit_count().await, audits + 1);
    let again = app.admin_post(Some(&admin), &path, Some(&admin.csrf), &[("note", "twice")]).await;
    assert_eq!(again.status(), 409, "released once");
    assert_eq!(app.stats().await.effects_total(), 6);
}

async fn altcha_valid_invalid_and_replayed(backend: Backend) {
    let app = spawn_app_with(backend, |c| captcha(c, "altcha", "")).await;
    let challenge = async {
        let resp = app.client.get(app.url("/api/forms/contact/altcha")).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["cache-control"], "no-store");
        resp.json::<onceform::services::spam::altcha::Challenge>().await.unwrap()
    };
    let c = challenge.await;
    assert_eq!((c.algorithm.as_str(), c.maxnumber), ("SHA-256", 5000));
    let solution = onceform::services::spam::altcha::solve(&c).unwrap();

    let valid = new_key();
    assert_eq!(app.submit(&valid, &with_answer("altcha", Some(&solution))).await.status(), 201);
    assert_eq!(verdict(&app, &valid).await, (false, None, 3));
    assert_eq!(app.submit(&valid, &with_answer("altcha", Some(&solution))).await.status(), 200);

    let replayed = new_key();
    assert_eq!(app.submit(&replayed, &with_answer("altcha", Some(&solution))).await.status(), 201);
    assert_eq!(verdict(&app, &replayed).await, (true, Some("captcha-replayed".into()), 0));

    // A solution of a challenge signed elsewhere, or a wrong number.
    let forged = onceform::services::spam::altcha::challenge(
        &onceform::base::secret::Secret::from_bytes([9; 32]),
        app.config.forms["contact"].captcha.as_ref().unwrap(),
        onceform::base::clock::unix_seconds(),
    );
    let invalid = new_key();
    let answer = onceform::services::spam::altcha::solve(&forged).unwrap();
    assert_eq!(app.submit(&invalid, &with_answer("altcha", Some(&answer))).await.status(), 201);
    assert_eq!(verdict(&app, &invalid).await, (true, Some("captcha-invalid".into()), 0));

    let resp = app.client.get(app.url("/api/forms/nope/altcha")).send().await.unwrap();
    assert_eq!(resp.status(), 404);
}

#[tokio::test]
async fn the_form_page_carries_the_captcha_widget_and_its_policy() {
    let app = spawn_app_with(Backend::Sqlite, |c| {
        captcha(c, "turnstile", "http://127.0.0.1:9/siteverify");
        c.forms.get_mut("contact").unwrap().captcha.as_mut().unwrap().site_key = Some("0x4AAA-site".into());
    })
    .await;
    let resp = app.client.get(app.url("/f/contact")).send().await.unwrap();
    let csp = resp.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(csp.contains("script-src 'self' https://challenges.cloudflare.com"), "{csp}");
    let html = resp.text().await.unwrap();
    assert!(
        html.contains(r#"<div class="cf-turnstile" data-sitekey="0x4AAA-site" data-language="en"></div>"#),
        "{html}"
    );

    let plain = spawn_app_with(Backend::Sqlite, |_| {}).await;
    let resp = plain.client.get(plain.url("/f/contact")).send().await.unwrap();
    assert!(!resp.headers()["content-security-policy"].to_str().unwrap().contains("cloudflare"));
    assert!(!resp.text().await.unwrap().contains("cf-turnstile"));
}
