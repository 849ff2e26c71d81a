//! Side-effect kinds (their records' states are in `states`, what a record is in `record`).

use std::borrow::Cow;

use serde::Serialize;

/// A side-effect kind's name (`crm_lead`, `slack`, …). Each kind is one file under
/// `src/effects/`, listed once in `effects::KINDS`; a configured name becomes an `EffectKind`
/// there (its `Deserialize`), and the constants name the kinds other modules refer to. A
/// kind read from a record owns its name (a kind since removed is still shown and counted).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct EffectKind(Cow<'static, str>);

impl EffectKind {
    pub const CRM_LEAD: EffectKind = EffectKind::named("crm_lead");
    pub const CONFIRMATION_EMAIL: EffectKind = EffectKind::named("confirmation_email");
    pub const OWNER_NOTIFICATION: EffectKind = EffectKind::named("owner_notification");
    /// A note in the CRM linking a decided duplicate's lead to its original's
    /// (`[forms.F.crm] on_duplicate = "note"`); made by the decision, never listed in `effects`.
    pub const CRM_NOTE: EffectKind = EffectKind::named("crm_note");

    /// The kind called `name` (in `effects = [...]`, result bodies and records).
    pub const fn named(name: &'static str) -> EffectKind {
        EffectKind(Cow::Borrowed(name))
    }

    /// The kind a stored record names (`side_effects.kind`), known to this release or not.
    pub fn stored(name: &str) -> EffectKind {
        EffectKind(Cow::Owned(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The key of the CRM note linking the decided duplicate `duplicate` to `original`
/// (`crm_note`): one per pair, so a decision undone and taken again finds the same record.
/// It ends in `:0` as every first record's key does (an admin's replay ends in its batch).
pub fn duplicate_note_key(duplicate: &str, original: &str) -> String {
    format!("{duplicate}:{}:{original}:0", EffectKind::CRM_NOTE.as_str())
}

/// The original a `crm_note` key names (`duplicate_note_key`, or a replay of it).
pub fn original_of_note_key(key: &str) -> Option<&str> {
    let mut parts = key.split(':');
    let (_, kind, original) = (parts.next()?, parts.next()?, parts.next()?);
    (kind == EffectKind::CRM_NOTE.as_str() && !original.is_empty()).then_some(original)
}

/// The external reference of a submission's first lead (`crm_lead`, batch 0): its record's key.
pub fn first_lead_ref(submission: &str) -> String {
    format!("{submission}:{}:0", EffectKind::CRM_LEAD.as_str())
}

#[cfg(test)]
mod note_key_tests {
    use super::*;

    #[test]
    fn a_stored_kind_is_the_kind_of_that_name_and_keeps_its_own() {
        assert_eq!(EffectKind::stored("crm_lead"), EffectKind::CRM_LEAD);
        let removed = EffectKind::stored("fax");
        assert_eq!(removed.as_str(), "fax");
        assert_ne!(removed, EffectKind::CRM_LEAD);
        assert_eq!(serde_json::to_string(&removed).unwrap(), "\"fax\"");
    }

    #[test]
    fn a_note_key_names_its_pair_and_gives_back_the_original() {
        let key = duplicate_note_key("0193-dup", "0193-orig");
        assert_eq!(key, "0193-dup:crm_note:0193-orig:0");
        assert_eq!(original_of_note_key(&key), Some("0193-orig"));
        assert_eq!(original_of_note_key("0193-dup:crm_note:0193-orig:3"), Some("0193-orig"), "a replay");
        assert_eq!(original_of_note_key("0193-dup:crm_lead:0"), None);
        assert_eq!(first_lead_ref("0193-orig"), "0193-orig:crm_lead:0");
    }
}
