//! Malware scanning against a real clamd (its signature database the tests' own EICAR
//! hash): malware is stored as spam with no effects; clean files are delivered; while clamd
//! is down a `hold` form's effects wait for the rescan and a `deliver` form's go, unscanned.
//! Malware is never released by an admin.

use serde_json::json;

use super::attach::{submit, upload, QUOTE};
use crate::on_both_backends;
use crate::support::clamd::{down_addr, eicar, Clamd};
use crate::support::files::pdf;
use crate::support::vendor::submission_id;
use crate::support::{new_key, spawn_app_with, Backend, TestApp};
use onceform::config::Config;
use onceform::services::accounts::Role;
use onceform::services::files::{rescan, Files};

on_both_backends!(
    eicar_is_stored_as_malware_with_no_effects,
    while_clamd_is_down_a_hold_form_waits_for_the_rescan,
    while_clamd_is_down_a_deliver_form_delivers_unscanned,
);

/// `quote` scanning with clamd at `addr`, with an owner notification to hold or deliver.
pub(super) fn scanning(addr: String, down: &'static str) -> impl FnOnce(&mut Config) {
    move |c| {
        let settings = format!(
            "effects = [\"owner_notification\"]\nnotify = [\"sales@example.com\"]\nscan = \"clamd\"\n\
             when_scanner_down = \"{down}\""
        );
        // `any`: a file of any type (EICAR is plain text).
        let text = QUOTE.replace("effects = []", &settings)
            + "[[forms.quote.fields]]\nname = \"any\"\ntype = \"file\"\n";
        let extra = Config::parse(&text).unwrap();
        c.forms.extend(extra.forms);
        c.server.clamd = Some(addr);
    }
}

/// (spam reason, [(effect state, held)], [scan]) of the one submission to `quote`.
async fn state(app: &TestApp) -> (Option<String>, Vec<(String, bool)>, Vec<String>) {
    use diesel::prelude::*;
    use onceform::db::schema::{side_effects as e, submission_files as f, submissions as s};
    use onceform::db::DbError;
    use onceform::with_conn;
    app.query(|pool| {
        with_conn!(pool, |c| {
            let (id, reason): (String, Option<String>) =
                s::table.filter(s::form.eq("quote")).select((s::id, s::spam_reason)).first(c)?;
            let effects = e::table.filter(e::submission_id.eq(&id)).select((e::state, e::held)).load(c)?;
            let scans = f::table.filter(f::submission_id.eq(&id)).select(f::scan).load(c)?;
            Ok::<_, DbError>((reason, effects, scans))
        })
    })
    .await
}

async fn submit_file(app: &TestApp, bytes: &[u8]) {
    let (_, up) = upload(app, "quote", "x.pdf", bytes).await;
    let (status, body) =
        submit(app, &new_key(), &json!({"email": "mei@example.com", "spec": up["upload_id"]})).await;
    assert_eq!(status, 201, "{body}");
}

async fn eicar_is_stored_as_malware_with_no_effects(backend: Backend) {
    let clamd = Clamd::start();
    let app = spawn_app_with(backend, scanning(clamd.addr(), "hold")).await;
    let (_, up) = upload(&app, "quote", "eicar.com", &eicar()).await;
    assert_eq!(up["content_type"], "text/plain");
    let key = new_key();
    let (status, body) =
        submit(&app, &key, &json!({"email": "mei@example.com", "any": up["upload_id"]})).await;
    assert_eq!(status, 201, "{body}");
    let (reason, effects, scans) = state(&app).await;
    assert_eq!(reason.as_deref(), Some("malware"));
    assert!(effects.is_empty(), "malware gets no side effects: {effects:?}");
    assert_eq!(scans, ["malware"]);

    // An admin cannot release it as "not spam": nothing ever delivers the file.
    let id = submission_id(&app, &key).await;
    let admin = app.sign_in(Role::Admin).await;
    let page = app.admin_get(Some(&admin), &format!("/admin/submissions/{id}")).await.text().await.unwrap();
    assert!(page.contains("it is never released"), "{page}");
    assert!(!page.contains("/release"), "no release button for malware: {page}");
    let path = format!("/admin/submissions/{id}/release");
    let resp = app.admin_post(Some(&admin), &path, Some(&admin.csrf), &[("note", "looks fine")]).await;
    assert_eq!(resp.status(), 409);
    assert!(resp.text().await.unwrap().contains("malware"));
    // The store refuses too, on the row it updates (a rescan that finds malware while a
    // release of another spam reason is under way).
    let released = app
        .query(move |pool| {
            use onceform::db::admin::spam::SpamStore;
            onceform::with_conn!(pool, |c| c.release_spam(&id, None).map_err(onceform::db::DbError::from))
        })
        .await;
    assert!(!released, "a malware submission is never released");
    let (reason, effects, _) = state(&app).await;
    assert_eq!(reason.as_deref(), Some("malware"), "still set aside");
    assert!(effects.is_empty(), "still no side effects: {effects:?}");
}

async fn while_clamd_is_down_a_hold_form_waits_for_the_rescan(backend: Backend) {
    let app = spawn_app_with(backend, scanning(down_addr(), "hold")).await;
    submit_file(&app, &pdf("held")).await;
    let (reason, effects, scans) = state(&app).await;
    assert_eq!(reason, None);
    assert_eq!(effects, [("PENDING".to_string(), true)], "held while its file waits for a scan");
    assert_eq!(scans, ["pending"]);

    // clamd is back: the rescan releases it.
    let clamd = Clamd::start();
    let mut server = app.config.server.clone();
    server.clamd = Some(clamd.addr());
    let writes = onceform::db::Writes::shared(&app.pool, &app.config.database).unwrap();
    assert_eq!(rescan(&writes, &Files::of(&server, &app.config.database)).await.unwrap(), 1);
    let (_, effects, scans) = state(&app).await;
    assert_eq!(effects, [("PENDING".to_string(), false)], "released to the workers");
    assert_eq!(scans, ["clean"]);
}

async fn while_clamd_is_down_a_deliver_form_delivers_unscanned(backend: Backend) {
    let app = spawn_app_with(backend, scanning(down_addr(), "deliver")).await;
    submit_file(&app, &pdf("unscanned")).await;
    let (reason, effects, scans) = state(&app).await;
    assert_eq!(reason, None);
    assert_eq!(effects, [("PENDING".to_string(), false)]);
    assert_eq!(scans, ["unscanned"]);
}
