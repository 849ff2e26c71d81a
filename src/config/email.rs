//! Per-form words in the emails: plain text the operator writes, inserted as data.

use serde::Deserialize;

/// `[forms.F.email]`: each text, when set, replaces the built-in sentence. They are data:
/// HTML-escaped in the HTML part and never read as a template, so `{{ … }}` stays literal.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailTexts {
    /// The confirmation's subject; the reference is appended in parentheses.
    pub confirmation_subject: Option<String>,
    /// The confirmation's first paragraph after the greeting.
    pub confirmation_intro: Option<String>,
    /// A closing line under both emails (e.g. the team's name).
    pub signature: Option<String>,
}
