//! Sign-in with the OpenID provider of `[admin.oidc]`: `/admin/oidc/start` begins an attempt
//! (kept server-side, found by its `state`, tied to this browser by a short-lived cookie) and
//! sends the browser to the provider; `/admin/oidc/callback` takes the attempt (once: a
//! replayed `state` finds nothing), has the code exchanged and the ID token verified
//! (`services::oidc`), and signs the user in with the role the claim gives, or shows why not.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::cookies::CookiePolicy;
use super::{blocking, db_failure_in};
use crate::base::clock::now;
use crate::base::i18n::{Arg, Locale};
use crate::base::secret::constant_time_eq;
use crate::domain::digest;
use crate::services::accounts::oidc_users::{
    sign_in, store_attempt, take_attempt, OidcAttempt, OidcSignedIn, ATTEMPT_SECONDS,
};
use crate::services::accounts::random_token;
use crate::services::oidc::{OidcError, OidcSignIn};
use crate::web::render::html;
use crate::web::state::AppState;

/// The configured provider's sign-in, if there is one (`web::Data` of the app).
pub struct Oidc(pub Option<OidcSignIn>);

impl Oidc {
    /// `[admin.oidc]` with `[server] public_url` (the configuration's rules require both);
    /// the client secret is read from `secrets`.
    pub fn of(config: &crate::config::Config, secrets: &crate::config::Secrets) -> anyhow::Result<Oidc> {
        let (Some(oidc), Some(public)) = (&config.admin.oidc, &config.server.public_url) else {
            return Ok(Oidc(None));
        };
        let signin =
            OidcSignIn::new(oidc.clone(), public, secrets).map_err(|e| anyhow::anyhow!("admin.oidc: {e}"))?;
        if !signin.has_secret() {
            tracing::warn!(variable = %oidc.client_secret_env, "admin.oidc: the client secret variable is not set");
        }
        Ok(Oidc(Some(signin)))
    }
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/oidc/start", web::get().to(start))
        .route("/admin/oidc/callback", web::get().to(callback));
}

#[derive(Template)]
#[template(path = "admin/oidc_page.html")]
pub struct OidcPage<'a> {
    pub locale: Locale,
    pub title: String,
    pub message: String,
    pub alert: bool,
    /// Where the page goes on by itself (a `refresh`), else back to the login page.
    pub next: Option<&'a str>,
    pub link: String,
}

/// A page saying why the sign-in did not happen (the text `key` with `args`), with the way
/// back to the login page, in `[admin] locale` (nobody is signed in).
fn refused(state: &AppState, status: StatusCode, key: &str, args: &[(&str, Arg<'_>)]) -> HttpResponse {
    let locale = state.config.admin.locale;
    let page = OidcPage {
        locale,
        title: locale.text("admin-oidc-not-signed-in"),
        message: locale.format(key, args),
        alert: true,
        next: None,
        link: locale.text("admin-oidc-back"),
    };
    html(status, &page)
}

async fn start(state: web::Data<AppState>, oidc: web::Data<Oidc>) -> HttpResponse {
    let Some(signin) = &oidc.0 else { return HttpResponse::NotFound().finish() };
    let attempt = match signin.begin().await {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(error = %e, "admin oidc sign-in: cannot begin");
            return refused(&state, StatusCode::BAD_GATEWAY, "admin-oidc-unreachable", &[]);
        }
    };
    let browser = random_token();
    let row = OidcAttempt {
        state_hash: digest(&attempt.state),
        browser_hash: digest(&browser),
        nonce: attempt.nonce,
        code_verifier: attempt.code_verifier,
        created_at: now(),
    };
    let pool = state.pool.clone();
    let stored = blocking(move || store_attempt(&pool, &row)).await;
    match stored {
        Ok(true) => {
            let policy = CookiePolicy::of(&state.config);
            let mut resp =
                HttpResponse::SeeOther().insert_header(("Location", attempt.authorization_url)).finish();
            let _ = resp.add_cookie(&policy.oidc_attempt(browser, ATTEMPT_SECONDS));
            resp
        }
        Ok(false) => {
            tracing::warn!("admin oidc sign-in: too many attempts pending");
            refused(&state, StatusCode::SERVICE_UNAVAILABLE, "admin-oidc-busy", &[])
        }
        Err(e) => db_failure_in(state.config.admin.locale, e),
    }
}

#[derive(Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    iss: Option<String>,
}

async fn callback(
    state: web::Data<AppState>,
    oidc: web::Data<Oidc>,
    req: HttpRequest,
    query: web::Query<CallbackQuery>,
) -> HttpResponse {
    let Some(signin) = &oidc.0 else { return HttpResponse::NotFound().finish() };
    let policy = CookiePolicy::of(&state.config);
    let mut resp = returned(&state, signin, &req, query.into_inner()).await;
    let _ = resp.add_cookie(&policy.removal(policy.oidc_name()));
    resp
}

/// The browser back from the provider: the attempt taken, checked, and turned into a session.
async fn returned(
    state: &AppState,
    signin: &OidcSignIn,
    req: &HttpRequest,
    q: CallbackQuery,
) -> HttpResponse {
    let Some(st) = q.state.filter(|s| !s.is_empty()) else {
        return refused(state, StatusCode::BAD_REQUEST, "admin-oidc-no-state", &[]);
    };
    let pool = state.pool.clone();
    let hash = digest(&st);
    let taken = blocking(move || take_attempt(&pool, &hash)).await;
    let attempt = match taken {
        Ok(Some(a)) => a,
        Ok(None) => {
            tracing::warn!("admin oidc sign-in refused: unknown or used state");
            return refused(state, StatusCode::BAD_REQUEST, "admin-oidc-used", &[]);
        }
        Err(e) => return db_failure_in(state.config.admin.locale, e),
    };
    let policy = CookiePolicy::of(&state.config);
    let browser = req.cookie(policy.oidc_name()).map(|c| digest(c.value())).unwrap_or_default();
    if !constant_time_eq(browser.as_bytes(), attempt.browser_hash.as_bytes()) {
        tracing::warn!("admin oidc sign-in refused: begun in another browser");
        return refused(state, StatusCode::BAD_REQUEST, "admin-oidc-other-browser", &[]);
    }
    if (now() - attempt.created_at).num_seconds() > ATTEMPT_SECONDS {
        return refused(state, StatusCode::BAD_REQUEST, "admin-oidc-expired", &[]);
    }
    let label = &signin.config.label;
    if let Some(error) = q.error {
        let error: String =
            error.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(64).collect();
        tracing::info!(%error, "admin oidc sign-in: the provider answered an error");
        let args = [("name", Arg::Str(label)), ("value", Arg::Str(&error))];
        return refused(state, StatusCode::UNAUTHORIZED, "admin-oidc-provider-error", &args);
    }
    // RFC 9207: a provider that names itself must be the configured one (mix-up defence).
    if q.iss.as_ref().is_some_and(|iss| *iss != signin.config.issuer) {
        tracing::warn!("admin oidc sign-in refused: the answer names another issuer");
        return refused(state, StatusCode::BAD_REQUEST, "admin-oidc-other-issuer", &[]);
    }
    let Some(code) = q.code.filter(|c| !c.is_empty()) else {
        return refused(state, StatusCode::BAD_REQUEST, "admin-oidc-no-code", &[]);
    };
    let identity = match signin.finish(&code, &attempt.code_verifier, &attempt.nonce).await {
        Ok(identity) => identity,
        Err(e) => {
            let status = match e {
                OidcError::IdToken(_) => StatusCode::UNAUTHORIZED,
                OidcError::NoSecret(_) => StatusCode::SERVICE_UNAVAILABLE,
                OidcError::Unreachable(_) | OidcError::Provider(_) => StatusCode::BAD_GATEWAY,
            };
            tracing::warn!(error = %e, "admin oidc sign-in refused");
            return refused(state, status, "admin-oidc-unverified", &[("name", Arg::Str(label))]);
        }
    };
    let Some(role) = identity.role else {
        let subject_digest = crate::services::accounts::throttle::short_digest(&identity.subject);
        tracing::warn!(%subject_digest, "admin oidc sign-in refused: no role in the role claim");
        let args = [("name", Arg::Str(label)), ("who", Arg::Str(&identity.display))];
        return refused(state, StatusCode::FORBIDDEN, "admin-oidc-no-role", &args);
    };
    let pool = state.pool.clone();
    let who = identity.clone();
    match blocking(move || sign_in(&pool, &who, role)).await {
        Ok(OidcSignedIn::Session(token)) => {
            let subject_digest = crate::services::accounts::throttle::short_digest(&identity.subject);
            tracing::info!(%subject_digest, role = role.as_str(), "admin oidc sign-in succeeded");
            // A page that goes on to /admin by itself: a redirect would still belong to the
            // provider's cross-site navigation, and the SameSite=Strict session cookie would
            // not join it.
            let locale = state.config.admin.locale;
            let page = OidcPage {
                locale,
                title: locale.text("admin-oidc-signed-in-title"),
                message: locale.text("admin-oidc-signed-in"),
                alert: false,
                next: Some("/admin"),
                link: locale.text("admin-oidc-continue"),
            };
            let mut resp = html(StatusCode::OK, &page);
            let _ = resp.add_cookie(&policy.build(policy.session_name(), token));
            resp
        }
        Ok(OidcSignedIn::Disabled) => {
            tracing::warn!("admin oidc sign-in refused: the user is disabled");
            refused(state, StatusCode::FORBIDDEN, "admin-oidc-disabled", &[])
        }
        Ok(OidcSignedIn::EmailTaken(email)) => {
            tracing::warn!("admin oidc sign-in refused: a local account has the email");
            let args = [("value", Arg::Str(&email)), ("name", Arg::Str(label))];
            refused(state, StatusCode::CONFLICT, "admin-oidc-email-taken", &args)
        }
        Err(e) => db_failure_in(state.config.admin.locale, e),
    }
}
