//! Files after they came in: listed on the admin's submission page and downloaded only by a
//! signed-in user as an attachment (a spam submission's by an admin after a warning), every
//! download audited; gone with the content's retention window, with an erasure, and (unused
//! uploads, orphans) with the sweep; shared content stays while another submission names it.

use serde_json::{json, Value};

use super::attach::{upload, with_quote, QUOTE};
use crate::on_both_backends;
use crate::support::files::{age_stored, kept_blobs, pdf, sha256};
use crate::support::{new_key, spawn_app_with, test_keyring, Backend, TestApp};
use onceform::config::Config;
use onceform::services::accounts::Role;

on_both_backends!(
    files_are_downloaded_by_signed_in_users_as_audited_attachments,
    retention_deletes_the_files_nothing_else_names,
    erasure_deletes_the_persons_files_at_once,
    unused_uploads_are_swept_after_their_hour,
);

/// `quote` as in `attach`, plus `keep` (the same fields, no retention window).
fn with_two_forms(c: &mut Config) {
    with_quote(c);
    let keep = Config::parse(&QUOTE.replace("forms.quote", "forms.keep")).unwrap();
    c.forms.extend(keep.forms);
}

/// Uploads `bytes` to `form` and submits it as the `drawing`; the submission's id.
async fn submit_file(app: &TestApp, form: &str, email: &str, bytes: &[u8], extra: Value) -> String {
    submit_keyed(app, form, &new_key(), email, bytes, extra).await
}

async fn submit_keyed(
    app: &TestApp,
    form: &str,
    key: &str,
    email: &str,
    bytes: &[u8],
    extra: Value,
) -> String {
    let (_, up) = upload(app, form, "Drawing%20%E8%A6%8F%E6%A0%BC.pdf", bytes).await;
    let mut body = json!({"email": email, "drawing": [up["upload_id"]]});
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let url = app.url(&format!("/api/forms/{form}/submissions"));
    let resp = app.client.post(url).header("Idempotency-Key", key).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 201);
    resp.json::<Value>().await.unwrap()["submission_id"].as_str().unwrap().to_string()
}

/// Makes every blob look written an hour and a minute ago (past `IN_FLIGHT` and the sweep's hour).
fn age_blobs(app: &TestApp) {
    age_stored(&app.config);
}

async fn purge_at(app: &TestApp, at: chrono::NaiveDateTime) {
    let config = app.config.clone();
    app.query(move |pool| {
        let writes = onceform::db::Writes::shared(pool, &config.database).unwrap();
        onceform::services::lifecycle::purge::run_pass(&writes, &config, at)
    })
    .await;
}

async fn files_are_downloaded_by_signed_in_users_as_audited_attachments(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        with_quote(c);
        c.forms.get_mut("quote").unwrap().honeypot = "website".into();
    })
    .await;
    let drawing = pdf("download me");
    let id = submit_file(&app, "quote", "mei@example.com", &drawing, json!({})).await;
    let viewer = app.sign_in(Role::Viewer).await;
    let page = app.admin_get(Some(&viewer), &format!("/admin/submissions/{id}")).await.text().await.unwrap();
    let href = format!("/admin/submissions/{id}/files/{}", sha256(&drawing));
    assert!(
        page.contains(&format!(r#"<a href="{href}" download>Drawing 規格.pdf (application/pdf, "#)),
        "{page}"
    );
    assert!(
        !page.contains(&sha256(&drawing)[..]) || page.matches(&sha256(&drawing)).count() == 1,
        "no raw value"
    );

    let anonymous = app.admin_get(None, &href).await;
    assert_ne!(anonymous.status(), 200, "no session, no file");
    assert!(anonymous.bytes().await.unwrap() != drawing);
    let audits = app.audit_count().await;
    let resp = app.admin_get(Some(&viewer), &href).await;
    assert_eq!(resp.status(), 200);
    let h = resp.headers().clone();
    assert_eq!(h["content-type"], "application/octet-stream", "never rendered inline");
    let disposition = h["content-disposition"].to_str().unwrap();
    assert!(disposition.starts_with("attachment;"), "{disposition}");
    assert!(disposition.contains("filename*=UTF-8''Drawing%20%E8%A6%8F%E6%A0%BC.pdf"), "{disposition}");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert!(h["content-security-policy"].to_str().unwrap().contains("sandbox"));
    assert_eq!(resp.bytes().await.unwrap(), drawing);
    assert_eq!(app.audit_count().await, audits + 1, "the download is audited");
    let csv = app.admin_get(Some(&viewer), "/admin/submissions.csv?form=quote").await.text().await.unwrap();
    assert!(csv.contains("Drawing 規格.pdf (application/pdf, 2"), "the export names the file: {csv}");
    assert!(!csv.contains(&sha256(&drawing)), "not its stored reference");
    let other = format!("/admin/submissions/{id}/files/{}", sha256(b"another file"));
    assert_eq!(app.admin_get(Some(&viewer), &other).await.status(), 404, "only a file it names");

    // A spam submission's file: not for a viewer; an admin is warned first.
    let spam = submit_file(&app, "quote", "bot@example.com", &pdf("spam"), json!({"website": "x"})).await;
    let href = format!("/admin/submissions/{spam}/files/{}", sha256(&pdf("spam")));
    assert_eq!(app.admin_get(Some(&viewer), &href).await.status(), 403);
    let admin = app.sign_in(Role::Admin).await;
    let warning = app.admin_get(Some(&admin), &href).await;
    assert_eq!(warning.status(), 200);
    let warning = warning.text().await.unwrap();
    assert!(
        warning.contains("may be harmful") && warning.contains(&format!("{href}?confirm=1")),
        "{warning}"
    );
    let confirmed = app.admin_get(Some(&admin), &format!("{href}?confirm=1")).await;
    assert_eq!(confirmed.bytes().await.unwrap(), pdf("spam"));
}

async fn retention_deletes_the_files_nothing_else_names(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        with_two_forms(c);
        c.forms.get_mut("quote").unwrap().retention.content =
            Some(onceform::config::retention::Window::parse("1d").unwrap());
    })
    .await;
    let (shared, own) = (pdf("shared"), pdf("own"));
    let first_key = new_key();
    submit_keyed(&app, "quote", &first_key, "mei@example.com", &own, json!({})).await;
    submit_file(&app, "quote", "mei@example.com", &shared, json!({})).await;
    submit_file(&app, "keep", "lin@example.com", &shared, json!({})).await;
    assert_eq!(kept_blobs(&app.config).len(), 2);

    let tomorrow = onceform::base::clock::now() + chrono::Duration::days(2);
    purge_at(&app, tomorrow).await;
    assert_eq!(kept_blobs(&app.config).len(), 2, "files just written are never taken from under a request");
    age_blobs(&app);
    purge_at(&app, tomorrow).await;
    assert_eq!(
        kept_blobs(&app.config),
        [sha256(&shared)],
        "the purged content's own file went; the shared one stays"
    );

    // The tombstone keeps the fingerprint (the files' digests in it): a late retry replays.
    let (_, up) = upload(&app, "quote", "Drawing%20%E8%A6%8F%E6%A0%BC.pdf", &own).await;
    let body = json!({"email": "mei@example.com", "drawing": [up["upload_id"]]});
    let url = app.url("/api/forms/quote/submissions");
    let retry = app.client.post(url).header("Idempotency-Key", &first_key).json(&body).send().await.unwrap();
    assert_eq!(retry.status(), 200, "the same files under the same key, after the purge");
}

async fn erasure_deletes_the_persons_files_at_once(backend: Backend) {
    use onceform::services::lifecycle::erase::{erase, Actor, Files, Person};
    let app = spawn_app_with(backend, with_two_forms).await;
    submit_file(&app, "quote", "mei@example.com", &pdf("mei"), json!({})).await;
    submit_file(&app, "keep", "lin@example.com", &pdf("lin"), json!({})).await;
    let config = app.config.clone();
    let report = app
        .query(move |pool| {
            let person = Person::Email("MEI@example.com".into());
            erase(
                pool,
                &test_keyring(),
                &Files::of(&config),
                &config.consent_fields(),
                &person,
                false,
                &Actor::cli(),
            )
        })
        .await;
    assert_eq!(report.attachments, 1);
    assert!(report.lines().iter().any(|l| l.contains("1 attached file(s)")), "{:?}", report.lines());
    assert_eq!(kept_blobs(&app.config), [sha256(&pdf("lin"))], "only the erased person's file went");
}

async fn unused_uploads_are_swept_after_their_hour(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let (status, up) = upload(&app, "quote", "never used.pdf", &pdf("unused")).await;
    assert_eq!(status, 201);
    purge_at(&app, onceform::base::clock::now()).await;
    assert_eq!(kept_blobs(&app.config).len(), 1, "within its hour the upload waits for its submission");
    age_blobs(&app);
    purge_at(&app, onceform::base::clock::now() + chrono::Duration::minutes(61)).await;
    assert!(kept_blobs(&app.config).is_empty(), "past its hour, unused: swept");
    let body = json!({"email": "a@example.com", "drawing": [up["upload_id"]]});
    let resp = app
        .client
        .post(app.url("/api/forms/quote/submissions"))
        .header("Idempotency-Key", new_key())
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 422, "an expired upload is no upload");
}
