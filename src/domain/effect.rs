//! Side-effect kinds and the states of a side-effect record.

use serde::{Deserialize, Serialize};

/// A side-effect kind's name (`crm_lead`, `slack`, …). Each kind is one file under
/// `src/effects/`, listed once in `effects::KINDS`; a configured name becomes an `EffectKind`
/// there (its `Deserialize`), and the constants name the kinds other modules refer to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct EffectKind(&'static str);

impl EffectKind {
    pub const CRM_LEAD: EffectKind = EffectKind("crm_lead");
    pub const CONFIRMATION_EMAIL: EffectKind = EffectKind("confirmation_email");
    pub const OWNER_NOTIFICATION: EffectKind = EffectKind("owner_notification");

    /// The kind called `name` (in `effects = [...]`, result bodies and records).
    pub const fn named(name: &'static str) -> EffectKind {
        EffectKind(name)
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EffectState {
    Pending,
    Sending,
    Sent,
    Unknown,
    FailedFinal,
    Cancelled,
}

impl EffectState {
    pub const ALL: [EffectState; 6] = [
        EffectState::Pending,
        EffectState::Sending,
        EffectState::Sent,
        EffectState::Unknown,
        EffectState::FailedFinal,
        EffectState::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EffectState::Pending => "PENDING",
            EffectState::Sending => "SENDING",
            EffectState::Sent => "SENT",
            EffectState::Unknown => "UNKNOWN",
            EffectState::FailedFinal => "FAILED_FINAL",
            EffectState::Cancelled => "CANCELLED",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_round_trip() {
        for s in EffectState::ALL {
            assert_eq!(EffectState::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}
