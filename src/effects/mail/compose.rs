//! What both email effects take from a job: the visitor's address and the email's data.

use lettre::message::Mailbox;

use super::template::{one_line, EmailData, Field};
use crate::config::FormConfig;
use crate::domain::FieldType;
use crate::effects::Job;

/// Characters of the visitor's name a confirmation shows at most.
const NAME_MAX: usize = 100;

/// The visitor's address: the value of the form's first email field, width-folded (an IME's
/// full-width `ｍｅｉ＠ｅｘａｍｐｌｅ．ｃｏｍ` is the mailbox `mei@example.com`; it was validated so).
pub fn visitor(form: &FormConfig, job: &Job) -> Option<Mailbox> {
    let field = form.fields.iter().find(|f| f.kind == FieldType::Email)?;
    crate::domain::fold_width(job.fields.get(&field.name)?).parse().ok()
}

/// The data of one email; `with_fields` lists every submitted field.
pub fn data(form: &FormConfig, job: &Job, with_fields: bool) -> EmailData {
    let fields = match with_fields {
        true => form
            .fields
            .iter()
            .filter_map(|f| {
                job.fields.get(&f.name).map(|v| Field { label: f.label().into(), value: v.clone() })
            })
            .collect(),
        false => Vec::new(),
    };
    let name = job.fields.get("name").map(|n| one_line(n).chars().take(NAME_MAX).collect());
    EmailData {
        form_title: form.title.clone(),
        reference: job.reference(),
        name: name.unwrap_or_default(),
        received_at: job.received_at.format("%Y-%m-%d %H:%M UTC").to_string(),
        fields,
        subject: form.email.confirmation_subject.clone(),
        intro: form.email.confirmation_intro.clone(),
        signature: form.email.signature.clone(),
    }
}
