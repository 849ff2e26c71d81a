//! `[forms.NAME.crm]`: what the CRM gets of this form beyond its leads (the leads themselves
//! are the `crm_lead` effect, mapped by `crm_fields`; the CRM is `[crm]`).

use serde::Deserialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FormCrmConfig {
    /// What an admin's "duplicate of" decision does in the CRM.
    pub on_duplicate: OnDuplicate,
}

/// `on_duplicate`: what a "duplicate of" decision does in the CRM.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnDuplicate {
    /// Nothing beyond the decision itself: the duplicate's waiting effects are cancelled.
    #[default]
    Ignore,
    /// The duplicate's lead is never created once decided (a retry of it is refused), and
    /// a lead already created gets one note linking it to the original's lead (`crm_note`).
    Note,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_duplicate_is_ignore_unless_set_and_refuses_other_words() {
        assert_eq!(FormCrmConfig::default().on_duplicate, OnDuplicate::Ignore);
        let note: FormCrmConfig = toml::from_str(r#"on_duplicate = "note""#).unwrap();
        assert_eq!(note.on_duplicate, OnDuplicate::Note);
        assert!(toml::from_str::<FormCrmConfig>(r#"on_duplicate = "merge""#).is_err());
        assert!(toml::from_str::<FormCrmConfig>(r#"on_dup = "note""#).is_err());
    }
}
