//! The HTML form pages: the form, its post, and the receipt.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};

use super::body::{media_type, parse_urlencoded, read_limited};
use super::pages::{
    accept_language, not_found, problem_page, with_language, FormPage, IndexPage, ReceiptPage,
};
use super::problem::{Problem, ProblemKind};
use super::submit::{
    check_rate, outcome_problem, record_refusal, resolve_key, run_submit, Gate, Refusal, SubmitForm,
};
use crate::base::format::reference;
use crate::base::i18n::{negotiate, Locale};
use crate::config::{Form, FormConfig};
use crate::domain::{normalise_with, Attached, FieldErrors, OperationId, RawFields};
use crate::services::accept::{Outcome, SubmitRequest};
use crate::services::files;
use crate::services::request_log::Channel;
use crate::services::spam::Screening;
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(index))
        .route("/f/{form}", web::get().to(show_form))
        .route("/f/{form}/receipt/{operation_id}", web::get().to(receipt));
    super::cors::html(cfg).route("/f/{form}", web::post().to(post_form));
}

async fn index(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let locale = site_locale(&req);
    let forms =
        state.forms().config.forms.iter().map(|(n, f)| (n.clone(), f.title_in(locale).to_string())).collect();
    with_language(html(StatusCode::OK, &IndexPage { locale, forms }), locale)
}

/// The locale of a page that belongs to no form: any shipped one, by `Accept-Language`.
fn site_locale(req: &HttpRequest) -> Locale {
    negotiate(accept_language(req.headers()), &Locale::ALL, Locale::En)
}

/// `GET /f/{form}`: the form with a fresh operation ID.
async fn show_form(state: web::Data<AppState>, form: web::Path<String>, req: HttpRequest) -> HttpResponse {
    let Ok(f) = super::form(&state, &form) else { return not_found(site_locale(&req)) };
    let op = OperationId::generate();
    let locale = f.locale_for(accept_language(req.headers()));
    form_page(
        &state,
        StatusCode::OK,
        &f,
        FormPage::new(&f, locale, op.as_str(), &Vec::new(), &FieldErrors::default()),
    )
}

/// The form page with a fresh fill-time stamp and, when the form has one, its captcha widget.
fn form_page(
    state: &AppState,
    status: StatusCode,
    form: &FormConfig,
    mut page: FormPage<'_>,
) -> HttpResponse {
    page.stamp = state.spam.stamp(page.form_name);
    let mut resp = with_language(html(status, &page), page.locale);
    super::captcha_widget::allow(&mut resp, form);
    resp
}

/// `POST /f/{form}`: accept, then a 303 to the receipt (the same receipt on every replay).
async fn post_form(
    state: web::Data<AppState>,
    submit: Result<SubmitForm, Problem>,
    req: HttpRequest,
    payload: web::Payload,
) -> HttpResponse {
    let submit = match submit {
        Ok(submit) => submit,
        Err(problem) => {
            record_refusal(&state, None, &problem);
            return not_found(site_locale(&req));
        }
    };
    let (form, f) = (&submit.name, &submit.form);
    let locale = f.locale_for(accept_language(req.headers()));
    let result = post_fields(&state, &submit.gate(), f, &req, payload).await;
    let Refusal { problem, key, raw } = match result {
        Ok(Outcome::Created(r) | Outcome::Replayed(r)) => {
            if let Some(thanks) = &f.redirect {
                // From the configuration only: a visitor's field never chooses where we send them.
                return HttpResponse::SeeOther().insert_header(("Location", thanks.as_str())).finish();
            }
            return HttpResponse::SeeOther()
                .insert_header(("Location", format!("/f/{form}/receipt/{}", r.operation_id)))
                .finish();
        }
        Ok(outcome @ (Outcome::Conflict { .. } | Outcome::InProgress { .. } | Outcome::Expired { .. })) => {
            return outcome_problem(&outcome)
                .map(|p| problem_page(&p, Some(form), locale))
                .unwrap_or_else(|| not_found(locale))
        }
        Err(refusal) => refusal,
    };
    record_refusal(&state, Some(form), &problem);
    match (&problem.kind, &problem.errors) {
        (ProblemKind::ValidationFailed, Some(errors)) => {
            // A keyless post re-rendered by us gets a key: its next post is a retry of one operation.
            let op = key.unwrap_or_else(OperationId::generate);
            form_page(
                &state,
                StatusCode::UNPROCESSABLE_ENTITY,
                f,
                FormPage::new(f, locale, op.as_str(), &raw, errors),
            )
        }
        _ => problem_page(&problem, Some(form), locale),
    }
}

async fn post_fields(
    state: &AppState,
    gate: &Gate<'_>,
    form: &Form,
    req: &HttpRequest,
    payload: web::Payload,
) -> Result<Outcome, Refusal> {
    check_rate(gate, form, req)?;
    let (raw, received) = match media_type(req.headers()).as_deref() {
        Some("application/x-www-form-urlencoded") => {
            let raw = parse_urlencoded(&read_limited(req, payload, form.max_body_bytes).await?)?;
            // A file field's value is an upload's ID, resolved by the store, never a file.
            let (raw, files) = super::uploads::resolve(state, form, raw).await?;
            (raw, PostFiles::Stored(files))
        }
        Some("multipart/form-data") => {
            let deadline = std::time::Duration::from_millis(state.config.server.body_timeout_ms);
            let (raw, files) = super::multipart::read(req, payload, form, &state.files, deadline).await?;
            (raw, PostFiles::Streamed(files))
        }
        _ => {
            return Err(Problem::new(
                ProblemKind::UnsupportedMediaType,
                "send the form as a web browser does",
            )
            .into())
        }
    };
    let body_key = raw.iter().find(|(k, v)| k == "operation_id" && !v.is_empty()).map(|(_, v)| v.as_str());
    let key = match resolve_key(None, body_key, form.allow_keyless_html) {
        Ok(key) => key,
        Err(problem) => return Err(Refusal { problem, key: None, raw }),
    };
    let mut raw = super::journey::with_header(req, raw);
    let mut screening = Screening::take(form, &mut raw, true, gate.proxies.client_of(req));
    screening.locale = form.visitor_locale(accept_language(req.headers()));
    let files = match received.keep_if_valid(state, form, &raw).await {
        Ok(files) => files,
        Err(problem) => return Err(Refusal { problem, key, raw }),
    };
    let request = SubmitRequest {
        form,
        channel: Channel::Html,
        operation_id: key.clone(),
        raw: &raw,
        files: &files,
        screening: &screening,
        scans: state.files.scan(form, &files).await,
    };
    match run_submit(state, request).await {
        Ok(outcome) => Ok(outcome),
        Err(problem) => Err(Refusal { problem, key, raw }),
    }
}

/// The files of a form post: uploads it named (already stored), or parts it streamed in,
/// stored only once the whole post is valid (a refused post leaves the store as it was).
enum PostFiles {
    Stored(Attached),
    Streamed(Vec<(String, files::Received)>),
}

impl PostFiles {
    async fn keep_if_valid(
        self,
        state: &AppState,
        form: &Form,
        raw: &RawFields,
    ) -> Result<Attached, Problem> {
        match self {
            PostFiles::Stored(files) => Ok(files),
            PostFiles::Streamed(parts) if parts.is_empty() => Ok(Attached::new()),
            PostFiles::Streamed(parts) => {
                let files: Attached = parts.iter().map(|(n, r)| (n.clone(), r.file.clone())).collect();
                normalise_with(&**form, raw, &files).map_err(Problem::invalid_fields)?;
                state.files.keep(parts).await.map_err(super::multipart::not_stored)
            }
        }
    }
}

/// `GET /f/{form}/receipt/{operation_id}`: a reference, never the submitted content.
async fn receipt(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> HttpResponse {
    let (form, operation_id) = path.into_inner();
    let Ok(f) = super::form(&state, &form) else { return not_found(site_locale(&req)) };
    let locale = f.locale_for(accept_language(req.headers()));
    let pool = state.pool.clone();
    let (name, op) = (form.clone(), operation_id);
    match web::block(move || crate::services::status::status(&pool, &name, &op)).await {
        Ok(Ok(Some(s))) => with_language(
            html(
                StatusCode::OK,
                &ReceiptPage {
                    locale,
                    title: f.title_in(locale),
                    form_name: &form,
                    reference: reference(&s.submission_id),
                },
            ),
            locale,
        ),
        Ok(Ok(None)) => not_found(locale),
        _ => problem_page(&Problem::unavailable(), Some(&form), locale),
    }
}
