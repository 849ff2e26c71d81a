//! `ONCEFORM_METRICS_TOKEN`: the bearer token `/metrics` needs when set.

use serde::Deserialize;

use crate::base::secret::constant_time_eq;

/// The bearer token `/metrics` needs when set; never shown by `Debug`.
#[derive(Clone, Deserialize)]
#[serde(transparent)]
pub struct MetricsToken(String);

impl MetricsToken {
    pub fn new(token: String) -> MetricsToken {
        MetricsToken(token)
    }

    /// `given` is this token (compared in constant time).
    pub fn matches(&self, given: &str) -> bool {
        constant_time_eq(given.as_bytes(), self.0.as_bytes())
    }
}

impl std::fmt::Debug for MetricsToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsToken(<redacted>)")
    }
}
