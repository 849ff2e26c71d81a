//! The `check-config` use case (`onceform check-config`, and every start): every problem in
//! a configuration, each named by its path: the configuration's own rules
//! (`config::problems`, in `config/rules.rs`, which ask each webhook source's verifier and
//! handler kinds theirs), the CRM adapter's (`effects::crm`) and each effect kind's (`effects`);
//! and, for `onceform check-config`, the signing secrets the configuration names
//! (`secret_problems`), read from the environment.

use std::path::Path;

use crate::config::{Config, ConfigError};

/// All problems found in `config`; empty when it is usable.
pub fn problems(config: &Config) -> Vec<String> {
    let mut out = crate::config::problems(config);
    out.extend(crate::services::effects::crm::problems(&config.crm));
    for (name, form) in &config.forms {
        out.extend(crate::services::effects::problems(&format!("forms.{name}"), form));
    }
    out.extend(scanner_problems(config));
    out
}

/// What is wrong with the secrets `config` names, read from `env` as `serve` and `worker`
/// read them at start (where each refuses to start on its own): each webhook source's
/// signing secrets (`hooks.NAME`), each `webhook` handler's and each form effect's. A
/// message names the setting and the variable, never the value.
pub fn secret_problems(config: &Config, env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut out = Vec::new();
    for (source, hook) in &config.hooks {
        let at = format!("hooks.{source}");
        out.extend(hook.verify.secret_problems(&at, hook, env));
        for h in &hook.handlers {
            out.extend(h.kind.0.secret_problems(&format!("{at}.handlers.{}", h.name), h, env));
        }
    }
    for (name, form) in &config.forms {
        out.extend(crate::services::effects::secret_problems(&format!("forms.{name}"), form, env));
    }
    out
}

/// `ONCEFORM_CLAMD` must be an address, and is needed by a form with `scan = "clamd"`.
fn scanner_problems(config: &Config) -> Vec<String> {
    use crate::config::ScanMode;
    let mut out: Vec<String> = config
        .server
        .clamd
        .as_deref()
        .and_then(|a| crate::services::scan::ScannerAddr::parse(a).err())
        .map(|e| format!("ONCEFORM_CLAMD: {e}"))
        .into_iter()
        .collect();
    for (name, form) in config.forms.iter().filter(|(_, f)| f.scan == ScanMode::Clamd) {
        if config.server.clamd.is_none() {
            out.push(format!(
                "forms.{name}.scan = \"clamd\": set ONCEFORM_CLAMD (unix:/path or tcp:host:port)"
            ));
        }
        if !form.has_file_field() {
            out.push(format!("forms.{name}.scan: the form has no file field to scan"));
        }
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
