//! The shipped Prometheus rules: `promtool check rules` and `promtool test rules` (Debian's
//! `prometheus` package, installed by `./test.sh`) pass; `onceform alert-rules` renders them
//! with the configured owner into a file promtool accepts; every metric they use is served.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::delivery::spawn_delivery_app;
use crate::support::{inquiry, new_key, Backend};

fn rules_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus")
}

/// Runs promtool; (success, output).
fn promtool(args: &[&str], dir: &Path) -> (bool, String) {
    let out = Command::new("promtool").args(args).current_dir(dir).output().unwrap_or_else(|e| {
        panic!("cannot run promtool ({e}); ./test.sh installs it (apt-get install prometheus)")
    });
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn promtool_checks_the_rules_and_passes_their_unit_tests() {
    let (ok, out) = promtool(&["check", "rules", "onceform-rules.yml"], &rules_dir());
    println!("{out}");
    assert!(ok && out.contains("SUCCESS: 8 rules found"), "{out}");
    let (ok, out) = promtool(&["test", "rules", "onceform-rules.test.yml"], &rules_dir());
    println!("{out}");
    assert!(ok && out.contains("SUCCESS"), "{out}");
}

#[test]
fn promtool_unit_tests_cover_each_alert_firing_and_quiet() {
    let rules = std::fs::read_to_string(rules_dir().join("onceform-rules.yml")).unwrap();
    let tests = std::fs::read_to_string(rules_dir().join("onceform-rules.test.yml")).unwrap();
    let names: Vec<&str> = rules.lines().filter_map(|l| l.trim().strip_prefix("- alert: ")).collect();
    assert_eq!(names.len(), 8);
    for name in names {
        assert!(name.starts_with("Onceform"), "{name}");
        // Each `alertname:` line is followed by its expectations: some fire, some expect none.
        let cases: Vec<&str> = tests.split(&format!("alertname: {name}\n")).skip(1).collect();
        assert!(
            cases.iter().any(|c| c.trim_start().starts_with("exp_alerts:\n")),
            "{name} never fires in a test"
        );
        assert!(
            cases.iter().any(|c| c.trim_start().starts_with("exp_alerts: []")),
            "{name} has no quiet case"
        );
    }
}

#[test]
fn onceform_alert_rules_writes_the_configured_owner_and_promtool_accepts_it() {
    let dir = std::env::temp_dir().join(format!("onceform-rules-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("onceform.toml");
    let base = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/config/default.toml"))
        .unwrap();
    std::fs::write(
        &config,
        format!("{base}\n[alerts]\nowner = \"web-sales\"\nrunbook_url = \"https://wiki.example.com/onceform/runbook\"\n"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_onceform"))
        .args(["--config", config.to_str().unwrap(), "alert-rules"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("owner: \"web-sales\"").count(), 8, "{text}");
    assert_eq!(text.matches("runbook_url: \"https://wiki.example.com/onceform/runbook#onceform").count(), 8);
    std::fs::write(dir.join("rendered.yml"), &text).unwrap();
    let (ok, check) = promtool(&["check", "rules", "rendered.yml"], &dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ok, "{check}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_the_rules_use_is_served_on_metrics() {
    // A family with no sample is not served (the registry leaves it out, as Prometheus
    // clients do): one submission is delivered first, so that effects and attempts have some.
    let d = spawn_delivery_app(Backend::Sqlite, |_| {}).await;
    assert_eq!(d.app.submit(&new_key(), &inquiry("For the rules")).await.status(), 201);
    d.settle(&d.worker()).await;
    let app = &d.app;
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    let rules = std::fs::read_to_string(rules_dir().join("onceform-rules.yml")).unwrap();
    let mut used: Vec<&str> = rules
        .lines()
        .filter(|l| l.trim_start().starts_with("expr:"))
        .flat_map(|l| l.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .filter(|w| w.starts_with("onceform_"))
        .collect();
    used.sort();
    used.dedup();
    assert!(used.len() >= 8, "{used:?}");
    for name in used {
        // The purge pass (retention) publishes its own metric.
        if name == "onceform_purge_last_run_timestamp_seconds" {
            continue;
        }
        assert!(metrics.contains(&format!("# TYPE {name} ")), "{name} is not on /metrics:\n{metrics}");
    }
}
