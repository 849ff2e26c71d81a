//! A kind of form side effect in one place: its name, its own table in a form, its
//! check-config rules, whether a submission gets one, and the worker that delivers it.
//! Every kind is one file under `src/services/effects/` and one line in `KINDS`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::de::{self, Deserializer};
use serde::Deserialize;

use super::crm::CrmAdapter;
use super::mail::Mailer;
use super::{Effect, KINDS};
use crate::config::kind_settings::unknown_name;
pub use crate::config::kind_settings::{KindSettings, Settings};
use crate::config::{Config, FormConfig, Secrets};
use crate::domain::EffectKind;
use crate::services::files::Files;

/// What a kind's worker side may use; built once per process.
pub struct Deps<'a> {
    pub config: &'a Arc<Config>,
    pub crm: &'a Arc<dyn CrmAdapter>,
    pub mailer: &'a Arc<Mailer>,
    /// The attached files' store (`[server] files_dir`): the owner notification attaches
    /// them, the CRM lead uploads them.
    pub files: &'a Files,
    /// The environment as it was at start (or at the reload that built this): where the
    /// kinds read the secrets their settings name (`url_env`, `token_env`, …).
    pub secrets: &'a Secrets,
    pub timeout: Duration,
}

pub trait Kind: Sync {
    /// Its name in `effects = [...]`, in result bodies and in the records.
    fn name(&self) -> EffectKind;

    /// Parses its table `[forms.F.NAME]`; `None`: this kind takes none.
    fn settings(&self, _table: toml::Value) -> Option<Result<Settings, String>> {
        None
    }

    /// A route's own table for this kind (`line = { to_env = "…" }` in a route) laid over
    /// the form's (`form`, when it has one): the settings a submission that took the route
    /// is delivered with. `None`: this kind takes no table on a route (check-config says so).
    fn on_route(&self, _form: Option<&Settings>, _route: &Settings) -> Option<Settings> {
        None
    }

    /// Problems of `form` (called `at`, i.e. `forms.NAME`) for this kind; asked of every form.
    fn check(&self, _at: &str, _form: &FormConfig) -> Vec<String> {
        Vec::new()
    }

    /// check-config: what is wrong with the secrets this kind reads for `form` (called `at`)
    /// from `env`, as its `effect` would find at start; a message names the variable, never
    /// its value.
    fn secret_problems(
        &self,
        _at: &str,
        _form: &FormConfig,
        _env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        Vec::new()
    }

    /// Whether a submission of `form` gets a record of this kind, when `form` lists it;
    /// `filled(field)`: the submission has a value for that field.
    fn applies(&self, _form: &FormConfig, _filled: &dyn Fn(&str) -> bool) -> bool {
        true
    }

    /// Delivers and reconciles its records on the workers.
    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>>;
}

/// The registered kind named `name`.
pub fn find(name: &str) -> Option<&'static dyn Kind> {
    KINDS.iter().copied().find(|k| k.name().as_str() == name)
}

impl<'de> Deserialize<'de> for EffectKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        find(&name).map(|k| k.name()).ok_or_else(|| {
            de::Error::custom(unknown_name(
                "effect kind",
                &name,
                KINDS.iter().map(|k| k.name().as_str().to_owned()),
            ))
        })
    }
}

/// Takes the form's keys that no form setting claimed: each must be a kind's table.
impl<'de> Deserialize<'de> for KindSettings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let tables = BTreeMap::<String, toml::Value>::deserialize(d)?;
        let mut parsed = BTreeMap::new();
        for (key, table) in tables {
            let Some((kind, settings)) = find(&key).and_then(|k| Some((k.name(), k.settings(table)?))) else {
                return Err(de::Error::custom(format!("unknown field `{key}`")));
            };
            let settings = settings.map_err(|e| de::Error::custom(format!("{key}: {e}")))?;
            parsed.insert(kind, settings);
        }
        Ok(KindSettings(parsed))
    }
}
