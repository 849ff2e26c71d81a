//! Side-effect kinds (their records' states are in `states`).

use serde::Serialize;

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
