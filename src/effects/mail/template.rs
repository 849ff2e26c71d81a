//! Email templates: `templates/email/NAME.{subject,txt,html}`, built in, and overridable per
//! form at run time by files under `templates/email/FORM/`.

use std::path::Path;

/// Subject, plain text and HTML of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub subject: String,
    pub text: String,
    pub html: String,
}

fn builtin(name: &str, ext: &str) -> &'static str {
    match (name, ext) {
        ("confirmation", "subject") => include_str!("../../../templates/email/confirmation.subject"),
        ("confirmation", "txt") => include_str!("../../../templates/email/confirmation.txt"),
        ("confirmation", "html") => include_str!("../../../templates/email/confirmation.html"),
        ("owner_notification", "subject") => {
            include_str!("../../../templates/email/owner_notification.subject")
        }
        ("owner_notification", "txt") => include_str!("../../../templates/email/owner_notification.txt"),
        ("owner_notification", "html") => include_str!("../../../templates/email/owner_notification.html"),
        _ => "",
    }
}

/// Renders template `name` for `form`, replacing `{{ var }}`; values are HTML-escaped in
/// the HTML part except variables whose name ends in `_html` (built escaped).
pub fn render(name: &str, form: &str, vars: &[(&str, String)]) -> Rendered {
    let load = |ext: &str| {
        let custom = Path::new("templates/email").join(form).join(format!("{name}.{ext}"));
        std::fs::read_to_string(custom).unwrap_or_else(|_| builtin(name, ext).to_string())
    };
    Rendered {
        subject: fill(&load("subject"), vars, false).lines().next().unwrap_or("").trim().to_string(),
        text: fill(&load("txt"), vars, false),
        html: fill(&load("html"), vars, true),
    }
}

fn fill(template: &str, vars: &[(&str, String)], html: bool) -> String {
    let mut out = template.to_string();
    for (key, value) in vars {
        let value = if html && !key.ends_with("_html") { escape(value) } else { value.clone() };
        out = out.replace(&format!("{{{{ {key} }}}}"), &value);
    }
    out
}

pub fn escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '&' => "&amp;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&#39;".to_string(),
            c => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_and_escapes_the_html_part_only() {
        let vars = [
            ("name", "<b>Ada</b>".to_string()),
            ("reference", "OF-1".to_string()),
            ("form_title", "Contact".into()),
            ("received_at", "today".into()),
        ];
        let r = render("confirmation", "contact", &vars);
        assert_eq!(r.subject, "We received your message (OF-1)");
        assert!(r.text.contains("Hello <b>Ada</b>,"));
        assert!(r.html.contains("Hello &lt;b&gt;Ada&lt;/b&gt;,"));
        assert!(!r.html.contains("{{"));
    }
}
