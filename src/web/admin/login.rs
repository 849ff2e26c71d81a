//! Signing in and out. The login form has its own CSRF token (a cookie and a hidden field).

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::cookies::CookiePolicy;
use super::guard::{AuthError, CsrfForm, SessionUser};
use super::oidc::{Oidc, OidcPage};
use crate::base::i18n::Locale;
use crate::base::secret::constant_time_eq;
use crate::services::accounts::{login, random_token, sessions, LoginThrottle};
use crate::web::http::TrustedProxies;
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/login", web::get().to(show))
        .route("/admin/login", web::post().to(submit))
        .route("/admin/logout", web::post().to(logout));
}

#[derive(Template)]
#[template(path = "admin/login.html")]
struct LoginPage<'a> {
    /// `[admin] locale` (nobody is signed in yet).
    locale: Locale,
    csrf: &'a str,
    /// The OIDC provider's label, when `[admin.oidc]` is configured.
    oidc: Option<&'a str>,
    email: &'a str,
    error: Option<&'a str>,
}

impl LoginPage<'_> {
    fn t(&self, key: &str) -> String {
        self.locale.text(key)
    }
}

#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
}

#[derive(Deserialize)]
struct LogoutForm {
    #[serde(default)]
    csrf: String,
}

impl CsrfForm for LogoutForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

fn page(state: &AppState, status: StatusCode, email: &str, error: Option<&str>) -> HttpResponse {
    let policy = CookiePolicy::of(&state.config);
    let csrf = random_token();
    let oidc = state.config.admin.oidc.as_ref().map(|o| o.label.as_str());
    let mut resp =
        html(status, &LoginPage { locale: state.config.admin.locale, csrf: &csrf, oidc, email, error });
    let _ = resp.add_cookie(&policy.build(policy.login_csrf_name(), csrf));
    resp
}

async fn show(state: web::Data<AppState>) -> HttpResponse {
    page(&state, StatusCode::OK, "", None)
}

/// 429 with `Retry-After` and the login form again.
fn wait(state: &AppState, email: &str, seconds: u64, msg: &str) -> HttpResponse {
    let mut resp = page(state, StatusCode::TOO_MANY_REQUESTS, email, Some(msg));
    resp.headers_mut().insert(actix_web::http::header::RETRY_AFTER, seconds.into());
    resp
}

async fn submit(
    state: web::Data<AppState>,
    throttle: web::Data<LoginThrottle>,
    proxies: web::Data<TrustedProxies>,
    req: HttpRequest,
    form: web::Form<LoginForm>,
) -> HttpResponse {
    let form = form.into_inner();
    let policy = CookiePolicy::of(&state.config);
    let expected = req.cookie(policy.login_csrf_name()).map(|c| c.value().to_string()).unwrap_or_default();
    if expected.is_empty() || !constant_time_eq(expected.as_bytes(), form.csrf.as_bytes()) {
        return page(
            &state,
            StatusCode::FORBIDDEN,
            &form.email,
            Some(&state.config.admin.locale.text("admin-login-expired")),
        );
    }
    let client = proxies.client_of(&req);
    let who = client.map(|c| c.to_string()).unwrap_or_default();
    // Counted before the password is checked: parallel guesses cannot all pass.
    let attempt = match throttle.begin(client, &form.email) {
        Ok(attempt) => attempt,
        Err(seconds) => {
            let email_digest = crate::services::accounts::throttle::short_digest(&form.email);
            tracing::warn!(client = %who, %email_digest, retry_after = seconds, "admin sign-in delayed");
            let seconds_arg = [("seconds", crate::base::i18n::Arg::Num(seconds as i64))];
            let msg = state.config.admin.locale.format("admin-login-throttled", &seconds_arg);
            return wait(&state, &form.email, seconds, &msg);
        }
    };
    let Some(slot) = throttle.slot().await else {
        throttle.release(attempt);
        tracing::warn!(client = %who, "admin sign-in refused: every verification slot busy");
        return wait(&state, &form.email, 1, &state.config.admin.locale.text("admin-login-busy"));
    };
    let (email, password, pool, verifier) =
        (form.email.clone(), form.password, state.pool.clone(), throttle.clone());
    let checked = web::block(move || {
        let _slot = slot;
        login(&pool, &verifier, &email, &password)
    })
    .await;
    let email_digest = attempt.email_digest.clone();
    match checked {
        Ok(Ok(Some((token, _user)))) => {
            throttle.succeeded(attempt);
            tracing::info!(client = %who, %email_digest, "admin sign-in succeeded");
            let mut resp = HttpResponse::SeeOther().insert_header(("Location", "/admin")).finish();
            let _ = resp.add_cookie(&policy.build(policy.session_name(), token));
            resp
        }
        Ok(Ok(None)) => {
            tracing::warn!(client = %who, %email_digest, "admin sign-in failed");
            let wrong = state.config.admin.locale.text("admin-login-wrong");
            page(&state, StatusCode::UNAUTHORIZED, &form.email, Some(&wrong))
        }
        _ => {
            throttle.release(attempt);
            let down = state.config.admin.locale.text("admin-login-db");
            page(&state, StatusCode::SERVICE_UNAVAILABLE, &form.email, Some(&down))
        }
    }
}

/// Ends the session; an OIDC user then goes on to the provider's `end_session_endpoint`
/// (RP-initiated logout) when it has one, through a page (a redirect answering a form would
/// leave this site, which the CSP's `form-action 'self'` forbids).
async fn logout(
    state: web::Data<AppState>,
    oidc: web::Data<Oidc>,
    user: SessionUser,
    form: web::Form<LogoutForm>,
) -> Result<HttpResponse, AuthError> {
    if !constant_time_eq(form.csrf().as_bytes(), user.csrf.as_bytes()) {
        return Err(AuthError::Csrf);
    }
    let pool = state.pool.clone();
    let (hash, id) = (user.token_hash.clone(), user.id.clone());
    let via_oidc = web::block(move || sessions::end(&pool, &hash, &id)).await;
    let provider = match (&oidc.0, via_oidc) {
        (Some(signin), Ok(Ok(true))) => signin.end_session_url().await,
        _ => None,
    };
    let mut resp = match &provider {
        Some(url) => html(
            StatusCode::OK,
            &OidcPage {
                locale: user.locale,
                title: user.locale.text("admin-signed-out-title"),
                message: user.locale.text("admin-signed-out"),
                alert: false,
                next: Some(url),
                link: user.locale.text("admin-signed-out-provider"),
            },
        ),
        None => HttpResponse::SeeOther().insert_header(("Location", "/admin/login")).finish(),
    };
    let policy = CookiePolicy::of(&state.config);
    let _ = resp.add_cookie(&policy.removal(policy.session_name()));
    Ok(resp)
}
