//! Side-effect kinds and the states of a side-effect record.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectKind {
    CrmLead,
    ConfirmationEmail,
    OwnerNotification,
}

impl EffectKind {
    pub const ALL: [EffectKind; 3] =
        [EffectKind::CrmLead, EffectKind::ConfirmationEmail, EffectKind::OwnerNotification];

    pub fn as_str(self) -> &'static str {
        match self {
            EffectKind::CrmLead => "crm_lead",
            EffectKind::ConfirmationEmail => "confirmation_email",
            EffectKind::OwnerNotification => "owner_notification",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
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
        for k in EffectKind::ALL {
            assert_eq!(EffectKind::parse(k.as_str()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        for s in EffectState::ALL {
            assert_eq!(EffectState::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}
