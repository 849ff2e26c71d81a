//! `[alerts]`: what `onceform alert-rules` writes into the Prometheus rules.

use serde::Deserialize;

/// What `onceform alert-rules` writes into the Prometheus rules.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlertsConfig {
    /// The `owner` label of every alert: the team that answers for this integration.
    pub owner: String,
    /// Where docs/RUNBOOK.md is published; each alert links a section of it (`#alertname`).
    pub runbook_url: String,
}

impl Default for AlertsConfig {
    fn default() -> Self {
        Self { owner: "onceform".into(), runbook_url: "docs/RUNBOOK.md".into() }
    }
}
