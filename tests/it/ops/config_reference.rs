//! docs/CONFIGURATION.md describes every key the configuration types accept, and none that
//! they do not. The accepted keys come from the types: a probe key in each table makes the
//! deserialiser list the table's keys (`#[serde(deny_unknown_fields)]`); a form's own table,
//! whose unknown keys its effect kinds refuse without a list, has `FormConfig::KEYS`, and
//! every one of those is tried (a route's table, likewise, `RouteConfig::KEYS`). Its
//! environment table names exactly the variables of `config::ENVIRONMENT`, the list `--help`
//! prints, and that list every variable the code reads.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use onceform::config::hooks::HandlerConfig;
use onceform::config::{Config, FormConfig, HookConfig, RouteConfig, ENVIRONMENT};

const FORM: &str = "[forms.contact]\ntitle = 'x'\n";

/// Each table the page documents (as its heading writes it) and how to put a key into it.
const TABLES: &[(&str, &str)] = &[
    ("[server]", "[server]"),
    ("[database]", "[database]"),
    ("[smtp]", "[smtp]"),
    ("[crm]", "[crm]"),
    ("[crm.file]", "[crm.file]"),
    ("[crm.generic]", "[crm.generic]"),
    ("[crm.hubspot]", "[crm.hubspot]"),
    ("[crm.salesforce]", "[crm.salesforce]"),
    ("[crm.pipedrive]", "[crm.pipedrive]"),
    ("[crm.zoho]", "[crm.zoho]"),
    ("[worker]", "[worker]"),
    ("[alerts]", "[alerts]"),
    ("[purge]", "[purge]"),
    ("[admin]", "[admin]"),
    ("[admin.oidc]", "[admin.oidc]"),
    ("[[forms.NAME.fields]]", "[[forms.contact.fields]]"),
    ("[forms.NAME.rate_limit]", "[forms.contact.rate_limit]"),
    ("[forms.NAME.duplicates]", "[forms.contact.duplicates]"),
    ("[forms.NAME.crm]", "[forms.contact.crm]"),
    ("[forms.NAME.email]", "[forms.contact.email]"),
    ("[forms.NAME.retention]", "[forms.contact.retention]"),
    ("[forms.NAME.captcha]", "[forms.contact.captcha]"),
    ("[forms.NAME.texts.LOCALE]", "[forms.contact.texts.zh-TW]"),
    ("[forms.NAME.slack]", "[forms.contact.slack]"),
    ("[forms.NAME.teams]", "[forms.contact.teams]"),
    ("[forms.NAME.discord]", "[forms.contact.discord]"),
    ("[forms.NAME.telegram]", "[forms.contact.telegram]"),
    ("[forms.NAME.line]", "[forms.contact.line]"),
    ("[forms.NAME.wecom]", "[forms.contact.wecom]"),
    ("[forms.NAME.dingtalk]", "[forms.contact.dingtalk]"),
    ("[forms.NAME.feishu]", "[forms.contact.feishu]"),
    ("[forms.NAME.sheets]", "[forms.contact.sheets]"),
    ("[forms.NAME.webhook]", "[forms.contact.webhook]"),
    ("[forms.NAME.pipedrive]", "[forms.contact.pipedrive]"),
    ("[forms.NAME.zoho]", "[forms.contact.zoho]"),
    ("[hooks.NAME.retention]", "[hooks.h]\nverify = 'none'\n[hooks.h.retention]"),
];

/// The keys `header`'s table accepts, as the deserialiser lists them for an unknown one.
fn accepted(header: &str) -> BTreeSet<String> {
    let e = refusal(&format!("{FORM}{header}\nzzz_probe = 1\n"));
    assert!(e.contains("unknown field `zzz_probe`"), "{header}: {e}");
    backticked(&e)
}

/// Why `text` is not a configuration.
fn refusal(text: &str) -> String {
    toml::from_str::<Config>(text).map(|_| ()).unwrap_err().message().to_string()
}

/// The backticked names after "expected" in a deserialiser's refusal.
fn backticked(e: &str) -> BTreeSet<String> {
    let list = e.split_once("expected").map_or("", |(_, l)| l);
    list.split('`').skip(1).step_by(2).map(String::from).collect()
}

/// The keys a `[hooks.NAME]` table (`handler`: a handler's) takes: those every one takes
/// (`KEYS`) and each verifier's (handler kind's) own, as its refusal of a probe lists them.
fn accepted_by_hooks(handler: bool) -> BTreeSet<String> {
    let (shared, choice, head) = match handler {
        false => (HookConfig::KEYS, "verify", "[hooks.h]\n"),
        true => {
            (HandlerConfig::KEYS, "kind", "[hooks.h]\nverify = 'none'\n[[hooks.h.handlers]]\nname = 'n'\n")
        }
    };
    let mut keys: BTreeSet<String> = shared.iter().map(|k| k.to_string()).collect();
    let choices = backticked(&refusal(&format!("{head}{choice} = 'zzz'\n")));
    assert!(choices.len() >= 4, "{choices:?}");
    for name in choices.iter().filter(|c| *c != "zzz") {
        let e = refusal(&format!("{head}{choice} = '{name}'\nzzz_probe = 1\n"));
        assert!(e.contains("unknown field `zzz_probe`"), "{name}: {e}");
        keys.extend(backticked(&e));
    }
    keys
}

/// The page's tables: heading (`[server]`) → the keys its table rows name (the backticked
/// names of a row's first cell).
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let page =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/CONFIGURATION.md")).unwrap();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut in_keys = false;
    for line in page.lines() {
        if line.starts_with('#') {
            current = line.split('`').nth(1).filter(|t| t.starts_with('[')).map(String::from);
            if let Some(c) = &current {
                assert!(out.insert(c.clone(), BTreeSet::new()).is_none(), "{c} has two headings");
            }
            in_keys = false;
        } else if let Some(row) = line.strip_prefix('|') {
            let first = row.split('|').next().unwrap_or("").trim();
            if first == "key" {
                in_keys = true;
            } else if in_keys && !first.starts_with("---") {
                let keys =
                    first.split('`').skip(1).step_by(2).map(|k| k.split('.').next().unwrap().to_string());
                if let Some(c) = &current {
                    out.get_mut(c).unwrap().extend(keys);
                }
            }
        } else {
            in_keys = false;
        }
    }
    out
}

#[test]
fn the_reference_names_every_key_the_configuration_accepts_and_no_other() {
    let documented = documented();
    let mut wrong = Vec::new();
    // Each top-level table has a section of its own (`[server]`, `[forms.NAME]`, …).
    let sections: BTreeSet<String> = documented
        .keys()
        .map(|t| t.trim_matches(['[', ']']).split('.').next().unwrap().to_string())
        .collect();
    for k in accepted_top().symmetric_difference(&sections) {
        wrong.push(format!("`{k}`: a top-level table without a section, or a section of no table"));
    }
    // A key that is a table of its own (`[forms.NAME.email]`) may be described in its section.
    let section_of = |table: &str, key: &str| {
        let inner = table.trim_matches(['[', ']']);
        [format!("[{inner}.{key}]"), format!("[[{inner}.{key}]]"), format!("[{inner}.{key}.LOCALE]")]
            .into_iter()
            .any(|t| documented.contains_key(&t))
    };
    let mut compare = |table: &str, accepted: &BTreeSet<String>| match documented.get(table) {
        None => wrong.push(format!("{table}: no section")),
        Some(doc) => {
            for k in accepted.difference(doc).filter(|k| !section_of(table, k)) {
                wrong.push(format!("{table}: `{k}` is accepted but not described"));
            }
            for k in doc.difference(accepted) {
                wrong.push(format!("{table}: `{k}` is described but not accepted"));
            }
        }
    };
    for (doc, header) in TABLES {
        compare(doc, &accepted(header));
    }
    compare("[forms.NAME]", &FormConfig::KEYS.iter().map(|k| k.to_string()).collect());
    compare("[hooks.NAME]", &accepted_by_hooks(false));
    compare("[[hooks.NAME.handlers]]", &accepted_by_hooks(true));
    compare("[[forms.NAME.routes]]", &RouteConfig::KEYS.iter().map(|k| k.to_string()).collect());
    let known: BTreeSet<&str> = TABLES
        .iter()
        .map(|(d, _)| *d)
        .chain(["[forms.NAME]", "[[forms.NAME.routes]]", "[hooks.NAME]", "[[hooks.NAME.handlers]]"])
        .collect();
    for table in documented.keys().filter(|t| t.starts_with('[')) {
        if !known.contains(table.as_str()) {
            wrong.push(format!("{table}: a section for a table the configuration does not have"));
        }
    }
    assert!(wrong.is_empty(), "docs/CONFIGURATION.md:\n{}", wrong.join("\n"));
}

/// The top-level tables (`server`, `forms`, …), documented as the page's sections.
fn accepted_top() -> BTreeSet<String> {
    let e = toml::from_str::<Config>("zzz_probe = 1").map(|_| ()).unwrap_err().message().to_string();
    let list = e.split_once("expected").map_or("", |(_, l)| l);
    list.split('`').skip(1).step_by(2).map(String::from).collect()
}

/// Every key of `FormConfig::KEYS` is one the form's table takes (a wrong value is refused
/// for its type, never as an unknown key), and a made-up one is not.
#[test]
fn every_key_of_a_form_is_accepted() {
    for key in FormConfig::KEYS {
        let text = format!("{FORM}{key} = {{ zzz_probe = [] }}\n");
        let e = toml::from_str::<Config>(&text).map(|_| ()).map_err(|e| e.message().to_string());
        if let Err(e) = e {
            assert!(!e.contains(&format!("unknown field `{key}`")), "{key}: {e}");
        }
    }
    let e = toml::from_str::<Config>(&format!("{FORM}zzz_probe = 1\n")).map(|_| ()).unwrap_err();
    assert!(e.message().contains("unknown field `zzz_probe`"));
}

/// Every key of `HookConfig::KEYS` (`HandlerConfig::KEYS`) is one every source's (handler's)
/// table takes, whatever its verifier (kind): a verifier that takes no key of its own would
/// refuse it as unknown.
#[test]
fn every_shared_key_of_a_hook_and_a_handler_is_accepted() {
    let head = "[hooks.h]\nverify = 'none'\n";
    for key in HookConfig::KEYS.iter().filter(|k| **k != "verify") {
        let e = toml::from_str::<Config>(&format!("{head}{key} = {{ zzz_probe = [] }}\n"))
            .map(|_| ())
            .unwrap_err();
        assert!(!e.message().contains(&format!("unknown field `{key}`")), "{key}: {e}");
    }
    let handler = format!("{head}[[hooks.h.handlers]]\nname = 'n'\nkind = 'forward'\n");
    let e = toml::from_str::<Config>(&format!("{handler}zzz_probe = 1\n")).map(|_| ()).unwrap_err();
    assert!(e.message().contains("unknown field `zzz_probe`"), "{e}");
}

/// Every key of `RouteConfig::KEYS` is one a route's table takes, and a made-up one is not.
#[test]
fn every_key_of_a_route_is_accepted() {
    for key in RouteConfig::KEYS {
        let text = format!("{FORM}[[forms.contact.routes]]\n{key} = {{ zzz_probe = [] }}\n");
        let e = toml::from_str::<Config>(&text).map(|_| ()).map_err(|e| e.message().to_string());
        if let Err(e) = e {
            assert!(!e.contains(&format!("unknown field `{key}`")), "{key}: {e}");
        }
    }
    let text = format!("{FORM}[[forms.contact.routes]]\nzzz_probe = 1\n");
    let e = toml::from_str::<Config>(&text).map(|_| ()).unwrap_err();
    assert!(e.message().contains("unknown field `zzz_probe`"));
}

/// The reference's environment table names each variable of `config::ENVIRONMENT` (what
/// `--help` lists) once and no other, and agrees with the code on `RUST_LOG`'s default.
#[test]
fn the_environment_table_names_exactly_the_variables_help_lists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let logging = std::fs::read_to_string(root.join("src/base/logging.rs")).unwrap();
    let default = logging.split("EnvFilter::new(\"").nth(1).and_then(|r| r.split('"').next()).unwrap();
    let page = std::fs::read_to_string(root.join("docs/CONFIGURATION.md")).unwrap();
    let table = page.split("\n## Environment\n").nth(1).unwrap().split("\n## ").next().unwrap();
    let mut listed = Vec::new();
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let var = row.split('`').nth(1).unwrap();
        assert!(!listed.contains(&var), "docs/CONFIGURATION.md: `{var}` is listed twice");
        listed.push(var);
        if var == "RUST_LOG" {
            assert!(row.trim_end().ends_with(&format!("`{default}` |")), "docs/CONFIGURATION.md: {row}");
        }
    }
    let help: BTreeSet<&str> = ENVIRONMENT.iter().map(|(name, _)| *name).collect();
    let listed: BTreeSet<&str> = listed.into_iter().collect();
    assert_eq!(listed, help, "docs/CONFIGURATION.md's environment table against config::ENVIRONMENT");
    let rust_log = ENVIRONMENT.iter().find(|(name, _)| *name == "RUST_LOG").unwrap().1;
    assert!(rust_log.contains(default), "--help's RUST_LOG: {rust_log}");
}

/// Every `ONCEFORM_…` variable the code names (outside test code) is in `config::ENVIRONMENT`,
/// and every one there is named by the code: `--help` and the reference list what is read.
#[test]
fn the_environment_list_names_every_variable_the_code_reads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut read = BTreeSet::new();
    let mut stack = vec![root.join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("config/environment.rs")
            {
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap();
                // A literal that is a name alone (`"ONCEFORM_BIND"`), not a message naming one.
                for (i, _) in code.match_indices("\"ONCEFORM_") {
                    let rest = &code[i + 1..];
                    let end = rest.find(|c: char| !(c.is_ascii_uppercase() || c == '_')).unwrap_or(0);
                    // A prefix (`"ONCEFORM_"`, to list them all) names no variable.
                    if rest[end..].starts_with('"') && !rest[..end].ends_with('_') {
                        read.insert(rest[..end].to_string());
                    }
                }
            }
        }
    }
    let listed: BTreeSet<String> =
        ENVIRONMENT.iter().map(|(name, _)| name.to_string()).filter(|n| n.starts_with("ONCEFORM_")).collect();
    assert_eq!(read, listed, "the ONCEFORM_ variables the code reads against config::ENVIRONMENT");
}
