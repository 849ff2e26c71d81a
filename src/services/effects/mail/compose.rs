//! What both email effects take from a job: the visitor's address and the email's data.

use lettre::message::Mailbox;

use super::template::{one_line, EmailData, Field};
use crate::base::i18n::{local_date_time, Locale};
use crate::config::FormConfig;
use crate::domain::{is_invisible, FieldType};
use crate::services::effects::Job;

/// Characters of the visitor's name a confirmation shows at most.
const NAME_MAX: usize = 100;

/// The visitor's address: the value of the form's first email field, width-folded (an IME's
/// full-width `ｍｅｉ＠ｅｘａｍｐｌｅ．ｃｏｍ` is the mailbox `mei@example.com`; it was validated so),
/// its internationalised domain as IDNA.
pub fn visitor(form: &FormConfig, job: &Job) -> Option<Mailbox> {
    let field = form.fields.iter().find(|f| f.kind == FieldType::Email)?;
    crate::domain::ascii_email(&crate::domain::fold_width(job.fields.get(&field.name)?))?.parse().ok()
}

/// The data of one email, in the form's email locale; `with_fields` lists every submitted
/// field and the visitor's name. A confirmation passes the form's `confirmation_echo`: it
/// goes to whatever address was typed, so without the opt-in it carries nothing a stranger
/// chose, the name included. A `file` field shows `files(field name, value)`, never the
/// stored value (`attach::names`, or the owner notification's lines).
pub fn data(
    form: &FormConfig,
    job: &Job,
    with_fields: bool,
    locale: Locale,
    files: &dyn Fn(&str, &str) -> String,
) -> EmailData {
    let texts = form.email_in(locale);
    let fields = match with_fields {
        true => {
            let declared = form.fields.iter().filter_map(|f| {
                job.fields
                    .get(&f.name)
                    .map(|v| match f.kind {
                        FieldType::File => files(&f.name, v),
                        _ => v.clone(),
                    })
                    .map(|value| Field { label: form.label_in(f, locale).into(), value })
            });
            // `undeclared_fields = "keep"`: what else the form sent, under its own name.
            let kept = job
                .fields
                .iter()
                .filter(|(name, _)| form.field(name).is_none())
                .map(|(name, v)| Field { label: name.clone(), value: v.clone() });
            declared.chain(kept).collect()
        }
        false => Vec::new(),
    };
    let name = job.fields.get("name").filter(|_| with_fields).map(|n| name_line(n));
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

/// The name as an email shows it: control and invisible characters (CR, LF, tab, ESC,
/// bidirectional overrides, zero-width marks: `domain::is_invisible`) become spaces, runs of whitespace one space,
/// at most `NAME_MAX` characters.
pub fn name_line(name: &str) -> String {
    let visible: String =
        name.chars().map(|c| if c.is_control() || is_invisible(c) { ' ' } else { c }).collect();
    one_line(&visible).chars().take(NAME_MAX).collect()
}

#[cfg(test)]
mod tests {
    use super::name_line;

    #[test]
    fn a_name_with_line_breaks_and_control_characters_is_one_plain_line() {
        assert_eq!(
            name_line("Eve\r\nBcc: victim@evil.example\r\nSubject: injected"),
            "Eve Bcc: victim@evil.example Subject: injected"
        );
        assert_eq!(name_line("Ada\u{1b}[2J\u{0}\u{202E}xoF\u{2028}Lovelace\u{85}"), "Ada [2J xoF Lovelace");
        assert_eq!(name_line(&"x".repeat(500)).len(), 100);
    }
}
