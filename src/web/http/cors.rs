//! Cross-origin calls from static sites: exact-match CORS on the JSON API for a form's
//! `allowed_origins`, and the refusal (403 `origin-not-allowed`) of POSTs from other origins.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::{web, HttpResponse};

use super::pages::{accept_language, problem_page};
use super::problem::{Problem, ProblemKind};
use super::submit::record_refusal;
use crate::config::FormConfig;
use crate::web::state::AppState;

pub const ALLOW_HEADERS: &str = "Content-Type, Idempotency-Key, Onceform-Journey-Id, Onceform-File-Name";
pub const EXPOSE_HEADERS: &str = "Location, Idempotent-Replayed, Retry-After";
const ALLOW_METHODS: &str = "GET, POST";
const MAX_AGE_SECONDS: &str = "600";

/// Which public form endpoint a path belongs to.
enum Scope<'a> {
    /// `/api/forms/{form}/…`
    Api(&'a str),
    /// `/f/{form}` (the HTML form's post)
    Html(&'a str),
}

fn scope(path: &str) -> Option<Scope<'_>> {
    if let Some(rest) = path.strip_prefix("/api/forms/") {
        let (form, tail) = rest.split_once('/')?;
        return (!form.is_empty() && !tail.is_empty()).then_some(Scope::Api(form));
    }
    let form = path.strip_prefix("/f/")?;
    (!form.is_empty() && !form.contains('/')).then_some(Scope::Html(form))
}

/// The middleware: answers preflights, refuses POSTs from other origins, and adds the CORS
/// headers to every answer of the JSON API for an allowed origin.
pub async fn guard<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    let path = req.path().to_string();
    let (form_name, api) = match scope(&path) {
        Some(Scope::Api(f)) => (f, true),
        Some(Scope::Html(f)) if req.method() == Method::POST => (f, false),
        _ => return Ok(next.call(req).await?.map_into_left_body()),
    };
    let Some(form) = state.config.form(form_name) else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    let origin = req.headers().get(header::ORIGIN).and_then(|v| v.to_str().ok()).map(String::from);
    let allowed = origin.as_deref().filter(|o| form.allowed_origins.iter().any(|a| a == o));
    if api && req.method() == Method::OPTIONS {
        let resp = match allowed {
            Some(o) => preflight(o),
            None => refusal(&state, form_name, api, false, req.headers()),
        };
        return Ok(req.into_response(resp).map_into_right_body());
    }
    if req.method() == Method::POST && refused(form, origin.as_deref(), req.headers()) {
        let resp = refusal(&state, form_name, api, true, req.headers());
        return Ok(req.into_response(resp).map_into_right_body());
    }
    let mut res = next.call(req).await?;
    if api && !form.allowed_origins.is_empty() {
        decorate(res.headers_mut(), allowed);
    }
    Ok(res.map_into_left_body())
}

/// A POST is refused when the form lists origins and the browser names another one that is
/// not onceform's own (a page it served). Requests without `Origin` (servers, curl) pass.
fn refused(form: &FormConfig, origin: Option<&str>, headers: &HeaderMap) -> bool {
    let Some(origin) = origin else { return false };
    !form.allowed_origins.is_empty()
        && !form.allowed_origins.iter().any(|a| a == origin)
        && !same_origin(origin, headers)
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
        let locale = state.config.form(form_name).map(|f| f.locale_for(accept_language(headers)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes() {
        assert!(matches!(scope("/api/forms/contact/submissions"), Some(Scope::Api("contact"))));
        assert!(matches!(scope("/api/forms/contact/operations"), Some(Scope::Api("contact"))));
        assert!(matches!(scope("/f/contact"), Some(Scope::Html("contact"))));
        assert!(scope("/f/contact/receipt/x").is_none());
        assert!(scope("/api/forms/contact").is_none());
        assert!(scope("/admin").is_none());
    }
}
