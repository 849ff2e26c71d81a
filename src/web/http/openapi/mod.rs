//! The OpenAPI 3.1 description of the public HTTP API (`GET /openapi.json`), built in Rust
//! beside the routes and from the configured forms; `GET /docs` renders it with the vendored
//! Swagger UI under `static/docs/`. A method a documented path does not have is a 405.
//!
//! Built by hand with `serde_json` rather than derived with utoipa: the request schemas
//! come from the runtime configuration (each form's fields, types, lengths and options),
//! which derive macros cannot see, and it adds no proc-macro crate to the build. The unit
//! tests check that every route registered under `src/web/http/` is documented, and the
//! schemathesis integration test that the server does what the document says.

mod document;
mod forms;
mod read_api;

use actix_web::http::header::{ContentType, ALLOW, CACHE_CONTROL};
use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{web, HttpRequest, HttpResponse};

use super::problem::{Problem, ProblemKind};
use std::sync::{Arc, Mutex};

use crate::config::Config;
use crate::web::state::AppState;
pub use document::document;

/// The vendored Swagger UI: (path, content type, bytes).
pub const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "/static/docs/swagger-ui-bundle.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../static/docs/swagger-ui-bundle.js"),
    ),
    (
        "/static/docs/swagger-ui.css",
        "text/css; charset=utf-8",
        include_bytes!("../../../../static/docs/swagger-ui.css"),
    ),
    (
        "/static/docs/init.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../static/docs/init.js"),
    ),
];

const DOCS_PAGE: &str = include_str!("../../../../static/docs/index.html");

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/openapi.json", web::get().to(openapi_json)).route("/docs", web::get().to(docs));
    for &(path, content_type, bytes) in ASSETS {
        cfg.route(path, web::get().to(move || asset(content_type, bytes)));
    }
}

/// The document of the forms in force, built once per configuration rather than per
/// request: `/openapi.json` serves its bytes and the fallback reads the methods of its paths
/// (an unknown path once cost a whole document, five times the work of `/healthz`). The
/// server starts with its own configuration's; the first request after a reload builds the
/// reloaded one's.
pub struct Publisher {
    current: Mutex<(Arc<Config>, Arc<Published>)>,
}

impl Publisher {
    pub fn new(config: Arc<Config>) -> Publisher {
        let published = Arc::new(Published::of(&config));
        Publisher { current: Mutex::new((config, published)) }
    }

    /// The document of the forms in force (of the configuration built, where the request
    /// reaches no app state).
    fn now(&self, req: &HttpRequest) -> Arc<Published> {
        let mut current = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match req.app_data::<web::Data<AppState>>().map(|s| s.forms().config.clone()) {
            Some(config) if !Arc::ptr_eq(&config, &current.0) => {
                *current = (config.clone(), Arc::new(Published::of(&config)));
                current.1.clone()
            }
            _ => current.1.clone(),
        }
    }
}

/// One configuration's document and its paths.
pub struct Published {
    json: Bytes,
    /// Each documented path (a template) with its methods, upper case and sorted.
    paths: Vec<(String, Vec<String>)>,
}

impl Published {
    pub fn of(config: &Config) -> Published {
        let doc = document(config);
        let json = serde_json::to_vec(&doc).map(Bytes::from).unwrap_or_default();
        let paths = doc["paths"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(template, item)| {
                let mut methods: Vec<String> = item
                    .as_object()
                    .into_iter()
                    .flat_map(|o| o.keys())
                    .filter(|m| HTTP_METHODS.contains(&m.as_str()))
                    .map(|m| m.to_ascii_uppercase())
                    .collect();
                methods.sort();
                (template.clone(), methods)
            })
            .collect();
        Published { json, paths }
    }

    /// The methods the document gives the path `path` (upper case), empty when no path matches.
    fn allowed_methods(&self, path: &str) -> Vec<String> {
        let mut methods: Vec<String> = self
            .paths
            .iter()
            .filter(|(template, _)| matches_template(template, path))
            .flat_map(|(_, methods)| methods.iter().cloned())
            .collect();
        methods.sort();
        methods.dedup();
        methods
    }
}

async fn openapi_json(publisher: web::Data<Publisher>, req: HttpRequest) -> HttpResponse {
    HttpResponse::Ok().content_type(ContentType::json()).body(publisher.now(&req).json.clone())
}

async fn docs() -> HttpResponse {
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(DOCS_PAGE)
}

async fn asset(content_type: &'static str, bytes: &'static [u8]) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((CACHE_CONTROL, "public, max-age=3600"))
        .body(bytes)
}

/// Requests no route took: 405 with `Allow` when the path is documented (with other
/// methods), else 404.
pub async fn fallback(publisher: web::Data<Publisher>, req: HttpRequest) -> HttpResponse {
    let allowed = publisher.now(&req).allowed_methods(req.path());
    if allowed.is_empty() {
        return Problem::new(ProblemKind::NotFound, "no such resource").response();
    }
    let mut resp =
        Problem::new(ProblemKind::MethodNotAllowed, format!("this resource allows {}", allowed.join(", ")))
            .response();
    if let Ok(v) = allowed.join(", ").parse() {
        resp.headers_mut().insert(ALLOW, v);
    }
    debug_assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    resp
}

const HTTP_METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// `/a/{x}/b` matches `/a/anything/b`: a `{…}` segment stands for one non-empty segment.
fn matches_template(template: &str, path: &str) -> bool {
    let (t, p): (Vec<&str>, Vec<&str>) = (template.split('/').collect(), path.split('/').collect());
    t.len() == p.len()
        && t.iter()
            .zip(&p)
            .all(|(t, p)| if t.starts_with('{') && t.ends_with('}') { !p.is_empty() } else { t == p })
}

#[cfg(test)]
mod tests;
