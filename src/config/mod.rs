//! Configuration: the TOML file (or the built-in default) plus environment overrides.

pub mod admin;
pub mod admin_forms;
mod alerts;
pub mod crm;
mod database;
mod database_url;
pub mod definition;
mod duplicates;
mod email;
mod environment;
mod file_errors;
mod form;
mod form_crm;
mod form_handle;
pub mod hooks;
pub mod kind_settings;
pub mod live;
pub mod locale;
mod metrics_token;
pub mod oidc;
pub mod parsed;
pub mod proxies;
mod redact;
pub mod retention;
pub mod route;
mod rules;
pub mod secrets;
mod server;
mod smtp;
mod spam;
mod worker;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::domain::FieldType;

pub use admin::AdminConfig;
pub use admin_forms::{AdminMerge, FormOrigin};
pub use alerts::AlertsConfig;
pub use crm::CrmConfig;
pub use database::DatabaseConfig;
pub use database_url::DatabaseUrl;
pub use definition::Definition;
pub use duplicates::{DuplicateConfig, DuplicatePolicy};
pub use email::EmailTexts;
pub use environment::ENVIRONMENT;
pub use form::{FormConfig, RateLimitConfig, ScanMode, ScannerDown};
pub use form_crm::{FormCrmConfig, OnDuplicate};
pub use form_handle::Form;
pub use hooks::HookConfig;
pub use kind_settings::KindSettings;
pub use live::{Forms, LiveForms};
pub use locale::{FormTexts, LocaleChoice};
pub use metrics_token::MetricsToken;
pub use oidc::OidcConfig;
pub use proxies::TrustedProxies;
pub use redact::redact_url;
pub use retention::{PurgeConfig, RetentionConfig, Window};
pub use route::{RouteConfig, WhenValue};
pub use rules::{open_metrics_warning, problems, warnings};
pub use secrets::Secrets;
pub use server::{FileStoreKind, ServerConfig, CLAMD_MAX_BYTES};
pub use smtp::SmtpConfig;
pub use spam::{is_origin, CaptchaConfig, CaptchaProvider};
pub use worker::WorkerConfig;

/// The built-in configuration: a demo `contact` form on SQLite.
pub const DEFAULT_CONFIG: &str = include_str!("default.toml");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub server: ServerConfig,
    #[serde(default)]
    pub database: DatabaseConfig,
    #[serde(default)]
    pub smtp: SmtpConfig,
    #[serde(default)]
    pub crm: CrmConfig,
    #[serde(default)]
    pub worker: WorkerConfig,
    #[serde(default)]
    pub forms: BTreeMap<String, FormConfig>,
    /// Inbound webhook sources (`[hooks.NAME]`).
    #[serde(default)]
    pub hooks: BTreeMap<String, HookConfig>,
    #[serde(default)]
    pub alerts: AlertsConfig,
    #[serde(default)]
    pub purge: PurgeConfig,
    /// Sign-in to the admin (`[admin.oidc]`).
    #[serde(default)]
    pub admin: AdminConfig,
    /// What the forms in force took from the admin-defined forms (`services::admin_forms`).
    #[serde(skip)]
    pub admin_forms: AdminMerge,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("config {origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("config {origin} has {} problem(s): {}", .problems.len(), .problems.join("; "))]
    Invalid { origin: String, problems: Vec<String> },
}

impl Config {
    /// The `consent` fields of each form that has one (form → field names): a tombstone keeps
    /// their values, the versions agreed to (`db::purge::tombstone`).
    pub fn consent_fields(&self) -> BTreeMap<String, Vec<String>> {
        let consent = |form: &FormConfig| -> Vec<String> {
            form.fields.iter().filter(|f| f.kind == FieldType::Consent).map(|f| f.name.clone()).collect()
        };
        self.forms
            .iter()
            .map(|(name, form)| (name.clone(), consent(form)))
            .filter(|(_, f)| !f.is_empty())
            .collect()
    }

    /// Reads `path` (or the built-in default), applies `env` overrides and checks the result
    /// with `check` (`crate::services::check_config::load` checks it with every rule).
    pub fn load(
        path: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
        check: impl Fn(&Config) -> Vec<String>,
    ) -> Result<Config, ConfigError> {
        let (origin, text) = match path {
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .map_err(|source| ConfigError::Read { path: p.display().to_string(), source })?;
                (p.display().to_string(), text)
            }
            None => ("(built-in default)".to_string(), DEFAULT_CONFIG.to_string()),
        };
        let mut config =
            Config::parse(&text).map_err(|message| ConfigError::Parse { origin: origin.clone(), message })?;
        let problems = match config.apply_env(env) {
            Ok(()) => check(&config),
            Err(problem) => vec![problem],
        };
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError::Invalid { origin, problems })
        }
    }

    /// Parses TOML text; the message names each problem's line (every unknown key, with
    /// the valid key it resembles, then the first other problem), `; `-separated.
    pub fn parse(text: &str) -> Result<Config, String> {
        Config::parse_problems(text).map_err(|p| p.join("; "))
    }

    /// `parse`, each problem apart.
    pub fn parse_problems(text: &str) -> Result<Config, Vec<String>> {
        let keys_of = |table: &str| match table.split('.').collect::<Vec<_>>()[..] {
            ["forms", _] => FormConfig::KEYS,
            ["forms", _, "routes"] => RouteConfig::KEYS,
            _ => &[],
        };
        let mut config: Config = file_errors::from_toml(text, keys_of)?;
        config.define_forms(text);
        config.link_duplicate_groups();
        Ok(config)
    }

    /// Gives each form its definition and version: its table in `text` (which parsed).
    fn define_forms(&mut self, text: &str) {
        let Ok(table) = toml::from_str::<toml::Table>(text) else { return };
        let Some(toml::Value::Table(forms)) = table.get("forms") else { return };
        for (name, form) in &mut self.forms {
            if let Some(definition) = forms.get(name) {
                form.definition = Definition::of(definition);
            }
        }
    }

    /// Tells each form with a `duplicates.group` the forms of its group (for the look-up).
    pub fn link_duplicate_groups(&mut self) {
        let groups: Vec<(String, Option<String>)> =
            self.forms.iter().map(|(name, f)| (name.clone(), f.duplicates.group.clone())).collect();
        for form in self.forms.values_mut() {
            form.duplicates.group_forms = match &form.duplicates.group {
                Some(g) => {
                    groups.iter().filter(|(_, fg)| fg.as_ref() == Some(g)).map(|(n, _)| n.clone()).collect()
                }
                None => Vec::new(),
            };
        }
    }

    /// The built-in default configuration (a demo `contact` form).
    pub fn builtin() -> Result<Config, String> {
        Config::parse(DEFAULT_CONFIG)
    }

    /// Deploy-time settings from the environment override the file; the error names the
    /// setting whose value does not parse.
    pub fn apply_env(&mut self, env: impl Fn(&str) -> Option<String>) -> Result<(), String> {
        if let Some(url) = env("ONCEFORM_DATABASE_URL") {
            self.database.url = parsed::database_url(&url)?;
        }
        if let Some(bind) = env("ONCEFORM_BIND") {
            self.server.bind = parsed::bind(&bind)?;
        }
        if let Some(url) = env("ONCEFORM_SMTP_URL") {
            self.smtp.url = Some(url);
        }
        if let Some(url) = env("ONCEFORM_CRM_URL") {
            self.crm.url = Some(url);
        }
        if let Some(v) = env("ONCEFORM_TRUSTED_PROXIES") {
            let entries: Vec<String> =
                v.split(',').map(str::trim).filter(|e| !e.is_empty()).map(String::from).collect();
            self.server.trusted_proxies = parsed::trusted_proxies(&entries)?;
        }
        if let Some(token) = env("ONCEFORM_METRICS_TOKEN").filter(|t| !t.is_empty()) {
            self.server.metrics_token = Some(MetricsToken::new(token));
        }
        if let Some(addr) = env("ONCEFORM_CLAMD").filter(|a| !a.is_empty()) {
            self.server.clamd = Some(addr);
        }
        if let Some(v) = env("ONCEFORM_RATE_LIMIT") {
            self.server.rate_limit = !matches!(v.trim(), "off" | "0" | "false" | "no");
        }
        Ok(())
    }

    /// `server.secure_cookies`, or on unless the server is bound to a loopback address.
    pub fn secure_cookies(&self) -> bool {
        self.server.secure_cookies.unwrap_or(!self.server.bind.ip().is_loopback())
    }

    pub fn form(&self, name: &str) -> Option<&FormConfig> {
        self.forms.get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_overrides_deploy_time_settings() {
        let mut c = Config::builtin().unwrap();
        let applied = c.apply_env(|name| {
            match name {
                "ONCEFORM_BIND" => Some("0.0.0.0:9000"),
                "ONCEFORM_RATE_LIMIT" => Some("off"),
                "ONCEFORM_TRUSTED_PROXIES" => Some(" 10.0.0.1, 10.1.0.0/16 ,"),
                _ => None,
            }
            .map(String::from)
        });
        assert_eq!(applied, Ok(()));
        assert_eq!(c.server.bind.to_string(), "0.0.0.0:9000");
        assert!(!c.server.rate_limit);
        assert_eq!(
            c.server.trusted_proxies,
            parsed::trusted_proxies(&["10.0.0.1".into(), "10.1.0.0/16".into()]).unwrap()
        );
        assert!(
            crate::services::check_config::problems(&c).is_empty(),
            "{:?}",
            crate::services::check_config::problems(&c)
        );
    }
}
