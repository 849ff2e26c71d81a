//! The smaller hardening points, over HTTP: `?flash=` shows known messages only, invisible
//! characters are refused by field, replays need a known outcome, exports and searches are
//! audited, the CRM client follows no redirect, a truncated multipart body is answered.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use diesel::prelude::*;
use onceform::db::schema::{audit_log, side_effects};
use onceform::db::DbError;
use onceform::services::accounts::Role;
use onceform::with_conn;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::on_both_backends;
use crate::support::delivery::spawn_delivery_app;
use crate::support::{inquiry, new_key, problem_type, spawn_app, Backend, TestApp};

on_both_backends!(
    flash_shows_only_known_message_codes,
    invisible_characters_are_refused_by_field,
    replay_is_refused_unless_the_outcome_is_known,
    csv_exports_and_searches_are_audited_with_filters_and_row_counts,
    the_crm_client_follows_no_redirect,
    a_truncated_multipart_post_is_answered_not_held,
);

async fn set_state(app: &TestApp, kind: &str, state: &str) {
    let (kind, state) = (kind.to_string(), state.to_string());
    app.query(move |pool| {
        with_conn!(pool, |c| diesel::update(side_effects::table.filter(side_effects::kind.eq(&kind)))
            .set(side_effects::state.eq(&state))
            .execute(c)
            .map_err(DbError::from))
    })
    .await;
}

/// (action, note) of every audit row, oldest first.
async fn audit_rows(app: &TestApp) -> Vec<(String, Option<String>)> {
    app.query(|pool| {
        with_conn!(pool, |c| audit_log::table
            .order(audit_log::at)
            .select((audit_log::action, audit_log::note))
            .load(c)
            .map_err(DbError::from))
    })
    .await
}

async fn flash_shows_only_known_message_codes(backend: Backend) {
    let app = spawn_app(backend).await;
    let viewer = app.sign_in(Role::Viewer).await;
    let page = |path: &'static str| {
        let (app, viewer) = (&app, &viewer);
        async move { app.admin_get(Some(viewer), path).await.text().await.unwrap() }
    };
    let forged = page("/admin/effects?flash=Your+session+expired%3A+sign+in+at+evil.example").await;
    assert!(!forged.contains("evil.example") && !forged.contains("class=\"flash\""), "{forged}");
    let forged_arg = page("/admin/conflicts?flash=conflict_accepted~evil.example").await;
    assert!(!forged_arg.contains("evil.example") && !forged_arg.contains("class=\"flash\""));
    let known = page("/admin/effects?flash=effect_cancel").await;
    assert!(known.contains("<p class=\"flash\" role=\"status\">Cancel: done.</p>"), "{known}");

    // An action's redirect carries a code, and the page shows its message.
    app.submit(&new_key(), &inquiry("Flash")).await;
    let admin = app.sign_in(Role::Admin).await;
    let crm = app.effect_id("crm_lead").await;
    let resp =
        app.admin_post(Some(&admin), &format!("/admin/effects/{crm}/cancel"), Some(&admin.csrf), &[]).await;
    assert_eq!(resp.status(), 303);
    let location = resp.headers()["location"].to_str().unwrap().to_string();
    assert_eq!(location, "/admin/effects?state=PENDING&flash=effect_cancel");
    let shown = app.admin_get(Some(&admin), &location).await.text().await.unwrap();
    assert!(shown.contains("Cancel: done."));
}

async fn invisible_characters_are_refused_by_field(backend: Backend) {
    let app = spawn_app(backend).await;
    let key = new_key();
    let mut body = inquiry("Fine");
    body["name"] = Value::from("Ada \u{202E}ecalevoL");
    body["message"] = Value::from("hidden\u{200B}word");
    let resp = app.submit(&key, &body).await;
    assert_eq!(resp.status(), 422);
    let problem: Value = resp.json().await.unwrap();
    assert_eq!(problem_type(&problem), "validation-failed");
    let errors = problem["errors"].as_object().unwrap();
    assert_eq!(errors.keys().collect::<Vec<_>>(), ["message", "name"], "{problem}");
    assert!(errors["name"][0].as_str().unwrap().contains("invisible"), "{problem}");

    let html = app
        .client
        .post(app.url("/f/contact"))
        .form(&[("name", "Ada\u{2066}"), ("email", "ada@example.com"), ("topic", "Sales"), ("message", "Hi")])
        .send()
        .await
        .unwrap();
    assert_eq!(html.status(), 422, "the HTML form too");

    let mut joined = inquiry("Family: 👩\u{200D}👩\u{200D}👧");
    joined["name"] = Value::from("Ada");
    assert_eq!(app.submit(&key, &joined).await.status(), 201, "the key was not used; joiners are text");
}

async fn replay_is_refused_unless_the_outcome_is_known(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let app = &d.app;
    let key = new_key();
    app.submit(&key, &inquiry("Replay")).await;
    let admin = app.sign_in(Role::Admin).await;
    let crm = app.effect_id("crm_lead").await;
    let path = format!("/admin/effects/{crm}/replay");
    let replay = || app.admin_post(Some(&admin), &path, Some(&admin.csrf), &[]);
    for state in ["PENDING", "SENDING", "UNKNOWN"] {
        set_state(app, "crm_lead", state).await;
        let before = app.audit_count().await;
        let resp = replay().await;
        assert_eq!(resp.status(), 409, "{state}");
        assert!(resp.text().await.unwrap().contains("Only a sent, failed or cancelled effect"));
        assert_eq!(app.audit_count().await, before, "{state}: nothing audited");
    }
    assert_eq!(d.effects(Some(&key)).await.iter().filter(|e| e.kind == "crm_lead").count(), 1);
    set_state(app, "crm_lead", "FAILED_FINAL").await;
    assert_eq!(replay().await.status(), 303);
    let records: Vec<_> = d.effects(Some(&key)).await.into_iter().filter(|e| e.kind == "crm_lead").collect();
    assert_eq!(records.len(), 2, "a new batch");
}

async fn csv_exports_and_searches_are_audited_with_filters_and_row_counts(backend: Backend) {
    let app = spawn_app(backend).await;
    for text in ["One, with a comma\nand a line", "Two"] {
        assert_eq!(app.submit(&new_key(), &inquiry(text)).await.status(), 201);
    }
    let viewer = app.sign_in(Role::Viewer).await;
    let csv = app.admin_get(Some(&viewer), "/admin/submissions.csv?form=contact&spam=no").await;
    assert_eq!(csv.status(), 200);
    let search = app
        .client
        .post(app.url("/admin/submissions/search"))
        .header("Cookie", &viewer.cookie)
        .form(&[("q", "ada@example.com"), ("csrf", viewer.csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(search.status(), 200);

    let rows = audit_rows(&app).await;
    let export = rows.iter().find(|(a, _)| a == "submissions.export").expect("an export row");
    let note = export.1.as_deref().unwrap();
    assert!(note.contains("form=contact") && note.contains("spam=no") && note.ends_with("rows: 2"), "{note}");
    let searched = rows.iter().find(|(a, _)| a == "submissions.search").expect("a search row");
    let note = searched.1.as_deref().unwrap();
    assert!(note.ends_with("rows: 2") && note.contains("term digest"), "{note}");
    assert!(!note.contains("ada@example.com"), "the term is not stored: {note}");
}

/// A loopback server that answers every request with `302` to `location`.
async fn redirecting_server(location: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let location = location.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                let _ = tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await;
                let answer =
                    format!("HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    url
}

async fn the_crm_client_follows_no_redirect(backend: Backend) {
    let target = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target_url = format!("http://{}/stolen", target.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((_stream, _)) = target.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    let redirector = redirecting_server(target_url).await;
    let d = spawn_delivery_app(backend, |c| {
        c.crm.url = Some(format!("{redirector}/leads"));
        crate::support::set_crm(c, "generic", &[]);
    })
    .await;
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Redirect me")).await.status(), 201);
    d.settle(&d.worker()).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "FAILED_FINAL");
    assert_eq!(d.attempts(&key, "crm_lead").await[0].1.as_deref(), Some("http_302"));
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the lead never went where the redirect pointed");
}

async fn a_truncated_multipart_post_is_answered_not_held(backend: Backend) {
    let app = spawn_app(backend).await;
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let resp = client
        .post(app.url("/f/contact"))
        .header("Content-Type", "multipart/form-data; boundary=XyZ")
        .body("--XyZ\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nAda")
        .send()
        .await
        .expect("an answer, not a connection held open");
    assert_eq!(resp.status(), 400);
}

#[test]
fn check_config_refuses_http_crm_urls_beyond_loopback() {
    let mut c = onceform::config::Config::builtin().unwrap();
    c.crm.url = Some("http://crm.example.com/leads".into());
    let problems = onceform::services::check_config::problems(&c);
    assert!(
        problems.iter().any(|p| p.starts_with("crm.url: http:// is only allowed to loopback")),
        "{problems:?}"
    );
    c.crm.allow_http = true;
    assert!(onceform::services::check_config::problems(&c).is_empty());
    c.crm.allow_http = false;
    c.crm.url = Some("https://crm.example.com/leads".into());
    assert!(onceform::services::check_config::problems(&c).is_empty());
}
