//! RFC 9457 problem details: the one error shape of the JSON API.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::{json, Map, Value};

use crate::base::i18n::Locale;
use crate::config::FormConfig;
use crate::domain::FieldErrors;

pub const PROBLEM_BASE: &str = "https://onceform.dev/problems/";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    OperationConflict,
    OperationInProgress,
    OperationExpired,
    ValidationFailed,
    OperationIdMissing,
    OperationIdInvalid,
    OperationIdMismatch,
    MalformedBody,
    NotFound,
    PayloadTooLarge,
    RequestTimeout,
    Unauthorized,
    UnsupportedMediaType,
    RateLimited,
    Unavailable,
    Internal,
    MethodNotAllowed,
    OriginNotAllowed,
    InsufficientScope,
    InvalidParameter,
    DecisionRefused,
    CursorExpired,
}

impl ProblemKind {
    pub fn slug(self) -> &'static str {
        match self {
            ProblemKind::OperationConflict => "operation-conflict",
            ProblemKind::OperationInProgress => "operation-in-progress",
            ProblemKind::OperationExpired => "operation-expired",
            ProblemKind::ValidationFailed => "validation-failed",
            ProblemKind::OperationIdMissing => "operation-id-missing",
            ProblemKind::OperationIdInvalid => "operation-id-invalid",
            ProblemKind::OperationIdMismatch => "operation-id-mismatch",
            ProblemKind::MalformedBody => "malformed-body",
            ProblemKind::NotFound => "not-found",
            ProblemKind::PayloadTooLarge => "payload-too-large",
            ProblemKind::RequestTimeout => "request-timeout",
            ProblemKind::Unauthorized => "unauthorized",
            ProblemKind::UnsupportedMediaType => "unsupported-media-type",
            ProblemKind::RateLimited => "rate-limited",
            ProblemKind::Unavailable => "service-unavailable",
            ProblemKind::Internal => "internal-error",
            ProblemKind::MethodNotAllowed => "method-not-allowed",
            ProblemKind::OriginNotAllowed => "origin-not-allowed",
            ProblemKind::InsufficientScope => "insufficient-scope",
            ProblemKind::InvalidParameter => "invalid-parameter",
            ProblemKind::DecisionRefused => "decision-refused",
            ProblemKind::CursorExpired => "cursor-expired",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            ProblemKind::OperationConflict | ProblemKind::OperationInProgress => StatusCode::CONFLICT,
            ProblemKind::OperationExpired | ProblemKind::CursorExpired => StatusCode::GONE,
            ProblemKind::ValidationFailed => StatusCode::UNPROCESSABLE_ENTITY,
            ProblemKind::OperationIdMissing
            | ProblemKind::OperationIdInvalid
            | ProblemKind::OperationIdMismatch
            | ProblemKind::MalformedBody
            | ProblemKind::InvalidParameter => StatusCode::BAD_REQUEST,
            ProblemKind::NotFound => StatusCode::NOT_FOUND,
            ProblemKind::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ProblemKind::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ProblemKind::Unauthorized => StatusCode::UNAUTHORIZED,
            ProblemKind::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ProblemKind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            ProblemKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ProblemKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ProblemKind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ProblemKind::OriginNotAllowed | ProblemKind::InsufficientScope => StatusCode::FORBIDDEN,
            ProblemKind::DecisionRefused => StatusCode::CONFLICT,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            ProblemKind::OperationConflict => "This operation ID was used for different content",
            ProblemKind::OperationInProgress => "This operation is still being processed",
            ProblemKind::OperationExpired => "This operation ID has expired",
            ProblemKind::ValidationFailed => "Some fields are invalid",
            ProblemKind::OperationIdMissing => "An operation ID is required",
            ProblemKind::OperationIdInvalid => "The operation ID is malformed",
            ProblemKind::OperationIdMismatch => "The header and body name different operation IDs",
            ProblemKind::MalformedBody => "The request body could not be read",
            ProblemKind::NotFound => "Not found",
            ProblemKind::PayloadTooLarge => "The request body is too large",
            ProblemKind::RequestTimeout => "The request body did not arrive in time",
            ProblemKind::Unauthorized => "Credentials are missing or wrong",
            ProblemKind::UnsupportedMediaType => "Unsupported content type",
            ProblemKind::RateLimited => "Too many requests",
            ProblemKind::Unavailable => "The service is temporarily unavailable",
            ProblemKind::Internal => "Internal error",
            ProblemKind::MethodNotAllowed => "Method not allowed",
            ProblemKind::OriginNotAllowed => "This site may not send this form",
            ProblemKind::InsufficientScope => "This token may not do this",
            ProblemKind::InvalidParameter => "A query parameter is invalid",
            ProblemKind::DecisionRefused => "The pair is not in a state that allows this decision",
            ProblemKind::CursorExpired => "The cursor is older than the oldest change kept",
        }
    }
}

/// One problem, with its optional extension members.
#[derive(Debug, Clone)]
pub struct Problem {
    pub kind: ProblemKind,
    pub detail: String,
    pub errors: Option<FieldErrors>,
    pub retry_after: Option<u64>,
    pub extra: Map<String, Value>,
}

impl Problem {
    pub fn new(kind: ProblemKind, detail: impl Into<String>) -> Self {
        Problem { kind, detail: detail.into(), errors: None, retry_after: None, extra: Map::new() }
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.into(), value.into());
        self
    }

    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    pub fn invalid_fields(errors: FieldErrors) -> Self {
        let n = errors.0.len();
        let mut p = Problem::new(ProblemKind::ValidationFailed, format!("{n} field(s) need attention"));
        p.errors = Some(errors);
        p
    }

    pub fn unavailable() -> Self {
        Problem::new(
            ProblemKind::Unavailable,
            "The database is unavailable. Retry later with the same operation ID: it is accepted at most once.",
        )
        .retry_after(5)
    }

    pub fn status(&self) -> StatusCode {
        self.kind.status()
    }

    pub fn response(&self) -> HttpResponse {
        self.response_in(None, Locale::En)
    }

    /// The response, field messages (`errors`) in `locale` naming each field by `form`'s
    /// label for it, beside their stable `codes`; `type`, `title` and `detail` stay as they are.
    pub fn response_in(&self, form: Option<&FormConfig>, locale: Locale) -> HttpResponse {
        let mut body = Map::new();
        body.insert("type".into(), json!(format!("{PROBLEM_BASE}{}", self.kind.slug())));
        body.insert("title".into(), json!(self.kind.title()));
        body.insert("status".into(), json!(self.status().as_u16()));
        body.insert("detail".into(), json!(self.detail));
        if let Some(errors) = &self.errors {
            let messages = match form {
                Some(form) => json!(form.error_messages(errors, locale)),
                None => json!(errors
                    .0
                    .iter()
                    .map(|(f, e)| (
                        f.clone(),
                        json!(e.iter().map(|e| e.message(locale, f, &[])).collect::<Vec<_>>())
                    ))
                    .collect::<Map<_, _>>()),
            };
            body.insert("errors".into(), messages);
            body.insert("codes".into(), json!(errors.codes()));
        }
        body.extend(self.extra.clone());
        let mut resp = HttpResponse::build(self.status());
        resp.content_type("application/problem+json");
        if self.errors.is_some() && form.is_some() {
            resp.insert_header(("Content-Language", locale.tag()));
        }
        if let Some(s) = self.retry_after {
            resp.insert_header(("Retry-After", s.to_string()));
        }
        resp.body(Value::Object(body).to_string())
    }
}

/// A blocking task that did not finish (its pool shut down): the service is unavailable.
impl From<actix_web::error::BlockingError> for Problem {
    fn from(_: actix_web::error::BlockingError) -> Problem {
        Problem::unavailable()
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind.slug(), self.detail)
    }
}

/// A handler answers `Err(problem)` (or `?`) with the problem's English response: the same
/// status, body and headers as [`Problem::response`].
impl ResponseError for Problem {
    fn status_code(&self) -> StatusCode {
        self.status()
    }

    fn error_response(&self) -> HttpResponse {
        self.response()
    }
}
