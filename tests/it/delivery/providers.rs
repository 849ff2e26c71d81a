//! Every extension point has one shape: a provider is one file and one line in its list
//! (docs/ARCHITECTURE.md, "How to add …"). For each list (`effects::KINDS`,
//! `effects::crm::ADAPTERS`, `hooks::verify::VERIFIERS`, `effects::HANDLERS`),
//! each entry's type is named only in its own file and on its registration line: nothing
//! else in `src/` matches on it, builds it or imports it.

use std::path::{Path, PathBuf};

/// (the file holding the list, the list's name).
const LISTS: &[(&str, &str)] = &[
    ("src/services/effects/mod.rs", "KINDS"),
    ("src/services/effects/crm/mod.rs", "ADAPTERS"),
    ("src/web/hooks/verify/mod.rs", "VERIFIERS"),
    ("src/services/effects/mod.rs", "HANDLERS"),
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The entries of `static NAME: &[&dyn …] = &[ … ];`: (module, type).
fn entries(text: &str, list: &str) -> Vec<(String, String)> {
    let start = text.find(&format!("static {list}: &[&dyn ")).unwrap_or_else(|| panic!("no list {list}"));
    let body = &text[start..];
    let body = &body[body.find('=').unwrap()..];
    let body = &body[body.find("&[").unwrap() + 2..body.find("];").unwrap()];
    body.split(',')
        .map(|e| e.trim().trim_start_matches('&'))
        .filter(|e| !e.is_empty())
        .map(|e| {
            let (module, ty) =
                e.rsplit_once("::").unwrap_or_else(|| panic!("{list}: `{e}` is not module::Type"));
            (module.to_string(), ty.to_string())
        })
        .collect()
}

/// A source file without its comments and its test code (from `#[cfg(test)]` on), as
/// `scripts/layers.sh` reads it.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// How often `text` names the identifier `name` (not as part of a longer one).
fn names(text: &str, name: &str) -> usize {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name)
        .filter(|(i, _)| {
            let before = text[..*i].chars().next_back();
            let after = text[i + name.len()..].chars().next();
            !before.is_some_and(ident) && !after.is_some_and(ident)
        })
        .count()
}

#[test]
fn a_provider_of_each_kind_is_one_file_and_one_registration_line() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    let texts: Vec<(PathBuf, String)> =
        files.into_iter().map(|f| (f.strip_prefix(&root).unwrap().to_path_buf(), code(&f))).collect();
    let mut checked = 0;
    for (list_file, list) in LISTS {
        let list_text = &texts.iter().find(|(p, _)| p == Path::new(list_file)).unwrap().1;
        let entries = entries(list_text, list);
        assert!(entries.len() >= 4, "{list}: {entries:?}");
        for (module, ty) in entries {
            // One file, or one folder whose `mod.rs` holds the type (`sheets/`).
            let dir = Path::new(list_file).parent().unwrap();
            let own = [dir.join(format!("{module}.rs")), dir.join(module.as_str()).join("mod.rs")]
                .into_iter()
                .find(|f| root.join(f).exists())
                .unwrap_or_else(|| panic!("{list}: {ty} lives in {}/{module}.rs", dir.display()));
            assert_eq!(names(list_text, &ty), 1, "{list_file} names {ty} only on its registration line");
            for (path, text) in &texts {
                if path != &own && path != Path::new(list_file) {
                    assert_eq!(
                        names(text, &ty),
                        0,
                        "{} names {ty} (of {list}): a provider is one file and one line",
                        path.display()
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 17, "{checked} providers checked");
}
