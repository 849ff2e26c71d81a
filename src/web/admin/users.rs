//! Accounts in the admin: the users list with "set password" and "disable" (admin role,
//! CSRF, audited; each ends every session of that user), and `/admin/password`, where a
//! user replaces their own password (required after signing in with the first-start one).

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::cookies::CookiePolicy;
use super::flash::Flash;
use super::guard::{AdminAction, AuthError, CsrfForm, SessionUser};
use super::{blocking, db_failure_in, done, Chrome, FlashQuery};
use crate::base::i18n::Locale;
use crate::base::secret::constant_time_eq;
use crate::services::accounts::changes::{self as account_changes, Actor, ChangeError, Changed, Target};
use crate::services::accounts::sessions::{self, UserRow};
use crate::services::accounts::{start_session, LoginThrottle};
use crate::services::storage::DbError;
use crate::web::http::TrustedProxies;
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/users", web::get().to(list))
        .route("/admin/users/{id}/password", web::post().to(set_password))
        .route("/admin/users/{id}/disable", web::post().to(disable))
        .route("/admin/password", web::get().to(own_form))
        .route("/admin/password", web::post().to(own_change))
        .route("/admin/language", web::post().to(language));
}

#[derive(Template)]
#[template(path = "admin/users.html")]
struct UsersPage {
    chrome: Chrome,
    users: Vec<UserRow>,
}

async fn list(state: web::Data<AppState>, user: SessionUser, q: web::Query<FlashQuery>) -> HttpResponse {
    if user.role != crate::services::accounts::Role::Admin {
        return actix_web::ResponseError::error_response(&AuthError::Forbidden.said_in(user.locale));
    }
    let pool = state.pool.clone();
    match blocking(move || sessions::users(&pool)).await {
        Ok(users) => html(
            StatusCode::OK,
            &UsersPage { chrome: Chrome::new(&user, "users", q.flash.as_deref()), users },
        ),
        Err(e) => db_failure_in(user.locale, e),
    }
}

#[derive(Deserialize)]
struct PasswordForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    password: String,
}

impl CsrfForm for PasswordForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

#[derive(Deserialize)]
struct PlainForm {
    #[serde(default)]
    csrf: String,
}

impl CsrfForm for PlainForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

fn actor(user: &SessionUser) -> Actor {
    Actor::Admin { id: user.id.clone(), email: user.email.clone() }
}

async fn set_password(
    state: web::Data<AppState>,
    id: web::Path<String>,
    action: AdminAction<PasswordForm>,
) -> HttpResponse {
    let AdminAction { user, form } = action;
    let (pool, locale) = (state.pool.clone(), user.locale);
    let changed = web::block(move || {
        account_changes::set_password(&pool, Target::Id(&id), &form.password, &actor(&user))
    })
    .await;
    after_change(changed, "user_password_set", locale)
}

async fn disable(
    state: web::Data<AppState>,
    id: web::Path<String>,
    action: AdminAction<PlainForm>,
) -> HttpResponse {
    let user = action.user;
    if *id == user.id {
        return super::refused(&user.locale.text("admin-user-cannot-disable-self"));
    }
    let (pool, locale) = (state.pool.clone(), user.locale);
    let changed =
        web::block(move || account_changes::disable_user(&pool, Target::Id(&id), &actor(&user))).await;
    after_change(changed, "user_disabled", locale)
}

fn after_change(
    changed: Result<Result<Changed, ChangeError>, actix_web::error::BlockingError>,
    code: &'static str,
    locale: Locale,
) -> HttpResponse {
    match changed {
        Ok(Ok(c)) => done("/admin/users", Flash::new(code).arg(c.sessions_ended)),
        Ok(Err(ChangeError::Invalid(msg))) => super::refused(&msg),
        Ok(Err(ChangeError::NoSuchUser(_))) => HttpResponse::NotFound().finish(),
        Ok(Err(ChangeError::Db(e))) => db_failure_in(locale, e),
        Err(_) => db_failure_in(locale, DbError::Unavailable("blocking pool".into())),
    }
}

#[derive(Template)]
#[template(path = "admin/password.html")]
struct OwnPasswordPage<'a> {
    chrome: Chrome,
    /// The language this user chose (`None`: `[admin] locale`).
    chosen: Option<Locale>,
    required: bool,
    error: Option<&'a str>,
}

fn own_page(
    user: &SessionUser,
    status: StatusCode,
    error: Option<&str>,
    flash: Option<&str>,
) -> HttpResponse {
    let page = OwnPasswordPage {
        chrome: Chrome::new(user, "password", flash),
        chosen: user.chosen_locale,
        required: user.must_change_password,
        error,
    };
    html(status, &page)
}

async fn own_form(user: SessionUser, q: web::Query<FlashQuery>) -> HttpResponse {
    own_page(&user, StatusCode::OK, None, q.flash.as_deref())
}

#[derive(Deserialize)]
struct LanguageForm {
    #[serde(default)]
    csrf: String,
    /// A shipped locale's tag, or empty for `[admin] locale`.
    #[serde(default)]
    locale: String,
}

/// The signed-in user (any role) chooses the admin pages' language for themselves.
async fn language(
    state: web::Data<AppState>,
    user: SessionUser,
    form: web::Form<LanguageForm>,
) -> Result<HttpResponse, actix_web::Error> {
    if !constant_time_eq(form.csrf.as_bytes(), user.csrf.as_bytes()) {
        return Err(AuthError::Csrf.said_in(user.locale).into());
    }
    let chosen = match form.locale.trim() {
        "" => None,
        tag => match Locale::parse(tag) {
            Some(l) => Some(l.tag()),
            None => return Ok(super::refused(&user.locale.text("admin-language-unknown"))),
        },
    };
    let pool = state.pool.clone();
    let id = user.id.clone();
    let set = move || sessions::set_locale(&pool, &id, chosen);
    Ok(match blocking(set).await {
        Ok(_) => done("/admin/password", Flash::new("language_saved")),
        Err(e) => db_failure_in(user.locale, e),
    })
}

#[derive(Deserialize)]
struct OwnPasswordForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    current: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    repeat: String,
}

/// Checks the current password (counted by the sign-in throttle), sets the new one, ends
/// every session of the user and starts a fresh one for this browser.
async fn own_change(
    state: web::Data<AppState>,
    throttle: web::Data<LoginThrottle>,
    proxies: web::Data<TrustedProxies>,
    req: HttpRequest,
    user: SessionUser,
    form: web::Form<OwnPasswordForm>,
) -> Result<HttpResponse, actix_web::Error> {
    let form = form.into_inner();
    if !constant_time_eq(form.csrf.as_bytes(), user.csrf.as_bytes()) {
        return Err(AuthError::Csrf.said_in(user.locale).into());
    }
    if form.password != form.repeat {
        return Ok(own_page(
            &user,
            StatusCode::UNPROCESSABLE_ENTITY,
            Some(&user.locale.text("admin-password-differ")),
            None,
        ));
    }
    if form.password == form.current {
        return Ok(own_page(
            &user,
            StatusCode::UNPROCESSABLE_ENTITY,
            Some(&user.locale.text("admin-password-reused")),
            None,
        ));
    }
    let attempt = match throttle.begin(proxies.client_of(&req), &user.email) {
        Ok(a) => a,
        Err(s) => {
            let seconds = [("seconds", crate::base::i18n::Arg::Num(s as i64))];
            let msg = user.locale.format("admin-password-throttled", &seconds);
            return Ok(own_page(&user, StatusCode::TOO_MANY_REQUESTS, Some(&msg), None));
        }
    };
    let Some(slot) = throttle.slot().await else {
        throttle.release(attempt);
        return Ok(own_page(
            &user,
            StatusCode::TOO_MANY_REQUESTS,
            Some(&user.locale.text("admin-password-busy")),
            None,
        ));
    };
    let (app, verifier, who) = (state.clone(), throttle.clone(), user.clone());
    let result = web::block(move || {
        let _slot = slot;
        let stored = sessions::user_by_email(&app.pool, &who.email)?;
        let stored = stored.ok_or(OwnPasswordError::NoAccount)?;
        if !verifier.verify(&form.current, &stored.password_hash) {
            return Err(OwnPasswordError::WrongCurrent);
        }
        match account_changes::set_password(&app.pool, Target::Id(&who.id), &form.password, &actor(&who)) {
            Ok(_) => Ok(start_session(&app.pool, &who.id)?),
            Err(ChangeError::Invalid(_)) => Err(OwnPasswordError::TooShort),
            Err(ChangeError::NoSuchUser(_)) => Err(OwnPasswordError::NoAccount),
            Err(ChangeError::Db(e)) => Err(e.into()),
        }
    })
    .await
    .map_err(|_| AuthError::Unavailable(user.locale))?;
    match result {
        Ok(token) => {
            throttle.succeeded(attempt);
            let policy = CookiePolicy::of(&state.config);
            let mut resp = done("/admin", Flash::new("password_changed"));
            let _ = resp.add_cookie(&policy.build(policy.session_name(), token));
            Ok(resp)
        }
        Err(OwnPasswordError::Db(e)) => Ok(super::db_failure_in(user.locale, e)),
        Err(refusal) => {
            let text = user.locale.text(match refusal {
                OwnPasswordError::NoAccount => "admin-password-no-account",
                OwnPasswordError::WrongCurrent => "admin-password-wrong-current",
                _ => "admin-password-too-short",
            });
            Ok(own_page(&user, StatusCode::UNPROCESSABLE_ENTITY, Some(&text), None))
        }
    }
}

/// Why a user's own password change did not happen.
#[derive(Debug, thiserror::Error)]
enum OwnPasswordError {
    #[error("Your account no longer exists.")]
    NoAccount,
    #[error("The current password is wrong.")]
    WrongCurrent,
    #[error("The new password needs at least 12 characters.")]
    TooShort,
    #[error(transparent)]
    Db(#[from] DbError),
}
