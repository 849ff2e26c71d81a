//! The effects queue's actions: guarded, audited, and doing what they say.

use diesel::prelude::*;
use onceform::db::schema::side_effects;
use onceform::db::DbError;
use onceform::services::accounts::Role;
use onceform::with_conn;

use crate::on_both_backends;
use crate::support::admin::assert_guarded;
use crate::support::delivery::spawn_delivery_app;
use crate::support::{inquiry, new_key, Backend, TestApp};

on_both_backends!(
    every_effect_action_is_guarded_audited_and_applied,
    replay_as_a_new_batch_delivers_again_and_leaves_the_first_record,
    pages_need_a_session,
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

async fn every_effect_action_is_guarded_audited_and_applied(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let app = &d.app;
    let key = new_key();
    app.submit(&key, &inquiry("Admin actions")).await;
    let (admin, viewer) = (app.sign_in(Role::Admin).await, app.sign_in(Role::Viewer).await);
    let crm = app.effect_id("crm_lead").await;

    set_state(app, "crm_lead", "FAILED_FINAL").await;
    assert_guarded(app, &admin, &viewer, &format!("/admin/effects/{crm}/retry"), &[]).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "PENDING");

    set_state(app, "crm_lead", "UNKNOWN").await;
    let form = [("provider_ref", "L-42"), ("note", "found it in the CRM")];
    let resp = assert_guarded(app, &admin, &viewer, &format!("/admin/effects/{crm}/mark-sent"), &form).await;
    assert!(resp.headers()["location"].to_str().unwrap().starts_with("/admin/effects?state=UNKNOWN"));
    let e = d.effect(&key, "crm_lead").await;
    assert_eq!((e.state.as_str(), e.provider_ref.as_deref()), ("SENT", Some("L-42")));

    set_state(app, "crm_lead", "UNKNOWN").await;
    assert_guarded(
        app,
        &admin,
        &viewer,
        &format!("/admin/effects/{crm}/mark-not-sent"),
        &[("note", "not there")],
    )
    .await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "PENDING");

    assert_guarded(app, &admin, &viewer, &format!("/admin/effects/{crm}/cancel"), &[("note", "spam")]).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "CANCELLED");

    // A state that does not allow the action is refused, and not audited.
    let before = app.audit_count().await;
    let again = app
        .admin_post(Some(&admin), &format!("/admin/effects/{crm}/mark-not-sent"), Some(&admin.csrf), &[])
        .await;
    assert_eq!(again.status(), 409);
    assert_eq!(app.audit_count().await, before);
}

async fn replay_as_a_new_batch_delivers_again_and_leaves_the_first_record(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let app = &d.app;
    let key = new_key();
    app.submit(&key, &inquiry("Please send it again")).await;
    let worker = d.worker();
    d.settle(&worker).await;
    assert_eq!(d.crm.leads().len(), 1);
    let (admin, viewer) = (app.sign_in(Role::Admin).await, app.sign_in(Role::Viewer).await);
    let first = app.effect_id("crm_lead").await;
    let before = d.effect(&key, "crm_lead").await;

    assert_guarded(
        app,
        &admin,
        &viewer,
        &format!("/admin/effects/{first}/replay"),
        &[("note", "CRM lost it")],
    )
    .await;
    d.settle(&worker).await;

    let leads = d.crm.leads();
    assert_eq!(leads.len(), 2, "one more lead");
    assert_ne!(leads[0].0, leads[1].0, "the replay has its own key");
    assert!(leads[1].0.ends_with(":crm_lead:1"));
    let records: Vec<_> = d.effects(Some(&key)).await.into_iter().filter(|e| e.kind == "crm_lead").collect();
    assert_eq!(records.len(), 2);
    assert_eq!(
        (records[0].state.as_str(), &records[0].provider_ref, records[0].attempts),
        ("SENT", &before.provider_ref, before.attempts),
        "the first record is untouched"
    );
    assert_eq!(records[1].state, "SENT");
}

async fn pages_need_a_session(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let app = &d.app;
    let resp = app.admin_get(None, "/admin/effects").await;
    assert_eq!(resp.status(), 303);
    assert_eq!(resp.headers()["location"], "/admin/login");
    let viewer = app.sign_in(Role::Viewer).await;
    let page = app.admin_get(Some(&viewer), "/admin/effects?state=PENDING").await;
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["cache-control"], "no-store");
}
