//! What is wrong in a configuration file, as its author reads it: every unknown key at its
//! own line (`line 7: forms.contact: unknown field `min_fil_seconds` (did you mean
//! `min_fill_seconds`?)`), then the first other error, each on one line without the TOML
//! snippet.
//!
//! The deserialiser stops at the first error. An unknown key is found in the text (its
//! own line, the table it is in), commented out in a working copy (so that the line numbers
//! stay), and the copy is read again, up to `MAX_PROBLEMS` times.

use serde::de::DeserializeOwned;

/// At most this many problems are reported for one file.
const MAX_PROBLEMS: usize = 20;

/// Deserialises `text`, or returns every unknown key and then the first other problem.
/// `keys_of(table)` names the keys a table accepts when the deserialiser's message does not
/// (a form's table, whose unknown keys its effect kinds refuse).
pub fn from_toml<T: DeserializeOwned>(
    text: &str,
    keys_of: impl Fn(&str) -> &'static [&'static str],
) -> Result<T, Vec<String>> {
    let mut work: Vec<String> = text.lines().map(String::from).collect();
    let mut problems = Vec::new();
    loop {
        let joined = work.join("\n");
        let e = match toml::from_str::<T>(&joined) {
            Ok(value) if problems.is_empty() => return Ok(value),
            Ok(_) => return Err(in_line_order(problems)),
            Err(e) => e,
        };
        let message = e.message().trim().to_string();
        let at = e.span().map_or(0, |s| line_of(&joined, s.start));
        match unknown_key(&message).and_then(|key| locate(&work, at, key).map(|found| (key, found))) {
            Some((key, found)) if problems.len() < MAX_PROBLEMS => {
                let known = expected(&message);
                let known: Vec<&str> = match known.is_empty() {
                    true => keys_of(&found.table).to_vec(),
                    false => known,
                };
                let hint =
                    nearest(key, &known).map(|k| format!(" (did you mean `{k}`?)")).unwrap_or_default();
                let table = if found.table.is_empty() { String::new() } else { format!("{}: ", found.table) };
                problems.push(format!("line {}: {table}unknown field `{key}`{hint}", found.line + 1));
                for line in &mut work[found.line..found.end] {
                    line.insert_str(0, "# ");
                }
            }
            _ => {
                problems.push(format!("line {}: {}", at + 1, first_sentence(&message)));
                return Err(in_line_order(problems));
            }
        }
    }
}

/// The problems sorted by their line (each starts `line N:`).
fn in_line_order(mut problems: Vec<String>) -> Vec<String> {
    let line = |p: &String| p.strip_prefix("line ").and_then(|r| r.split(':').next()?.parse::<usize>().ok());
    problems.sort_by_key(line);
    problems
}

/// Where an unknown key is: its line, the lines that hold it (a table header: the whole
/// table; a value over several lines: all of them) and the table it is in.
struct Found {
    line: usize,
    end: usize,
    table: String,
}

/// The 0-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count()
}

/// `key` from "unknown field `key`…" (serde's words, also those of the effect kinds).
fn unknown_key(message: &str) -> Option<&str> {
    let rest = message.split("unknown field `").nth(1)?;
    rest.split('`').next()
}

/// The keys listed in "…, expected one of `a`, `b`" / "expected `a` or `b`".
fn expected(message: &str) -> Vec<&str> {
    let Some((_, list)) = message.split_once("expected") else { return Vec::new() };
    list.split('`').skip(1).step_by(2).collect()
}

/// The valid key closest to `key`, if it is close enough to be what was meant.
fn nearest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(key, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min()
        .map(|(_, k)| k)
}

/// The message without the deserialiser's list of every valid key.
fn first_sentence(message: &str) -> &str {
    message.lines().next().unwrap_or(message).split(", expected one of").next().unwrap_or(message)
}

/// The table header a line opens (`[forms.contact]` → `forms.contact`), if it is one.
fn header(line: &str) -> Option<String> {
    let t = line.trim();
    let inner = t
        .strip_prefix("[[")
        .and_then(|r| r.split("]]").next())
        .or_else(|| t.strip_prefix('[').and_then(|r| r.split(']').next()))?;
    Some(inner.split('.').map(|s| s.trim().trim_matches('"')).collect::<Vec<_>>().join("."))
}

/// Whether `line` sets `key` (`key = …`, `key.sub = …`, `"key" = …`).
fn sets(line: &str, key: &str) -> bool {
    let t = line.trim_start();
    let rest = t
        .strip_prefix(key)
        .or_else(|| t.strip_prefix(&format!("\"{key}\"")))
        .or_else(|| t.strip_prefix(&format!("'{key}'")));
    rest.is_some_and(|r| matches!(r.trim_start().chars().next(), Some('=' | '.')))
}

/// Finds `key` from line `from` on (the line the deserialiser named: the key itself, or the
/// header of the table it is in).
fn locate(work: &[String], from: usize, key: &str) -> Option<Found> {
    let table_at = |line: usize| work[..=line].iter().rev().find_map(|l| header(l)).unwrap_or_default();
    let start = table_at(from.min(work.len().saturating_sub(1)));
    for (i, line) in work.iter().enumerate().skip(from) {
        if let Some(h) = header(line) {
            if i == from {
                // The deserialiser may name the header of the unknown table itself.
                if let Some(parent) =
                    h.strip_suffix(&format!(".{key}")).or(if h == key { Some("") } else { None })
                {
                    let end = work
                        .iter()
                        .skip(i + 1)
                        .position(|l| header(l).is_some())
                        .map_or(work.len(), |n| i + 1 + n);
                    return Some(Found { line: i, end, table: parent.to_string() });
                }
                continue;
            }
            let child =
                h.strip_prefix(&start).and_then(|r| r.strip_prefix('.')).filter(|_| !start.is_empty());
            let child = child.or(if start.is_empty() { Some(h.as_str()) } else { None });
            match child {
                Some(c) if c.split('.').next() == Some(key) => {
                    let end = work
                        .iter()
                        .skip(i + 1)
                        .position(|l| header(l).is_some())
                        .map_or(work.len(), |n| i + 1 + n);
                    return Some(Found { line: i, end, table: start });
                }
                Some(_) => continue,
                None => return None,
            }
        }
        if sets(line, key) {
            // A value over several lines ends where the lines read so far make a table.
            let end = (i + 1..=work.len())
                .find(|&end| toml::from_str::<toml::Table>(&work[i..end].join("\n")).is_ok())?;
            return Some(Found { line: i, end, table: table_at(i) });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        #[serde(default)]
        min_fill_seconds: u32,
        #[serde(default)]
        title: String,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        #[serde(default)]
        form: Option<Inner>,
        #[serde(default)]
        bind: String,
    }

    fn problems(text: &str) -> Vec<String> {
        from_toml::<Outer>(text, |_| &[]).unwrap_err()
    }

    #[test]
    fn every_unknown_key_is_named_at_its_line_with_the_nearest_valid_one() {
        let text = "bnd = 'x'\n\n[form]\ntitle = 'a'\nmin_fil_seconds = 3\nlist = [\n  1,\n]\n[form.nested]\nx = 1\n";
        assert_eq!(
            problems(text),
            [
                "line 1: unknown field `bnd` (did you mean `bind`?)",
                "line 5: form: unknown field `min_fil_seconds` (did you mean `min_fill_seconds`?)",
                "line 6: form: unknown field `list`",
                "line 9: form: unknown field `nested`",
            ]
        );
    }

    #[test]
    fn another_error_comes_after_the_unknown_keys_on_one_line() {
        let p = problems("titel = 1\n[form]\nmin_fill_seconds = 'soon'\n");
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(p[0], "line 1: unknown field `titel`");
        assert!(p[1].starts_with("line 3: invalid type"), "{p:?}");
        assert!(!p[1].contains('\n'));
        assert!(problems("[form\n")[0].starts_with("line 1: "));
    }
}
