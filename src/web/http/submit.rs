//! What both submit endpoints (JSON and HTML) share: rate limit, key, validation, accept.

use std::future::{ready, Ready};

use actix_web::dev::Payload;
use actix_web::http::header::HeaderValue;
use actix_web::{web, FromRequest, HttpRequest};
use serde::Deserialize;

use super::problem::{Problem, ProblemKind};
use super::{RateLimiter, TrustedProxies};
use crate::config::Form;
use crate::domain::{OperationId, RawFields};
use crate::services::accept::{Outcome, SubmitError, SubmitRequest};
use crate::services::storage::DbError;
use crate::web::state::AppState;

/// The rate limiter and whose `X-Forwarded-For` names the client: what a submit endpoint
/// needs besides [`AppState`].
pub struct Gate<'a> {
    pub limiter: &'a RateLimiter,
    pub proxies: &'a TrustedProxies,
}

/// The form a submit route names (`{form}`, as in force now) and the gate its requests pass:
/// what the JSON submit, the HTML post and the upload endpoint extract. It fails with the
/// not-found problem when no form of that name is in force.
pub struct SubmitForm {
    /// The name as the path gave it (percent-decoded).
    pub name: String,
    pub form: Form,
    limiter: web::Data<RateLimiter>,
    proxies: web::Data<TrustedProxies>,
}

impl SubmitForm {
    pub fn gate(&self) -> Gate<'_> {
        Gate { limiter: &self.limiter, proxies: &self.proxies }
    }
}

#[derive(Deserialize)]
struct FormPath {
    form: String,
}

impl FromRequest for SubmitForm {
    type Error = Problem;
    type Future = Ready<Result<SubmitForm, Problem>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let data = |what: &str| {
            tracing::error!(what, "not registered with the application");
            Problem::new(ProblemKind::Internal, "an internal error occurred; nothing was stored")
        };
        ready((|| {
            let state = req.app_data::<web::Data<AppState>>().ok_or_else(|| data("AppState"))?;
            let limiter =
                req.app_data::<web::Data<RateLimiter>>().ok_or_else(|| data("RateLimiter"))?.clone();
            let proxies =
                req.app_data::<web::Data<TrustedProxies>>().ok_or_else(|| data("TrustedProxies"))?.clone();
            let name = req
                .match_info()
                .load::<FormPath>()
                .map_err(|_| Problem::new(ProblemKind::NotFound, "there is no form with this name"))?
                .form;
            let form = super::form(state, &name)?;
            Ok(SubmitForm { name, form, limiter, proxies })
        })())
    }
}

/// Takes a token from the bucket of the request's client (see [`super::TrustedProxies`]).
pub fn check_rate(gate: &Gate<'_>, form: &Form, req: &HttpRequest) -> Result<(), Problem> {
    let Some(ip) = gate.proxies.client_of(req) else {
        return Ok(());
    };
    gate.limiter.check(form.name(), ip, form.rate_limit).map_err(|seconds| {
        Problem::new(
            ProblemKind::RateLimited,
            format!("too many submissions from this client; retry in {seconds} s"),
        )
        .retry_after(seconds)
    })
}

/// The operation ID from the header and/or the body; `None` where keyless posts are allowed.
pub fn resolve_key(
    header: Option<&HeaderValue>,
    body: Option<&str>,
    allow_keyless: bool,
) -> Result<Option<OperationId>, Problem> {
    let invalid = |e: &dyn std::fmt::Display| Problem::new(ProblemKind::OperationIdInvalid, e.to_string());
    let from_header = header
        .map(|v| v.to_str().map_err(|_| invalid(&"the Idempotency-Key header is not ASCII")))
        .transpose()?
        .map(|v| OperationId::from_header(v).map_err(|e| invalid(&e)))
        .transpose()?;
    let from_body = body.map(|v| OperationId::from_client(v).map_err(|e| invalid(&e))).transpose()?;
    match (from_header, from_body) {
        (Some(h), Some(b)) if h != b => Err(Problem::new(
            ProblemKind::OperationIdMismatch,
            "the Idempotency-Key header and the body's operation_id differ; send one, or the same in both",
        )),
        (Some(k), _) | (None, Some(k)) => Ok(Some(k)),
        (None, None) if allow_keyless => Ok(None),
        (None, None) => Err(Problem::new(
            ProblemKind::OperationIdMissing,
            "send an Idempotency-Key header (or an operation_id field); get one from POST /api/forms/{form}/operations",
        )),
    }
}

/// Runs the submit use case (`Acceptor::submit`) and says what went wrong as a problem.
pub async fn run_submit(state: &AppState, request: SubmitRequest<'_>) -> Result<Outcome, Problem> {
    state.acceptor.submit(&state.spam, request).await.map_err(|e| match e {
        SubmitError::Invalid(errors) => Problem::invalid_fields(errors),
        SubmitError::Store(e) => db_problem(e),
    })
}

/// A database error as the client sees it: 503 when it may pass, an opaque 500 otherwise.
pub fn db_problem(e: DbError) -> Problem {
    match e {
        DbError::Unavailable(reason) => {
            tracing::warn!(%reason, "database unavailable");
            Problem::unavailable()
        }
        DbError::LockTimeout => Problem::unavailable(),
        DbError::Query(error) => {
            tracing::error!(%error, "database error");
            Problem::new(ProblemKind::Internal, "an internal error occurred; nothing was stored")
        }
    }
}

impl From<DbError> for Problem {
    fn from(e: DbError) -> Problem {
        db_problem(e)
    }
}

/// The problem an accept outcome other than success becomes.
pub fn outcome_problem(outcome: &Outcome) -> Option<Problem> {
    match outcome {
        Outcome::Created(_) | Outcome::Replayed(_) => None,
        Outcome::Conflict { submission_id, operation_id } => Some(
            Problem::new(
                ProblemKind::OperationConflict,
                "this operation ID was already accepted with different content; the original is kept \
                 and this attempt is recorded for review. Use a new operation ID for a new inquiry.",
            )
            .with("submission_id", submission_id.as_str())
            .with("operation_id", operation_id.as_str()),
        ),
        Outcome::Expired { operation_id } => Some(
            Problem::new(
                ProblemKind::OperationExpired,
                "this operation ID was issued longer ago than the form keeps keys; nothing was stored. \
                 Get a new operation ID (or reload the form) and send again.",
            )
            .with("operation_id", operation_id.as_str()),
        ),
        Outcome::InProgress { operation_id } => Some(
            Problem::new(
                ProblemKind::OperationInProgress,
                "the first request with this operation ID is still in flight",
            )
            .with("operation_id", operation_id.as_str())
            .retry_after(1),
        ),
    }
}

/// A submit refused before the accept transaction: what the client gets, and what was read
/// of the request by then (the key for the delivery row; the fields to fill the form again).
pub struct Refusal {
    pub problem: Problem,
    pub key: Option<OperationId>,
    pub raw: RawFields,
}

impl From<Problem> for Refusal {
    fn from(problem: Problem) -> Refusal {
        Refusal { problem, key: None, raw: Vec::new() }
    }
}

/// Counts a request refused before the accept transaction (which records its own
/// deliveries): a counter by form and reason, never a row (see `request_log::refused`).
/// `form` is `None` when the path names no configured form.
pub fn record_refusal(state: &AppState, form: Option<&str>, problem: &Problem) {
    if problem.kind != ProblemKind::Unavailable {
        state.refused.count(form, problem.kind.slug());
    }
}
