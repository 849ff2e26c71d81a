//! Requests refused before the accept transaction (unknown form, origin not allowed, rate
//! limit, bad key, body or content type, invalid fields) are counted here, by form and
//! reason, and never written as rows: a flood of refusals costs a counter each, not
//! database space. The labels are bounded: a form is one of the configured forms (any
//! other name counts as `unknown`), a reason one of the problem types (static strings).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::sync::Mutex;

/// The label of a refusal that names no configured form.
const UNKNOWN: &str = "unknown";

pub struct RefusedCounts {
    forms: BTreeSet<String>,
    counts: Mutex<BTreeMap<(String, &'static str), u64>>,
}

impl RefusedCounts {
    /// Counters for the configured `forms`, all at zero.
    pub fn new<'a>(forms: impl IntoIterator<Item = &'a String>) -> RefusedCounts {
        RefusedCounts { forms: forms.into_iter().cloned().collect(), counts: Mutex::default() }
    }

    /// Counts one refusal of `form` (`None`, or a name not configured: `unknown`).
    pub fn count(&self, form: Option<&str>, reason: &'static str) {
        let form = form.filter(|f| self.forms.contains(*f)).unwrap_or(UNKNOWN);
        if let Ok(mut counts) = self.counts.lock() {
            *counts.entry((form.to_string(), reason)).or_default() += 1;
        }
    }

    /// How many refusals of `form` for `reason` were counted.
    pub fn get(&self, form: &str, reason: &str) -> u64 {
        let Ok(counts) = self.counts.lock() else { return 0 };
        counts.iter().filter(|((f, r), _)| f == form && *r == reason).map(|(_, n)| n).sum()
    }

    /// `onceform_refused_requests_total{form, reason}`.
    pub fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP onceform_refused_requests_total Submit requests refused before the accept \
             transaction (no row is written for them), by form and problem type."
        );
        let _ = writeln!(out, "# TYPE onceform_refused_requests_total counter");
        let Ok(counts) = self.counts.lock() else { return };
        for ((form, reason), n) in counts.iter() {
            let _ =
                writeln!(out, "onceform_refused_requests_total{{form=\"{form}\",reason=\"{reason}\"}} {n}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_bounded_to_configured_forms() {
        let counts = RefusedCounts::new(&["contact".to_string()]);
        counts.count(Some("contact"), "rate-limited");
        counts.count(Some("nope-1"), "not-found");
        counts.count(Some("nope-2"), "not-found");
        counts.count(None, "not-found");
        assert_eq!(counts.get("contact", "rate-limited"), 1);
        assert_eq!(counts.get("unknown", "not-found"), 3, "every unconfigured name is one label");
        assert_eq!(counts.counts.lock().unwrap().len(), 2);
        let mut out = String::new();
        counts.render(&mut out);
        assert!(out.contains("onceform_refused_requests_total{form=\"contact\",reason=\"rate-limited\"} 1\n"));
        assert!(out.contains("onceform_refused_requests_total{form=\"unknown\",reason=\"not-found\"} 3\n"));
        assert!(!out.contains("nope"));
    }
}
