//! Forms an admin defined in `/admin/forms` (stored in the database, `db::admin_forms`),
//! as the configuration holds them: where each form in force was defined
//! (`FormOrigin`), what the last merge took from the database (`AdminMerge`), and the
//! reading of one form's `[forms.NAME]` section (`parse_section`), which is the
//! configuration file's syntax. The merging itself, checked by every rule, is
//! `services::admin_forms`.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;

use super::{Config, FormConfig};

/// Where a form in force was defined.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum FormOrigin {
    /// The configuration file (or the configuration given in code): authoritative.
    #[default]
    File,
    /// The admin (`/admin/forms`): who saved the version in force, and when.
    Admin { saved_by: String, saved_at: NaiveDateTime },
}

impl FormOrigin {
    pub fn is_file(&self) -> bool {
        *self == FormOrigin::File
    }
}

/// What a configuration took from the admin-defined forms when they were last merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdminMerge {
    /// The (name, version) of every stored form read, in name order: a process merges again
    /// when the stored ones differ.
    pub stamp: Vec<(String, String)>,
    /// The stored forms left out, each with why (the file defines its name, or it no longer
    /// passes the rules).
    pub ignored: BTreeMap<String, String>,
}

/// Longest section an admin may save, in bytes.
pub const MAX_SECTION_BYTES: usize = 64 * 1024;

/// Reads one form's section (`[forms.NAME]` and its sub-tables, nothing else): its name and
/// settings, their definition and version set as the file's are; or every problem, each at
/// its line.
pub fn parse_section(text: &str) -> Result<(String, FormConfig), Vec<String>> {
    if text.len() > MAX_SECTION_BYTES {
        return Err(vec![format!("the text is longer than {MAX_SECTION_BYTES} bytes")]);
    }
    let table: toml::Table =
        toml::from_str(text).map_err(|_| Config::parse_problems(text).err().unwrap_or_default())?;
    if let Some(other) = table.keys().find(|k| *k != "forms") {
        return Err(vec![format!("`{other}`: only one form's section ([forms.NAME]) is read here")]);
    }
    let names: Vec<&String> = match table.get("forms") {
        Some(toml::Value::Table(forms)) => forms.keys().collect(),
        _ => Vec::new(),
    };
    if names.len() != 1 {
        return Err(vec!["the text must define exactly one form: [forms.NAME]".into()]);
    }
    let name = names[0].clone();
    let mut config = Config::parse_problems(text)?;
    let form = config.forms.remove(&name).ok_or_else(|| vec![format!("forms.{name}: not a form's table")])?;
    Ok((name, form))
}

/// `problem` (a rule's message, named by its path `forms.NAME…`) prefixed with the line of
/// `text` (one form's section) its path points at, where it can be found.
pub fn at_line(text: &str, name: &str, problem: &str) -> String {
    let Some(rest) = problem.strip_prefix(&format!("forms.{name}")) else { return problem.to_string() };
    let lines: Vec<&str> = text.lines().collect();
    let header = |line: &str, path: &str| {
        let t = line.trim();
        let inner = t.trim_start_matches('[').split(']').next().unwrap_or("");
        let named = inner.split('.').map(|s| s.trim().trim_matches('"')).collect::<Vec<_>>().join(".");
        t.starts_with('[') && (named == path || named.starts_with(&format!("{path}.")))
    };
    let own = format!("forms.{name}");
    let found = match rest.strip_prefix('.') {
        Some(rest) => {
            let key: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            let index: usize = rest[key.len()..]
                .strip_prefix('[')
                .and_then(|r| r.split(']').next())
                .and_then(|i| i.parse().ok())
                .unwrap_or(0);
            let path = format!("{own}.{key}");
            let headers: Vec<usize> = (0..lines.len()).filter(|&i| header(lines[i], &path)).collect();
            headers
                .get(index)
                .or(headers.first())
                .copied()
                .or_else(|| {
                    lines.iter().position(|l| {
                        let t = l.trim_start();
                        t.strip_prefix(key.as_str())
                            .is_some_and(|r| matches!(r.trim_start().chars().next(), Some('=' | '.')))
                    })
                })
                // An effect kind named in a list (`effects = ["slack"]`).
                .or_else(|| lines.iter().position(|l| l.contains(&format!("\"{key}\""))))
        }
        None => (0..lines.len()).find(|&i| header(lines[i], &own)),
    };
    match found {
        Some(i) => format!("line {}: {problem}", i + 1),
        None => problem.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUOTE: &str = "[forms.quote]\ntitle = \"Quote\"\neffects = [\"slack\"]\n[[forms.quote.fields]]\nname = \"email\"\ntype = \"email\"\n[[forms.quote.fields]]\nname = \"Bad\"\n";

    #[test]
    fn a_section_reads_as_the_file_would_and_nothing_else_is_read() {
        let (name, form) = parse_section(QUOTE).unwrap();
        assert_eq!((name.as_str(), form.fields.len()), ("quote", 2));
        assert!(form.definition.is_known());
        let file = Config::parse(QUOTE).unwrap();
        assert_eq!(file.forms["quote"].definition, form.definition, "the same version as in the file");
        assert!(parse_section("[server]\nbind = \"0.0.0.0:1\"\n").unwrap_err()[0].contains("only one form"));
        assert!(parse_section(&format!("{QUOTE}[forms.other]\ntitle = \"x\"\n")).is_err());
        let e = parse_section("[forms.quote]\ntitel = \"x\"\n").unwrap_err();
        assert_eq!(e, ["line 2: forms.quote: unknown field `titel` (did you mean `title`?)"]);
        assert!(parse_section("[forms.quote\n").unwrap_err()[0].starts_with("line 1: "));
    }

    #[test]
    fn a_rule_problem_is_put_at_the_line_of_its_path() {
        let at = |p: &str| at_line(QUOTE, "quote", p);
        assert!(at("forms.quote.fields[1] (Bad).name: use a-z").starts_with("line 7: "));
        assert!(
            at("forms.quote.slack: the slack effect needs").starts_with("line 3: "),
            "{}",
            at("forms.quote.slack: x")
        );
        assert!(at("forms.quote: a form name").starts_with("line 1: "));
        assert_eq!(at("crm: x"), "crm: x");
    }
}
