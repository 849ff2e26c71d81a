//! `[forms.NAME.duplicates]`: the duplicate detector's window, policy and matching.

use serde::Deserialize;
use validator::Validate;

#[derive(Debug, Clone, Deserialize, Validate)]
#[serde(deny_unknown_fields, default)]
pub struct DuplicateConfig {
    /// Earlier submissions of the same form within this window are compared.
    #[validate(range(min = 1, max = 8760))]
    pub window_hours: u32,
    /// `flag`: pairs are listed for review and effects go ahead; `hold`: the effects of a
    /// submission with a pair scoring at least `hold_score` wait for a decision.
    pub policy: DuplicatePolicy,
    #[validate(range(min = 0.0, max = 1.0))]
    pub hold_score: f64,
    /// Forms of one group are screened against each other (default: the form alone).
    #[validate(length(min = 1, max = 64))]
    pub group: Option<String>,
    /// Email domains whose mailboxes ignore dots in the local part (`a.da@` = `ada@`).
    pub dotless_domains: Vec<String>,
    /// Regions tried, in order, for a national-format phone number that is not a valid
    /// number of the form's `default_region` (a bilingual site: `["US"]` beside `TW`).
    pub other_regions: Vec<String>,
    /// The fields holding the sender's name and company (matched as name plus company).
    pub name_field: String,
    pub company_field: String,
    /// The forms of `group` (this one included), filled in when the configuration is parsed.
    #[serde(skip)]
    pub group_forms: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DuplicatePolicy {
    #[default]
    Flag,
    Hold,
}

impl Default for DuplicateConfig {
    fn default() -> Self {
        Self {
            window_hours: 72,
            policy: DuplicatePolicy::Flag,
            hold_score: 0.8,
            group: None,
            dotless_domains: vec!["gmail.com".into(), "googlemail.com".into()],
            other_regions: Vec::new(),
            name_field: "name".into(),
            company_field: "company".into(),
            group_forms: Vec::new(),
        }
    }
}
