//! The configuration's own rules: every problem in it, each named by its path (the CRM
//! adapter's and the effect kinds' rules are added by `crate::services::check_config`).

use std::collections::HashSet;

use validator::{Validate, ValidationErrors};

use super::{Config, FormConfig};
use crate::domain::{Bound, FieldConfig, FieldType};

/// The problems found in `config` by its own rules (`crate::services::check_config::problems` adds the
/// effect kinds').
pub fn problems(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    push_validation(&mut out, "server", config.server.validate());
    push_validation(&mut out, "database", config.database.validate());
    push_validation(&mut out, "worker", config.worker.validate());
    if config.worker.call_timeout_ms / 1000 >= config.worker.lease_seconds {
        out.push("worker.lease_seconds: must be longer than worker.call_timeout_ms".into());
    }
    if config.server.files == Some(super::FileStoreKind::Database)
        && matches!(config.database.url, super::DatabaseUrl::Sqlite(_))
    {
        out.push("server.files: \"database\" needs PostgreSQL; on SQLite files are kept in a folder".into());
    }
    if config.forms.is_empty() {
        out.push("forms: no form is declared".into());
    }
    for (name, hook) in &config.hooks {
        out.extend(hook.problems(name));
    }
    for (name, form) in &config.forms {
        form_problems(&mut out, name, form);
    }
    out.extend(super::retention::problems(config));
    if let Some(oidc) = &config.admin.oidc {
        out.extend(oidc.problems(config.server.public_url.as_deref()));
    }
    out
}

/// What `check-config` warns about without refusing the configuration.
pub fn warnings(config: &Config) -> Vec<String> {
    let mut out = super::retention::warnings(config);
    out.extend(database_url_warning(&config.database.url));
    out.extend(open_metrics_warning(config));
    out
}

/// `/metrics` without a token answers whoever reaches `bind`: on loopback only this host (or
/// the proxy on it); on any other address, every client that reaches it. `serve` logs it
/// too, at start-up.
pub fn open_metrics_warning(config: &Config) -> Option<String> {
    let bind = config.server.bind;
    (!bind.ip().is_loopback() && config.server.metrics_token.is_none()).then(|| {
        format!(
            "server.bind = {bind}: /metrics is open to every client that reaches this address \
             (form names, queue and refusal counts); set ONCEFORM_METRICS_TOKEN, or bind to a \
             loopback address behind a proxy"
        )
    })
}

/// A PostgreSQL URL naming several hosts follows the primary only with
/// `target_session_attrs=read-write` (or `primary`): without it libpq takes the first host
/// that answers, which after a failover may be the standby.
fn database_url_warning(url: &super::DatabaseUrl) -> Option<String> {
    let super::DatabaseUrl::Postgres(url) = url else { return None };
    let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    let (authority, query) = match rest.split_once('?') {
        Some((before, q)) => (before.split('/').next().unwrap_or(""), q),
        None => (rest.split('/').next().unwrap_or(""), ""),
    };
    let hosts = authority.rsplit('@').next().unwrap_or("");
    let params: Vec<(&str, &str)> = query.split('&').filter_map(|p| p.split_once('=')).collect();
    let many = hosts.contains(',') || params.iter().any(|(k, v)| *k == "host" && v.contains(','));
    let follows =
        params.iter().any(|(k, v)| *k == "target_session_attrs" && matches!(*v, "read-write" | "primary"));
    (many && !follows).then(|| {
        "database.url: several hosts without target_session_attrs=read-write: after a failover \
         connections may reach a standby and every write fails (add ?target_session_attrs=read-write)"
            .to_string()
    })
}

fn form_problems(out: &mut Vec<String>, name: &str, form: &FormConfig) {
    let at = format!("forms.{name}");
    if !is_slug(name, 64) {
        out.push(format!("{at}: a form name uses 1 to 64 of a-z 0-9 _ -"));
    }
    push_validation(out, &at, form.validate());
    if form.fields.is_empty() {
        out.push(format!("{at}.fields: a form needs at least one field"));
    }
    let reserved: HashSet<&str> = ["operation_id"]
        .into_iter()
        .chain(std::iter::once(form.honeypot.as_str()).filter(|h| !h.is_empty()))
        .chain(form.ignore_fields.iter().map(String::as_str))
        .collect();
    let mut seen = HashSet::new();
    for (i, field) in form.fields.iter().enumerate() {
        let at = format!("{at}.fields[{i}] ({})", field.name);
        push_validation(out, &at, field.validate());
        if !is_field_name(&field.name) {
            out.push(format!("{at}.name: use a-z, 0-9 and _, starting with a letter"));
        }
        if reserved.contains(field.name.as_str()) {
            out.push(format!(
                "{at}.name: `{}` is reserved (operation ID, honeypot or ignored field)",
                field.name
            ));
        }
        if !seen.insert(field.name.as_str()) {
            out.push(format!("{at}.name: declared twice"));
        }
        field_type_problems(out, &at, field);
    }
    let mut kinds = HashSet::new();
    for kind in &form.effects {
        if !kinds.insert(kind) {
            out.push(format!("{at}.effects: `{}` listed twice", kind.as_str()));
        }
    }
    super::spam::form_problems(out, &at, form);
    super::locale::form_problems(out, &at, form);
    super::route::form_problems(out, &at, form);
}

/// The keys each field type takes, and their values.
fn field_type_problems(out: &mut Vec<String>, at: &str, field: &FieldConfig) {
    let kind = field.kind.as_str();
    match (field.has_options(), field.options.is_empty()) {
        (true, true) => out.push(format!("{at}.options: a {kind} needs options")),
        (false, false) => {
            out.push(format!("{at}.options: only select, radio, checkboxes and multiselect take options"))
        }
        _ => {}
    }
    if field.options.iter().any(|o| o.contains(['\n', '\r']) || o.trim() != o || o.is_empty()) {
        out.push(format!("{at}.options: an option is one line of text without leading or trailing spaces"));
    }
    let bounded = matches!(field.kind, FieldType::Number | FieldType::Date);
    for (key, bound) in [("min", &field.min), ("max", &field.max)] {
        match (field.kind, bound) {
            (_, None)
            | (FieldType::Number, Some(Bound::Number(_)))
            | (FieldType::Date, Some(Bound::Day(_))) => {}
            (FieldType::Number, Some(_)) => {
                out.push(format!("{at}.{key}: a number field's bound is a number"))
            }
            (FieldType::Date, Some(_)) => {
                out.push(format!("{at}.{key}: a date field's bound is a day, YYYY-MM-DD"))
            }
            _ if !bounded => out.push(format!("{at}.{key}: only number and date fields take {key}")),
            _ => {}
        }
    }
    match (field.kind, field.step) {
        (FieldType::Number, Some(step)) if !(step > 0.0 && step.is_finite()) => {
            out.push(format!("{at}.step: a step is a number above 0"))
        }
        (FieldType::Number, _) | (_, None) => {}
        (_, Some(_)) => out.push(format!("{at}.step: only a number field takes a step")),
    }
    match (field.kind, &field.version) {
        (FieldType::Consent, None) => out.push(format!(
            "{at}.version: a consent field needs the version of the text agreed to (stored with each submission)"
        )),
        (FieldType::Consent, Some(_)) | (_, None) => {}
        (_, Some(_)) => out.push(format!("{at}.version: only a consent field takes a version")),
    }
    if field.kind == FieldType::Consent && field.label.is_none() {
        out.push(format!("{at}.label: a consent field's label is the text the visitor agrees to"));
    }
    if field.value.is_some() && field.kind != FieldType::Hidden {
        out.push(format!("{at}.value: only a hidden field takes a value"));
    }
    let file_keys = !field.accept.is_empty() || field.max_bytes.is_some() || field.max_files.is_some();
    if file_keys && field.kind != FieldType::File {
        out.push(format!("{at}: only a file field takes accept, max_bytes and max_files"));
    }
}

fn push_validation(out: &mut Vec<String>, at: &str, result: Result<(), ValidationErrors>) {
    let Err(errors) = result else { return };
    let mut lines: Vec<String> = errors
        .field_errors()
        .into_iter()
        .flat_map(|(field, errs)| {
            errs.iter().map(move |e| {
                let bounds: Vec<String> = ["min", "max"]
                    .iter()
                    .filter_map(|k| e.params.get(*k).map(|v| format!("{k} {v}")))
                    .collect();
                format!("{at}.{field}: out of range ({})", bounds.join(", "))
            })
        })
        .collect();
    for (field, kind) in errors.errors() {
        if let validator::ValidationErrorsKind::Struct(inner) = kind {
            push_validation(&mut lines, &format!("{at}.{field}"), Err(*inner.clone()));
        }
    }
    lines.sort();
    out.extend(lines);
}

fn is_slug(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

fn is_field_name(s: &str) -> bool {
    s.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(forms: &str) -> Config {
        match Config::parse(forms) {
            Ok(c) => c,
            Err(e) => panic!("parse: {e}"),
        }
    }

    #[test]
    fn builtin_default_has_no_problems() {
        let c = Config::builtin().unwrap();
        assert_eq!(crate::services::check_config::problems(&c), Vec::<String>::new());
    }

    #[test]
    fn names_each_problem() {
        let c = config(
            r#"
            [forms.contact]
            title = "x"
            effects = ["confirmation_email", "crm_lead", "crm_lead"]
            max_body_bytes = 1
            [[forms.contact.fields]]
            name = "topic"
            type = "select"
            [[forms.contact.fields]]
            name = "topic"
            max_length = 0
            [[forms.contact.fields]]
            name = "website"
            "#,
        );
        let p = crate::services::check_config::problems(&c).join("\n");
        for needle in [
            "max_body_bytes: out of range",
            "select needs options",
            "declared twice",
            "max_length: out of range",
            "`website` is reserved",
            "`crm_lead` listed twice",
            "confirmation_email needs a field of type email",
        ] {
            assert!(p.contains(needle), "missing {needle:?} in:\n{p}");
        }
    }

    #[test]
    fn unparsable_addresses_are_parse_errors_naming_their_key() {
        let e = Config::parse("[server]\nbind = 'nowhere'").unwrap_err();
        assert!(e.contains("server.bind: `nowhere` is not an address"), "{e}");
        let e = Config::parse("[server]\ntrusted_proxies = ['10.0.0.0/8', '10.0.0.0/33']").unwrap_err();
        assert!(
            e.contains("server.trusted_proxies: `10.0.0.0/33` is not an IP address or CIDR range"),
            "{e}"
        );
        let e = Config::parse("[database]\nurl = 'mysql://h/db'").unwrap_err();
        assert!(e.contains("database.url: unsupported database scheme `mysql`"), "{e}");
    }

    #[test]
    fn warns_when_metrics_are_open_on_an_address_others_reach() {
        let open = |toml: &str| open_metrics_warning(&Config::parse(toml).unwrap());
        let w = open("[server]\nbind = '0.0.0.0:8080'").unwrap();
        assert!(w.contains("server.bind = 0.0.0.0:8080") && w.contains("ONCEFORM_METRICS_TOKEN"), "{w}");
        assert!(open("[server]\nbind = '[::]:8080'").is_some());
        assert!(open("[server]\nbind = '192.0.2.10:8080'").is_some());
        assert!(open("[server]\nbind = '127.0.0.1:8080'").is_none(), "loopback");
        assert!(open("[server]\nbind = '[::1]:8080'").is_none(), "loopback");
        assert!(open("[server]\nbind = '0.0.0.0:8080'\nmetrics_token = 'a-long-token'").is_none());
        let config = Config::parse("[server]\nbind = '0.0.0.0:8080'").unwrap();
        assert!(warnings(&config).iter().any(|w| w.contains("/metrics is open")), "check-config warns");
    }

    #[test]
    fn warns_about_several_hosts_without_target_session_attrs() {
        let warned = |url: &str| database_url_warning(&super::super::DatabaseUrl::parse(url).unwrap());
        let w = warned("postgres://u@h1:5432,h2:5433/db").unwrap();
        assert!(w.contains("target_session_attrs=read-write"), "{w}");
        assert!(warned("postgres://u@h1,h2/db?sslmode=disable&target_session_attrs=any").is_some());
        assert!(warned("postgres:///db?host=h1,h2").is_some());
        assert!(warned("postgres://u@h1,h2/db?target_session_attrs=read-write").is_none());
        assert!(warned("postgres://u@h1,h2/db?target_session_attrs=primary").is_none());
        assert!(warned("postgres://u:p,w@h1/db").is_none(), "a comma in the password is no host");
        assert!(warned("postgres://u@h1:5432/db").is_none());
        assert!(warned("sqlite://x.db").is_none());
    }

    #[test]
    fn unknown_keys_and_kinds_are_parse_errors() {
        let e = Config::parse("[forms.a]\ntitle='x'\ncolour='red'").unwrap_err();
        assert!(e.contains("colour"), "{e}");
        let e = Config::parse("[forms.a]\ntitle='x'\neffects=['fax']").unwrap_err();
        assert!(e.contains("fax"), "{e}");
    }
}
