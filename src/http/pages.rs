//! Typed, escaped templates for the public pages (askama, `templates/`).

use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use askama::Template;

use crate::config::FormConfig;
use crate::domain::FieldType;
use crate::domain::{FieldErrors, RawFields};
use crate::render::html;

#[derive(Template)]
#[template(path = "index.html")]
pub struct IndexPage {
    pub forms: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "form.html")]
pub struct FormPage<'a> {
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
    /// Messages about names that are not fields of the form.
    pub other_errors: Vec<String>,
}

pub struct FieldView {
    pub name: String,
    pub label: String,
    /// The input type (`text`, `email`, `tel`) or `textarea` / `select`.
    pub kind: &'static str,
    pub required: bool,
    pub max_length: usize,
    pub value: String,
    pub options: Vec<OptionView>,
    pub errors: Vec<String>,
}

pub struct OptionView {
    pub value: String,
    pub selected: bool,
}

#[derive(Template)]
#[template(path = "receipt.html")]
pub struct ReceiptPage<'a> {
    pub title: &'a str,
    pub form_name: &'a str,
    pub reference: String,
}

#[derive(Template)]
#[template(path = "message.html")]
pub struct MessagePage<'a> {
    pub heading: &'a str,
    pub message: &'a str,
    pub link_href: Option<String>,
    pub link_label: &'a str,
}

impl<'a> FormPage<'a> {
    /// The form, empty or refilled with what the visitor sent and the messages for it.
    pub fn new(
        name: &'a str,
        form: &'a FormConfig,
        operation_id: &'a str,
        raw: &RawFields,
        errors: &FieldErrors,
    ) -> Self {
        let value_of = |n: &str| raw.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()).unwrap_or_default();
        let fields = form
            .fields
            .iter()
            .map(|f| {
                let value = value_of(&f.name);
                FieldView {
                    kind: match f.kind {
                        FieldType::Text => "text",
                        FieldType::Email => "email",
                        FieldType::Phone => "tel",
                        FieldType::Textarea => "textarea",
                        FieldType::Select => "select",
                    },
                    options: f
                        .options
                        .iter()
                        .map(|o| OptionView { selected: *o == value, value: o.clone() })
                        .collect(),
                    name: f.name.clone(),
                    label: f.label().to_string(),
                    required: f.required,
                    max_length: f.max_length(),
                    errors: errors.0.get(&f.name).cloned().unwrap_or_default(),
                    value,
                }
            })
            .collect();
        FormPage {
            title: &form.title,
            intro: form.intro.as_deref(),
            form_name: name,
            operation_id,
            honeypot: &form.honeypot,
            stamp: String::new(),
            captcha: super::captcha_widget::view(form),
            other_errors: errors
                .0
                .iter()
                .filter(|(name, _)| form.field(name).is_none())
                .flat_map(|(name, messages)| messages.iter().map(move |m| format!("`{name}` {m}")))
                .collect(),
            fields,
            has_errors: !errors.is_empty(),
        }
    }
}

/// A short page with a heading, a sentence and an optional link.
pub fn message(
    status: StatusCode,
    heading: &str,
    message: &str,
    link: Option<(String, &str)>,
) -> HttpResponse {
    let (link_href, link_label) = match link {
        Some((href, label)) => (Some(href), label),
        None => (None, ""),
    };
    html(status, &MessagePage { heading, message, link_href, link_label })
}
