//! What both email effects take from a job: the visitor's address and the template variables.

use lettre::message::Mailbox;

use super::template::escape;
use crate::config::{FieldType, FormConfig};
use crate::effects::Job;

/// The visitor's address: the value of the form's first email field.
pub fn visitor(form: &FormConfig, job: &Job) -> Option<Mailbox> {
    let field = form.fields.iter().find(|f| f.kind == FieldType::Email)?;
    job.fields.get(&field.name)?.parse().ok()
}

/// Variables every email template can use.
pub fn vars(form: &FormConfig, job: &Job) -> Vec<(&'static str, String)> {
    let labelled: Vec<(&str, &str)> =
        form.fields.iter().filter_map(|f| job.fields.get(&f.name).map(|v| (f.label(), v.as_str()))).collect();
    let fields_text = labelled.iter().map(|(l, v)| format!("{l}: {v}")).collect::<Vec<_>>().join("\n");
    let fields_html = labelled
        .iter()
        .map(|(l, v)| {
            format!(
                "<tr><th align=\"left\">{}</th><td>{}</td></tr>",
                escape(l),
                escape(v).replace('\n', "<br>")
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    vec![
        ("form_title", form.title.clone()),
        ("reference", job.reference()),
        ("name", job.fields.get("name").cloned().unwrap_or_default()),
        ("received_at", job.received_at.format("%Y-%m-%d %H:%M UTC").to_string()),
        ("fields_text", fields_text),
        ("fields_html", fields_html),
    ]
}
