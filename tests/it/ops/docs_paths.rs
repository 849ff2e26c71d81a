//! Documentation that cannot go stale: every path the docs name exists in the checkout.
//! A `src/…`, `tests/…`, `scripts/…` or `docs/…` path written in README.md, BENCHMARKS.md,
//! the pages under docs/ and deploy/, or a `//!` comment under src/ must name a file or
//! folder of the repository; every relative link of those pages must lead to one, and a
//! link's `#anchor` into a page to one of its headings. A path with a placeholder (`{…}`,
//! `*`, `…`) is skipped. docs/benchmarks/history.md is a record of past sessions, written
//! with the paths of their day, and is not held to today's tree. README.md names everything
//! `./test.sh` installs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The folders whose paths are checked wherever they are written.
const ROOTS: &[&str] = &["src/", "tests/", "scripts/", "docs/"];

/// The record of past sessions (see the module's comment).
const HISTORY: &str = "docs/benchmarks/history.md";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` (relative to the root) whose name ends with `ext`.
fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root().join(dir)];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().ends_with(ext) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The pages checked: README.md, BENCHMARKS.md and the Markdown under docs/ and deploy/.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md"), root().join("BENCHMARKS.md")];
    out.extend(files("docs", ".md"));
    out.extend(files("deploy", ".md"));
    out.retain(|p| !p.ends_with(HISTORY));
    out
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_-./{}*…".contains(c)
}

/// The paths under `ROOTS` written in `text`: each starts after a space, a quote, a
/// backtick or a bracket (so `../src/x` and `static/docs/` are not read as `src/x` and
/// `docs/`), and ends before the first character a path does not hold; trailing dots are
/// punctuation.
fn named_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.char_indices() {
        let rest = &text[i..];
        if !ROOTS.iter().any(|r| rest.starts_with(r)) {
            continue;
        }
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| !(c.is_whitespace() || "`([\"'<,;:".contains(c))) {
            continue;
        }
        let end = rest.find(|c: char| !is_path_char(c)).unwrap_or(rest.len());
        let path = rest[..end].trim_end_matches('.');
        out.push(path.to_string());
    }
    out
}

fn has_placeholder(path: &str) -> bool {
    path.contains(['{', '}', '*', '…']) || path.contains("...")
}

/// The targets of the Markdown links `[text](target)` in `text`.
fn link_targets(text: &str) -> Vec<String> {
    text.match_indices("](")
        .filter_map(|(i, _)| {
            let rest = &text[i + 2..];
            let end = rest.find([')', ' '])?;
            Some(rest[..end].to_string())
        })
        .collect()
}

/// GitHub's anchor for a heading: lower case, spaces to hyphens, other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings (outside fenced code).
fn anchors(page: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in page.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// What is wrong with the paths and links of one page (`at` names it in the report).
fn page_problems(at: &str, dir: &Path, text: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    for path in named_paths(text) {
        if !has_placeholder(&path) && !root().join(&path).exists() {
            wrong.push(format!("{at}: `{path}` does not exist"));
        }
    }
    for target in link_targets(text) {
        if target.starts_with("http://")
            || target.starts_with("https://")
            || target.starts_with("mailto:")
            || target.starts_with('<')
            || has_placeholder(&target)
        {
            continue;
        }
        let (file, fragment) = target.split_once('#').unwrap_or((&target, ""));
        let file = if file.is_empty() { None } else { Some(dir.join(file)) };
        if let Some(f) = &file {
            if !f.exists() {
                wrong.push(format!("{at}: the link `{target}` leads nowhere"));
                continue;
            }
        }
        let page = file
            .as_deref()
            .map_or_else(|| text.to_string(), |f| std::fs::read_to_string(f).unwrap_or_default());
        let is_page = file.as_deref().is_none_or(|f| f.extension().is_some_and(|e| e == "md"));
        if !fragment.is_empty() && is_page && !anchors(&page).contains(fragment) {
            wrong.push(format!("{at}: the link `{target}` names no heading of its page"));
        }
    }
    wrong
}

/// What is wrong with the paths named in the `//!` comments of src/.
fn comment_problems() -> Vec<String> {
    let mut wrong = Vec::new();
    for file in files("src", ".rs") {
        let at = file.strip_prefix(root()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let Some(comment) = line.trim_start().strip_prefix("//!") else { continue };
            for path in named_paths(comment) {
                if !has_placeholder(&path) && !root().join(&path).exists() {
                    wrong.push(format!("{at}:{}: `{path}` does not exist", n + 1));
                }
            }
        }
    }
    wrong
}

#[test]
fn every_path_and_link_in_the_docs_and_module_comments_exists() {
    let mut wrong = Vec::new();
    for page in pages() {
        let at = page.strip_prefix(root()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&page).unwrap();
        wrong.extend(page_problems(&at, page.parent().unwrap(), &text));
    }
    wrong.extend(comment_problems());
    assert!(wrong.is_empty(), "stale paths in the documentation:\n{}", wrong.join("\n"));
}

/// The checker itself: it finds a stale path written as code, in prose and as a link, and
/// a link to a missing heading, and passes what exists or holds a placeholder.
#[test]
fn the_checker_finds_a_missing_file_a_missing_link_and_a_missing_heading() {
    let text = "See `src/nowhere.rs`, also src/cli.rs. and scripts/none.sh; [x](docs/absent.md), \
                [y](docs/API.md#files), [z](docs/API.md#no-such-heading), `src/db/{name}.rs`, \
                `tests/it/…`, `static/docs/`, `../src/also-nowhere.rs`, `docs/webhooks/`.";
    let wrong = page_problems("t", &root(), text);
    assert_eq!(
        wrong,
        [
            "t: `src/nowhere.rs` does not exist",
            "t: `scripts/none.sh` does not exist",
            "t: `docs/absent.md` does not exist",
            "t: the link `docs/absent.md` leads nowhere",
            "t: the link `docs/API.md#no-such-heading` names no heading of its page",
        ]
    );
    assert_eq!(
        anchor(" What was measured first, what changed, and why"),
        "what-was-measured-first-what-changed-and-why"
    );
    assert_eq!(anchor(" `[server]`"), "server");
}

/// What `./test.sh` installs (the list in its header: a package at column 12 of each line,
/// before its reason in brackets), each named in README.md, which promises the list.
fn installed_by_test_sh() -> Vec<String> {
    let script = std::fs::read_to_string(root().join("test.sh")).unwrap();
    let header = script.lines().skip_while(|l| !l.starts_with("#   apt:"));
    let header = header.take_while(|l| l.starts_with('#'));
    header
        .filter_map(|l| l.get(11..))
        .filter(|l| !l.starts_with(' '))
        .flat_map(|l| {
            l.split('(').next().unwrap_or("").split_whitespace().map(String::from).collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_readme_names_everything_the_test_command_installs() {
    let packages = installed_by_test_sh();
    assert!(packages.len() >= 10 && packages.contains(&"cargo-nextest".to_string()), "{packages:?}");
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let missing: Vec<&String> = packages.iter().filter(|p| !readme.contains(p.as_str())).collect();
    assert!(missing.is_empty(), "./test.sh installs what README.md does not name: {missing:?}");
}
