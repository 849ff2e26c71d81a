//! What the chat kinds whose webhook URL is a secret in the environment share (`teams`,
//! `wecom`, and the signing robots `dingtalk` and `feishu`): their table `[forms.F.KIND]`
//! (`url_env`, for a signing robot `secret_env`, `fields`), its check-config rules, and
//! reading each form's target at start. Not a kind itself.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::chat::{field_problems, secret_var};
use super::settings::settings_of;
use super::Settings;
use crate::config::{Config, FormConfig, Secrets};
use crate::domain::EffectKind;

/// `[forms.F.KIND]` of a webhook robot, read where it is used (its kind checked it against
/// `SignedTable` or `UnsignedTable` when the config was read).
#[derive(Debug, Deserialize)]
struct HookSettings {
    /// The environment variable holding the webhook URL.
    url_env: String,
    /// The environment variable holding the signing secret (signing robots only).
    #[serde(default)]
    secret_env: Option<String>,
    /// The fields whose values the message shows (none by default).
    #[serde(default)]
    fields: Vec<String>,
}

/// The table of a robot that does not sign: its shape, checked when the config is read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "only checks the shape; `HookSettings` reads the table")]
struct UnsignedTable {
    url_env: String,
    #[serde(default)]
    fields: Vec<String>,
}

/// The table of a signing robot: its shape, checked when the config is read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "only checks the shape; `HookSettings` reads the table")]
struct SignedTable {
    url_env: String,
    secret_env: String,
    #[serde(default)]
    fields: Vec<String>,
}

/// A webhook robot kind: its name, and whether it signs its requests (needs `secret_env`).
#[derive(Debug, Clone)]
pub struct Hook {
    pub kind: EffectKind,
    pub signed: bool,
}

/// Where one form's messages go, what signs them, what they show. No `Debug`: the URL and
/// the secret are secrets.
pub struct Target {
    pub url: String,
    /// The signing secret; empty for a robot that does not sign.
    pub secret: String,
    pub fields: Vec<String>,
}

impl Hook {
    /// `Kind::settings`: a signing robot's table has `secret_env`, another's none.
    pub fn settings(self, table: toml::Value) -> Option<Result<Settings, String>> {
        Some(match self.signed {
            true => settings_of::<SignedTable>(table),
            false => settings_of::<UnsignedTable>(table),
        })
    }

    /// `Kind::check`: the table's problems in `form` (called `at`, i.e. `forms.NAME`).
    pub fn check(self, at: &str, form: &FormConfig) -> Vec<String> {
        let k = self.kind.as_str();
        let listed = form.effects.contains(&self.kind);
        let needs = if self.signed { "url_env and secret_env" } else { "url_env" };
        match form.settings.get::<HookSettings>(&self.kind) {
            None if listed => vec![format!("{at}.{k}: the {k} effect needs {needs}")],
            Some(_) if !listed => vec![format!("{at}.{k}: set, but `{k}` is not in {at}.effects")],
            Some(s) => {
                let mut out = Vec::new();
                if s.url_env.is_empty() {
                    out.push(format!("{at}.{k}.url_env: names no variable"));
                }
                match (&s.secret_env, self.signed) {
                    (Some(v), true) if v.is_empty() => {
                        out.push(format!("{at}.{k}.secret_env: names no variable"))
                    }
                    (None, true) => out.push(format!("{at}.{k}: the {k} effect needs {needs}")),
                    (Some(_), false) => {
                        out.push(format!("{at}.{k}.secret_env: {k} signs nothing: remove it"))
                    }
                    _ => {}
                }
                out.extend(field_problems(&format!("{at}.{k}"), form, &s.fields));
                out
            }
            None => Vec::new(),
        }
    }

    /// Each form's target that lists the kind, its variables read from `secrets` (the
    /// environment at start); an error names the setting and the variable, never a value.
    pub fn targets(self, config: &Config, secrets: &Secrets) -> anyhow::Result<BTreeMap<String, Target>> {
        let k = self.kind.as_str();
        let mut targets = BTreeMap::new();
        for (name, form) in &config.forms {
            let Some(s) = form.settings.get::<HookSettings>(&self.kind).filter(|_| form.lists(&self.kind))
            else {
                continue;
            };
            let at = format!("forms.{name}.{k}.url_env");
            let url = secret_var(secrets, &at, &s.url_env)?;
            let secret = match &s.secret_env {
                Some(var) => secret_var(secrets, &format!("forms.{name}.{k}.secret_env"), var)?,
                None => String::new(),
            };
            super::http::url_policy::check(&at, &url, false).map_err(|_| {
                anyhow::anyhow!("{at}: the webhook URL must be https:// (http:// only to loopback)")
            })?;
            targets.insert(name.clone(), Target { url, secret, fields: s.fields.clone() });
        }
        Ok(targets)
    }
}
