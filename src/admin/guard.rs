//! Who is asking: the session behind the cookie, its role, and the CSRF token every
//! state-changing request must carry.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::{web, FromRequest, HttpRequest, HttpResponse, ResponseError};
use serde::de::DeserializeOwned;

use super::accounts::Role;
use crate::db::admin::accounts::AccountStore;
use crate::db::DbError;
use crate::deliveries::now;
use crate::domain::digest;
use crate::http::AppState;
use crate::with_conn;

pub const SESSION_COOKIE: &str = "onceform_session";

/// A signed-in user (any role).
#[derive(Debug, Clone)]
pub struct SessionUser {
    pub id: String,
    pub email: String,
    pub role: Role,
    pub csrf: String,
    pub token_hash: String,
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("sign in first")]
    SignIn,
    #[error("this needs the admin role")]
    Forbidden,
    #[error("the form's CSRF token is missing or wrong; reload the page and try again")]
    Csrf,
    #[error("the form could not be read")]
    BadForm,
    #[error("the database is unavailable")]
    Unavailable,
}

impl ResponseError for AuthError {
    fn status_code(&self) -> StatusCode {
        match self {
            AuthError::SignIn => StatusCode::SEE_OTHER,
            AuthError::Forbidden | AuthError::Csrf => StatusCode::FORBIDDEN,
            AuthError::BadForm => StatusCode::BAD_REQUEST,
            AuthError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            AuthError::SignIn => {
                HttpResponse::SeeOther().insert_header(("Location", "/admin/login")).finish()
            }
            other => HttpResponse::build(other.status_code())
                .content_type("text/plain; charset=utf-8")
                .insert_header(("Cache-Control", "no-store"))
                .body(other.to_string()),
        }
    }
}

impl FromRequest for SessionUser {
    type Error = AuthError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, AuthError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let token = req.cookie(SESSION_COOKIE).map(|c| c.value().to_string());
        let state = req.app_data::<web::Data<AppState>>().cloned();
        Box::pin(async move {
            let (Some(token), Some(state)) = (token, state) else { return Err(AuthError::SignIn) };
            let token_hash = digest(&token);
            let pool = state.pool.clone();
            let hash = token_hash.clone();
            let found =
                web::block(move || with_conn!(&pool, |c| c.session(&hash, now()).map_err(DbError::from)))
                    .await
                    .map_err(|_| AuthError::Unavailable)?
                    .map_err(|_| AuthError::Unavailable)?;
            let Some((csrf, user)) = found else { return Err(AuthError::SignIn) };
            let role = Role::parse(&user.role).unwrap_or(Role::Viewer);
            Ok(SessionUser { id: user.id, email: user.email, role, csrf, token_hash })
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
    type Error = AuthError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, AuthError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let user = SessionUser::from_request(req, &mut Payload::None);
        let form = web::Form::<T>::from_request(req, payload);
        Box::pin(async move {
            let user = user.await?;
            let form = form.await.map_err(|_| AuthError::BadForm)?.into_inner();
            authorize(&user, form.csrf())?;
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

pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
