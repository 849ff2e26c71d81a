//! Assembles the OpenAPI 3.1 document: the operations endpoints, the static assets, each
//! configured form's paths (see `forms.rs`), and the shared components.

use serde_json::{json, Map, Value};

use super::ASSETS;
use super::{forms, read_api};
use crate::config::Config;
use crate::web::http::problem::PROBLEM_BASE;

/// Every problem type the public endpoints answer with (RFC 9457 `type` = base + slug).
const PROBLEM_TYPES: &[(&str, &str)] = &[
    (
        "operation-conflict",
        "409: the operation ID was used for different content; `submission_id` names the original",
    ),
    (
        "operation-in-progress",
        "409: the first request with this operation ID is still in flight; retry after `Retry-After`",
    ),
    (
        "validation-failed",
        "422: `errors` maps each invalid field to its messages (localised), `codes` to stable codes; the operation ID is not consumed",
    ),
    ("operation-id-missing", "400: the form requires an operation ID (Idempotency-Key or operation_id)"),
    ("operation-id-invalid", "400: not 16–255 characters of A–Z a–z 0–9 _ - . :"),
    ("operation-id-mismatch", "400: the header and the body name different operation IDs"),
    ("malformed-body", "400: the body is not a JSON object of field names to strings (or not decodable)"),
    ("not-found", "404: no such form, submission or resource"),
    (
        "unauthorized",
        "401: `/metrics` needs `Authorization: Bearer` with the configured token; `/api/v1` a live read API token",
    ),
    (
        "insufficient-scope",
        "403: the read API token lacks the operation's scope (`scope` names it), or is limited to another form",
    ),
    ("invalid-parameter", "400: a query parameter is not as described (`parameter` names it)"),
    (
        "decision-refused",
        "409: the duplicate pair is already decided (undo it first), or there is no decision to undo",
    ),
    ("cursor-expired", "410: retention removed changes after the change feed's cursor: read everything again"),
    (
        "origin-not-allowed",
        "403: the form lists `allowed_origins` and the request's `Origin` is not among them",
    ),
    ("method-not-allowed", "405: the resource exists; `Allow` lists its methods"),
    ("request-timeout", "408: the body did not arrive within the deadline"),
    ("payload-too-large", "413: the body is over the form's `max_body_bytes`"),
    (
        "unsupported-media-type",
        "415: the JSON API takes `application/json`; an upload's content is of a type no file field of the form accepts",
    ),
    ("rate-limited", "429: too many requests from this client; retry after `Retry-After`"),
    (
        "service-unavailable",
        "503: the database is unavailable; retry with the same operation ID after `Retry-After`",
    ),
];

#[cfg(test)]
pub const PROBLEM_TYPES_LEN: usize = PROBLEM_TYPES.len();

/// The whole document for this configuration.
pub fn document(config: &Config) -> Value {
    let mut paths = Map::new();
    operations_paths(&mut paths);
    for (name, form) in &config.forms {
        forms::paths(name, form, &mut paths);
    }
    read_api::paths(&mut paths);
    let problem_list: String =
        PROBLEM_TYPES.iter().map(|(slug, what)| format!("\n- `{slug}`: {what}")).collect();
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "onceform",
            "version": env!("CARGO_PKG_VERSION"),
            "description": format!(
                "Each logical submission takes effect exactly once. Every submission carries an \
                 operation ID (the `Idempotency-Key` header or an `operation_id` field); a retry with \
                 the same content gets the first answer back, different content is a conflict.\n\n\
                 Errors are RFC 9457 `application/problem+json`; `type` is `{PROBLEM_BASE}` plus one of:{problem_list}"),
            "license": {"name": "MIT", "identifier": "MIT"}
        },
        "paths": paths,
        "components": components(),
    })
}

fn components() -> Value {
    let slugs: Vec<String> = PROBLEM_TYPES.iter().map(|(s, _)| format!("{PROBLEM_BASE}{s}")).collect();
    let mut components = json!({
        "schemas": {
            "Problem": {
                "type": "object",
                "description": "RFC 9457 problem details",
                "required": ["type", "title", "status", "detail"],
                "properties": {
                    "type": {"type": "string", "enum": slugs},
                    "title": {"type": "string"},
                    "status": {"type": "integer", "minimum": 400, "maximum": 599},
                    "detail": {"type": "string"},
                    "errors": {"type": "object",
                               "description": "validation-failed: messages by field, in the visitor's language \
                                   (`Accept-Language` on a form whose `locale` is `auto`), naming the field by its label",
                               "additionalProperties": {"type": "array", "items": {"type": "string"}}},
                    "codes": {"type": "object",
                              "description": "validation-failed: stable codes by field (the same fields as `errors`, \
                                  one code per message). `invalid_file_type`, `file_too_large` and `too_many_files` \
                                  are reserved for file fields.",
                              "additionalProperties": {"type": "array",
                                  "items": {"type": "string", "enum": crate::domain::FIELD_ERROR_CODES}}},
                    "submission_id": {"type": "string", "description": "operation-conflict: the original submission"},
                    "scope": {"type": "string", "description": "insufficient-scope: the scope the operation needs"},
                    "parameter": {"type": "string", "description": "invalid-parameter: the parameter at fault"}
                }
            },
            "Result": forms::result_schema(),
            "Status": forms::status_schema(),
        },
        "headers": {
            "Retry-After": {"description": "Seconds to wait before retrying", "required": true,
                            "schema": {"type": "string", "pattern": "^[0-9]+$"}}
        },
        "securitySchemes": read_api::security_schemes(),
    });
    if let Some(schemas) = components["schemas"].as_object_mut() {
        read_api::schemas(schemas);
    }
    components
}

fn text(media: &str, description: &str) -> Value {
    json!({"description": description, "content": {media: {"schema": {"type": "string"}}}})
}

fn get(operation_id: &str, tag: &str, summary: &str, responses: Value) -> Value {
    json!({"get": {"operationId": operation_id, "tags": [tag], "summary": summary, "responses": responses}})
}

/// A file behind a signed link (what a generic CRM's lead carries).
fn file_link_path() -> Value {
    let param = |name: &str, place: &str, schema: Value, description: &str| json!({"name": name, "in": place, "required": true, "schema": schema, "description": description});
    let problem = json!({"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}});
    json!({"get": {
        "operationId": "signed_file", "tags": ["files"],
        "summary": "One attached file, for the holder of a signed link (a week long); served as an attachment",
        "parameters": [
            param("submission", "path", json!({"type": "string"}), "The submission's ID"),
            param("sha256", "path", json!({"type": "string"}), "The file's SHA-256"),
            param("expires", "query", json!({"type": "integer", "minimum": 0, "maximum": 999_999_999_999_i64}),
                "Unix time the link stops opening the file"),
            param("signature", "query", json!({"type": "string"}), "The server's signature of the three"),
        ],
        "responses": {
            "200": {"description": "The file", "content": {"application/octet-stream":
                {"schema": {"type": "string", "format": "binary"}}}},
            "400": text("text/plain", "The query is not a link's"),
            "404": {"description": "No such file, or the link is not valid (or no longer)", "content": problem},
            "503": {"description": "The database is unavailable", "content": problem}
        }
    }})
}

fn operations_paths(paths: &mut Map<String, Value>) {
    let status =
        |v: &str| json!({"type": "object", "required": ["status"], "properties": {"status": {"const": v}}});
    let unavailable = json!({"description": "The database cannot take a write",
        "headers": {"Retry-After": {"$ref": "#/components/headers/Retry-After"}},
        "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}});
    let entries = [
        ("/", get("index", "pages", "The list of forms", json!({"200": text("text/html", "The forms")}))),
        (
            "/healthz",
            get(
                "healthz",
                "operations",
                "Liveness: the process is up",
                json!({"200": {"description": "Up", "content": {"application/json": {"schema": status("ok")}}}}),
            ),
        ),
        (
            "/readyz",
            get(
                "readyz",
                "operations",
                "Readiness: the database takes a write",
                json!({"200": {"description": "Ready", "content": {"application/json": {"schema": {
                      "type": "object", "required": ["status", "database"],
                      "properties": {"status": {"const": "ready"}, "database": {"enum": ["sqlite", "postgres"]}}}}}},
                   "503": unavailable}),
            ),
        ),
        (
            "/metrics",
            get(
                "metrics",
                "operations",
                "Prometheus metrics (text exposition format 0.0.4)",
                json!({"200": text("text/plain", "Metrics: deliveries, submissions, effects by kind and state, attempts, reconciliations, oldest PENDING age, open conflicts")}),
            ),
        ),
        (
            "/openapi.json",
            get(
                "openapi",
                "operations",
                "This document",
                json!({"200": {"description": "OpenAPI 3.1", "content": {"application/json": {"schema": {"type": "object"}}}}}),
            ),
        ),
        (
            "/docs",
            get(
                "docs",
                "operations",
                "This document rendered by the vendored Swagger UI",
                json!({"200": text("text/html", "The API reference")}),
            ),
        ),
        (
            "/embed.js",
            get(
                "embed_script",
                "pages",
                "The embed script: upgrades `<form data-onceform=…>` on a static page to submit with fetch",
                json!({"200": text("text/javascript", "JavaScript")}),
            ),
        ),
        (
            "/static/altcha.js",
            get(
                "altcha_solver",
                "pages",
                "The ALTCHA solver for onceform's own form page",
                json!({"200": text("text/javascript", "JavaScript")}),
            ),
        ),
        (
            "/static/onceform.css",
            get("stylesheet", "pages", "The forms' stylesheet", json!({"200": text("text/css", "CSS")})),
        ),
        (
            "/static/admin.css",
            get(
                "admin_stylesheet",
                "pages",
                "The admin's stylesheet",
                json!({"200": text("text/css", "CSS")}),
            ),
        ),
    ];
    for (path, item) in entries {
        paths.insert(path.to_string(), item);
    }
    paths.insert("/files/{submission}/{sha256}".into(), file_link_path());
    for (path, content_type, _) in ASSETS {
        let media = content_type.split(';').next().unwrap_or("text/plain");
        let id = format!("docs_asset_{}", path.rsplit('/').next().unwrap_or("").replace(['.', '-'], "_"));
        paths.insert(
            path.to_string(),
            get(&id, "operations", "A Swagger UI asset", json!({"200": text(media, "The asset")})),
        );
    }
}
