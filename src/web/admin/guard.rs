//! Who is asking: the session behind the cookie, its role, and the CSRF token every
//! state-changing request must carry.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::{web, FromRequest, HttpRequest, HttpResponse, ResponseError};
use serde::de::DeserializeOwned;

use super::cookies::CookiePolicy;
use crate::base::i18n::{Locale, TimeZone};
use crate::base::secret::constant_time_eq;
use crate::domain::digest;
use crate::services::accounts::{sessions, Role};
use crate::web::state::AppState;

/// Pages a user who must replace their password can still reach.
const BEFORE_NEW_PASSWORD: [&str; 2] = ["/admin/password", "/admin/logout"];

/// A signed-in user (any role).
#[derive(Debug, Clone)]
pub struct SessionUser {
    pub id: String,
    pub email: String,
    pub role: Role,
    pub csrf: String,
    pub token_hash: String,
    /// Signed in with the generated first-start password: only `/admin/password` until changed.
    pub must_change_password: bool,
    /// The pages' language: the user's choice, else `[admin] locale`.
    pub locale: Locale,
    /// The language the user chose on `/admin/password`, if any.
    pub chosen_locale: Option<Locale>,
    /// `[admin] time_zone`: the zone dates are shown in.
    pub zone: TimeZone,
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("sign in first")]
    SignIn,
    #[error("choose a new password first")]
    NewPassword,
    #[error("this needs the admin role")]
    Forbidden,
    #[error("the form's CSRF token is missing or wrong; reload the page and try again")]
    Csrf,
    #[error("the form could not be read")]
    BadForm,
    #[error("the form did not arrive in time")]
    Timeout,
    /// Said in this locale (`[admin] locale` when the session could not be read).
    #[error("the database is unavailable")]
    Unavailable(Locale),
}

impl ResponseError for AuthError {
    fn status_code(&self) -> StatusCode {
        match self {
            AuthError::SignIn | AuthError::NewPassword => StatusCode::SEE_OTHER,
            AuthError::Forbidden | AuthError::Csrf => StatusCode::FORBIDDEN,
            AuthError::BadForm => StatusCode::BAD_REQUEST,
            AuthError::Timeout => StatusCode::REQUEST_TIMEOUT,
            AuthError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            AuthError::SignIn => {
                HttpResponse::SeeOther().insert_header(("Location", "/admin/login")).finish()
            }
            AuthError::NewPassword => {
                HttpResponse::SeeOther().insert_header(("Location", "/admin/password")).finish()
            }
            AuthError::Unavailable(locale) => refusal(self.status_code(), locale.text(self.key())),
            other => refusal(other.status_code(), other.to_string()),
        }
    }
}

/// A refusal's answer: `text`, never cached.
fn refusal(status: StatusCode, text: String) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/plain; charset=utf-8")
        .insert_header(("Cache-Control", "no-store"))
        .body(text)
}

impl AuthError {
    /// The text of this refusal in the admin's words (`admin-…`).
    fn key(&self) -> &'static str {
        match self {
            AuthError::SignIn | AuthError::NewPassword => "admin-sign-in-title",
            AuthError::Forbidden => "admin-forbidden",
            AuthError::Csrf => "admin-csrf-refused",
            AuthError::BadForm => "admin-bad-form",
            AuthError::Timeout => "admin-form-timeout",
            AuthError::Unavailable(_) => "admin-db-unavailable",
        }
    }

    /// This refusal, said in `locale` (the signed-in user's language).
    pub fn said_in(self, locale: Locale) -> Refusal {
        Refusal { locale, error: self }
    }
}

/// A refusal of a signed-in user's request, in their language.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct Refusal {
    pub locale: Locale,
    pub error: AuthError,
}

impl ResponseError for Refusal {
    fn status_code(&self) -> StatusCode {
        self.error.status_code()
    }

    fn error_response(&self) -> HttpResponse {
        match self.error {
            AuthError::SignIn | AuthError::NewPassword => self.error.error_response(),
            _ => refusal(self.status_code(), self.locale.text(self.error.key())),
        }
    }
}

impl FromRequest for SessionUser {
    type Error = AuthError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, AuthError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let name = state.as_ref().map(|s| CookiePolicy::of(&s.config).session_name());
        let token = name.and_then(|n| req.cookie(n)).map(|c| c.value().to_string());
        let may_keep_old_password = BEFORE_NEW_PASSWORD.contains(&req.path());
        Box::pin(async move {
            let (Some(token), Some(state)) = (token, state) else { return Err(AuthError::SignIn) };
            let token_hash = digest(&token);
            let pool = state.pool.clone();
            let hash = token_hash.clone();
            // Who asks is not known yet: the site's language.
            let unavailable = || AuthError::Unavailable(state.config.admin.locale);
            let found = web::block(move || sessions::live(&pool, &hash))
                .await
                .map_err(|_| unavailable())?
                .map_err(|_| unavailable())?;
            let Some(session) = found else { return Err(AuthError::SignIn) };
            let user = session.user;
            if user.must_change_password && !may_keep_old_password {
                return Err(AuthError::NewPassword);
            }
            let role = user.role;
            let admin = &state.config.admin;
            let chosen_locale = user.locale.as_deref().and_then(Locale::parse);
            Ok(SessionUser {
                locale: chosen_locale.unwrap_or(admin.locale),
                chosen_locale,
                zone: admin.time_zone,
                id: user.id,
                email: user.email,
                role,
                csrf: session.csrf,
                token_hash,
                must_change_password: user.must_change_password,
            })
        })
    }
}

/// A form that carries the session's CSRF token.
pub trait CsrfForm {
    fn csrf(&self) -> &str;
}

/// A state-changing admin request: a signed-in admin, a form, and a matching CSRF token.
pub struct AdminAction<T> {
    pub user: SessionUser,
    pub form: T,
}

impl<T: DeserializeOwned + CsrfForm + 'static> FromRequest for AdminAction<T> {
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self, actix_web::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let user = SessionUser::from_request(req, &mut Payload::None);
        let form = web::Form::<T>::from_request(req, payload);
        Box::pin(async move {
            let user = user.await?;
            let locale = user.locale;
            let form = form
                .await
                .map_err(|e| match e.as_response_error().status_code() {
                    StatusCode::REQUEST_TIMEOUT => AuthError::Timeout.said_in(locale),
                    _ => AuthError::BadForm.said_in(locale),
                })?
                .into_inner();
            authorize(&user, form.csrf()).map_err(|e| e.said_in(locale))?;
            Ok(AdminAction { user, form })
        })
    }
}

/// The admin role and the session's CSRF token (compared in constant time).
pub fn authorize(user: &SessionUser, csrf: &str) -> Result<(), AuthError> {
    if !constant_time_eq(csrf.as_bytes(), user.csrf.as_bytes()) {
        return Err(AuthError::Csrf);
    }
    match user.role {
        Role::Admin => Ok(()),
        Role::Viewer => Err(AuthError::Forbidden),
    }
}
