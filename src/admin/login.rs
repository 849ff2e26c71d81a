//! Signing in and out. The login form has its own CSRF token (a cookie and a hidden field).

use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::accounts::{login, random_token};
use super::guard::{constant_time_eq, AuthError, CsrfForm, SessionUser, SESSION_COOKIE};
use crate::db::admin::accounts::AccountStore;
use crate::db::DbError;
use crate::http::pages::html;
use crate::http::AppState;
use crate::with_conn;

const LOGIN_CSRF_COOKIE: &str = "onceform_login_csrf";

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/login", web::get().to(show))
        .route("/admin/login", web::post().to(submit))
        .route("/admin/logout", web::post().to(logout));
}

#[derive(Template)]
#[template(path = "admin/login.html")]
struct LoginPage<'a> {
    csrf: &'a str,
    email: &'a str,
    error: Option<&'a str>,
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

fn cookie<'a>(req: &HttpRequest, name: &'a str, value: String) -> Cookie<'a> {
    let secure = req.connection_info().scheme() == "https";
    Cookie::build(name, value)
        .path("/admin")
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(secure)
        .finish()
}

fn page(req: &HttpRequest, status: StatusCode, email: &str, error: Option<&str>) -> HttpResponse {
    let csrf = random_token();
    let mut resp = html(status, &LoginPage { csrf: &csrf, email, error });
    let _ = resp.add_cookie(&cookie(req, LOGIN_CSRF_COOKIE, csrf));
    resp
}

async fn show(req: HttpRequest) -> HttpResponse {
    page(&req, StatusCode::OK, "", None)
}

async fn submit(state: web::Data<AppState>, req: HttpRequest, form: web::Form<LoginForm>) -> HttpResponse {
    let form = form.into_inner();
    let expected = req.cookie(LOGIN_CSRF_COOKIE).map(|c| c.value().to_string()).unwrap_or_default();
    if expected.is_empty() || !constant_time_eq(expected.as_bytes(), form.csrf.as_bytes()) {
        return page(
            &req,
            StatusCode::FORBIDDEN,
            &form.email,
            Some("The form expired; please sign in again."),
        );
    }
    let ip = state.proxies.client_of(&req);
    if let Err(seconds) = state.login_throttle.check(ip, &form.email) {
        let msg = format!("Too many failed sign-ins; try again in {} minutes.", seconds.div_ceil(60));
        let mut resp = page(&req, StatusCode::TOO_MANY_REQUESTS, &form.email, Some(&msg));
        resp.headers_mut().insert(actix_web::http::header::RETRY_AFTER, seconds.into());
        return resp;
    }
    let pool = state.pool.clone();
    let (email, password) = (form.email.clone(), form.password);
    match web::block(move || login(&pool, &email, &password)).await {
        Ok(Ok(Some((token, _user)))) => {
            let mut resp = HttpResponse::SeeOther().insert_header(("Location", "/admin")).finish();
            let _ = resp.add_cookie(&cookie(&req, SESSION_COOKIE, token));
            resp
        }
        Ok(Ok(None)) => {
            state.login_throttle.failed(ip, &form.email);
            page(&req, StatusCode::UNAUTHORIZED, &form.email, Some("Wrong email or password."))
        }
        _ => page(&req, StatusCode::SERVICE_UNAVAILABLE, &form.email, Some("The database is unavailable.")),
    }
}

async fn logout(
    state: web::Data<AppState>,
    req: HttpRequest,
    user: SessionUser,
    form: web::Form<LogoutForm>,
) -> Result<HttpResponse, AuthError> {
    if !constant_time_eq(form.csrf().as_bytes(), user.csrf.as_bytes()) {
        return Err(AuthError::Csrf);
    }
    let pool = state.pool.clone();
    let hash = user.token_hash.clone();
    let _ = web::block(move || with_conn!(&pool, |c| c.delete_session(&hash).map_err(DbError::from))).await;
    let mut resp = HttpResponse::SeeOther().insert_header(("Location", "/admin/login")).finish();
    let mut gone = cookie(&req, SESSION_COOKIE, String::new());
    gone.make_removal();
    let _ = resp.add_cookie(&gone);
    Ok(resp)
}
