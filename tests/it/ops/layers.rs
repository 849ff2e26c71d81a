//! The layers of docs/ARCHITECTURE.md hold: `scripts/layers.sh` finds no module using one
//! above it and no cycle.

use std::process::Command;

#[test]
fn every_arrow_between_modules_points_down() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash").arg(format!("{root}/scripts/layers.sh")).output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "scripts/layers.sh failed:\n{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(report.contains("http -> accept"), "the edges are listed:\n{report}");
}

/// Every `.rs` file under `src/`, as (path relative to the crate, text).
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let name = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.push((name, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    walk(&root.join("src"), root, &mut out);
    out.sort();
    out
}

/// The lines of `src/` that contain `needle`, outside the files `allowed` accepts: "path:line".
fn found_outside(needle: &str, allowed: impl Fn(&str) -> bool) -> (Vec<String>, usize) {
    let mut outside = Vec::new();
    let mut inside = 0;
    for (path, text) in sources() {
        for (i, line) in text.lines().enumerate().filter(|(_, l)| l.contains(needle)) {
            match allowed(&path) {
                true => inside += 1,
                false => outside.push(format!("{path}:{}: {}", i + 1, line.trim())),
            }
        }
    }
    (outside, inside)
}

/// The environment is read once, at start (and again at a reload), by configuration and
/// start-up: everything else is handed a `config::Secrets` snapshot.
#[test]
fn only_configuration_and_start_up_read_the_environment() {
    let start_up = |path: &str| {
        ["src/config/", "src/app/", "src/main.rs", "src/cli"].iter().any(|p| path.starts_with(p))
    };
    let (outside, inside) = found_outside("env::var", start_up);
    assert!(
        outside.is_empty(),
        "read the environment through config::Secrets instead:\n{}",
        outside.join("\n")
    );
    assert!(inside > 0, "the snapshot itself reads the environment (src/config/secrets.rs): the scan saw it");
}

/// Providers' settings are typed at the seams (`toml::Value` checked by each provider), never
/// downcast from `dyn Any`.
#[test]
fn no_settings_travel_as_dyn_any() {
    let (outside, _) = found_outside("dyn Any", |_| false);
    assert!(outside.is_empty(), "{}", outside.join("\n"));
}

/// A `macro_rules!` is at most 25 lines, from its name to its closing brace: a longer one is
/// code that wants to be a function or a trait.
#[test]
fn no_macro_is_longer_than_25_lines() {
    let mut long = Vec::new();
    for (path, text) in sources() {
        let lines: Vec<&str> = text.lines().collect();
        for (start, _) in lines.iter().enumerate().filter(|(_, l)| l.trim_start().starts_with("macro_rules!"))
        {
            let mut depth = 0i32;
            let end = lines[start..].iter().position(|l| {
                depth += l.matches('{').count() as i32 - l.matches('}').count() as i32;
                depth == 0 && l.contains('}')
            });
            let length = end.map_or(usize::MAX, |e| e + 1);
            if length > 25 {
                long.push(format!("{path}:{}: {length} lines", start + 1));
            }
        }
    }
    assert!(long.is_empty(), "{}", long.join("\n"));
    assert!(sources().iter().any(|(_, t)| t.contains("macro_rules! with_conn")), "the scan sees the macros");
}

/// The front door stays a landing page, and the benchmarks page today's figures (the
/// history is in docs/benchmarks/history.md).
#[test]
fn the_readme_and_the_benchmarks_page_stay_short() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for (page, limit) in [("README.md", 12 * 1024), ("BENCHMARKS.md", 30 * 1024)] {
        let size = std::fs::metadata(root.join(page)).unwrap().len();
        assert!(size <= limit, "{page} is {size} bytes, more than {limit}");
    }
}
