//! Side-effect kinds (their records' states are in `states`).

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_round_trip() {
        for k in EffectKind::ALL {
            assert_eq!(EffectKind::parse(k.as_str()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
    }
}
