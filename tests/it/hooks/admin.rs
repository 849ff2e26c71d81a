//! Inbound webhooks, issue 13 "what must be shown" 5 and the admin and metrics around it:
//! a delivery with no event ID lands in quarantine (never deduplicated by hashing the body);
//! assigning an ID from the admin runs the handlers once; the Inbound page shows events,
//! handler states, conflicts and escaped bodies; a handler replays as a new batch.

use diesel::prelude::*;
use onceform::db::schema::inbound_quarantine;
use onceform::db::DbError;
use onceform::services::accounts::Role;
use onceform::web::hooks::verify::standard_webhooks;
use onceform::with_conn;

use crate::on_both_backends;
use crate::support::admin::assert_guarded;
use crate::support::hooks::{hook, secret_var, spawn_hook_app, HookApp};
use crate::support::receiver::Receiver;
use crate::support::Backend;

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// The event ID is in the body (`/event/id`); a forward handler to `r`.
async fn app_with(backend: Backend, r: &Receiver) -> HookApp {
    let var = secret_var("sw", WHSEC);
    let cfg = format!(
        "verify = \"standard-webhooks\"\nsecret_env = \"{var}\"\nevent_id = \"json:/event/id\"\n\
         [[handlers]]\nname = \"to-crm\"\nkind = \"forward\"\nurl = \"{}\"\n",
        r.events_url()
    );
    spawn_hook_app(backend, vec![("helpdesk", hook(&cfg))]).await
}

async fn deliver(app: &HookApp, body: &str) -> reqwest::Response {
    let key = standard_webhooks::decode_secret(WHSEC).unwrap();
    let ts = chrono::Utc::now().timestamp();
    let id = format!("msg_{}", uuid::Uuid::new_v4().simple());
    let headers = vec![
        ("webhook-id", id.clone()),
        ("webhook-timestamp", ts.to_string()),
        ("webhook-signature", standard_webhooks::sign(&key, &id, ts, body.as_bytes())),
    ];
    app.post("helpdesk", &headers, body).await
}

async fn quarantine_ids(app: &HookApp) -> Vec<(String, String)> {
    app.app
        .query(|pool| {
            with_conn!(pool, |c| inbound_quarantine::table
                .order(inbound_quarantine::received_at)
                .select((inbound_quarantine::id, inbound_quarantine::status))
                .load(c)
                .map_err(DbError::from))
        })
        .await
}

async fn a_delivery_without_an_id_is_quarantined_and_an_assigned_id_runs_the_handlers_once(backend: Backend) {
    let receiver = Receiver::start().await;
    let app = app_with(backend, &receiver).await;
    let body = r#"{"event":{"type":"chat.message"},"text":"hello <b>there</b>"}"#;
    // The same body twice: two quarantined deliveries, never merged by a hash of the body.
    assert_eq!(deliver(&app, body).await.status(), 202);
    assert_eq!(deliver(&app, body).await.status(), 202);
    let held = quarantine_ids(&app).await;
    assert_eq!(held.len(), 2);
    assert_eq!(app.inbound().await.events, 0);
    app.settle(&app.worker()).await;
    assert!(receiver.calls().is_empty());

    let admin = app.app.sign_in(Role::Admin).await;
    let viewer = app.app.sign_in(Role::Viewer).await;
    let page = app.app.admin_get(Some(&admin), "/admin/inbound/helpdesk").await.text().await.unwrap();
    assert!(page.contains(&format!("quarantine-{}", held[0].0)));
    assert!(page.contains("hello &#60;b&#62;there&#60;/b&#62;"), "bodies are escaped");
    assert!(!page.contains("<b>there</b>"));

    let assign = format!("/admin/inbound/helpdesk/quarantine/{}/assign", held[0].0);
    assert_guarded(
        &app.app,
        &admin,
        &viewer,
        &assign,
        &[("event_id", "chat-991"), ("note", "from the vendor")],
    )
    .await;
    let again =
        app.app.admin_post(Some(&admin), &assign, Some(&admin.csrf), &[("event_id", "chat-992")]).await;
    assert_eq!(again.status(), 409, "a decided delivery cannot be assigned twice");
    let discard = format!("/admin/inbound/helpdesk/quarantine/{}/discard", held[1].0);
    assert_eq!(app.app.admin_post(Some(&admin), &discard, Some(&admin.csrf), &[]).await.status(), 303);
    assert_eq!(
        quarantine_ids(&app).await.into_iter().map(|(_, s)| s).collect::<Vec<_>>(),
        ["assigned", "discarded"]
    );

    let worker = app.worker();
    app.settle(&worker).await;
    app.settle(&worker).await;
    assert_eq!(
        receiver.calls().iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["helpdesk:to-crm:chat-991:0"]
    );
    assert_eq!(receiver.calls()[0].1, body);
    let audit = app.app.admin_get(Some(&admin), "/admin/audit").await.text().await.unwrap();
    assert!(audit.contains("inbound.quarantine.assign") && audit.contains("inbound.quarantine.discard"));
}

async fn the_inbound_page_shows_events_handlers_conflicts_and_replays_a_handler_as_a_new_batch(
    backend: Backend,
) {
    let receiver = Receiver::start().await;
    let app = app_with(backend, &receiver).await;
    let original = r#"{"event":{"id":"E-1"},"text":"<script>alert(1)</script>"}"#;
    assert_eq!(deliver(&app, original).await.status(), 200);
    assert_eq!(deliver(&app, original).await.status(), 200);
    assert_eq!(deliver(&app, r#"{"event":{"id":"E-1"},"text":"changed"}"#).await.status(), 200);
    let worker = app.worker();
    app.settle(&worker).await;

    let admin = app.app.sign_in(Role::Admin).await;
    let page = app.app.admin_get(Some(&admin), "/admin/inbound/helpdesk").await.text().await.unwrap();
    assert!(page.contains("E-1") && page.contains("to-crm #0: <strong>Sent</strong>"));
    assert!(page.contains("changed"), "the conflicting content is listed beside the original");
    assert!(page.contains("&#60;script&#62;") && !page.contains("<script>alert"));
    let submissions = app.app.admin_get(Some(&admin), "/admin/submissions").await.text().await.unwrap();
    assert!(!submissions.contains("hook:helpdesk"), "events are listed under Inbound, not Submissions");
    let (event_row, _) = {
        let events: Vec<(String, String)> = app
            .app
            .query(|pool| {
                use onceform::db::schema::inbound_events as e;
                with_conn!(pool, |c| e::table.select((e::id, e::event_id)).load(c).map_err(DbError::from))
            })
            .await;
        events[0].clone()
    };
    let detail =
        app.app.admin_get(Some(&admin), &format!("/admin/inbound/helpdesk/events/{event_row}")).await;
    let detail = detail.text().await.unwrap();
    assert_eq!(detail.matches("<td>repeat (same content)</td>").count(), 1);
    assert_eq!(detail.matches("<td>conflict (other content)</td>").count(), 1);
    let effects = app.app.admin_get(Some(&admin), "/admin/effects?state=SENT").await.text().await.unwrap();
    let link = format!(r#"<a href="/admin/inbound/helpdesk/events/{event_row}">"#);
    assert!(effects.contains(&link), "a handler's record links to its event: {effects}");

    let replay = format!("/admin/inbound/helpdesk/events/{event_row}/replay");
    let resp = app.app.admin_post(Some(&admin), &replay, Some(&admin.csrf), &[("handler", "to-crm")]).await;
    assert_eq!(resp.status(), 303);
    app.settle(&worker).await;
    let keys: Vec<String> = receiver.calls().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["helpdesk:to-crm:E-1:0", "helpdesk:to-crm:E-1:1"]);
    assert_eq!(receiver.calls()[1].1, original, "a replay sends the original, never the conflicting body");
}

async fn metrics_count_deliveries_duplicates_conflicts_quarantine_signatures_and_handlers(backend: Backend) {
    let receiver = Receiver::start().await;
    let app = app_with(backend, &receiver).await;
    let body = r#"{"event":{"id":"M-1"}}"#;
    deliver(&app, body).await;
    deliver(&app, body).await;
    deliver(&app, r#"{"event":{"id":"M-1"},"x":1}"#).await;
    deliver(&app, r#"{"no":"id"}"#).await;
    let bad = app
        .post(
            "helpdesk",
            &[
                ("webhook-id", "x".into()),
                ("webhook-timestamp", "1".into()),
                ("webhook-signature", "v1,".into()),
            ],
            body,
        )
        .await;
    assert_eq!(bad.status(), 401);
    app.settle(&app.worker()).await;
    let text = app.app.client.get(app.app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    for line in [
        "onceform_hook_deliveries_total{source=\"helpdesk\",outcome=\"created\"} 1",
        "onceform_hook_deliveries_total{source=\"helpdesk\",outcome=\"replayed\"} 1",
        "onceform_hook_deliveries_total{source=\"helpdesk\",outcome=\"conflict\"} 1",
        "onceform_hook_deliveries_total{source=\"helpdesk\",outcome=\"quarantined\"} 1",
        "onceform_hook_events_total{source=\"helpdesk\"} 1",
        "onceform_hook_open_conflicts{source=\"helpdesk\"} 1",
        "onceform_hook_quarantined{source=\"helpdesk\"} 1",
        "onceform_hook_signature_failures_total{source=\"helpdesk\"} 1",
        "onceform_hook_handler_effects{source=\"helpdesk\",handler=\"to-crm\",state=\"SENT\"} 1",
        "onceform_hook_ingest_seconds_count{source=\"helpdesk\"} 4",
    ] {
        assert!(text.contains(line), "missing `{line}` in\n{text}");
    }
    assert!(text.contains("onceform_hook_redelivery_spread_seconds{source=\"helpdesk\"}"));
}

on_both_backends!(
    a_delivery_without_an_id_is_quarantined_and_an_assigned_id_runs_the_handlers_once,
    the_inbound_page_shows_events_handlers_conflicts_and_replays_a_handler_as_a_new_batch,
    metrics_count_deliveries_duplicates_conflicts_quarantine_signatures_and_handlers,
);
