//! Typed, escaped templates for the public pages (askama, `templates/`), each in the
//! visitor's locale (`<html lang>` and every text; see `crate::base::i18n`).

use actix_web::http::header::{HeaderMap, HeaderValue, ACCEPT_LANGUAGE, CONTENT_LANGUAGE, RETRY_AFTER};
use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use askama::Template;

use super::problem::{Problem, ProblemKind};
use crate::base::i18n::{Arg, Locale};
use crate::config::Form;
use crate::domain::{Bound, FieldType};
use crate::domain::{FieldErrors, RawFields};
use crate::web::render::html;

/// The request's `Accept-Language` header, when it is text.
pub fn accept_language(headers: &HeaderMap) -> Option<&str> {
    headers.get(ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok())
}

#[derive(Template)]
#[template(path = "index.html")]
pub struct IndexPage {
    pub locale: Locale,
    pub forms: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "form.html")]
pub struct FormPage<'a> {
    pub locale: Locale,
    pub title: &'a str,
    pub intro: Option<&'a str>,
    pub form_name: &'a str,
    pub operation_id: &'a str,
    pub honeypot: &'a str,
    /// The signed fill-time stamp (`_stamp`); empty: none.
    pub stamp: String,
    pub captcha: Option<super::captcha_widget::CaptchaView>,
    pub fields: Vec<FieldView>,
    pub has_errors: bool,
    /// The form posts files (`multipart/form-data`).
    pub has_files: bool,
    /// Messages about names that are not fields of the form.
    pub other_errors: Vec<String>,
}

pub struct FieldView {
    pub name: String,
    pub label: String,
    /// The input type (`text`, `email`, `tel`, `number`, `date`, `url`, `hidden`,
    /// `checkbox`) or `textarea` / `select` / `multiselect` / `radio` / `checkboxes`.
    pub kind: &'static str,
    pub required: bool,
    pub max_length: usize,
    pub value: String,
    /// number and date: the `min`, `max` and `step` attributes (empty: none).
    pub min: String,
    pub max: String,
    pub step: String,
    /// checkbox and consent: ticked.
    pub checked: bool,
    /// file: the `accept` attribute (types and extensions, comma-separated), and whether
    /// several files may be chosen.
    pub accept: String,
    pub multiple: bool,
    pub options: Vec<OptionView>,
    /// Messages that name the field by its label, in the page's locale.
    pub errors: Vec<String>,
}

pub struct OptionView {
    /// What is posted and stored.
    pub value: String,
    /// What the visitor reads (the form's text for it in the page's locale).
    pub label: String,
    pub selected: bool,
}

#[derive(Template)]
#[template(path = "receipt.html")]
pub struct ReceiptPage<'a> {
    pub locale: Locale,
    pub title: &'a str,
    pub form_name: &'a str,
    pub reference: String,
}

#[derive(Template)]
#[template(path = "message.html")]
pub struct MessagePage<'a> {
    pub locale: Locale,
    pub heading: &'a str,
    pub message: &'a str,
    pub link_href: Option<String>,
    pub link_label: &'a str,
}

impl<'a> FormPage<'a> {
    /// The form in `locale`, empty or refilled with what the visitor sent and the messages for it.
    pub fn new(
        form: &'a Form,
        locale: Locale,
        operation_id: &'a str,
        raw: &RawFields,
        errors: &FieldErrors,
    ) -> Self {
        let value_of = |n: &str| raw.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()).unwrap_or_default();
        let chosen = |n: &str, o: &str| raw.iter().any(|(k, v)| k == n && v == o);
        let bound = |b: &Option<Bound>| match b {
            Some(Bound::Number(n)) => format!("{n}"),
            Some(Bound::Day(d)) => d.to_string(),
            None => String::new(),
        };
        let mut messages = form.error_messages(errors, locale);
        let fields = form
            .fields
            .iter()
            .map(|f| {
                let value = match (f.kind, value_of(&f.name)) {
                    (FieldType::Hidden, v) if v.is_empty() => f.value.clone().unwrap_or_default(),
                    (FieldType::File, _) => String::new(), // a browser chooses files again
                    (_, v) => v,
                };
                FieldView {
                    kind: match f.kind {
                        FieldType::Text => "text",
                        FieldType::Email => "email",
                        FieldType::Phone => "tel",
                        FieldType::Textarea => "textarea",
                        FieldType::Select => "select",
                        FieldType::Radio => "radio",
                        FieldType::Checkboxes => "checkboxes",
                        FieldType::Multiselect => "multiselect",
                        FieldType::Checkbox | FieldType::Consent => "checkbox",
                        FieldType::Number => "number",
                        FieldType::Date => "date",
                        FieldType::Url => "url",
                        FieldType::Hidden => "hidden",
                        FieldType::File => "file",
                    },
                    accept: f.accept.join(","),
                    multiple: f.max_files() > 1,
                    min: bound(&f.min),
                    max: bound(&f.max),
                    step: match (f.kind, f.step) {
                        (_, Some(step)) => format!("{step}"),
                        // Without a step a browser would take whole numbers only.
                        (FieldType::Number, None) => "any".into(),
                        _ => String::new(),
                    },
                    checked: f.is_boolean() && crate::domain::boolean(&value) == Some(true),
                    required: f.required || f.kind == FieldType::Consent,
                    options: f
                        .options
                        .iter()
                        .map(|o| OptionView {
                            selected: chosen(&f.name, o),
                            label: form.option_in(f, o, locale).to_string(),
                            value: o.clone(),
                        })
                        .collect(),
                    name: f.name.clone(),
                    label: form.label_in(f, locale).to_string(),
                    max_length: f.max_length(),
                    errors: messages.remove(&f.name).unwrap_or_default(),
                    value,
                }
            })
            .collect();
        FormPage {
            locale,
            title: form.title_in(locale),
            intro: form.intro_in(locale),
            form_name: form.name(),
            operation_id,
            honeypot: &form.honeypot,
            stamp: String::new(),
            captcha: super::captcha_widget::view(form),
            other_errors: messages.into_values().flatten().collect(),
            fields,
            has_errors: !errors.is_empty(),
            has_files: form.has_file_field(),
        }
    }
}

/// A short page with a heading, a sentence and an optional link, in `locale`.
pub fn message(
    status: StatusCode,
    locale: Locale,
    heading: &str,
    message: &str,
    link: Option<(String, &str)>,
) -> HttpResponse {
    let (link_href, link_label) = match link {
        Some((href, label)) => (Some(href), label),
        None => (None, ""),
    };
    with_language(html(status, &MessagePage { locale, heading, message, link_href, link_label }), locale)
}

/// `Content-Language` on a page in `locale`.
pub fn with_language(mut resp: HttpResponse, locale: Locale) -> HttpResponse {
    resp.headers_mut().insert(CONTENT_LANGUAGE, HeaderValue::from_static(locale.tag()));
    resp
}

/// "Not found" in `locale`.
pub fn not_found(locale: Locale) -> HttpResponse {
    message(
        StatusCode::NOT_FOUND,
        locale,
        &locale.text("not-found-title"),
        &locale.text("not-found-body"),
        None,
    )
}

/// The page a visitor gets for `problem` on form `form_name` (its status and `Retry-After`;
/// the words in `locale`, never the JSON API's English detail).
pub fn problem_page(problem: &Problem, form_name: Option<&str>, locale: Locale) -> HttpResponse {
    let (title, body) = match problem.kind {
        ProblemKind::RateLimited => ("rate-limited-title", "rate-limited-body"),
        ProblemKind::Unavailable => ("unavailable-title", "unavailable-body"),
        ProblemKind::OriginNotAllowed => ("forbidden-title", "forbidden-body"),
        ProblemKind::OperationConflict => ("conflict-title", "conflict-body"),
        ProblemKind::OperationInProgress => ("in-progress-title", "in-progress-body"),
        ProblemKind::OperationExpired => ("expired-title", "expired-body"),
        ProblemKind::PayloadTooLarge => ("too-large-title", "too-large-body"),
        ProblemKind::RequestTimeout => ("timeout-title", "timeout-body"),
        ProblemKind::NotFound => ("not-found-title", "not-found-body"),
        ProblemKind::MalformedBody
        | ProblemKind::UnsupportedMediaType
        | ProblemKind::OperationIdMissing
        | ProblemKind::OperationIdInvalid
        | ProblemKind::OperationIdMismatch
        | ProblemKind::ValidationFailed
        | ProblemKind::InvalidParameter => ("bad-request-title", "bad-request-body"),
        // The read API's problems never reach a visitor's page.
        ProblemKind::Internal
        | ProblemKind::Unauthorized
        | ProblemKind::MethodNotAllowed
        | ProblemKind::InsufficientScope
        | ProblemKind::DecisionRefused
        | ProblemKind::CursorExpired => ("failed-title", "failed-body"),
    };
    let seconds = i64::try_from(problem.retry_after.unwrap_or(5)).unwrap_or(5);
    let body = locale.format(body, &[("seconds", Arg::Num(seconds))]);
    let (link, label) = match problem.kind {
        ProblemKind::OperationConflict | ProblemKind::OperationExpired => {
            (form_name.map(|f| format!("/f/{f}")), locale.text("conflict-link"))
        }
        ProblemKind::OriginNotAllowed => (None, String::new()),
        _ => (form_name.map(|f| format!("/f/{f}")), locale.text("page-back")),
    };
    let mut resp = message(
        problem.status(),
        locale,
        &locale.text(title),
        &body,
        link.map(|href| (href, label.as_str())),
    );
    if let Some(s) = problem.retry_after {
        resp.headers_mut().insert(RETRY_AFTER, HeaderValue::from(s));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problem_pages_speak_the_locale_and_keep_retry_after() {
        let resp = problem_page(&Problem::unavailable(), Some("contact"), Locale::Ja);
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        let header = |r: &HttpResponse, h| r.headers().get(h).and_then(|v| v.to_str().ok()).map(String::from);
        assert_eq!(header(&resp, RETRY_AFTER).as_deref(), Some("5"));
        assert_eq!(header(&resp, CONTENT_LANGUAGE).as_deref(), Some("ja"));
        let resp =
            problem_page(&Problem::new(ProblemKind::RateLimited, "x").retry_after(42), None, Locale::ZhCn);
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(header(&resp, CONTENT_LANGUAGE).as_deref(), Some("zh-CN"));
        assert_eq!(header(&resp, RETRY_AFTER).as_deref(), Some("42"));
    }
}
