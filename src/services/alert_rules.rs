//! `onceform alert-rules`: the Prometheus alert rules shipped in
//! `deploy/prometheus/onceform-rules.yml`, with the configured `owner` label and runbook
//! location (`[alerts]`). The checked-in file is the rendering of the defaults.

use crate::config::AlertsConfig;

/// The rules as checked in (owner `onceform`, runbook `docs/RUNBOOK.md`).
pub const RULES: &str = include_str!("../../deploy/prometheus/onceform-rules.yml");

/// The rules with `alerts.owner` and `alerts.runbook_url` written in. Values are emitted as
/// JSON strings, which YAML reads as double-quoted scalars, so no value can break the file.
pub fn render(alerts: &AlertsConfig) -> String {
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut out = String::with_capacity(RULES.len());
    for line in RULES.lines() {
        let indent = &line[..line.len() - line.trim_start().len()];
        let trimmed = line.trim_start();
        if trimmed.starts_with("owner: ") {
            out.push_str(&format!("{indent}owner: {}", quote(&alerts.owner)));
        } else if let Some(anchor) =
            trimmed.strip_prefix("runbook_url: \"docs/RUNBOOK.md#").and_then(|a| a.strip_suffix('"'))
        {
            out.push_str(&format!(
                "{indent}runbook_url: {}",
                quote(&format!("{}#{anchor}", alerts.runbook_url))
            ));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_render_the_checked_in_file() {
        assert_eq!(render(&AlertsConfig::default()), RULES);
    }

    #[test]
    fn every_alert_gets_the_configured_owner_and_runbook() {
        let alerts = AlertsConfig {
            owner: "web \"sales\" team".into(),
            runbook_url: "https://wiki.example.com/onceform".into(),
        };
        let text = render(&alerts);
        let n = RULES.matches("- alert: Onceform").count();
        assert_eq!(n, 8);
        assert_eq!(text.matches("owner: \"web \\\"sales\\\" team\"").count(), n, "{text}");
        assert_eq!(text.matches("runbook_url: \"https://wiki.example.com/onceform#onceform").count(), n);
        assert!(!text.contains("owner: \"onceform\""));
        assert!(!text.contains("docs/RUNBOOK.md"));
    }
}
