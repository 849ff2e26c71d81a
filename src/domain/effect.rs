//! Side-effect kinds (their records' states are in `states`, what a record is in `record`).

use std::collections::BTreeSet;
use std::sync::Mutex;

use serde::Serialize;

/// A side-effect kind's name (`crm_lead`, `slack`, …). Each kind is one file under
/// `src/effects/`, listed once in `effects::KINDS`; a configured name becomes an `EffectKind`
/// there (its `Deserialize`), and the constants name the kinds other modules refer to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct EffectKind(&'static str);

/// Kind names read from records, each kept once (a release knows a handful of kinds; a
/// database naming more than this many is refused rather than grown without bound).
static STORED: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
const STORED_MAX: usize = 256;

impl EffectKind {
    pub const CRM_LEAD: EffectKind = EffectKind("crm_lead");
    pub const CONFIRMATION_EMAIL: EffectKind = EffectKind("confirmation_email");
    pub const OWNER_NOTIFICATION: EffectKind = EffectKind("owner_notification");

    /// The kind called `name` (in `effects = [...]`, result bodies and records).
    pub const fn named(name: &'static str) -> EffectKind {
        EffectKind(name)
    }

    /// The kind a stored record names (`side_effects.kind`), known to this release or not
    /// (a record of a kind since removed is still shown and counted).
    pub fn stored(name: &str) -> Result<EffectKind, String> {
        let mut known = STORED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(k) = known.get(name) {
            return Ok(EffectKind(k));
        }
        if known.len() >= STORED_MAX {
            return Err(format!("more than {STORED_MAX} effect kinds stored; `{name}` refused"));
        }
        let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
        known.insert(name);
        Ok(EffectKind(name))
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}
