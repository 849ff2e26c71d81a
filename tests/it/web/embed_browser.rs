//! In headless Chromium: a static page on another origin embeds a form with `embed.js`;
//! a 422 shows by its field, a reload keeps the fill, a lost answer is retried with the same key (one submission,
//! one lead), the receipt shows the reference; a page from an unlisted origin is refused.
//! Screenshots: target/test-artifacts/embed-*.png.

use std::time::{Duration, Instant};

use crate::support::browser::Browser;
use crate::support::delivery::spawn_delivery_app;
use crate::support::static_site::{HttpProxy, StaticSite};
use crate::support::Backend;

fn page(form_url: &str, script_url: &str) -> String {
    page_with(form_url, script_url, "")
}

fn page_with(form_url: &str, script_url: &str, attributes: &str) -> String {
    format!(
        r#"<!doctype html><html><head><meta charset="utf-8"><title>A static site</title>
<style>body{{font-family:sans-serif;max-width:40rem;margin:2rem auto}} label{{display:block}}
input,select,textarea{{width:100%}} .onceform-error{{color:#b00020}} .onceform-receipt{{border:2px solid #2a7;padding:1rem}}</style>
</head><body><h1>Contact us (static site)</h1>
<form data-onceform="{form_url}"{attributes}>
<p><label for="name">Your name</label><input id="name" name="name"></p>
<p><label for="email">Email</label><input id="email" name="email"></p>
<p><label for="topic">Topic</label><select id="topic" name="topic"><option>Sales</option><option>Support</option></select></p>
<p><label for="message">Message</label><textarea id="message" name="message"></textarea></p>
<button type="submit">Send</button>
</form>
<script src="{script_url}"></script>
</body></html>"#
    )
}

/// Waits up to `seconds` for `needle` in the page (retries with backoff take a few seconds).
pub(super) async fn wait_long(browser: &Browser, needle: &str, seconds: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        let source = browser.source().await;
        if source.contains(needle) {
            return source;
        }
        assert!(Instant::now() < deadline, "the page never showed {needle:?}:\n{source}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_page_submits_once_through_a_lost_answer_and_an_unlisted_one_is_refused() {
    let (site, elsewhere) = (StaticSite::start().await, StaticSite::start().await);
    let origin = site.origin.clone();
    let d = spawn_delivery_app(Backend::Sqlite, |c| {
        c.forms.get_mut("contact").unwrap().allowed_origins = vec![origin];
    })
    .await;
    let app = &d.app;
    let proxy = HttpProxy::start(app.address.clone()).await;
    let form_url = format!("{}/f/contact", proxy.url);
    site.set_page(page(&form_url, &app.url("/embed.js")));
    elsewhere.set_page(page(&form_url, &app.url("/embed.js")));

    let browser = Browser::start().await;
    browser.goto(&format!("{}/contact.html", site.origin)).await;
    browser.type_into("#name", "Ada Lovelace").await;
    browser.type_into("#email", "not-an-email").await;
    browser.type_into("#message", "Hello from a static site").await;
    browser.click("button[type=submit]").await;
    let source = wait_long(&browser, "onceform-error-email", 10).await;
    assert!(
        source.contains(r#"id="onceform-error-email">Email is not a valid email address</p>"#),
        "the message sits by its field:\n{source}"
    );
    assert!(source.contains(r#"aria-describedby="onceform-error-email""#));
    browser.screenshot("embed-422").await;
    assert_eq!(app.stats().await.submissions, 0);

    // A reload keeps the fill: its values and its operation ID.
    browser.goto(&format!("{}/contact.html", site.origin)).await;
    browser.clear("#email").await;
    browser.type_into("#email", "ada@example.com").await;
    proxy.drop_next_submit();
    browser.click("button[type=submit]").await;
    let source = wait_long(&browser, "onceform-reference", 15).await;
    browser.screenshot("embed-receipt").await;

    let submits: Vec<_> =
        proxy.seen().into_iter().filter(|s| s.method == "POST" && s.path.ends_with("/submissions")).collect();
    assert_eq!(submits.len(), 3, "the 422, the lost answer, the retry: {submits:?}");
    assert!(submits[1].dropped && !submits[2].dropped);
    let keys: Vec<_> = submits.iter().map(|s| s.idempotency_key.clone().unwrap()).collect();
    assert!(keys[0] == keys[1] && keys[1] == keys[2], "one key for the fill: {keys:?}");
    assert!(proxy.seen().iter().any(|s| s.method == "OPTIONS"), "the browser asked first (CORS)");

    let stats = app.stats().await;
    assert_eq!(
        (stats.submissions, stats.deliveries_with("created"), stats.deliveries_with("replayed")),
        (1, 1, 1)
    );
    let status: serde_json::Value = app
        .client
        .get(app.url(&format!("/api/forms/contact/submissions/{}", keys[0])))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let reference = onceform::base::format::reference(status["submission_id"].as_str().unwrap());
    assert!(source.contains(&reference), "the receipt shows {reference}");
    let stored = app.stored_fields(&keys[0]).await.unwrap();
    assert_eq!(
        (stored["name"].as_str(), stored["message"].as_str()),
        (Some("Ada Lovelace"), Some("Hello from a static site"))
    );
    d.settle(&d.worker()).await;
    assert_eq!(d.crm.leads().len(), 1, "one lead");

    // The same form on a page from an origin not on the list: the browser is refused.
    browser.goto(&format!("{}/contact.html", elsewhere.origin)).await;
    browser.type_into("#name", "Eve").await;
    browser.type_into("#email", "eve@example.net").await;
    browser.type_into("#message", "Hello from elsewhere").await;
    browser.click("button[type=submit]").await;
    wait_long(&browser, "We could not reach the server", 30).await;
    browser.screenshot("embed-refused").await;
    assert_eq!(app.stats().await.submissions, 1, "nothing more stored");
    let refused: Vec<_> =
        proxy.seen().into_iter().filter(|s| s.method == "POST" && s.path.ends_with("/submissions")).collect();
    assert_eq!(refused.len(), 3, "no POST got past the refused preflight");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_form_solves_the_altcha_challenge() {
    let site = StaticSite::start().await;
    let origin = site.origin.clone();
    let app = crate::support::spawn_app_with(Backend::Sqlite, |c| {
        let form = c.forms.get_mut("contact").unwrap();
        form.allowed_origins = vec![origin];
        form.captcha = Some(toml::from_str("provider = 'altcha'\nmax_number = 20000").unwrap());
    })
    .await;
    let form_url = app.url("/f/contact");
    site.set_page(page_with(&form_url, &app.url("/embed.js"), r#" data-onceform-captcha="altcha""#));

    let browser = Browser::start().await;
    browser.goto(&format!("{}/contact.html", site.origin)).await;
    browser.type_into("#name", "Ada Lovelace").await;
    browser.type_into("#email", "ada@example.com").await;
    browser.type_into("#message", "Proof of work, then the message").await;
    browser.click("button[type=submit]").await;
    wait_long(&browser, "onceform-reference", 30).await;
    browser.screenshot("embed-altcha-receipt").await;
    let stats = app.stats().await;
    assert_eq!(
        (stats.submissions, stats.effects_total(), stats.deliveries_with("spam")),
        (1, 3, 0),
        "verified, not spam"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn onceforms_own_form_page_solves_the_altcha_challenge() {
    let app = crate::support::spawn_app_with(Backend::Sqlite, |c| {
        let form = c.forms.get_mut("contact").unwrap();
        form.min_fill_seconds = 0;
        form.captcha = Some(toml::from_str("provider = 'altcha'\nmax_number = 20000").unwrap());
    })
    .await;
    let browser = Browser::start().await;
    browser.goto(&app.url("/f/contact")).await;
    browser.type_into("#f-name", "Ada Lovelace").await;
    browser.type_into("#f-email", "ada@example.com").await;
    browser.type_into("#f-message", "Sent from the form page").await;
    browser.click("#f-topic option:nth-child(2)").await;
    browser.click("button[type=submit]").await;
    wait_long(&browser, "OF-", 30).await;
    assert!(browser.current_url().await.contains("/receipt/"));
    let stats = app.stats().await;
    assert_eq!(
        (stats.submissions, stats.effects_total(), stats.deliveries_with("spam")),
        (1, 3, 0),
        "verified, not spam"
    );
}
