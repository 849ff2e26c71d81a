//! The read API (`/api/v1`) with scoped tokens, on both backends: tokens made by the command
//! line and by the admin page (shown once, stored hashed), scopes and form limits (403),
//! revoked and expired tokens (401), pages that walk every submission exactly once while new
//! ones arrive, tombstones without content, decisions with the admin's rules and audit, a
//! token that opens no admin page, and a record of every use.

use diesel::prelude::*;
use onceform::config::Config;
use onceform::db::schema::{api_token_uses, api_tokens, audit_log, duplicate_pairs};
use onceform::db::DbError;
use onceform::domain::{digest, Scopes};
use onceform::services::accounts::Role;
use onceform::services::audit::Actor;
use onceform::services::read_api::tokens::{self, TokenRequest};
use onceform::with_conn;
use serde_json::{json, Value};

use crate::lifecycle::{onceform_with, stdout, text_columns_containing};
use crate::on_both_backends;
use crate::support::admin::assert_guarded;
use crate::support::{inquiry, new_key, seed, spawn_app_with, Backend, TestApp};

on_both_backends!(
    a_token_from_the_command_line_is_shown_once_stored_hashed_and_revocable,
    the_admin_page_makes_lists_and_revokes_tokens_for_admins_only,
    scopes_and_form_limits_are_enforced,
    revoked_expired_and_unknown_tokens_are_401,
    pages_walk_every_submission_exactly_once_while_new_ones_arrive,
    erased_submissions_are_served_as_tombstones_only,
    a_submission_names_its_route_and_the_form_version_it_was_accepted_under,
    decisions_follow_the_admin_rules_and_are_audited_as_the_token,
    a_token_opens_no_admin_page_and_a_session_no_api,
    every_use_is_recorded_and_last_use_shown,
    the_change_feed_pages_from_a_stored_cursor_without_gap_or_repeat,
);

const CALLBACK: &str = r#"
[forms.callback]
title = "Call me back"
allow_keyless_api = true
honeypot = ""
[[forms.callback.fields]]
name = "phone"
type = "phone"
required = true
"#;

async fn app(backend: Backend) -> TestApp {
    spawn_app_with(backend, |c| c.forms.extend(Config::parse(CALLBACK).unwrap().forms)).await
}

/// A token made through the use case (as the command line does).
async fn token(app: &TestApp, scopes: &str, form: Option<&str>) -> String {
    let request = TokenRequest {
        name: format!("test {scopes}"),
        scopes: Scopes::parse(scopes).unwrap(),
        form: form.map(String::from),
        expires_days: None,
    };
    let actor = Actor { id: "cli".into(), label: "command line".into() };
    app.query(move |pool| Ok(tokens::create(pool, &request, |_| true, &actor).unwrap().secret)).await
}

async fn get(app: &TestApp, token: &str, path: &str) -> reqwest::Response {
    app.client.get(app.url(path)).bearer_auth(token).send().await.unwrap()
}

async fn get_json(app: &TestApp, token: &str, path: &str) -> Value {
    let resp = get(app, token, path).await;
    assert_eq!(resp.status(), 200, "{path}");
    resp.json().await.unwrap()
}

fn challenge(resp: &reqwest::Response) -> String {
    resp.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default()
}

async fn decide(app: &TestApp, token: &str, pair: &str, body: Value) -> reqwest::Response {
    let url = app.url(&format!("/api/v1/duplicates/{pair}/decision"));
    app.client.post(url).bearer_auth(token).json(&body).send().await.unwrap()
}

/// Accepts a contact submission; its ID.
async fn submitted(app: &TestApp, message: &str) -> String {
    let resp = app.submit(&new_key(), &inquiry(message)).await;
    assert_eq!(resp.status(), 201);
    resp.json::<Value>().await.unwrap()["submission_id"].as_str().unwrap().to_string()
}

async fn a_token_from_the_command_line_is_shown_once_stored_hashed_and_revocable(backend: Backend) {
    let app = app(backend).await;
    let config = onceform::config::DEFAULT_CONFIG;
    let made = onceform_with(
        &app,
        config,
        &[
            "api-token",
            "create",
            "--name",
            "CRM sync",
            "--scope",
            "read:submissions,read:effects",
            "--form",
            "contact",
            "--expires-days",
            "30",
        ],
    );
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let secret = stdout(&made).trim().to_string();
    assert!(secret.starts_with("ofk_") && secret.len() == 47, "{secret}");
    assert!(String::from_utf8_lossy(&made.stderr).contains("shown only now"));
    // Only its SHA-256 is stored: no text column anywhere holds the secret.
    assert!(text_columns_containing(&app, backend, &secret).await.is_empty());
    let hash = digest(&secret);
    let stored: (String, String, Option<String>, bool) = app
        .query(move |pool| {
            with_conn!(pool, |c| api_tokens::table
                .filter(api_tokens::token_hash.eq(&hash))
                .select((
                    api_tokens::name,
                    api_tokens::scopes,
                    api_tokens::form,
                    api_tokens::expires_at.is_not_null()
                ))
                .first(c)
                .map_err(DbError::from))
        })
        .await;
    assert_eq!(
        stored,
        ("CRM sync".into(), "read:submissions read:effects".into(), Some("contact".into()), true)
    );
    submitted(&app, "Hello").await;
    let page = get_json(&app, &secret, "/api/v1/submissions").await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);

    let listed = stdout(&onceform_with(&app, config, &["api-token", "list"]));
    let line = listed.lines().find(|l| l.contains("CRM sync")).expect("listed");
    assert!(line.contains("read:submissions,read:effects") && line.contains("contact"), "{line}");
    assert!(!listed.contains(&secret), "the list never shows a secret");
    let id = line.split('\t').next().unwrap();
    let bad =
        onceform_with(&app, config, &["api-token", "create", "--name", "x", "--scope", "read:everything"]);
    assert_eq!(bad.status.code(), Some(2), "an unknown scope is a usage error");
    let revoked = onceform_with(&app, config, &["api-token", "revoke", id]);
    assert!(revoked.status.success() && stdout(&revoked).contains("revoked token"));
    assert_eq!(get(&app, &secret, "/api/v1/submissions").await.status(), 401);
    let again = onceform_with(&app, config, &["api-token", "revoke", id]);
    assert!(!again.status.success(), "revoked already");
    let audit = audit_actions(&app).await;
    assert!(audit.contains(&("api_token.create".into(), "cli".into())), "{audit:?}");
    assert!(audit.contains(&("api_token.revoke".into(), "cli".into())), "{audit:?}");
}

/// (action, user_id) of every audit row.
async fn audit_actions(app: &TestApp) -> Vec<(String, String)> {
    app.query(|pool| {
        with_conn!(pool, |c| audit_log::table
            .order(audit_log::at)
            .select((audit_log::action, audit_log::user_id))
            .load(c)
            .map_err(DbError::from))
    })
    .await
}

async fn the_admin_page_makes_lists_and_revokes_tokens_for_admins_only(backend: Backend) {
    let app = app(backend).await;
    let (admin, viewer) = (app.sign_in(Role::Admin).await, app.sign_in(Role::Viewer).await);
    assert_eq!(app.admin_get(Some(&viewer), "/admin/api-tokens").await.status(), 403);
    assert_eq!(app.admin_get(None, "/admin/api-tokens").await.status(), 303);
    let form = [("name", "Reporting"), ("read:submissions", "on"), ("form", "contact"), ("expires_days", "")];
    let before = app.audit_count().await;
    assert_eq!(
        app.admin_post(Some(&viewer), "/admin/api-tokens", Some(&viewer.csrf), &form).await.status(),
        403
    );
    assert_eq!(app.admin_post(Some(&admin), "/admin/api-tokens", None, &form).await.status(), 403);
    assert_eq!(app.admin_post(None, "/admin/api-tokens", Some(&admin.csrf), &form).await.status(), 303);
    let no_scope = [("name", "Nothing"), ("form", "")];
    let refused = app.admin_post(Some(&admin), "/admin/api-tokens", Some(&admin.csrf), &no_scope).await;
    assert_eq!(refused.status(), 422);
    assert_eq!(app.audit_count().await, before, "refused requests make nothing");

    let made = app.admin_post(Some(&admin), "/admin/api-tokens", Some(&admin.csrf), &form).await;
    assert_eq!(made.status(), 201);
    assert_eq!(made.headers()["cache-control"], "no-store");
    let html = made.text().await.unwrap();
    let start = html.find(r#"<code id="token-secret">"#).expect("the secret, once") + 24;
    let secret = html[start..].split('<').next().unwrap().to_string();
    assert!(secret.starts_with("ofk_"), "{secret}");
    assert_eq!(app.audit_count().await, before + 1);
    assert!(text_columns_containing(&app, backend, &secret).await.is_empty(), "stored hashed");
    let listed = app.admin_get(Some(&admin), "/admin/api-tokens").await.text().await.unwrap();
    assert!(listed.contains("Reporting") && !listed.contains(&secret), "listed, never shown again");
    assert_eq!(get(&app, &secret, "/api/v1/submissions").await.status(), 200);

    let id =
        listed.split(r#"class="api-token" data-id=""#).nth(1).unwrap().split('"').next().unwrap().to_string();
    let path = format!("/admin/api-tokens/{id}/revoke");
    let resp = assert_guarded(&app, &admin, &viewer, &path, &[]).await;
    assert!(resp.headers()["location"]
        .to_str()
        .unwrap()
        .starts_with("/admin/api-tokens?flash=api_token_revoked"));
    assert_eq!(get(&app, &secret, "/api/v1/submissions").await.status(), 401);
    let listed = app.admin_get(Some(&admin), "/admin/api-tokens").await.text().await.unwrap();
    assert!(listed.contains("revoked "), "shown as revoked");
    assert_eq!(app.admin_post(Some(&admin), &path, Some(&admin.csrf), &[]).await.status(), 409);
}

async fn scopes_and_form_limits_are_enforced(backend: Backend) {
    let app = app(backend).await;
    let contact = submitted(&app, "Contact form").await;
    let resp = app
        .client
        .post(app.url("/api/forms/callback/submissions"))
        .json(&json!({"phone": "+886 912 345 678"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let callback = resp.json::<Value>().await.unwrap()["submission_id"].as_str().unwrap().to_string();

    let effects_only = token(&app, "read:effects", None).await;
    let resp = get(&app, &effects_only, "/api/v1/submissions").await;
    assert_eq!(resp.status(), 403);
    assert!(challenge(&resp).contains(r#"error="insufficient_scope", scope="read:submissions""#));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(crate::support::problem_type(&body), "insufficient-scope");
    assert_eq!(get(&app, &effects_only, &format!("/api/v1/submissions/{contact}")).await.status(), 403);
    assert_eq!(get(&app, &effects_only, "/api/v1/duplicates").await.status(), 403);
    let effects = get_json(&app, &effects_only, "/api/v1/effects?state=PENDING").await;
    assert!(!effects["items"].as_array().unwrap().is_empty());
    let reader = token(&app, "read:submissions", None).await;
    assert_eq!(get(&app, &reader, "/api/v1/effects").await.status(), 403);
    let both = get_json(&app, &reader, "/api/v1/submissions").await;
    assert_eq!(both["items"].as_array().unwrap().len(), 2, "an unlimited token reads every form");

    let contact_only = token(&app, "read:submissions,read:effects", Some("contact")).await;
    let page = get_json(&app, &contact_only, "/api/v1/submissions").await;
    let ids: Vec<&str> =
        page["items"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [contact.as_str()], "a form-limited token sees its form only");
    assert_eq!(get(&app, &contact_only, "/api/v1/submissions?form=callback").await.status(), 403);
    assert_eq!(get(&app, &contact_only, &format!("/api/v1/submissions/{callback}")).await.status(), 403);
    let own = get_json(&app, &contact_only, &format!("/api/v1/submissions/{contact}")).await;
    assert_eq!(
        (own["form"].as_str(), own["fields"]["message"].as_str()),
        (Some("contact"), Some("Contact form"))
    );
    assert!(own["effects"][0]["attempts"].is_array(), "effects with their attempts");
    let effects = get_json(&app, &contact_only, "/api/v1/effects").await;
    assert!(effects["items"].as_array().unwrap().iter().all(|e| e["form"] == "contact"));
    assert_eq!(get(&app, &contact_only, "/api/v1/effects?form=callback").await.status(), 403);
    // Parameters that are not as described are 400, naming the parameter.
    for bad in ["limit=501", "limit=0", "state=unknown", "since=yesterday", "cursor=x", "form="] {
        let resp = get(&app, &reader, &format!("/api/v1/submissions?{bad}")).await;
        assert_eq!(resp.status(), 400, "{bad}");
        assert_eq!(crate::support::problem_type(&resp.json().await.unwrap()), "invalid-parameter");
    }
    assert_eq!(get(&app, &reader, "/api/v1/submissions/no-such-id").await.status(), 404);
}

/// Sets the token's `expires_at` to an hour ago.
async fn expire(app: &TestApp, secret: &str) {
    let hash = digest(secret);
    app.query(move |pool| {
        with_conn!(pool, |c| diesel::update(api_tokens::table.filter(api_tokens::token_hash.eq(&hash)))
            .set(api_tokens::expires_at.eq(onceform::base::clock::now() - chrono::Duration::hours(1)))
            .execute(c)
            .map_err(DbError::from))
    })
    .await;
}

async fn revoked_expired_and_unknown_tokens_are_401(backend: Backend) {
    let app = app(backend).await;
    let live = token(&app, "read:submissions", None).await;
    assert_eq!(get(&app, &live, "/api/v1/submissions").await.status(), 200);
    let expired = token(&app, "read:submissions", None).await;
    expire(&app, &expired).await;
    let unknown = format!("ofk_{}", "A".repeat(43));
    for (what, token) in [("expired", expired.as_str()), ("unknown", &unknown), ("malformed", "ofk_nope")] {
        let resp = get(&app, token, "/api/v1/submissions").await;
        assert_eq!(resp.status(), 401, "{what}");
        assert!(challenge(&resp).contains(r#"error="invalid_token""#), "{what}");
        assert_eq!(resp.headers()["content-type"], "application/problem+json");
    }
    let missing = app.client.get(app.url("/api/v1/submissions")).send().await.unwrap();
    assert_eq!(missing.status(), 401);
    assert_eq!(challenge(&missing), r#"Bearer realm="onceform""#);
    let id: String = app
        .query(|pool| {
            with_conn!(pool, |c| api_tokens::table
                .filter(api_tokens::expires_at.is_null())
                .select(api_tokens::id)
                .first(c)
                .map_err(DbError::from))
        })
        .await;
    let actor = Actor { id: "cli".into(), label: "command line".into() };
    app.query(move |pool| Ok(tokens::revoke(pool, &id, &actor).unwrap())).await;
    let resp = get(&app, &live, "/api/v1/submissions").await;
    assert_eq!(resp.status(), 401, "revoked");
    assert!(challenge(&resp).contains("invalid_token"));
}

async fn pages_walk_every_submission_exactly_once_while_new_ones_arrive(backend: Backend) {
    let app = app(backend).await;
    seed(&app.pool, &app.config, 9).await;
    let reader = token(&app, "read:submissions", None).await;
    let all = get_json(&app, &reader, "/api/v1/submissions?limit=500").await;
    let existing: Vec<String> =
        all["items"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(existing.len(), 9);
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/submissions?limit=2&cursor={c}"),
            None => "/api/v1/submissions?limit=2".to_string(),
        };
        let page = get_json(&app, &reader, &path).await;
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 2);
        seen.extend(items.iter().map(|s| s["id"].as_str().unwrap().to_string()));
        // New submissions keep arriving between the pages.
        submitted(&app, &format!("Arrived during page {pages}")).await;
        pages += 1;
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
        assert!(pages < 20, "the walk ends");
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), seen.len(), "no submission twice: {seen:?}");
    assert_eq!(seen, existing, "every submission there when the walk began, newest first, once");
    assert_eq!(pages, 5);
    // Newest first overall, the arrivals at the head.
    let now = get_json(&app, &reader, "/api/v1/submissions?limit=1").await;
    assert_eq!(now["items"][0]["fields"]["message"], "Arrived during page 4");
}

async fn erased_submissions_are_served_as_tombstones_only(backend: Backend) {
    let app = app(backend).await;
    let id = submitted(&app, "Please erase me later").await;
    let reader = token(&app, "read:submissions", None).await;
    let before = get_json(&app, &reader, &format!("/api/v1/submissions/{id}")).await;
    assert_eq!(before["content"], "stored");
    assert_eq!(before["fields"]["email"], "ada@example.com");
    let admin = app.sign_in(Role::Admin).await;
    let erased = app
        .admin_post(Some(&admin), "/admin/erase", Some(&admin.csrf), &[("email", "ada@example.com")])
        .await;
    assert_eq!(erased.status(), 200);
    for path in [format!("/api/v1/submissions/{id}"), "/api/v1/submissions".to_string()] {
        let text = get(&app, &reader, &path).await.text().await.unwrap();
        assert!(
            !text.contains("ada@example.com") && !text.contains("Please erase me") && !text.contains("Ada"),
            "{path}: {text}"
        );
    }
    let after = get_json(&app, &reader, &format!("/api/v1/submissions/{id}")).await;
    assert_eq!((after["content"].as_str(), after["fields"].is_null()), (Some("purged"), true));
    assert_eq!(after["files"], json!([]));
    assert_eq!(after["id"], id.as_str(), "the tombstone stays, with its effects");
    assert!(!after["effects"].as_array().unwrap().is_empty());
}

async fn a_submission_names_its_route_and_the_form_version_it_was_accepted_under(backend: Backend) {
    let routes = "[forms.contact]\ntitle = 'x'\nfields = [{ name = 'topic', type = 'select', \
                  options = ['Sales', 'Support', 'Partnership', 'Other'] }]\n\
                  [[forms.contact.routes]]\nname = 'support'\nwhen = { topic = 'Support' }\n";
    let routes = Config::parse(routes).unwrap().forms["contact"].routes.clone();
    let app = spawn_app_with(backend, |c| c.forms.get_mut("contact").unwrap().routes = routes).await;
    let version = app.forms.now().get("contact").unwrap().version().unwrap().to_string();
    let ask = |topic: &str| {
        let mut body = inquiry(&format!("A {topic} question"));
        body["topic"] = topic.into();
        body
    };
    let mut ids = Vec::new();
    for topic in ["Support", "Sales", "Other"] {
        let resp = app.submit(&new_key(), &ask(topic)).await;
        assert_eq!(resp.status(), 201);
        ids.push(resp.json::<Value>().await.unwrap()["submission_id"].as_str().unwrap().to_string());
    }
    // The third as if accepted before versions were kept.
    let old = ids[2].clone();
    app.query(move |pool| {
        use onceform::db::schema::submissions;
        with_conn!(pool, |c| diesel::update(submissions::table.filter(submissions::id.eq(&old)))
            .set(submissions::form_version.eq(None::<String>))
            .execute(c)
            .map_err(DbError::from))
    })
    .await;
    let reader = token(&app, "read:submissions", None).await;
    let list = get_json(&app, &reader, "/api/v1/submissions").await;
    let listed = |id: &str| list["items"].as_array().unwrap().iter().find(|s| s["id"] == id).unwrap().clone();
    let expected =
        [(json!("support"), json!(version)), (Value::Null, json!(version)), (Value::Null, Value::Null)];
    for (id, (route, version)) in ids.iter().zip(expected) {
        let detail = get_json(&app, &reader, &format!("/api/v1/submissions/{id}")).await;
        for shown in [&detail, &listed(id)] {
            assert_eq!((&shown["route"], &shown["version"]), (&route, &version), "{id}: {shown}");
        }
    }
}

/// An open pair (contact, `original` ← `duplicate`), as the screener leaves one (in place
/// of whatever the screener made of the two); its ID.
async fn open_pair(app: &TestApp, original: &str, duplicate: &str) -> String {
    app.until_screened().await;
    let (o, d) = (original.to_string(), duplicate.to_string());
    app.query(move |pool| {
        with_conn!(pool, |c| {
            let both = [o.clone(), d.clone()];
            diesel::delete(
                duplicate_pairs::table
                    .filter(duplicate_pairs::original_id.eq_any(&both))
                    .filter(duplicate_pairs::duplicate_id.eq_any(&both)),
            )
            .execute(c)?;
            diesel::insert_into(duplicate_pairs::table)
                .values((
                    duplicate_pairs::id.eq(uuid::Uuid::now_v7().to_string()),
                    duplicate_pairs::form.eq("contact"),
                    duplicate_pairs::original_id.eq(&o),
                    duplicate_pairs::duplicate_id.eq(&d),
                    duplicate_pairs::score.eq(0.93),
                    duplicate_pairs::reasons.eq(r#"["same email within 72 h"]"#),
                    duplicate_pairs::status.eq("open"),
                    duplicate_pairs::created_at.eq(onceform::base::clock::now()),
                ))
                .execute(c)?;
            duplicate_pairs::table
                .filter(duplicate_pairs::original_id.eq(&o))
                .filter(duplicate_pairs::duplicate_id.eq(&d))
                .select(duplicate_pairs::id)
                .first(c)
                .map_err(DbError::from)
        })
    })
    .await
}

async fn decisions_follow_the_admin_rules_and_are_audited_as_the_token(backend: Backend) {
    let app = app(backend).await;
    let (original, duplicate) =
        (submitted(&app, "Need a quote").await, submitted(&app, "Need a quote!").await);
    let pair = open_pair(&app, &original, &duplicate).await;
    let reader = token(&app, "read:submissions", None).await;
    let decider = token(&app, "read:submissions,write:decisions", None).await;
    let elsewhere = token(&app, "write:decisions", Some("callback")).await;

    let open = get_json(&app, &reader, "/api/v1/duplicates?status=open").await;
    assert_eq!(open["items"][0]["id"], pair.as_str());
    assert_eq!(open["items"][0]["reasons"], json!(["same email within 72 h"]));
    let before = app.audit_count().await;
    let refused = decide(&app, &reader, &pair, json!({"decision": "duplicate"})).await;
    assert_eq!(refused.status(), 403, "no write:decisions");
    assert_eq!(
        decide(&app, &elsewhere, &pair, json!({"decision": "duplicate"})).await.status(),
        403,
        "other form"
    );
    for bad in [json!({"decision": "maybe"}), json!({"note": "x"}), json!({"decision": "undo", "extra": 1})] {
        assert_eq!(decide(&app, &decider, &pair, bad.clone()).await.status(), 400, "{bad}");
    }
    assert_eq!(decide(&app, &decider, "no-such-pair", json!({"decision": "duplicate"})).await.status(), 404);
    assert_eq!(
        decide(&app, &decider, &pair, json!({"decision": "undo"})).await.status(),
        409,
        "nothing to undo"
    );
    assert_eq!(app.audit_count().await, before, "refusals are not audited");

    let resp = decide(&app, &decider, &pair, json!({"decision": "duplicate", "note": "same request"})).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["pair"]["status"], "duplicate");
    let cancelled = body["effects_changed"].as_u64().unwrap();
    assert!(cancelled >= 1, "the duplicate's pending effects cancelled: {body}");
    let detail = get_json(&app, &reader, &format!("/api/v1/submissions/{duplicate}")).await;
    assert_eq!(detail["duplicate_of"], original.as_str());
    assert!(detail["effects"].as_array().unwrap().iter().all(|e| e["state"] == "CANCELLED"), "{detail}");
    assert_eq!(detail["duplicates"][0]["status"], "duplicate");

    let again = decide(&app, &decider, &pair, json!({"decision": "not-duplicate"})).await;
    assert_eq!(again.status(), 409, "decided already: undo first");
    assert_eq!(crate::support::problem_type(&again.json().await.unwrap()), "decision-refused");
    let undone = decide(&app, &decider, &pair, json!({"decision": "undo"})).await;
    assert_eq!(undone.status(), 200);
    let undone: Value = undone.json().await.unwrap();
    assert_eq!(undone["pair"]["status"], "open");
    assert_eq!(undone["effects_changed"].as_u64(), Some(cancelled), "what the decision cancelled comes back");
    let detail = get_json(&app, &reader, &format!("/api/v1/submissions/{duplicate}")).await;
    assert!(detail["duplicate_of"].is_null());
    // Back to PENDING, held for a new decision (a confirmation the per-address cap
    // cancelled before the decision stays cancelled).
    let effects = detail["effects"].as_array().unwrap();
    let back: Vec<&Value> = effects.iter().filter(|e| e["state"] == "PENDING").collect();
    assert_eq!(back.len() as u64, cancelled, "{detail}");
    assert!(back.iter().all(|e| e["held"] == true), "{detail}");

    let rows: Vec<(String, String, String, Option<String>)> = app
        .query(|pool| {
            with_conn!(pool, |c| audit_log::table
                .filter(audit_log::target_type.eq("duplicate_pair"))
                .order(audit_log::at)
                .select((audit_log::action, audit_log::user_id, audit_log::user_email, audit_log::note))
                .load(c)
                .map_err(DbError::from))
        })
        .await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].0, "duplicate.duplicate_of");
    assert_eq!(rows[1].0, "duplicate.undo");
    assert!(rows.iter().all(|r| r.1.starts_with("token:") && r.2.starts_with("API token ")), "{rows:?}");
    assert_eq!(rows[0].3.as_deref(), Some("same request"));
}

async fn a_token_opens_no_admin_page_and_a_session_no_api(backend: Backend) {
    let app = app(backend).await;
    let all = token(&app, "read:submissions,read:effects,write:decisions", None).await;
    for path in ["/admin", "/admin/submissions", "/admin/api-tokens", "/admin/audit"] {
        let resp = get(&app, &all, path).await;
        assert_eq!(resp.status(), 303, "{path}");
        assert_eq!(resp.headers()["location"], "/admin/login");
    }
    let resp = app
        .client
        .post(app.url("/admin/api-tokens"))
        .bearer_auth(&all)
        .form(&[("name", "x")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 303, "no admin action either");
    let admin = app.sign_in(Role::Admin).await;
    let with_cookie =
        app.client.get(app.url("/api/v1/submissions")).header("Cookie", &admin.cookie).send().await.unwrap();
    assert_eq!(with_cookie.status(), 401, "a session cookie never opens /api/v1");
}

async fn last_used(app: &TestApp) -> Option<chrono::NaiveDateTime> {
    app.query(|pool| {
        with_conn!(pool, |c| api_tokens::table
            .select(api_tokens::last_used_at)
            .first::<Option<chrono::NaiveDateTime>>(c)
            .map_err(DbError::from))
    })
    .await
}

async fn every_use_is_recorded_and_last_use_shown(backend: Backend) {
    let app = app(backend).await;
    let id = submitted(&app, "Hello").await;
    let reader = token(&app, "read:submissions", None).await;
    assert_eq!(last_used(&app).await, None);
    get_json(&app, &reader, "/api/v1/submissions").await;
    get_json(&app, &reader, &format!("/api/v1/submissions/{id}")).await;
    assert_eq!(get(&app, &reader, "/api/v1/effects").await.status(), 403, "a refused scope is a use too");
    let used = last_used(&app).await.expect("last use shown");
    let uses: Vec<(String, String)> = app
        .query(|pool| {
            with_conn!(pool, |c| api_token_uses::table
                .order(api_token_uses::at)
                .select((api_token_uses::method, api_token_uses::route))
                .load(c)
                .map_err(DbError::from))
        })
        .await;
    assert_eq!(
        uses,
        [
            ("GET".to_string(), "/api/v1/submissions".to_string()),
            ("GET".into(), "/api/v1/submissions/{id}".into()),
            ("GET".into(), "/api/v1/effects".into()),
        ],
        "one row per request, the route template only"
    );
    get_json(&app, &reader, "/api/v1/submissions").await;
    assert_eq!(last_used(&app).await, Some(used), "last_used_at moves at most once a minute");
    let admin = app.sign_in(Role::Admin).await;
    let page = app.admin_get(Some(&admin), "/admin/api-tokens").await.text().await.unwrap();
    assert!(
        page.contains(&used.format("%Y-%m-%d %H:%M").to_string()) && page.contains("<td>4</td>"),
        "{page}"
    );
    // Unknown tokens leave no row (there is no token to charge them to).
    get(&app, &format!("ofk_{}", "B".repeat(43)), "/api/v1/submissions").await;
    assert_eq!(app.row_counts().await["api_token_uses"], 4);
}

/// Reads `/api/v1/changes` from `cursor` to its end, `limit` at a time, submitting a new
/// inquiry between reads; (each change's type and submission, the last cursor).
async fn follow(
    app: &TestApp,
    token: &str,
    mut cursor: Option<String>,
    limit: u32,
) -> (Vec<(String, String)>, String) {
    let mut seen = Vec::new();
    for read in 0.. {
        assert!(read < 50, "the feed ends");
        let path = match &cursor {
            Some(c) => format!("/api/v1/changes?limit={limit}&cursor={c}"),
            None => format!("/api/v1/changes?limit={limit}"),
        };
        let page = get_json(app, token, &path).await;
        let items = page["items"].as_array().unwrap().clone();
        let next = page["next_cursor"].as_str().unwrap().to_string();
        seen.extend(items.iter().map(|c| {
            (c["type"].as_str().unwrap().to_string(), c["submission_id"].as_str().unwrap().to_string())
        }));
        if items.is_empty() {
            return (seen, next);
        }
        cursor = Some(next);
    }
    unreachable!()
}

/// `follow` (two at a time) from `cursor` again until what it read satisfies `done`.
async fn follow_until(
    app: &TestApp,
    token: &str,
    cursor: Option<String>,
    done: impl Fn(&[(String, String)]) -> bool,
) -> (Vec<(String, String)>, String) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (seen, end) = follow(app, token, cursor.clone(), 2).await;
        if done(&seen) {
            return (seen, end);
        }
        assert!(std::time::Instant::now() < deadline, "never served: {seen:?}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

async fn the_change_feed_pages_from_a_stored_cursor_without_gap_or_repeat(backend: Backend) {
    let app = app(backend).await;
    let first = submitted(&app, "Before the consumer started").await;
    let reader = token(&app, "read:submissions,read:effects", None).await;
    let accepted = |id: &str| ("accepted".to_string(), id.to_string());
    // On PostgreSQL the feed serves a change once every older transaction of the server has
    // ended, other tests' included: wait until it is served.
    let (all, end) = follow_until(&app, &reader, None, |seen| seen.contains(&accepted(&first))).await;
    // Read one change at a time from the start: the same changes, in the same order, once.
    let (one_by_one, _) = follow(&app, &reader, None, 1).await;
    assert_eq!(one_by_one, all, "paging changes nothing");
    // A consumer that stored `end` reads exactly what came after it.
    let second = submitted(&app, "After the cursor was stored").await;
    let (after, _) =
        follow_until(&app, &reader, Some(end.clone()), |seen| seen.contains(&accepted(&second))).await;
    assert_eq!(after.iter().filter(|c| **c == accepted(&second)).count(), 1, "{after:?}");
    assert!(!after.contains(&accepted(&first)), "nothing from before the cursor again: {after:?}");
    // A token without read:effects reads no effect's state; an altered cursor is refused.
    let narrow = token(&app, "read:submissions", None).await;
    let (plain, _) = follow(&app, &narrow, None, 500).await;
    assert!(plain.iter().all(|(t, _)| t != "effect_state") && !plain.is_empty(), "{plain:?}");
    let mut altered = end.clone();
    let last = if altered.ends_with('A') { 'B' } else { 'A' };
    altered.pop();
    altered.push(last);
    let resp = get(&app, &reader, &format!("/api/v1/changes?cursor={altered}")).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(crate::support::problem_type(&resp.json().await.unwrap()), "invalid-parameter");
    let effects_only = token(&app, "read:effects", None).await;
    assert_eq!(get(&app, &effects_only, "/api/v1/changes").await.status(), 403);
}
