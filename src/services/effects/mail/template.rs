//! The emails as typed askama templates (`templates/email/`), rendered in one pass: what a
//! visitor typed is data, escaped in the HTML part and never read as a template.

use askama::Template;

use crate::base::i18n::{Arg, Locale};

/// Subject, plain text and HTML of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The `Content-Language` of the message.
    pub language: Locale,
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// One labelled value as shown in an email.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub label: String,
    pub value: String,
}

impl Field {
    /// The value's lines (a textarea keeps its line breaks: `<br>` in the HTML part).
    pub fn lines(&self) -> Vec<&str> {
        self.value.split('\n').collect()
    }
}

/// What both emails can show. Every text here is data.
#[derive(Debug, Clone, Default)]
pub struct EmailData {
    /// The language of every built-in text (and of `received_at`).
    pub locale: Locale,
    pub form_title: String,
    pub reference: String,
    /// The visitor's name on one line (confirmation greeting).
    pub name: String,
    pub received_at: String,
    /// The submitted fields: always in the owner notification, in the confirmation only
    /// when the form sets `confirmation_echo`.
    pub fields: Vec<Field>,
    /// The operator's texts from `[forms.F.email]`.
    pub subject: Option<String>,
    pub intro: Option<String>,
    pub signature: Option<String>,
}

/// The four parts of the two emails, one template each, all reading one `EmailData`.
#[derive(Template)]
enum EmailView<'a> {
    #[template(path = "email/confirmation.txt")]
    ConfirmationText { email: &'a EmailData },
    #[template(path = "email/confirmation.html")]
    ConfirmationHtml { email: &'a EmailData },
    #[template(path = "email/owner_notification.txt")]
    OwnerText { email: &'a EmailData },
    #[template(path = "email/owner_notification.html")]
    OwnerHtml { email: &'a EmailData },
}

/// The confirmation to the visitor.
pub fn confirmation(d: &EmailData) -> Result<Rendered, askama::Error> {
    let lead = d.subject.as_deref().map(one_line).filter(|s| !s.is_empty());
    let lead = lead.unwrap_or_else(|| d.locale.text("email-confirmation-subject"));
    Ok(Rendered {
        language: d.locale,
        subject: with_reference(d, &lead),
        text: EmailView::ConfirmationText { email: d }.render()?,
        html: EmailView::ConfirmationHtml { email: d }.render()?,
    })
}

/// The inquiry to the form's owners.
pub fn owner_notification(d: &EmailData) -> Result<Rendered, askama::Error> {
    let lead = d.locale.format("email-owner-subject", &[("form", Arg::Str(&one_line(&d.form_title)))]);
    Ok(Rendered {
        language: d.locale,
        subject: with_reference(d, &lead),
        text: EmailView::OwnerText { email: d }.render()?,
        html: EmailView::OwnerHtml { email: d }.render()?,
    })
}

/// `subject (OF-…)`, as the locale writes it.
fn with_reference(d: &EmailData, subject: &str) -> String {
    d.locale.format(
        "email-subject-reference",
        &[("subject", Arg::Str(subject)), ("reference", Arg::Str(&d.reference))],
    )
}

/// Per-form template files (`templates/email/FORM/`) are no longer read: a template a
/// file can change at run time is one the visitor's text could reach. Say so at start.
pub fn warn_stale_overrides(forms: impl Iterator<Item = impl AsRef<str>>) {
    for form in forms {
        let dir = std::path::Path::new("templates/email").join(form.as_ref());
        if dir.is_dir() {
            tracing::warn!(
                dir = %dir.display(),
                "per-form email template files are no longer read; use [forms.FORM.email] texts"
            );
        }
    }
}

/// `s` on one line: whitespace runs (line breaks included) become one space, trimmed.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "{{ fields_text }} {% if true %}x{% endif %} <script>alert(1)</script> & \"'";

    fn data(echo: bool) -> EmailData {
        EmailData {
            form_title: "Contact".into(),
            reference: "OF-1".into(),
            name: HOSTILE.into(),
            received_at: "today".into(),
            fields: if echo {
                vec![Field { label: "Message".into(), value: format!("{HOSTILE}\nline two") }]
            } else {
                Vec::new()
            },
            ..EmailData::default()
        }
    }

    #[test]
    fn visitor_text_is_data_in_one_pass_and_escaped_in_html() {
        let r = confirmation(&data(false)).unwrap();
        assert_eq!(r.subject, "We received your message (OF-1)");
        assert!(r.text.contains(&format!("Hello {HOSTILE},")), "{}", r.text);
        assert!(!r.html.contains("<script>"), "{}", r.html);
        assert!(r.html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"), "{}", r.html);
        assert!(r.html.contains("{{ fields_text }}"), "a placeholder stays literal: {}", r.html);
        assert!(!r.text.contains("What you sent us"));
    }

    #[test]
    fn echo_and_owner_notification_list_fields_escaped() {
        for r in [confirmation(&data(true)).unwrap(), owner_notification(&data(true)).unwrap()] {
            assert!(r.text.contains(&format!("Message: {HOSTILE}\nline two")), "{}", r.text);
            assert!(r.html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"), "{}", r.html);
            assert!(r.html.contains("<br>line two"), "{}", r.html);
            assert!(!r.html.contains("<script>"));
        }
    }

    #[test]
    fn built_in_texts_are_in_the_emails_locale() {
        let d = EmailData {
            locale: Locale::ZhTw,
            form_title: "聯絡我們".into(),
            name: "陳小明".into(),
            received_at: "2026年12月1日（週二）21:05（UTC+8）".into(),
            ..data(false)
        };
        let r = confirmation(&d).unwrap();
        assert_eq!((r.language, r.subject.as_str()), (Locale::ZhTw, "我們已收到您的訊息（OF-1）"));
        assert!(r.text.starts_with("陳小明 您好：\n\n感謝您透過「聯絡我們」與我們聯絡。我們已於 2026年12月1日（週二）21:05（UTC+8） 收到"), "{}", r.text);
        assert!(r.html.contains("您的案件編號："), "{}", r.html);
        assert_eq!(owner_notification(&d).unwrap().subject, "新的詢問：聯絡我們（OF-1）");
    }

    #[test]
    fn operator_texts_replace_the_built_in_sentences() {
        let d = EmailData {
            subject: Some("Thanks\nfrom us".into()),
            intro: Some("We'll call <you>.".into()),
            signature: Some("The team".into()),
            ..data(false)
        };
        let r = confirmation(&d).unwrap();
        assert_eq!(r.subject, "Thanks from us (OF-1)");
        assert!(r.html.contains("We&#39;ll call &#60;you&#62;."), "{}", r.html);
        assert!(r.text.contains("The team"));
    }
}
