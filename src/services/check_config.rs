//! The `check-config` use case (`onceform check-config`, and every start): every problem in
//! a configuration, each named by its path: the configuration's own rules
//! (`config::problems`, in `config/rules.rs`, which ask each webhook source's verifier and
//! handler kinds theirs), the CRM adapter's (`effects::crm`) and each effect kind's (`effects`);
//! and, for `onceform check-config`, the signing secrets the configuration names
//! (`secret_problems`), read from the environment.

use std::path::Path;

use crate::config::{Config, ConfigError, FormConfig};

/// All problems found in `config`; empty when it is usable.
pub fn problems(config: &Config) -> Vec<String> {
    let mut out = crate::config::problems(config);
    out.extend(crate::services::effects::crm::problems(&config.crm));
    for (name, form) in &config.forms {
        out.extend(kind_problems(&format!("forms.{name}"), form));
    }
    out.extend(scanner_problems(config));
    out
}

/// Each effect kind's problems with `form` (at `forms.NAME`) and with each of its routes
/// (`[[forms.NAME.routes]]`), a route being checked as the form with the route's `effects`
/// and `notify` and its own kind tables laid over the form's: a kind a route lists without its
/// settings, `owner_notification` on a route without addresses, a route's table of a kind that
/// takes none. A problem the form's own check names is not named again per route.
fn kind_problems(at: &str, form: &FormConfig) -> Vec<String> {
    let mut bare = form.clone();
    bare.routes.clear();
    // Every kind the form or one of its routes lists: a table is not unused while a route
    // uses it.
    let mut everywhere = bare.effects.clone();
    for kind in form.routes.iter().flat_map(|r| r.effects.iter().flatten()) {
        if !everywhere.contains(kind) {
            everywhere.push(kind.clone());
        }
    }
    let out = listed_problems(at, &bare, &everywhere);
    let mut routed_out = Vec::new();
    for (i, route) in form.routes.iter().enumerate() {
        let here = format!("{at}.routes[{i}] ({})", route.label(i));
        let (settings, refused) = crate::services::effects::route_settings(&bare, route);
        for kind in refused {
            routed_out.push(format!(
                "{here}.{}: a route's own settings for a kind are not supported yet; \
                 the route uses [{at}.{}]",
                kind.as_str(),
                kind.as_str()
            ));
        }
        if route.effects.is_none() && route.notify.is_none() && route.settings.kinds().next().is_none() {
            continue; // the form's own effects, notify and tables, checked above
        }
        let mut routed = bare.clone();
        routed.settings = settings;
        if let Some(kinds) = &route.effects {
            routed.effects = kinds.clone();
        }
        if let Some(notify) = route.notify.as_ref().filter(|n| !n.is_empty()) {
            routed.notify = notify.clone();
        }
        routed_out.extend(
            listed_problems(&here, &routed, &everywhere)
                .into_iter()
                .filter(|p| !out.contains(&p.replace(&here, at))),
        );
    }
    out.into_iter().chain(routed_out).collect()
}

/// The kinds' problems with `form` that still hold when every kind in `everywhere` is
/// listed (a kind's table is not "set but unused" while a route lists the kind).
fn listed_problems(at: &str, form: &FormConfig, everywhere: &[crate::domain::EffectKind]) -> Vec<String> {
    let own = crate::services::effects::problems(at, form);
    let mut all = form.clone();
    all.effects = everywhere.to_vec();
    let with_all = crate::services::effects::problems(at, &all);
    own.into_iter().filter(|p| with_all.contains(p)).collect()
}

/// What is wrong with the secrets `config` names, read from `env` as `serve` and `worker`
/// read them at start (where each refuses to start on its own): each webhook source's
/// signing secrets (`hooks.NAME`), each `webhook` handler's, the CRM adapter's that needs one
/// (`pipedrive`'s token, `zoho`'s client secret and refresh token) and each form effect's. A
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
    out.extend(crate::services::effects::crm::secret_problems("crm", &config.crm, env));
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

#[cfg(test)]
mod tests {
    use crate::config::Config;

    const FORM: &str = r#"
[forms.contact]
title = "Contact"
notify = ["sales@example.com"]
effects = ["owner_notification"]
fields = [
  { name = "email", type = "email" },
  { name = "topic", type = "select", options = ["Support", "Sales"] },
]
"#;

    fn problems(routes: &str) -> String {
        let config = Config::parse(&format!("{FORM}{routes}")).unwrap_or_else(|e| panic!("parse: {e}"));
        super::problems(&config).join("\n")
    }

    #[test]
    fn routes_that_can_never_match_are_named() {
        let p = problems(
            "[[forms.contact.routes]]\nname = \"all\"\n\
             [[forms.contact.routes]]\nname = \"late\"\nwhen = { topic = \"Sales\" }\n\
             [[forms.contact.routes]]\nname = \"typo\"\nwhen = { topic = \"Suport\" }\n",
        );
        for needle in [
            "forms.contact.routes[1] (late): can never match: route all before it has no `when`",
            "forms.contact.routes[2] (typo): can never match",
            "forms.contact.routes[2] (typo).when.topic: can never match: `Suport` is not one of the field's options",
        ] {
            assert!(p.contains(needle), "missing {needle:?} in:\n{p}");
        }
        assert!(!p.contains("routes[0]"), "{p}");
    }

    #[test]
    fn a_when_key_that_is_no_field_nor_fact_is_named() {
        let p = problems("[[forms.contact.routes]]\nwhen = { topik = \"Sales\", locale = \"xx\" }\n");
        assert!(p.contains("forms.contact.routes[0] (#0).when.topik: `topik` is neither a field"), "{p}");
        assert!(p.contains("when.locale: can never match: `xx` is not a shipped locale"), "{p}");
        assert!(problems(
            "[[forms.contact.routes]]\nwhen = { topic = \"Sales\", locale = \"zh-TW\", spam = false }\n"
        )
        .is_empty());
    }

    #[test]
    fn a_route_kind_without_its_settings_or_addresses_is_named() {
        let p = problems(
            "[[forms.contact.routes]]\nname = \"chat\"\nwhen = { topic = \"Sales\" }\neffects = [\"slack\"]\n",
        );
        assert!(p.contains("forms.contact.routes[0] (chat).slack: the slack effect needs"), "{p}");
        let no_one =
            FORM.replace("notify = [\"sales@example.com\"]", "").replace("[\"owner_notification\"]", "[]");
        let config = Config::parse(&format!(
            "{no_one}[[forms.contact.routes]]\nname = \"support\"\nwhen = {{ topic = \"Support\" }}\n\
             effects = [\"owner_notification\"]\n"
        ))
        .unwrap();
        let p = super::problems(&config).join("\n");
        assert!(p.contains("forms.contact.routes[0] (support).notify: owner_notification needs"), "{p}");
        let config = Config::parse(&format!(
            "{no_one}[[forms.contact.routes]]\nname = \"support\"\nwhen = {{ topic = \"Support\" }}\n\
             effects = [\"owner_notification\"]\nnotify = [\"support@example.com\"]\n"
        ))
        .unwrap();
        assert_eq!(super::problems(&config), Vec::<String>::new());
    }

    #[test]
    fn a_slack_table_a_route_uses_is_not_unused_and_route_settings_are_refused() {
        let slack =
            "[forms.contact.slack]\nurl_env = \"SLACK_URL\"\nadmin_url = \"https://forms.example.com\"\n";
        let routes = "[[forms.contact.routes]]\nname = \"chat\"\nwhen = { topic = \"Sales\" }\n\
                      effects = [\"slack\"]\n";
        assert_eq!(problems(&format!("{slack}{routes}")), "");
        let p = problems(&format!(
            "{slack}{routes}slack = {{ url_env = \"OTHER\", admin_url = \"https://forms.example.com\" }}\n"
        ));
        assert!(p.contains("forms.contact.routes[0] (chat).slack: a route's own settings for a kind are not supported yet"), "{p}");
        let e =
            Config::parse(&format!("{FORM}[[forms.contact.routes]]\nwhen = {{}}\nnotfy = []\n")).unwrap_err();
        assert!(e.contains("notfy") && e.contains("notify"), "{e}");
    }
}
