//! `Authorization: Bearer ofk_…` on `/api/v1`: the token behind it (`ApiCaller`), its use
//! recorded with the route the router matched; 401 with `WWW-Authenticate` otherwise. Only
//! this header opens the read API (a session cookie does not), and it opens nothing else.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use actix_web::{web, FromRequest, HttpRequest, HttpResponse, ResponseError};

use crate::services::read_api::tokens::{authenticate, Refused, Use};
use crate::services::read_api::Caller;
use crate::web::http::problem::{Problem, ProblemKind};
use crate::web::http::submit::db_problem;
use crate::web::state::AppState;

/// The realm every challenge names.
const REALM: &str = r#"Bearer realm="onceform""#;

/// A request made with a live read API token.
pub struct ApiCaller(pub Caller);

/// Why the request carries no usable token.
#[derive(Debug)]
pub enum BearerError {
    /// No `Authorization: Bearer` at all.
    Missing,
    /// Unknown, revoked, expired or malformed.
    Invalid,
    Failed(Problem),
}

impl std::fmt::Display for BearerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BearerError::Missing => "no bearer token",
            BearerError::Invalid => "invalid bearer token",
            BearerError::Failed(_) => "the token could not be checked",
        })
    }
}

impl ResponseError for BearerError {
    fn error_response(&self) -> HttpResponse {
        let (detail, challenge) = match self {
            BearerError::Failed(problem) => return problem.response(),
            BearerError::Missing => ("send Authorization: Bearer with a read API token", REALM.to_string()),
            BearerError::Invalid => (
                "the token is unknown, revoked or expired",
                format!(r#"{REALM}, error="invalid_token", error_description="unknown, revoked or expired""#),
            ),
        };
        let mut resp = Problem::new(ProblemKind::Unauthorized, detail).response();
        if let Ok(v) = challenge.parse() {
            resp.headers_mut().insert(WWW_AUTHENTICATE, v);
        }
        resp
    }
}

/// The token of an `Authorization: Bearer TOKEN` header (the scheme in any case).
fn presented(req: &HttpRequest) -> Option<String> {
    let value = req.headers().get(AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_string())
}

impl FromRequest for ApiCaller {
    type Error = BearerError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, BearerError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let token = presented(req);
        let method = req.method().as_str().to_string();
        let route = req.match_pattern().unwrap_or_else(|| "/api/v1".to_string());
        Box::pin(async move {
            let Some(token) = token else { return Err(BearerError::Missing) };
            let Some(state) = state else { return Err(BearerError::Failed(Problem::unavailable())) };
            let pool = state.pool.clone();
            let checked =
                web::block(move || authenticate(&pool, &token, &Use { method: &method, route: &route }))
                    .await;
            match checked {
                Ok(Ok(caller)) => Ok(ApiCaller(caller)),
                Ok(Err(Refused::Invalid)) => Err(BearerError::Invalid),
                Ok(Err(Refused::Db(e))) => Err(BearerError::Failed(db_problem(e))),
                Err(_) => Err(BearerError::Failed(Problem::unavailable())),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    #[test]
    fn only_a_bearer_header_presents_a_token() {
        let with =
            |v: &str| presented(&TestRequest::default().insert_header((AUTHORIZATION, v)).to_http_request());
        assert_eq!(with("Bearer ofk_abc").as_deref(), Some("ofk_abc"));
        assert_eq!(with("bearer  ofk_abc ").as_deref(), Some("ofk_abc"));
        assert_eq!(with("Basic b2ZrOg=="), None);
        assert_eq!(with("Bearer"), None);
        assert_eq!(presented(&TestRequest::default().to_http_request()), None);
    }
}
