//! The `check-config` use case (`onceform check-config`, and every start): every problem in
//! a configuration, each named by its path: the configuration's own rules
//! (`config::problems`, in `config/rules.rs`, which ask each webhook source's verifier and
//! handler kinds theirs), the CRM adapter's (`effects::crm`) and each effect kind's (`effects`).

use std::path::Path;

use crate::config::{Config, ConfigError};

/// All problems found in `config`; empty when it is usable.
pub fn problems(config: &Config) -> Vec<String> {
    let mut out = crate::config::problems(config);
    out.extend(crate::services::effects::crm::problems(&config.crm));
    for (name, form) in &config.forms {
        out.extend(crate::services::effects::problems(&format!("forms.{name}"), form));
    }
    out
}

/// What check-config warns about without refusing the configuration: the configuration's
/// own warnings, the CRM adapter's (moved keys, each form's mapping against the vendor) and
/// each webhook source's.
pub fn warnings(config: &Config) -> Vec<String> {
    let mut out = crate::config::warnings(config);
    out.extend(crate::services::effects::crm::warnings(&config.crm, config.forms.iter()));
    for (source, hook) in &config.hooks {
        out.extend(hook.warnings(source));
    }
    out
}

/// Reads `path` (or the built-in default), applies `env` overrides and checks the result.
pub fn load(path: Option<&Path>, env: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
    Config::load(path, env, problems)
}
