//! The HTML flow: a fresh key per render, one receipt for every re-post, 422 keeps what was
//! typed, honeypot hits look accepted but have no effects.

use crate::on_both_backends;
use crate::support::{spawn_app, spawn_app_with, Backend, TestApp};

on_both_backends!(
    a_form_posted_twice_lands_on_one_receipt,
    an_invalid_post_re_renders_with_values_and_the_same_key,
    a_honeypot_hit_looks_accepted_but_has_no_effects,
    a_changed_re_post_gets_the_conflict_page,
    keyless_posts_are_accepted_and_flagged,
    multipart_posts_are_accepted,
    submitted_markup_is_escaped_when_re_rendered,
    a_multipart_body_over_the_limit_is_refused,
);

fn hidden_operation_id(html: &str) -> String {
    let start = html.find(r#"name="operation_id" value=""#).expect("operation_id field") + 27;
    html[start..].split('"').next().unwrap().to_string()
}

async fn get_form(app: &TestApp) -> String {
    let resp = app.client.get(app.url("/f/contact")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    resp.text().await.unwrap()
}

fn fields<'a>(op: &'a str, message: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("operation_id", op),
        ("name", "Grace Hopper"),
        ("email", "grace@example.com"),
        ("topic", "Support"),
        ("message", message),
        ("website", ""),
    ]
}

/// One boolean column (`spam` or `keyless`) of every stored submission.
async fn flags(app: &TestApp, column: &'static str) -> Vec<bool> {
    app.query(move |pool| {
        use diesel::prelude::*;
        use onceform::db::schema::submissions::dsl as s;
        onceform::with_conn!(pool, |c| match column {
            "spam" => s::submissions.select(s::spam).load(c),
            _ => s::submissions.select(s::keyless).load(c),
        }
        .map_err(onceform::db::DbError::from))
    })
    .await
}

/// POSTs `form` as `multipart/form-data`.
async fn post_multipart(app: &TestApp, form: &[(&str, &str)]) -> reqwest::Response {
    let boundary = "XyZboundary";
    let body: String = form
        .iter()
        .map(|(k, v)| format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n"))
        .chain(std::iter::once(format!("--{boundary}--\r\n")))
        .collect();
    app.client
        .post(app.url("/f/contact"))
        .header("Content-Type", format!("multipart/form-data; boundary={boundary}"))
        .body(body)
        .send()
        .await
        .unwrap()
}

async fn post(app: &TestApp, form: &[(&str, &str)]) -> reqwest::Response {
    app.client.post(app.url("/f/contact")).form(form).send().await.unwrap()
}

async fn a_form_posted_twice_lands_on_one_receipt(backend: Backend) {
    let app = spawn_app(backend).await;
    let page = get_form(&app).await;
    let op = hidden_operation_id(&page);
    assert_ne!(op, hidden_operation_id(&get_form(&app).await), "every render gets a fresh key");
    assert!(page.contains(r#"name="website""#), "honeypot present");

    let first = post(&app, &fields(&op, "Printer on fire")).await;
    assert_eq!(first.status(), 303);
    let location = first.headers()["location"].to_str().unwrap().to_string();
    let again = post(&app, &fields(&op, "Printer on fire")).await;
    assert_eq!(again.status(), 303);
    assert_eq!(again.headers()["location"], location.as_str());

    let receipt = app.client.get(app.url(&location)).send().await.unwrap();
    assert_eq!(receipt.status(), 200);
    let text = receipt.text().await.unwrap();
    assert!(text.contains("Your reference: <code class=\"ref\">OF-"), "{text}");
    assert!(
        !text.contains("Printer on fire") && !text.contains("grace@example.com"),
        "no content on the receipt"
    );

    let stats = app.stats().await;
    assert_eq!((stats.submissions, stats.effects_total(), stats.deliveries_total()), (1, 3, 2));
}

async fn an_invalid_post_re_renders_with_values_and_the_same_key(backend: Backend) {
    let app = spawn_app(backend).await;
    let op = hidden_operation_id(&get_form(&app).await);
    let mut form = fields(&op, "Typed with care");
    form[2].1 = "grace-at-example";

    let resp = post(&app, &form).await;
    assert_eq!(resp.status(), 422);
    let page = resp.text().await.unwrap();
    assert_eq!(hidden_operation_id(&page), op, "same key kept");
    assert!(page.contains("Typed with care") && page.contains(r#"value="Grace Hopper""#), "values kept");
    assert!(page.contains("Email is not a valid email address"), "{page}");
    assert!(page.contains(r#"<option value="Support" selected>Support</option>"#));
    assert_eq!(app.stats().await.submissions, 0);

    form[2].1 = "grace@example.com";
    assert_eq!(post(&app, &form).await.status(), 303, "the key was not consumed");
    assert_eq!(app.stats().await.submissions, 1);
}

async fn a_honeypot_hit_looks_accepted_but_has_no_effects(backend: Backend) {
    let app = spawn_app(backend).await;
    let op = hidden_operation_id(&get_form(&app).await);
    let mut form = fields(&op, "Buy cheap watches");
    form[5].1 = "http://spam.example";

    let resp = post(&app, &form).await;
    assert_eq!(resp.status(), 303);
    let receipt = app.client.get(app.url(resp.headers()["location"].to_str().unwrap())).send().await.unwrap();
    assert_eq!(receipt.status(), 200);

    let stats = app.stats().await;
    assert_eq!((stats.submissions, stats.effects_total()), (1, 0));
    assert_eq!(stats.deliveries_with("spam"), 1);
    let spam = flags(&app, "spam").await;
    assert_eq!(spam, [true]);
}

async fn a_changed_re_post_gets_the_conflict_page(backend: Backend) {
    let app = spawn_app(backend).await;
    let op = hidden_operation_id(&get_form(&app).await);
    assert_eq!(post(&app, &fields(&op, "First version")).await.status(), 303);
    let resp = post(&app, &fields(&op, "Second version")).await;
    assert_eq!(resp.status(), 409);
    let page = resp.text().await.unwrap();
    assert!(page.contains("already sent with different content") && page.contains(r#"href="/f/contact""#));
    assert_eq!(app.stored_fields(&op).await.unwrap()["message"], "First version");
}

async fn keyless_posts_are_accepted_and_flagged(backend: Backend) {
    let app = spawn_app(backend).await;
    let form: Vec<_> =
        fields("", "From a static site").into_iter().filter(|(k, _)| *k != "operation_id").collect();
    let a = post(&app, &form).await;
    let b = post(&app, &form).await;
    assert_eq!((a.status().as_u16(), b.status().as_u16()), (303, 303));
    assert_ne!(a.headers()["location"], b.headers()["location"], "without a key, each post is its own");
    let keyless = flags(&app, "keyless").await;
    assert_eq!(keyless, [true, true]);

    let strict =
        spawn_app_with(backend, |c| c.forms.get_mut("contact").unwrap().allow_keyless_html = false).await;
    assert_eq!(post(&strict, &form).await.status(), 400);
    assert_eq!(strict.stats().await.submissions, 0);
}

async fn multipart_posts_are_accepted(backend: Backend) {
    let app = spawn_app(backend).await;
    let op = hidden_operation_id(&get_form(&app).await);
    let resp = post_multipart(&app, &fields(&op, "Sent as multipart")).await;
    assert_eq!(resp.status(), 303);
    assert_eq!(app.stored_fields(&op).await.unwrap()["message"], "Sent as multipart");
}

async fn submitted_markup_is_escaped_when_re_rendered(backend: Backend) {
    let app = spawn_app(backend).await;
    let op = hidden_operation_id(&get_form(&app).await);
    let mut form = fields(&op, r#""><img src=x onerror=alert(1)>"#);
    form[1].1 = "<script>alert(1)</script>";
    form[2].1 = "not-an-email";
    let resp = post(&app, &form).await;
    assert_eq!(resp.status(), 422);
    let page = resp.text().await.unwrap();
    assert!(!page.contains("<script>alert") && !page.contains("<img src=x"), "{page}");
    assert!(page.contains("&#60;script&#62;alert(1)"), "{page}");
}

async fn a_multipart_body_over_the_limit_is_refused(backend: Backend) {
    let app = spawn_app(backend).await;
    // Many small parts: only the whole body's size can catch this.
    let resp = post_multipart(&app, &vec![("name", "x"); 2000]).await;
    assert_eq!(resp.status(), 413);
    assert_eq!(app.stats().await.submissions, 0);
}
