//! What both email effects take from a job: the visitor's address and the email's data.

use lettre::message::Mailbox;

use super::template::{one_line, EmailData, Field};
use crate::config::FormConfig;
use crate::domain::FieldType;
use crate::effects::Job;
use crate::i18n::local_date_time;

/// Characters of the visitor's name a confirmation shows at most.
const NAME_MAX: usize = 100;

/// The visitor's address: the value of the form's first email field.
pub fn visitor(form: &FormConfig, job: &Job) -> Option<Mailbox> {
    let field = form.fields.iter().find(|f| f.kind == FieldType::Email)?;
    crate::domain::ascii_email(job.fields.get(&field.name)?)?.parse().ok()
}

/// The data of one email, in the form's email locale; `with_fields` lists every submitted field.
pub fn data(form: &FormConfig, job: &Job, with_fields: bool) -> EmailData {
    let locale = form.email_locale();
    let texts = form.email_in(locale);
    let fields = match with_fields {
        true => form
            .fields
            .iter()
            .filter_map(|f| {
                job.fields
                    .get(&f.name)
                    .map(|v| Field { label: form.label_in(f, locale).into(), value: v.clone() })
            })
            .collect(),
        false => Vec::new(),
    };
    let name = job.fields.get("name").map(|n| one_line(n).chars().take(NAME_MAX).collect());
    EmailData {
        locale,
        form_title: form.title_in(locale).to_string(),
        reference: job.reference(),
        name: name.unwrap_or_default(),
        received_at: local_date_time(locale, job.received_at, form.time_zone),
        fields,
        subject: texts.confirmation_subject,
        intro: texts.confirmation_intro,
        signature: texts.signature,
    }
}
