//! Sessions with a lifecycle: the idle timeout, and setting a password or disabling a user
//! (admin page and command line), each of which ends every session of that user; the first
//! sign-in with the generated password must choose a new one.

use std::process::Command;

use chrono::{Duration, Utc};
use diesel::prelude::*;
use onceform::db::schema::{sessions, users};
use onceform::db::DbError;
use onceform::services::accounts::Role;
use onceform::with_conn;

use crate::on_both_backends;
use crate::support::admin::{assert_guarded, csrf_of, AdminSession};
use crate::support::{spawn_app, Backend, TestApp};

const PASSWORD: &str = "a long enough password";

fn cookie_named(resp: &reqwest::Response, name: &str) -> Option<String> {
    resp.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")) && !v.starts_with(&format!("{name}=;")))
        .map(|v| v.split(';').next().unwrap().to_string())
}

/// Signs in as `email`; the response of the login POST.
async fn post_login(app: &TestApp, email: &str, password: &str) -> reqwest::Response {
    let form = app.client.get(app.url("/admin/login")).send().await.unwrap();
    let login_cookie = cookie_named(&form, "onceform_login_csrf").unwrap();
    let csrf = csrf_of(&form.text().await.unwrap());
    app.client
        .post(app.url("/admin/login"))
        .header("Cookie", login_cookie)
        .form(&[("csrf", csrf.as_str()), ("email", email), ("password", password)])
        .send()
        .await
        .unwrap()
}

async fn session_of(app: &TestApp, email: &str, password: &str) -> AdminSession {
    let resp = post_login(app, email, password).await;
    assert_eq!(resp.status(), 303, "sign-in of {email}");
    let cookie = cookie_named(&resp, "onceform_session").unwrap();
    let page = app.client.get(app.url("/admin/password")).header("Cookie", &cookie).send().await.unwrap();
    let csrf = csrf_of(&page.text().await.unwrap());
    AdminSession { cookie, csrf }
}

/// The status of `GET /admin` with `session`: 200 while it lives, 303 to sign in after.
async fn dashboard(app: &TestApp, session: &AdminSession) -> u16 {
    app.admin_get(Some(session), "/admin").await.status().as_u16()
}

async fn user_id(app: &TestApp, email: &str) -> String {
    let email = email.to_string();
    app.query(move |pool| {
        with_conn!(pool, |c| users::table
            .filter(users::email.eq(&email))
            .select(users::id)
            .first::<String>(c)
            .map_err(DbError::from))
    })
    .await
}

async fn sessions_of(app: &TestApp, id: &str) -> i64 {
    let id = id.to_string();
    app.query(move |pool| {
        with_conn!(pool, |c| sessions::table
            .filter(sessions::user_id.eq(&id))
            .count()
            .get_result::<i64>(c)
            .map_err(DbError::from))
    })
    .await
}

/// Pretends every session was last used `minutes` ago.
async fn last_used(app: &TestApp, minutes: i64) {
    let at = Utc::now().naive_utc() - Duration::minutes(minutes);
    app.query(move |pool| {
        with_conn!(pool, |c| diesel::update(sessions::table)
            .set(sessions::last_seen_at.eq(at))
            .execute(c)
            .map_err(DbError::from))
    })
    .await;
}

async fn an_idle_session_ends_after_thirty_minutes_and_use_slides_it(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.sign_in(Role::Viewer).await;
    assert_eq!(dashboard(&app, &session).await, 200);
    last_used(&app, 29).await;
    assert_eq!(dashboard(&app, &session).await, 200, "29 minutes idle: still signed in");
    let seen = app
        .query(|pool| {
            with_conn!(pool, |c| sessions::table
                .select(sessions::last_seen_at)
                .first::<Option<chrono::NaiveDateTime>>(c)
                .map_err(DbError::from))
        })
        .await
        .unwrap();
    assert!(Utc::now().naive_utc() - seen < Duration::minutes(1), "the use slid the idle timeout: {seen}");
    last_used(&app, 31).await;
    let idle = app.admin_get(Some(&session), "/admin").await;
    assert_eq!(idle.status(), 303, "31 minutes idle: signed out");
    assert_eq!(idle.headers()["location"], "/admin/login");
    // The sweep removes it.
    let swept = app.query(onceform::services::accounts::changes::sweep).await;
    assert_eq!(swept, 1);
}

async fn an_admin_setting_a_password_ends_every_session_of_that_user(backend: Backend) {
    let app = spawn_app(backend).await;
    let (admin, viewer) = (app.sign_in(Role::Admin).await, app.sign_in(Role::Viewer).await);
    app.create_user("bea@example.com", Role::Admin).await;
    let (laptop, phone) = (
        session_of(&app, "bea@example.com", PASSWORD).await,
        session_of(&app, "bea@example.com", PASSWORD).await,
    );
    assert_eq!((dashboard(&app, &laptop).await, dashboard(&app, &phone).await), (200, 200));
    let id = user_id(&app, "bea@example.com").await;
    let page = app.admin_get(Some(&admin), "/admin/users").await;
    assert!(page.text().await.unwrap().contains("bea@example.com"));
    assert_eq!(app.admin_get(Some(&viewer), "/admin/users").await.status(), 403, "admins only");

    let path = format!("/admin/users/{id}/password");
    let short = app.admin_post(Some(&admin), &path, Some(&admin.csrf), &[("password", "short")]).await;
    assert_eq!(short.status(), 409, "a short password is refused");
    assert_eq!(dashboard(&app, &laptop).await, 200, "and changes nothing");
    assert_guarded(&app, &admin, &viewer, &path, &[("password", "bea's new long password")]).await;
    assert_eq!((dashboard(&app, &laptop).await, dashboard(&app, &phone).await), (303, 303));
    assert_eq!(sessions_of(&app, &id).await, 0);
    assert_eq!(post_login(&app, "bea@example.com", PASSWORD).await.status(), 401, "the old password");
    assert_eq!(post_login(&app, "bea@example.com", "bea's new long password").await.status(), 303);
    assert_eq!(dashboard(&app, &admin).await, 200, "other users' sessions live on");
}

async fn an_admin_disabling_a_user_ends_their_sessions_and_sign_ins(backend: Backend) {
    let app = spawn_app(backend).await;
    let (admin, viewer) = (app.sign_in(Role::Admin).await, app.sign_in(Role::Viewer).await);
    app.create_user("cy@example.com", Role::Admin).await;
    let cy = session_of(&app, "cy@example.com", PASSWORD).await;
    let id = user_id(&app, "cy@example.com").await;
    assert_guarded(&app, &admin, &viewer, &format!("/admin/users/{id}/disable"), &[]).await;
    assert_eq!(dashboard(&app, &cy).await, 303);
    assert_eq!(sessions_of(&app, &id).await, 0);
    assert_eq!(post_login(&app, "cy@example.com", PASSWORD).await.status(), 401, "no sign-in once disabled");
    let audit = app.admin_get(Some(&admin), "/admin/audit").await.text().await.unwrap();
    assert!(audit.contains("disable_user"), "audited");
}

fn onceform(app: &TestApp, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_onceform"))
        .args(args)
        .env("ONCEFORM_DATABASE_URL", app.config.database.url.to_string())
        .env("NEW_PW", "set from the command line")
        .env("RUST_LOG", "warn")
        .current_dir({
            let dir = std::env::temp_dir().join(format!("onceform-cli-{}", uuid::Uuid::new_v4().simple()));
            std::fs::create_dir_all(&dir).unwrap();
            dir
        })
        .output()
        .unwrap()
}

async fn the_command_line_sets_passwords_and_disables_users_ending_their_sessions(backend: Backend) {
    let app = spawn_app(backend).await;
    app.create_user("dee@example.com", Role::Admin).await;
    let dee = session_of(&app, "dee@example.com", PASSWORD).await;
    let out =
        onceform(&app, &["admin", "set-password", "--email", " Dee@Example.com", "--password-env", "NEW_PW"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 session(s) ended"));
    assert_eq!(dashboard(&app, &dee).await, 303, "the session ended");
    assert_eq!(post_login(&app, "dee@example.com", PASSWORD).await.status(), 401);
    let again = session_of(&app, "dee@example.com", "set from the command line").await;

    let out = onceform(&app, &["admin", "disable-user", "--email", "dee@example.com"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(dashboard(&app, &again).await, 303);
    assert_eq!(post_login(&app, "dee@example.com", "set from the command line").await.status(), 401);

    let unknown = onceform(&app, &["admin", "disable-user", "--email", "nobody@example.com"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no user nobody@example.com"));
    assert_eq!(
        onceform(&app, &["admin", "disable-user", "--email", "x@y.z", "--role", "viewer"]).status.code(),
        Some(2)
    );
    assert_eq!(app.audit_count().await, 2, "both changes audited");
}

async fn the_first_sign_in_with_the_generated_password_must_choose_a_new_one(backend: Backend) {
    let app = spawn_app(backend).await;
    let dir = std::env::temp_dir().join(format!("onceform-first-{}", uuid::Uuid::new_v4().simple()));
    let file = dir.join("initial-admin-password");
    let (pool, f) = (app.pool.clone(), file.clone());
    tokio::task::spawn_blocking(move || onceform::services::accounts::bootstrap(&pool, &f).unwrap().unwrap())
        .await
        .unwrap();
    let generated = std::fs::read_to_string(&file).unwrap().lines().nth(1).unwrap().to_string();
    let _ = std::fs::remove_dir_all(&dir);
    let first = session_of(&app, "admin@localhost", &generated).await;
    for page in ["/admin", "/admin/effects", "/admin/users"] {
        let resp = app.admin_get(Some(&first), page).await;
        assert_eq!(resp.status(), 303, "{page}");
        assert_eq!(resp.headers()["location"], "/admin/password", "{page}");
    }
    let cancel = app.admin_post(Some(&first), "/admin/effects/x/cancel", Some(&first.csrf), &[]).await;
    assert_eq!(cancel.status(), 303, "no action either");
    assert_eq!(cancel.headers()["location"], "/admin/password");
    let form =
        |current: &'static str, new: &'static str| [("current", current), ("password", new), ("repeat", new)];
    let wrong = app
        .admin_post(
            Some(&first),
            "/admin/password",
            Some(&first.csrf),
            &form("not it at all", "mine, and long enough"),
        )
        .await;
    assert_eq!(wrong.status(), 422);
    let generated: &'static str = Box::leak(generated.into_boxed_str());
    let changed = app
        .admin_post(
            Some(&first),
            "/admin/password",
            Some(&first.csrf),
            &form(generated, "mine, and long enough"),
        )
        .await;
    assert_eq!(changed.status(), 303);
    let fresh = cookie_named(&changed, "onceform_session").expect("a fresh session");
    assert_eq!(dashboard(&app, &first).await, 303, "the old session ended");
    let fresh = AdminSession { cookie: fresh, csrf: String::new() };
    assert_eq!(dashboard(&app, &fresh).await, 200, "the new one reaches every page");
    assert_eq!(post_login(&app, "admin@localhost", generated).await.status(), 401);
}

on_both_backends!(
    an_idle_session_ends_after_thirty_minutes_and_use_slides_it,
    an_admin_setting_a_password_ends_every_session_of_that_user,
    an_admin_disabling_a_user_ends_their_sessions_and_sign_ins,
    the_command_line_sets_passwords_and_disables_users_ending_their_sessions,
    the_first_sign_in_with_the_generated_password_must_choose_a_new_one,
);
