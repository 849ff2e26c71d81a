//! Cross-origin calls from static sites: exact-match CORS on the JSON API for a form's
//! `allowed_origins`, and the refusal (403 `origin-not-allowed`) of POSTs from other origins.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use actix_web::http::Method;
use actix_web::middleware::{from_fn, Next};
use actix_web::{guard, web, HttpResponse, Route};
use serde::Deserialize;

use super::pages::{accept_language, problem_page};
use super::problem::{Problem, ProblemKind};
use super::submit::record_refusal;
use crate::web::state::AppState;

pub const ALLOW_HEADERS: &str = "Content-Type, Idempotency-Key, Onceform-Journey-Id, Onceform-File-Name";
pub const EXPOSE_HEADERS: &str = "Location, Idempotent-Replayed, Retry-After";
const ALLOW_METHODS: &str = "GET, POST";
const MAX_AGE_SECONDS: &str = "600";

/// Which public form endpoint a resource belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// `/api/forms/{form}/…`: preflights, refusals and the CORS headers on every answer.
    Api,
    /// `/f/{form}` (the HTML form's post): refusals only.
    Html,
}

/// Registers routes whose requests pass the origin check once the router has matched them,
/// so that the check reads the form name the handler reads: `{form}` percent-decoded
/// (`/f/cont%61ct` is the `contact` form, and is checked as `contact`).
pub struct Guarded<'a> {
    cfg: &'a mut web::ServiceConfig,
    scope: Scope,
}

/// The JSON API's routes (`/api/forms/{form}/…`).
pub fn api(cfg: &mut web::ServiceConfig) -> Guarded<'_> {
    Guarded { cfg, scope: Scope::Api }
}

/// The HTML form's post (`POST /f/{form}`).
pub fn html(cfg: &mut web::ServiceConfig) -> Guarded<'_> {
    Guarded { cfg, scope: Scope::Html }
}

impl Guarded<'_> {
    /// Registers `route` at `path` as a resource of its own behind [`check_origin`]. An API resource
    /// takes every method, so that it answers the preflights (`OPTIONS`); the methods it does
    /// not route get the fallback's 405. An HTML resource takes its posts only.
    pub fn route(&mut self, path: &str, route: Route) -> &mut Self {
        let resource = web::resource(path).route(route);
        match self.scope {
            Scope::Api => self.cfg.service(
                resource.wrap(from_fn(api_guard)).default_service(web::to(super::openapi::fallback)),
            ),
            Scope::Html => self.cfg.service(resource.guard(guard::Post()).wrap(from_fn(html_guard))),
        };
        self
    }
}

/// The form segment of a matched path, decoded as the handlers' `web::Path` decodes it.
#[derive(Deserialize)]
struct FormSegment {
    form: String,
}

async fn api_guard<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    check_origin(req, next, Scope::Api).await
}

async fn html_guard<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    check_origin(req, next, Scope::Html).await
}

/// The middleware: answers preflights, refuses POSTs from other origins, and adds the CORS
/// headers to every answer of the JSON API for an allowed origin.
async fn check_origin<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
    scope: Scope,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    let Ok(FormSegment { form: form_name }) = req.match_info().load::<FormSegment>() else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    let Some(form) = state.form(&form_name) else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    let api = scope == Scope::Api;
    let origin = req.headers().get(header::ORIGIN).and_then(|v| v.to_str().ok()).map(String::from);
    let allowed = origin.as_deref().filter(|o| form.allowed_origins.iter().any(|a| a == o));
    if api && req.method() == Method::OPTIONS {
        let resp = match allowed {
            Some(o) => preflight(o),
            None => refusal(&state, &form_name, api, false, req.headers()),
        };
        return Ok(req.into_response(resp).map_into_right_body());
    }
    if req.method() == Method::POST && refused(&form.allowed_origins, origin.as_deref(), req.headers()) {
        let resp = refusal(&state, &form_name, api, true, req.headers());
        return Ok(req.into_response(resp).map_into_right_body());
    }
    let mut res = next.call(req).await?;
    if api && !form.allowed_origins.is_empty() {
        decorate(res.headers_mut(), allowed);
    }
    Ok(res.map_into_left_body())
}

/// A POST is refused when the form lists origins (`allowed`) and the browser names another
/// one that is not onceform's own (a page it served). Requests without `Origin` (servers,
/// curl) pass.
fn refused(allowed: &[String], origin: Option<&str>, headers: &HeaderMap) -> bool {
    let Some(origin) = origin else { return false };
    !allowed.is_empty() && !allowed.iter().any(|a| a == origin) && !same_origin(origin, headers)
}

/// Whether `origin` names the host the request was sent to.
fn same_origin(origin: &str, headers: &HeaderMap) -> bool {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin_host = origin.split_once("://").map(|(_, h)| h);
    matches!((origin_host, host), (Some(o), Some(h)) if o.eq_ignore_ascii_case(h))
}

fn preflight(origin: &str) -> HttpResponse {
    let mut resp = HttpResponse::NoContent().finish();
    let h = resp.headers_mut();
    decorate(h, Some(origin));
    insert(h, header::ACCESS_CONTROL_ALLOW_METHODS, ALLOW_METHODS);
    insert(h, header::ACCESS_CONTROL_ALLOW_HEADERS, ALLOW_HEADERS);
    insert(h, header::ACCESS_CONTROL_MAX_AGE, MAX_AGE_SECONDS);
    resp
}

/// The 403; a refused POST is counted (by form and reason), a refused preflight is not.
fn refusal(state: &AppState, form_name: &str, api: bool, post: bool, headers: &HeaderMap) -> HttpResponse {
    let problem = Problem::new(
        ProblemKind::OriginNotAllowed,
        "this form accepts posts only from the sites listed in its allowed_origins",
    );
    if post {
        record_refusal(state, Some(form_name), &problem);
    }
    let mut resp = if api {
        problem.response()
    } else {
        let locale = state.form(form_name).map(|f| f.locale_for(accept_language(headers)));
        problem_page(&problem, None, locale.unwrap_or_default())
    };
    insert(resp.headers_mut(), header::VARY, "Origin");
    resp
}

/// `Vary: Origin` always; the allow and expose headers for an allowed origin. Never
/// credentials.
fn decorate(h: &mut HeaderMap, allowed: Option<&str>) {
    h.append(header::VARY, HeaderValue::from_static("Origin"));
    if let Some(origin) = allowed.and_then(|o| HeaderValue::from_str(o).ok()) {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        insert(h, header::ACCESS_CONTROL_EXPOSE_HEADERS, EXPOSE_HEADERS);
    }
}

fn insert(h: &mut HeaderMap, name: HeaderName, value: &'static str) {
    h.insert(name, HeaderValue::from_static(value));
}
