//! A form's definition and its version: the `[forms.NAME]` table as parsed, written as
//! canonical JSON (keys sorted, two-space indent, one key per line, so that two versions
//! compare as a plain line diff), and the first 16 hex characters of that text's SHA-256.
//! Whitespace, comments, key order and TOML spelling (inline or dotted tables, quotes) do not
//! change it; any value does. The definition parses back into the form's settings
//! (`FormConfig::from_definition`), so a retry is judged under the version it was accepted
//! under (`services::accept::versions`).

use std::sync::Arc;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Hex characters of SHA-256 kept as the version.
const VERSION_LEN: usize = 16;

/// One form's definition text and version. Empty for a form not read from TOML text (its
/// submissions store no version).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Definition {
    pub text: Arc<str>,
    pub version: Arc<str>,
}

impl Definition {
    /// The definition of the form table `table`.
    pub fn of(table: &toml::Value) -> Definition {
        let text = serde_json::to_string_pretty(&canonical(table)).unwrap_or_default();
        Definition { version: version_of(&text).into(), text: text.into() }
    }

    /// Whether this definition is known (read from TOML text).
    pub fn is_known(&self) -> bool {
        !self.version.is_empty()
    }
}

/// The version of a definition's text.
pub fn version_of(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().take(VERSION_LEN / 2).map(|b| format!("{b:02x}")).collect()
}

/// `value` as JSON with every table's keys in order (a date-time as its TOML text).
fn canonical(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(Value::String(f.to_string()), Value::Number)
        }
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        toml::Value::Table(table) => {
            let mut keys: Vec<&String> = table.keys().collect();
            keys.sort();
            let mut map = Map::new();
            for key in keys {
                if let Some(v) = table.get(key) {
                    map.insert(key.clone(), canonical(v));
                }
            }
            Value::Object(map)
        }
    }
}

/// A line diff of two definitions' texts: each line of `old` and `new` marked ` ` (in both),
/// `-` (only in `old`) or `+` (only in `new`), in order (longest common subsequence; the
/// texts are a form's definition, a few hundred lines at most).
pub fn line_diff<'a>(old: &'a str, new: &'a str) -> Vec<(char, &'a str)> {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    // Past this many cells the diff is the whole of both (a bound on memory).
    const MAX_CELLS: usize = 4_000_000;
    if (a.len() + 1) * (b.len() + 1) > MAX_CELLS {
        return a.iter().map(|l| ('-', *l)).chain(b.iter().map(|l| ('+', *l))).collect();
    }
    let width = b.len() + 1;
    let mut common = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            common[i * width + j] = match a[i] == b[j] {
                true => common[(i + 1) * width + j + 1] + 1,
                false => common[(i + 1) * width + j].max(common[i * width + j + 1]),
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::with_capacity(a.len() + b.len()));
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push((' ', a[i]));
            (i, j) = (i + 1, j + 1);
        } else if common[(i + 1) * width + j] >= common[i * width + j + 1] {
            out.push(('-', a[i]));
            i += 1;
        } else {
            out.push(('+', b[j]));
            j += 1;
        }
    }
    out.extend(a[i..].iter().map(|l| ('-', *l)));
    out.extend(b[j..].iter().map(|l| ('+', *l)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(text: &str) -> Definition {
        let table: toml::Table = toml::from_str(text).unwrap();
        Definition::of(&table["forms"]["contact"])
    }

    #[test]
    fn layout_comments_and_key_order_do_not_change_the_version() {
        let a = form("[forms.contact]\ntitle = \"Contact\"\neffects = []\n[[forms.contact.fields]]\nname = \"email\"\ntype = \"email\"\n");
        let b = form("# the form\n[forms.contact]\neffects=[ ]   # none\ntitle='Contact'\n\n[[forms.contact.fields]]\ntype = \"email\"\nname = \"email\"\n");
        let c = form("forms.contact = { title = \"Contact\", effects = [], fields = [{ name = \"email\", type = \"email\" }] }\n");
        assert_eq!((a.version.len(), &a), (16, &b));
        assert_eq!(a, c);
        let d = form("[forms.contact]\ntitle = \"Contact!\"\neffects = []\n[[forms.contact.fields]]\nname = \"email\"\ntype = \"email\"\n");
        assert_ne!(a.version, d.version, "any value changes it");
        assert_eq!(&*a.version, version_of(&a.text), "the version is the digest of the text");
    }

    #[test]
    fn the_diff_marks_removed_and_added_lines() {
        let diff = line_diff("a\nb\nc\n", "a\nc\nd\n");
        assert_eq!(diff, vec![(' ', "a"), ('-', "b"), (' ', "c"), ('+', "d")]);
    }
}
