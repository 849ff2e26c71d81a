//! The effect kinds' own tables in a form (`[forms.F.slack]`), kept as written: each kind
//! checks its table when the config is read (`src/services/effects/kind.rs`), and reads it as
//! its own type where it uses it (`get`).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::DeserializeOwned;

use crate::domain::EffectKind;

/// A kind's own table, as written (its kind accepted it when the config was read).
pub type Settings = toml::Value;

/// A kind's table as `T`; the error on one line.
pub fn parse_table<T: DeserializeOwned>(table: Settings) -> Result<T, String> {
    table.try_into().map_err(|e: toml::de::Error| e.to_string().trim().replace('\n', " "))
}

/// Whether a kind's table reads as `T` (a provider's `check_settings`); the error on one line.
pub fn check_table<T: DeserializeOwned>(table: &Settings) -> Result<(), String> {
    parse_table::<T>(table.clone()).map(drop)
}

/// A registry's answer to a name it does not hold: "unknown WHAT `NAME`, expected one of
/// `a`, `b`" (effect kinds, hook handlers, verifiers, CRM adapters).
pub fn unknown_name(what: &str, name: &str, names: impl IntoIterator<Item = impl fmt::Display>) -> String {
    let names: Vec<String> = names.into_iter().map(|n| format!("`{n}`")).collect();
    format!("unknown {what} `{name}`, expected one of {}", names.join(", "))
}

/// The effect kinds' own tables in one form (`[forms.F.slack]`), each checked by its kind.
#[derive(Clone, Default)]
pub struct KindSettings(pub(crate) BTreeMap<EffectKind, Settings>);

impl KindSettings {
    /// `kind`'s table read as `T` (`None`: no table, or one that does not read as `T`).
    pub fn get<T: DeserializeOwned>(&self, kind: &EffectKind) -> Option<T> {
        self.0.get(kind)?.clone().try_into().ok()
    }

    /// `kind`'s table as written.
    pub fn raw(&self, kind: &EffectKind) -> Option<&Settings> {
        self.0.get(kind)
    }

    /// Sets `kind`'s table (a route's laid over the form's).
    pub fn set(&mut self, kind: EffectKind, settings: Settings) {
        self.0.insert(kind, settings);
    }

    pub fn contains(&self, kind: &EffectKind) -> bool {
        self.0.contains_key(kind)
    }

    /// The kinds that have a table here.
    pub fn kinds(&self) -> impl Iterator<Item = &EffectKind> {
        self.0.keys()
    }
}

impl fmt::Debug for KindSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}
