//! Sign-in with an OpenID provider (`[admin.oidc]`) against a real one on loopback: npm's
//! `oidc-provider` (OpenID-certified), its login form filled as a person would. An admin and
//! a viewer from the provider sign in (the viewer cannot act), a user the role claim does not
//! map is refused with no session, local passwords keep working; a tampered ID token, one for
//! another audience, an expired one, a replayed `state` and a key the provider retired are
//! refused, and a rotated key is downloaded once. Signing out goes on to the provider
//! (RP-initiated logout).

use diesel::prelude::*;
use onceform::db::schema::{audit_log, sessions, users};
use onceform::db::DbError;
use onceform::services::accounts::Role;
use onceform::with_conn;

use crate::on_both_backends;
use crate::support::admin::csrf_of;
use crate::support::oidc::{free_public_url, Browser, OidcProvider, CLIENT_ID, LABEL};
use crate::support::{spawn_app_with, Backend, TestApp};

on_both_backends!(
    admins_and_viewers_sign_in_through_the_provider_and_an_unmapped_user_is_refused,
    tampered_and_misaddressed_tokens_and_replayed_states_are_refused,
    a_rotated_key_is_downloaded_once_and_a_retired_one_is_refused,
);

async fn app_with(backend: Backend, key: &str) -> (TestApp, OidcProvider, String) {
    let public = free_public_url();
    let provider = OidcProvider::start(&public, key);
    let app = spawn_app_with(backend, |c| provider.apply(c, &public)).await;
    (app, provider, public)
}

async fn count(app: &TestApp, table: &'static str) -> i64 {
    app.query(move |pool| {
        with_conn!(pool, |c| match table {
            "users" => users::table.count().get_result(c),
            "sessions" => sessions::table.count().get_result(c),
            _ => audit_log::table.count().get_result(c),
        }
        .map_err(DbError::from))
    })
    .await
}

/// The role of the user with `email`.
async fn role_of(app: &TestApp, email: &str) -> String {
    let email = email.to_string();
    app.query(move |pool| {
        with_conn!(pool, |c| users::table
            .filter(users::email.eq(&email))
            .select(users::role)
            .first::<String>(c)
            .map_err(DbError::from))
    })
    .await
}

/// A signed-in page: `GET /admin` answers 200 (303 to the login page without a session).
async fn dashboard(browser: &Browser, public: &str) -> u16 {
    browser.get(&format!("{public}/admin")).await.status
}

async fn admins_and_viewers_sign_in_through_the_provider_and_an_unmapped_user_is_refused(backend: Backend) {
    let (app, provider, public) = app_with(backend, "k1").await;
    let login = app.client.get(app.url("/admin/login")).send().await.unwrap().text().await.unwrap();
    assert!(login.contains(&format!(r#"href="/admin/oidc/start">Sign in with {LABEL}</a>"#)), "{login}");

    // The provider's admin: the callback's page goes on to /admin, which then answers.
    let admin = Browser::default();
    let start = admin.get(&format!("{public}/admin/oidc/start")).await;
    let to = url::Url::parse(start.location.as_deref().unwrap()).unwrap();
    let q: std::collections::HashMap<_, _> = to.query_pairs().into_owned().collect();
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["client_id"], CLIENT_ID);
    assert_eq!(q["redirect_uri"], format!("{public}/admin/oidc/callback"));
    assert!(q["state"].len() >= 32 && q["nonce"].len() >= 32 && q["state"] != q["nonce"]);
    let done = admin.sign_in(&public, "admin-ada").await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(done.body.contains(r#"http-equiv="refresh" content="0; url=/admin""#), "{}", done.body);
    assert_eq!(dashboard(&admin, &public).await, 200);
    assert_eq!(role_of(&app, "admin-ada@example.com").await, "admin");
    let session = admin.session(&public).await;

    // A CSRF-checked, audited action works for it, and not without the token.
    app.create_user("temp@example.com", Role::Viewer).await;
    let id: String = app
        .query(|pool| {
            with_conn!(pool, |c| users::table
                .filter(users::email.eq("temp@example.com"))
                .select(users::id)
                .first(c)
                .map_err(DbError::from))
        })
        .await;
    let path = format!("/admin/users/{id}/disable");
    assert_eq!(app.admin_post(Some(&session), &path, None, &[]).await.status(), 403, "no CSRF token");
    let audited = count(&app, "audit_log").await;
    assert_eq!(app.admin_post(Some(&session), &path, Some(&session.csrf), &[]).await.status(), 303);
    assert_eq!(count(&app, "audit_log").await, audited + 1);

    // Signing in again is the same user, not a new one.
    let users_before = count(&app, "users").await;
    let again = Browser::default();
    assert_eq!(again.sign_in(&public, "admin-ada").await.status, 200);
    assert_eq!(count(&app, "users").await, users_before);

    // The provider's viewer reads and cannot act.
    let viewer = Browser::default();
    assert_eq!(viewer.sign_in(&public, "viewer-vic").await.status, 200);
    assert_eq!(dashboard(&viewer, &public).await, 200);
    assert_eq!(role_of(&app, "viewer-vic@example.com").await, "viewer");
    let vs = viewer.session(&public).await;
    assert_eq!(
        app.admin_post(Some(&vs), &path, Some(&vs.csrf), &[]).await.status(),
        403,
        "a viewer cannot act"
    );

    // A user of the provider with no role here: a page saying so, no session, no account.
    let (users_before, sessions_before) = (count(&app, "users").await, count(&app, "sessions").await);
    let nobody = Browser::default();
    let refused = nobody.sign_in(&public, "nobody").await;
    assert_eq!(refused.status, 403);
    assert!(refused.body.contains("no role in this"), "{}", refused.body);
    assert!(refused.body.contains(r#"<link rel="stylesheet" href="/static/admin.css">"#));
    assert!(refused.set_cookies.get("onceform_session").is_none_or(|v| v.is_empty()));
    assert_eq!(dashboard(&nobody, &public).await, 303);
    assert_eq!((count(&app, "users").await, count(&app, "sessions").await), (users_before, sessions_before));

    // Local accounts keep working beside it (break-glass).
    let local = app.sign_in(Role::Admin).await;
    assert_eq!(app.admin_get(Some(&local), "/admin").await.status(), 200);
    let out = app.admin_post(Some(&local), "/admin/logout", Some(&local.csrf), &[]).await;
    assert_eq!((out.status().as_u16(), out.headers()["location"].to_str().unwrap()), (303, "/admin/login"));

    // Signing out ends the session here, then goes on to the provider's end_session_endpoint,
    // which takes the client and the registered post-logout URI.
    let out = admin.post(&format!("{public}/admin/logout"), &[("csrf".into(), session.csrf.clone())]).await;
    assert_eq!(out.status, 200, "{}", out.body);
    let start = out.body.find("url=").unwrap() + 4;
    let end_session = out.body[start..].split('"').next().unwrap().replace("&amp;", "&");
    assert!(end_session.starts_with(&format!("{}/session/end?", provider.issuer)), "{end_session}");
    assert_eq!(dashboard(&admin, &public).await, 303, "the session is over");
    let confirm = admin.get(&end_session).await;
    assert_eq!(confirm.status, 200, "the provider accepts the logout request: {}", confirm.body);
    assert!(!confirm.body.contains("error"), "{}", confirm.body);
}

async fn tampered_and_misaddressed_tokens_and_replayed_states_are_refused(backend: Backend) {
    let (app, provider, public) = app_with(backend, "k1").await;
    let sessions_before = count(&app, "sessions").await;

    // One signature byte flipped.
    provider.next_token("tamper", None).await;
    let b = Browser::default();
    let page = b.sign_in(&public, "admin-ada").await;
    assert_eq!(page.status, 401, "{}", page.body);
    assert!(page.body.contains("could not be verified"), "{}", page.body);
    assert_eq!(dashboard(&b, &public).await, 303);

    // Validly signed by the provider's key, but for another client.
    provider.next_token("audience", None).await;
    let b = Browser::default();
    assert_eq!(b.sign_in(&public, "admin-ada").await.status, 401);
    assert_eq!(dashboard(&b, &public).await, 303);
    // Validly signed, but expired an hour ago (past the leeway).
    provider.next_token("expired", None).await;
    let b = Browser::default();
    assert_eq!(b.sign_in(&public, "admin-ada").await.status, 401);
    assert_eq!(count(&app, "sessions").await, sessions_before, "no session for a refused token");

    // An honest answer signs in once; its state replayed is refused.
    let b = Browser::default();
    let callback = b.authorize(&public, "admin-ada").await;
    assert_eq!(b.get(&callback).await.status, 200);
    let replayed = Browser::default();
    let page = replayed.get(&callback).await;
    assert_eq!(page.status, 400);
    assert!(page.body.contains("used already"), "{}", page.body);
    // … even by the browser that began it (the attempt cookie is gone; here it is put back).
    let b2 = Browser::default();
    let callback = b2.authorize(&public, "admin-ada").await;
    let attempt = b2.cookie(&public, "onceform_oidc").unwrap();
    assert_eq!(b2.get(&callback).await.status, 200);
    let resp =
        app.client.get(&callback).header("Cookie", format!("onceform_oidc={attempt}")).send().await.unwrap();
    assert_eq!(resp.status(), 400);

    // A return to another browser than the one that began (login CSRF) is refused, and the
    // attempt is spent.
    let victim = Browser::default();
    let b = Browser::default();
    let callback = b.authorize(&public, "admin-mallory").await;
    let page = victim.get(&callback).await;
    assert_eq!(page.status, 400);
    assert!(page.body.contains("another browser"), "{}", page.body);
    assert_eq!(b.get(&callback).await.status, 400);
}

async fn a_rotated_key_is_downloaded_once_and_a_retired_one_is_refused(backend: Backend) {
    let (_app, mut provider, public) = app_with(backend, "k1").await;
    let b = Browser::default();
    assert_eq!(b.sign_in(&public, "admin-ada").await.status, 200);
    assert_eq!(provider.jwks_downloads().await, 1);
    let b = Browser::default();
    assert_eq!(b.sign_in(&public, "admin-ada").await.status, 200);
    assert_eq!(provider.jwks_downloads().await, 1, "the keys are cached");

    // The provider restarts with a new key: its kid is unknown, so the JWKS is downloaded
    // once more, and the sign-in succeeds.
    provider.restart_with_key("k2");
    let b = Browser::default();
    let page = b.sign_in(&public, "admin-ada").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(provider.jwks_downloads().await, 1, "one download for the new kid");

    // A token signed with the retired key: one more download finds it absent, and it is refused.
    provider.next_token("retired", Some("k1")).await;
    let b = Browser::default();
    let page = b.sign_in(&public, "admin-ada").await;
    assert_eq!(page.status, 401, "{}", page.body);
    assert_eq!(dashboard(&b, &public).await, 303);
    assert_eq!(provider.jwks_downloads().await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_oidc_the_login_page_offers_passwords_only() {
    let app = crate::support::spawn_app(Backend::Sqlite).await;
    let login = app.client.get(app.url("/admin/login")).send().await.unwrap().text().await.unwrap();
    assert!(!login.contains("/admin/oidc/start"));
    assert!(!csrf_of(&login).is_empty());
    assert_eq!(app.client.get(app.url("/admin/oidc/start")).send().await.unwrap().status(), 404);
    assert_eq!(
        app.client.get(app.url("/admin/oidc/callback?state=x&code=y")).send().await.unwrap().status(),
        404
    );
}
