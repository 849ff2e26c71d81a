//! `check-config`: every problem in a configuration, each named by its path: the
//! configuration's own rules (`config::problems`) and each effect kind's (`effects`).

use std::path::Path;

use crate::config::{Config, ConfigError, CrmAdapterName};

/// All problems found in `config`; empty when it is usable.
pub fn problems(config: &Config) -> Vec<String> {
    let mut out = crate::config::problems(config);
    if config.crm.adapter() != CrmAdapterName::File {
        out.extend(crate::effects::crm::url_policy::check_config(&config.crm).err());
    }
    for (source, hook) in &config.hooks {
        out.extend(crate::effects::crm::url_policy::forward_problems(source, hook));
    }
    for (name, form) in &config.forms {
        out.extend(crate::effects::problems(&format!("forms.{name}"), form));
    }
    for (source, hook) in &config.hooks {
        for h in hook.handlers.iter().filter(|h| h.kind == crate::config::hooks::HandlerKind::Webhook) {
            let at = format!("hooks.{source}.handlers.{}.url", h.name);
            out.extend(
                h.url
                    .as_deref()
                    .map_or_else(Vec::new, |u| crate::effects::webhook::url_problems(&at, u, false)),
            );
        }
    }
    out
}

/// What check-config warns about without refusing the configuration.
pub fn warnings(config: &Config) -> Vec<String> {
    let mut out = crate::config::warnings(config);
    for (source, hook) in &config.hooks {
        out.extend(hook.warnings(source));
    }
    out
}

/// Reads `path` (or the built-in default), applies `env` overrides and checks the result.
pub fn load(path: Option<&Path>, env: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
    Config::load(path, env, problems)
}
