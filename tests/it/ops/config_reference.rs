//! docs/CONFIGURATION.md describes every key the configuration types accept, and none that
//! they do not. The accepted keys come from the types: a probe key in each table makes the
//! deserialiser list the table's keys (`#[serde(deny_unknown_fields)]`); a form's own table,
//! whose unknown keys its effect kinds refuse without a list, has `FormConfig::KEYS`, and
//! every one of those is tried (a route's table, likewise, `RouteConfig::KEYS`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use onceform::config::{Config, FormConfig, RouteConfig};

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
    ("[worker]", "[worker]"),
    ("[alerts]", "[alerts]"),
    ("[purge]", "[purge]"),
    ("[[forms.NAME.fields]]", "[[forms.contact.fields]]"),
    ("[forms.NAME.rate_limit]", "[forms.contact.rate_limit]"),
    ("[forms.NAME.duplicates]", "[forms.contact.duplicates]"),
    ("[forms.NAME.email]", "[forms.contact.email]"),
    ("[forms.NAME.retention]", "[forms.contact.retention]"),
    ("[forms.NAME.captcha]", "[forms.contact.captcha]"),
    ("[forms.NAME.texts.LOCALE]", "[forms.contact.texts.zh-TW]"),
    ("[forms.NAME.slack]", "[forms.contact.slack]"),
    ("[forms.NAME.webhook]", "[forms.contact.webhook]"),
    ("[hooks.NAME]", "[hooks.h]"),
    ("[[hooks.NAME.handlers]]", "[[hooks.h.handlers]]"),
    ("[hooks.NAME.retention]", "[hooks.h.retention]"),
];

/// The keys `header`'s table accepts, as the deserialiser lists them for an unknown one.
fn accepted(header: &str) -> BTreeSet<String> {
    let text = format!("{FORM}{header}\nzzz_probe = 1\n");
    let e = toml::from_str::<Config>(&text).map(|_| ()).unwrap_err().message().to_string();
    assert!(e.contains("unknown field `zzz_probe`"), "{header}: {e}");
    let list = e.split_once("expected").map_or("", |(_, l)| l);
    list.split('`').skip(1).step_by(2).map(String::from).collect()
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
    compare("[[forms.NAME.routes]]", &RouteConfig::KEYS.iter().map(|k| k.to_string()).collect());
    let known: BTreeSet<&str> =
        TABLES.iter().map(|(d, _)| *d).chain(["[forms.NAME]", "[[forms.NAME.routes]]"]).collect();
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

/// The README's and the reference's environment tables name each variable once, and agree
/// with the code on `RUST_LOG`'s default.
#[test]
fn the_environment_tables_name_each_variable_once_and_the_real_log_default() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let logging = std::fs::read_to_string(root.join("src/base/logging.rs")).unwrap();
    let default = logging.split("EnvFilter::new(\"").nth(1).and_then(|r| r.split('"').next()).unwrap();
    for page in ["README.md", "docs/CONFIGURATION.md"] {
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        let mut seen = BTreeSet::new();
        for row in text.lines().filter(|l| l.starts_with("| `ONCEFORM_") || l.starts_with("| `RUST_LOG`")) {
            let var = row.split('`').nth(1).unwrap();
            assert!(seen.insert(var.to_string()), "{page}: `{var}` is listed twice");
            if var == "RUST_LOG" {
                assert!(row.trim_end().ends_with(&format!("`{default}` |")), "{page}: {row}");
            }
        }
        for var in ["ONCEFORM_SECRET", "ONCEFORM_METRICS_TOKEN", "RUST_LOG"] {
            assert!(seen.contains(var), "{page} does not list {var}");
        }
    }
}
