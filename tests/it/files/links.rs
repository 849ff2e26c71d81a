//! With `[server] public_url`, the generic CRM's lead lists each file with a signed link: it
//! opens that file of that submission as an attachment for a week, and nothing else (another
//! file, another submission, a changed or past expiry, a spam submission's file).

use std::sync::Arc;

use serde_json::{json, Value};

use super::attach::{upload, with_quote};
use crate::on_both_backends;
use crate::support::delivery::spawn_delivery_app;
use crate::support::files::{pdf, sha256};
use crate::support::{new_key, test_keyring, Backend};
use onceform::services::files::links::signature;
use onceform::services::worker::Worker;

on_both_backends!(a_generic_crm_gets_signed_links_that_open_only_their_file);

async fn a_generic_crm_gets_signed_links_that_open_only_their_file(backend: Backend) {
    let d = spawn_delivery_app(backend, |c| {
        with_quote(c);
        let quote = c.forms.get_mut("quote").unwrap();
        quote.effects = vec![onceform::domain::EffectKind::CRM_LEAD];
        quote.honeypot = "website".into();
    })
    .await;
    let app = &d.app;
    let drawing = pdf("linked");
    let (_, up) = upload(app, "quote", "Plan%20v2.pdf", &drawing).await;
    let url = app.url("/api/forms/quote/submissions");
    let body = json!({"email": "mei@example.com", "drawing": [up["upload_id"]]});
    let resp = app.client.post(url).header("Idempotency-Key", new_key()).json(&body).send().await.unwrap();
    let id = resp.json::<Value>().await.unwrap()["submission_id"].as_str().unwrap().to_string();

    // The workers of a deployment whose public address is this server's.
    let mut config = (*app.config).clone();
    config.server.public_url = Some(format!("{}/", app.address));
    let registry = onceform::app::registry(Arc::new(config.clone()), test_keyring()).unwrap();
    d.settle(&Worker::new(onceform::db::Writes::pooled(app.pool.clone()), registry, config.worker)).await;

    let lead = d.crm.state.lock().unwrap().bodies.last().cloned().unwrap();
    let link = lead["files"][0]["url"].as_str().unwrap_or_else(|| panic!("{lead}")).to_string();
    let prefix = format!("{}/files/{id}/{}?expires=", app.address, sha256(&drawing));
    assert!(link.starts_with(&prefix), "{link}");
    let resp = app.client.get(&link).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let disposition = resp.headers()["content-disposition"].to_str().unwrap().to_string();
    assert!(disposition.starts_with("attachment;") && disposition.contains("Plan%20v2.pdf"), "{disposition}");
    assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
    assert_eq!(resp.bytes().await.unwrap(), drawing);

    let query = link.split_once('?').unwrap().1.to_string();
    let expires: i64 = query.split('&').next().unwrap().trim_start_matches("expires=").parse().unwrap();
    let status = |path: String| {
        let client = app.client.clone();
        async move { client.get(path).send().await.unwrap().status().as_u16() }
    };
    let tampered = link.replace(&format!("expires={expires}"), &format!("expires={}", expires + 60));
    assert_eq!(status(tampered).await, 404, "a moved expiry");
    let other_file = link.replace(&sha256(&drawing), &sha256(b"another"));
    assert_eq!(status(other_file).await, 404, "another file");
    let other_submission = link.replace(&id, "0193aaaa-0000-7000-8000-000000000000");
    assert_eq!(status(other_submission).await, 404, "another submission");
    let past = chrono::Utc::now().timestamp() - 1;
    let expired = format!(
        "{}/files/{id}/{}?expires={past}&signature={}",
        app.address,
        sha256(&drawing),
        signature(&test_keyring(), &id, &sha256(&drawing), past)
    );
    assert_eq!(status(expired).await, 404, "a link past its time");

    // A spam submission's file: even a link signed for it opens nothing.
    let (_, up) = upload(app, "quote", "bot.pdf", &pdf("spam")).await;
    let body = json!({"email": "bot@example.com", "drawing": [up["upload_id"]], "website": "x"});
    let url = app.url("/api/forms/quote/submissions");
    let resp = app.client.post(url).header("Idempotency-Key", new_key()).json(&body).send().await.unwrap();
    let spam = resp.json::<Value>().await.unwrap()["submission_id"].as_str().unwrap().to_string();
    let later = chrono::Utc::now().timestamp() + 3600;
    let sha = sha256(&pdf("spam"));
    let signed = signature(&test_keyring(), &spam, &sha, later);
    let link = format!("{}/files/{spam}/{sha}?expires={later}&signature={signed}", app.address);
    assert_eq!(status(link).await, 404, "never a spam submission's file");
}
