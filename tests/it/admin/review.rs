//! Reviewing conflicts and suspected duplicates: guarded, audited actions that do what they
//! say, pages that show the difference, and visitor content that stays inert.

use diesel::prelude::*;
use onceform::db::schema::{conflicts, duplicate_pairs, side_effects, submissions};
use onceform::db::{DbError, Store};
use onceform::services::accounts::Role;
use onceform::with_conn;
use serde_json::{json, Value};

use crate::on_both_backends;
use crate::support::admin::assert_guarded;
use crate::support::{inquiry, new_key, spawn_app, Backend, TestApp};

on_both_backends!(
    dismissing_a_conflict_is_guarded_audited_and_creates_nothing,
    accepting_a_conflict_creates_a_new_inquiry_with_its_own_effects,
    the_conflict_page_highlights_the_differing_fields,
    conflict_actions_need_an_open_conflict,
    duplicate_of_cancels_pending_effects_and_undo_restores_them,
    not_a_duplicate_releases_held_effects_and_leaves_the_open_list,
    batch_decides_several_pairs_with_one_request,
    duplicate_actions_need_the_right_status,
    visitor_content_is_inert_on_review_pages,
);

const SCRIPT: &str = "<script>alert(1)</script>";
const IMG: &str = r#""><img src=x onerror=alert(1)>"#;
const SCRIPT_ESCAPED: &str = "&#60;script&#62;alert(1)&#60;/script&#62;";
const IMG_ESCAPED: &str = "&#34;&#62;&#60;img src=x onerror=alert(1)&#62;";

pub(crate) fn person(name: &str, email: &str, message: &str) -> Value {
    json!({"name": name, "email": email, "topic": "Support", "message": message})
}

pub(crate) async fn submission_id(app: &TestApp, key: &str) -> String {
    let key = key.to_string();
    app.query(move |pool| {
        with_conn!(pool, |c| Ok(c
            .find_submission("contact", &key)?
            .map(|s| String::from(s.id))
            .expect("a submission")))
    })
    .await
}

/// Submits `key` with `original`, then again with `conflicting`: a conflict row, the real way.
async fn make_conflict(app: &TestApp, original: &Value, conflicting: &Value) -> (String, String) {
    let key = new_key();
    assert_eq!(app.submit(&key, original).await.status(), 201);
    assert_eq!(app.submit(&key, conflicting).await.status(), 409);
    let original_id = submission_id(app, &key).await;
    let sub = original_id.clone();
    let id = app
        .query(move |pool| {
            with_conn!(pool, |c| conflicts::table
                .filter(conflicts::submission_id.eq(&sub))
                .select(conflicts::id)
                .first::<String>(c)
                .map_err(DbError::from))
        })
        .await;
    (key, id)
}

async fn conflict_status(app: &TestApp, id: &str) -> String {
    let id = id.to_string();
    app.query(move |pool| {
        with_conn!(pool, |c| conflicts::table
            .find(&id)
            .select(conflicts::status)
            .first::<String>(c)
            .map_err(DbError::from))
    })
    .await
}

/// Stores (or reopens) the pair (original, duplicate) as the detector would; returns its id.
pub(crate) async fn make_pair(app: &TestApp, original_key: &str, duplicate_key: &str, score: f64) -> String {
    let (original, duplicate) =
        (submission_id(app, original_key).await, submission_id(app, duplicate_key).await);
    app.query(move |pool| {
        with_conn!(pool, |c| {
            let p = duplicate_pairs::table;
            c.execute_native(
                diesel::insert_into(p)
                    .values((
                        duplicate_pairs::id.eq(uuid::Uuid::now_v7().to_string()),
                        duplicate_pairs::form.eq("contact"),
                        duplicate_pairs::original_id.eq(&original),
                        duplicate_pairs::duplicate_id.eq(&duplicate),
                        duplicate_pairs::score.eq(score),
                        duplicate_pairs::reasons.eq(r#"["same email within 72 h","similar message"]"#),
                        duplicate_pairs::status.eq("open"),
                        duplicate_pairs::created_at.eq(onceform::base::clock::now()),
                    ))
                    .on_conflict((duplicate_pairs::original_id, duplicate_pairs::duplicate_id))
                    .do_update()
                    .set((duplicate_pairs::status.eq("open"), duplicate_pairs::score.eq(score))),
            )?;
            p.filter(duplicate_pairs::original_id.eq(&original))
                .filter(duplicate_pairs::duplicate_id.eq(&duplicate))
                .select(duplicate_pairs::id)
                .first::<String>(c)
                .map_err(DbError::from)
        })
    })
    .await
}

/// (status, decided_by, decided_at is set) of a pair.
async fn pair_state(app: &TestApp, id: &str) -> (String, Option<String>, bool) {
    let id = id.to_string();
    let (status, by, at) = app
        .query(move |pool| {
            with_conn!(pool, |c| duplicate_pairs::table
                .find(&id)
                .select((duplicate_pairs::status, duplicate_pairs::decided_by, duplicate_pairs::decided_at))
                .first::<(String, Option<String>, Option<chrono::NaiveDateTime>)>(c)
                .map_err(DbError::from))
        })
        .await;
    (status, by, at.is_some())
}

/// (kind, state, held, last_error) of each effect of the submission under `key`.
async fn effects(app: &TestApp, key: &str) -> Vec<(String, String, bool, Option<String>)> {
    let key = key.to_string();
    app.query(move |pool| {
        with_conn!(pool, |c| side_effects::table
            .inner_join(submissions::table)
            .filter(submissions::operation_id.eq(&key))
            .order(side_effects::kind)
            .select((side_effects::kind, side_effects::state, side_effects::held, side_effects::last_error))
            .load(c)
            .map_err(DbError::from))
    })
    .await
}

async fn set_effects(
    app: &TestApp,
    key: &str,
    kind: Option<&str>,
    state: &str,
    held: bool,
    note: Option<&str>,
) {
    let id = submission_id(app, key).await;
    let (kind, state, note) = (kind.map(String::from), state.to_string(), note.map(String::from));
    app.query(move |pool| {
        with_conn!(pool, |c| {
            let mut q =
                diesel::update(side_effects::table).filter(side_effects::submission_id.eq(&id)).into_boxed();
            if let Some(k) = &kind {
                q = q.filter(side_effects::kind.eq(k.clone()));
            }
            q.set((
                side_effects::state.eq(&state),
                side_effects::held.eq(held),
                side_effects::last_error.eq(&note),
            ))
            .execute(c)
            .map_err(DbError::from)
        })
    })
    .await;
}

async fn duplicate_of(app: &TestApp, key: &str) -> Option<String> {
    let id = submission_id(app, key).await;
    app.query(move |pool| {
        with_conn!(pool, |c| submissions::table
            .find(&id)
            .select(submissions::duplicate_of)
            .first::<Option<String>>(c)
            .map_err(DbError::from))
    })
    .await
}

async fn page(app: &TestApp, session: &crate::support::admin::AdminSession, path: &str) -> String {
    let resp = app.admin_get(Some(session), path).await;
    assert_eq!(resp.status(), 200, "{path}");
    resp.text().await.unwrap()
}

async fn dismissing_a_conflict_is_guarded_audited_and_creates_nothing(backend: Backend) {
    let app = spawn_app(backend).await;
    let (key, id) = make_conflict(&app, &inquiry("Original"), &inquiry("Edited after the fact")).await;
    let (admin, viewer) = (app.sign_in(Role::Admin).await, app.sign_in(Role::Viewer).await);
    let before = app.stats().await.submissions;

    let path = format!("/admin/conflicts/{id}/dismiss");
    let resp = assert_guarded(&app, &admin, &viewer, &path, &[("note", "client retried with an edit")]).await;
    assert!(resp.headers()["location"].to_str().unwrap().starts_with("/admin/conflicts?status=open"));

    assert_eq!(conflict_status(&app, &id).await, "dismissed");
    assert_eq!(app.stats().await.submissions, before, "dismissing creates no submission");
    assert_eq!(app.stored_fields(&key).await.unwrap()["message"], "Original");
    assert!(!page(&app, &admin, "/admin/conflicts").await.contains(&id), "no longer listed as open");
    assert!(page(&app, &viewer, "/admin/conflicts?status=dismissed").await.contains(&id));
}

async fn accepting_a_conflict_creates_a_new_inquiry_with_its_own_effects(backend: Backend) {
    let app = spawn_app(backend).await;
    let edited = person("Ada King", "ada.king@example.com", "Edited after the fact");
    let (key, id) = make_conflict(&app, &inquiry("Original"), &edited).await;
    let (admin, viewer) = (app.sign_in(Role::Admin).await, app.sign_in(Role::Viewer).await);
    let original_effects = effects(&app, &key).await;

    let path = format!("/admin/conflicts/{id}/accept");
    let resp = assert_guarded(&app, &admin, &viewer, &path, &[("note", "a real second inquiry")]).await;
    assert!(resp.headers()["location"]
        .to_str()
        .unwrap()
        .starts_with(&format!("/admin/conflicts/{id}?flash=")));

    assert_eq!(conflict_status(&app, &id).await, "accepted");
    assert_eq!(app.stats().await.submissions, 2, "a second submission");
    let new_key = format!("conflict.{id}");
    let fields = app.stored_fields(&new_key).await.expect("the new inquiry");
    assert_eq!(
        (fields["name"].as_str(), fields["message"].as_str()),
        (Some("Ada King"), Some("Edited after the fact"))
    );
    let new_effects = effects(&app, &new_key).await;
    assert_eq!(new_effects.len(), 3, "its own side-effect records");
    assert!(new_effects.iter().all(|(_, state, _, _)| state == "PENDING"));
    assert_eq!(app.stats().await.effects_total(), 6);
    assert_eq!(app.stored_fields(&key).await.unwrap()["message"], "Original", "the original is untouched");
    assert_eq!(effects(&app, &key).await, original_effects);

    let new_id = submission_id(&app, &new_key).await;
    let detail = page(&app, &admin, &format!("/admin/conflicts/{id}")).await;
    assert!(detail.contains(&format!(r#"href="/admin/submissions/{new_id}""#)), "links the new inquiry");
}

async fn the_conflict_page_highlights_the_differing_fields(backend: Backend) {
    let app = spawn_app(backend).await;
    let (_, id) = make_conflict(&app, &inquiry("Original"), &inquiry("Edited after the fact")).await;
    let viewer = app.sign_in(Role::Viewer).await;

    let list = page(&app, &viewer, "/admin/conflicts").await;
    assert!(list.contains(&format!(r#"href="/admin/conflicts/{id}""#)));
    assert!(list.contains("Edited after the fact"));

    let detail = page(&app, &viewer, &format!("/admin/conflicts/{id}")).await;
    assert!(detail.contains("<th scope=\"row\">Message</th>"), "fields by label");
    assert!(detail.contains(r#"<mark class="diff">Original</mark>"#));
    assert!(detail.contains(r#"<mark class="diff">Edited after the fact</mark>"#));
    assert!(detail.contains("<pre>Ada Lovelace</pre>"), "equal fields are not marked");
    assert_eq!(detail.matches(r#"<mark class="diff">"#).count(), 2);
    assert!(!detail.contains("/accept\""), "a viewer gets no action buttons");
}

async fn conflict_actions_need_an_open_conflict(backend: Backend) {
    let app = spawn_app(backend).await;
    let (_, id) = make_conflict(&app, &inquiry("Original"), &inquiry("Edited")).await;
    let admin = app.sign_in(Role::Admin).await;
    let post = |path: String| {
        let (app, admin) = (&app, &admin);
        async move { app.admin_post(Some(admin), &path, Some(&admin.csrf), &[]).await.status() }
    };
    assert_eq!(post(format!("/admin/conflicts/{id}/dismiss")).await, 303);
    let before = app.audit_count().await;
    assert_eq!(post(format!("/admin/conflicts/{id}/dismiss")).await, 409);
    assert_eq!(post(format!("/admin/conflicts/{id}/accept")).await, 409);
    assert_eq!(post("/admin/conflicts/no-such-conflict/accept".into()).await, 404);
    assert_eq!(post("/admin/conflicts/no-such-conflict/dismiss".into()).await, 404);
    assert_eq!(app.admin_get(Some(&admin), "/admin/conflicts/no-such-conflict").await.status(), 404);
    assert_eq!(app.audit_count().await, before, "refusals are not audited");
    assert_eq!(app.stats().await.submissions, 1);
}

async fn duplicate_of_cancels_pending_effects_and_undo_restores_them(backend: Backend) {
    let app = spawn_app(backend).await;
    let (k1, k2) = (new_key(), new_key());
    app.submit(&k1, &person("Ada", "ada1@example.com", "Need a quote")).await;
    app.submit(&k2, &person("Ada", "ada2@example.com", "Need a quote!")).await;
    let pair = make_pair(&app, &k1, &k2, 0.93).await;
    // One effect already went out; another was cancelled by hand before.
    set_effects(&app, &k2, Some("owner_notification"), "SENT", false, None).await;
    set_effects(&app, &k2, Some("confirmation_email"), "CANCELLED", false, Some("admin: bounced")).await;
    let (admin, viewer) = (app.sign_in(Role::Admin).await, app.sign_in(Role::Viewer).await);
    let original = submission_id(&app, &k1).await;
    let original_effects = effects(&app, &k1).await;

    let path = format!("/admin/duplicates/{pair}/duplicate");
    assert_guarded(&app, &admin, &viewer, &path, &[("note", "same person, same request")]).await;
    let (status, by, at) = pair_state(&app, &pair).await;
    assert_eq!(status, "duplicate");
    assert!(by.unwrap().starts_with("admin-") && at, "decided_by and decided_at");
    assert_eq!(duplicate_of(&app, &k2).await.as_deref(), Some(original.as_str()));
    let note = format!("duplicate of {}", onceform::base::format::reference(&original));
    let e = effects(&app, &k2).await;
    assert_eq!(e[0], ("confirmation_email".into(), "CANCELLED".into(), false, Some("admin: bounced".into())));
    assert_eq!(
        e[1],
        ("crm_lead".into(), "CANCELLED".into(), false, Some(note.clone())),
        "pending → cancelled"
    );
    assert_eq!(e[2].1, "SENT", "what went out stays");
    assert_eq!(effects(&app, &k1).await, original_effects, "the original goes ahead");

    let resp = assert_guarded(&app, &admin, &viewer, &format!("/admin/duplicates/{pair}/undo"), &[]).await;
    assert!(resp.headers()["location"].to_str().unwrap().starts_with("/admin/duplicates?status=duplicate"));
    assert_eq!(pair_state(&app, &pair).await, ("open".into(), None, false));
    assert_eq!(duplicate_of(&app, &k2).await, None);
    let e = effects(&app, &k2).await;
    assert_eq!(e[0].1, "CANCELLED", "an effect the decision did not cancel stays cancelled");
    assert_eq!((e[1].1.as_str(), e[1].2), ("PENDING", true), "back to PENDING, held for a new decision");
    assert_eq!(e[2].1, "SENT");
}

async fn not_a_duplicate_releases_held_effects_and_leaves_the_open_list(backend: Backend) {
    let app = spawn_app(backend).await;
    let (k1, k2) = (new_key(), new_key());
    app.submit(&k1, &person("Ada", "ada1@example.com", "Need a quote")).await;
    app.submit(&k2, &person("Ada", "ada2@example.com", "Need another quote")).await;
    let pair = make_pair(&app, &k1, &k2, 0.85).await;
    set_effects(&app, &k2, None, "PENDING", true, None).await;
    let (admin, viewer) = (app.sign_in(Role::Admin).await, app.sign_in(Role::Viewer).await);
    assert!(page(&app, &viewer, "/admin/duplicates").await.contains(&format!("pair-{pair}")));

    let path = format!("/admin/duplicates/{pair}/not-duplicate");
    assert_guarded(&app, &admin, &viewer, &path, &[("note", "two different projects")]).await;
    let (status, by, at) = pair_state(&app, &pair).await;
    assert_eq!((status.as_str(), by.is_some(), at), ("not_duplicate", true, true));
    assert!(
        effects(&app, &k2).await.iter().all(|(_, state, held, _)| state == "PENDING" && !held),
        "released"
    );
    assert_eq!(duplicate_of(&app, &k2).await, None);

    assert!(!page(&app, &viewer, "/admin/duplicates").await.contains(&format!("pair-{pair}")), "not open");
    assert!(page(&app, &viewer, "/admin/duplicates?status=not_duplicate")
        .await
        .contains(&format!("pair-{pair}")));

    // Remembered: the detector's insert of the same pair stores nothing.
    let (o, d) = (submission_id(&app, &k1).await, submission_id(&app, &k2).await);
    let stored = app
        .query(move |pool| {
            with_conn!(pool, |c| c
                .execute_native(
                    diesel::insert_into(duplicate_pairs::table)
                        .values((
                            duplicate_pairs::id.eq(uuid::Uuid::now_v7().to_string()),
                            duplicate_pairs::form.eq("contact"),
                            duplicate_pairs::original_id.eq(&o),
                            duplicate_pairs::duplicate_id.eq(&d),
                            duplicate_pairs::score.eq(0.9),
                            duplicate_pairs::reasons.eq("[]"),
                            duplicate_pairs::status.eq("open"),
                            duplicate_pairs::created_at.eq(onceform::base::clock::now()),
                        ))
                        .on_conflict_do_nothing()
                )
                .map_err(DbError::from))
        })
        .await;
    assert_eq!(stored, 0);
    assert_eq!(pair_state(&app, &pair).await.0, "not_duplicate");
}

async fn batch_decides_several_pairs_with_one_request(backend: Backend) {
    let app = spawn_app(backend).await;
    let keys: Vec<String> = (0..4).map(|_| new_key()).collect();
    for (i, k) in keys.iter().enumerate() {
        app.submit(k, &person("Ada", &format!("ada{i}@example.com"), "Need a quote")).await;
    }
    let a = make_pair(&app, &keys[0], &keys[1], 0.9).await;
    let b = make_pair(&app, &keys[0], &keys[2], 0.8).await;
    let c = make_pair(&app, &keys[0], &keys[3], 0.7).await;
    let (admin, viewer) = (app.sign_in(Role::Admin).await, app.sign_in(Role::Viewer).await);
    let list = page(&app, &admin, "/admin/duplicates").await;
    let (pa, pb, pc) = (list.find(&a).unwrap(), list.find(&b).unwrap(), list.find(&c).unwrap());
    assert!(pa < pb && pb < pc, "highest score first");
    assert!(list.contains(r#"form="batch""#), "checkboxes for batch decisions");

    let before = app.audit_count().await;
    let form =
        [("ids", a.as_str()), ("ids", b.as_str()), ("decision", "duplicate"), ("note", "all one lead")];
    let resp = app.admin_post(Some(&admin), "/admin/duplicates/batch", Some(&admin.csrf), &form).await;
    assert_eq!(resp.status(), 303);
    assert_eq!(app.audit_count().await, before + 2, "one audit row per pair decided");
    assert_eq!(pair_state(&app, &a).await.0, "duplicate");
    assert_eq!(pair_state(&app, &b).await.0, "duplicate");
    assert_eq!(pair_state(&app, &c).await.0, "open");
    for k in &keys[1..3] {
        assert!(effects(&app, k).await.iter().all(|(_, s, _, _)| s == "CANCELLED"));
    }

    // The batch route is guarded like every action.
    let form = [("ids", c.as_str()), ("decision", "not-duplicate")];
    assert_guarded(&app, &admin, &viewer, "/admin/duplicates/batch", &form).await;
    assert_eq!(pair_state(&app, &c).await.0, "not_duplicate");

    // Nothing open among the selected: refused, not audited.
    let before = app.audit_count().await;
    let form = [("ids", a.as_str()), ("ids", c.as_str()), ("decision", "duplicate")];
    let again = app.admin_post(Some(&admin), "/admin/duplicates/batch", Some(&admin.csrf), &form).await;
    assert_eq!(again.status(), 409);
    assert_eq!(app.audit_count().await, before);
}

async fn duplicate_actions_need_the_right_status(backend: Backend) {
    let app = spawn_app(backend).await;
    let (k1, k2) = (new_key(), new_key());
    app.submit(&k1, &person("Ada", "ada1@example.com", "Quote")).await;
    app.submit(&k2, &person("Ada", "ada2@example.com", "Quote")).await;
    let pair = make_pair(&app, &k1, &k2, 0.9).await;
    let admin = app.sign_in(Role::Admin).await;
    let post = |path: String| {
        let (app, admin) = (&app, &admin);
        async move { app.admin_post(Some(admin), &path, Some(&admin.csrf), &[]).await.status() }
    };
    let before = app.audit_count().await;
    assert_eq!(post(format!("/admin/duplicates/{pair}/undo")).await, 409, "nothing to undo");
    assert_eq!(post(format!("/admin/duplicates/{pair}/not-duplicate")).await, 303);
    assert_eq!(post(format!("/admin/duplicates/{pair}/duplicate")).await, 409, "undo first");
    assert_eq!(post(format!("/admin/duplicates/{pair}/not-duplicate")).await, 409);
    assert_eq!(post("/admin/duplicates/no-such-pair/duplicate".into()).await, 404);
    assert_eq!(post("/admin/duplicates/no-such-pair/undo".into()).await, 404);
    assert_eq!(app.audit_count().await, before + 1);
}

async fn visitor_content_is_inert_on_review_pages(backend: Backend) {
    let app = spawn_app(backend).await;
    let evil = |email: &str| person(SCRIPT, email, IMG);
    let (_, conflict) = make_conflict(&app, &inquiry("Original"), &evil("ada@example.com")).await;
    let (k1, k2) = (new_key(), new_key());
    app.submit(&k1, &evil("eve1@example.com")).await;
    app.submit(&k2, &evil("eve2@example.com")).await;
    make_pair(&app, &k1, &k2, 0.99).await;
    let admin = app.sign_in(Role::Admin).await;

    for path in ["/admin/conflicts", &format!("/admin/conflicts/{conflict}"), "/admin/duplicates"] {
        let anonymous = app.admin_get(None, path).await;
        assert_eq!(anonymous.status(), 303, "{path} needs a session");
        let body = page(&app, &admin, path).await;
        assert!(!body.contains(SCRIPT) && !body.contains("<script"), "{path}: no raw <script>");
        assert!(!body.contains(IMG) && !body.contains("<img"), "{path}: no raw <img>");
        assert!(body.contains(SCRIPT_ESCAPED), "{path}: the name, escaped");
        assert!(body.contains(IMG_ESCAPED), "{path}: the message, escaped");
    }
}
