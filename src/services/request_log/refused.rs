//! Requests refused before the accept transaction (unknown form, origin not allowed, rate
//! limit, bad key, body or content type, invalid fields) are counted here, by form and
//! reason, and never written as rows: a flood of refusals costs a counter each, not
//! database space. The labels are bounded: a form is one of the configured forms (any
//! other name counts as `unknown`), a reason one of the problem types (static strings).

use std::collections::BTreeSet;

use crate::base::metrics::{IntCounterVec, Opts, Result};

/// The label of a refusal that names no configured form.
const UNKNOWN: &str = "unknown";

pub struct RefusedCounts {
    forms: BTreeSet<String>,
    /// `onceform_refused_requests_total{form, reason}`.
    counts: IntCounterVec,
}

impl RefusedCounts {
    /// Counters for the configured `forms`, none counted yet.
    pub fn new<'a>(forms: impl IntoIterator<Item = &'a String>) -> Result<RefusedCounts> {
        let counts = IntCounterVec::new(
            Opts::new(
                "onceform_refused_requests_total",
                "Submit requests refused before the accept transaction (no row is written for them), \
                 by form and problem type.",
            ),
            &["form", "reason"],
        )?;
        Ok(RefusedCounts { forms: forms.into_iter().cloned().collect(), counts })
    }

    /// Counts one refusal of `form` (`None`, or a name not configured: `unknown`).
    pub fn count(&self, form: Option<&str>, reason: &'static str) {
        let form = form.filter(|f| self.forms.contains(*f)).unwrap_or(UNKNOWN);
        self.counts.with_label_values(&[form, reason]).inc();
    }

    /// How many refusals of `form` for `reason` were counted (none is made by asking).
    pub fn get(&self, form: &str, reason: &str) -> u64 {
        use crate::base::metrics::Collector;
        let labelled = |m: &&prometheus::proto::Metric| {
            let value =
                |name: &str| m.get_label().iter().find(|l| l.name() == name).map(|l| l.value().to_string());
            value("form").as_deref() == Some(form) && value("reason").as_deref() == Some(reason)
        };
        let families = self.counts.collect();
        let metrics = families.iter().flat_map(|f| f.get_metric());
        metrics.filter(labelled).map(|m| m.get_counter().get_value() as u64).sum()
    }

    /// The counters, for the registry of `/metrics`.
    pub fn collector(&self) -> IntCounterVec {
        self.counts.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_bounded_to_configured_forms() {
        let counts = RefusedCounts::new(&["contact".to_string()]).unwrap();
        counts.count(Some("contact"), "rate-limited");
        counts.count(Some("nope-1"), "not-found");
        counts.count(Some("nope-2"), "not-found");
        counts.count(None, "not-found");
        assert_eq!(counts.get("contact", "rate-limited"), 1);
        assert_eq!(counts.get("unknown", "not-found"), 3, "every unconfigured name is one label");
        let families = crate::base::metrics::Collector::collect(&counts.collector());
        assert_eq!(families[0].get_metric().len(), 2);
        let out = crate::base::metrics::encode_families(&families).unwrap();
        assert!(out.contains("onceform_refused_requests_total{form=\"contact\",reason=\"rate-limited\"} 1\n"));
        assert!(out.contains("onceform_refused_requests_total{form=\"unknown\",reason=\"not-found\"} 3\n"));
        assert!(!out.contains("nope"));
    }
}
