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
