//! What `/metrics` and the retention page show of the lifecycle: rows purged by form (a
//! webhook source's: by source) and kind, the last pass, the oldest content kept, and the
//! redelivery spread (first to last delivery of one operation ID, per form, over the
//! deliveries of the last 30 days).

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::db::lifecycle_stats::LifecycleStatsStore;
use crate::db::{DbError, Pool};
use crate::domain::RecordKind;
use crate::with_conn;
use chrono::{Duration, NaiveDateTime};

/// Upper bounds (seconds) of the spread histogram's buckets.
pub const SPREAD_BUCKETS: [f64; 10] =
    [1.0, 10.0, 60.0, 600.0, 3600.0, 21600.0, 86400.0, 604800.0, 2592000.0, 7776000.0];
/// How far back the spread is measured.
pub const SPREAD_DAYS: i64 = 30;

#[derive(Debug, Clone, Default)]
pub struct LifecycleStats {
    /// (form, kind, rows)
    pub purged: Vec<(String, String, i64)>,
    /// (started_at, duration_ms) of the last pass.
    pub last_pass: Option<(NaiveDateTime, i64)>,
    /// form → received_at of the oldest submission whose content is kept.
    pub oldest_content: BTreeMap<String, NaiveDateTime>,
    /// form → spreads in seconds of operation IDs delivered more than once, sorted.
    pub spreads: BTreeMap<String, Vec<f64>>,
}

impl LifecycleStats {
    /// The 99th percentile spread of `form`, in seconds.
    pub fn spread_p99(&self, form: &str) -> Option<f64> {
        let s = self.spreads.get(form)?;
        s.get((s.len() * 99).div_ceil(100).saturating_sub(1)).copied()
    }
}

pub fn read(pool: &Pool, now: NaiveDateTime) -> Result<LifecycleStats, DbError> {
    let since = now - Duration::days(SPREAD_DAYS);
    let rows = with_conn!(pool, |c| c.lifecycle_rows(since).map_err(DbError::from))?;
    let mut spreads: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (form, first, last) in rows.redelivered {
        if let (Some(form), Some(first), Some(last)) = (form, first, last) {
            spreads.entry(form).or_default().push((last - first).num_milliseconds() as f64 / 1000.0);
        }
    }
    spreads.values_mut().for_each(|v| v.sort_by(f64::total_cmp));
    let oldest_content = rows.oldest.into_iter().filter_map(|(f, t)| t.map(|t| (f, t))).collect();
    Ok(LifecycleStats { purged: rows.purged, last_pass: rows.last_pass, oldest_content, spreads })
}

/// A family of gauges or counters by form, and its twin by webhook source for the rows of
/// sources' events (named by `RecordKind::source_scope`): `onceform_{name}{form=…}`, `onceform_hook_{name}{source=…}`.
/// `help` is the forms' family's, then the sources'; `rows` are (form, more labels, value).
fn by_form_and_source<'a>(
    out: &mut String,
    name: &str,
    kind: &str,
    [help, hook_help]: [&str; 2],
    rows: impl Iterator<Item = (&'a str, String, String)> + Clone,
) {
    for hooks in [false, true] {
        let (family, key) = if hooks {
            (format!("onceform_hook_{name}"), "source")
        } else {
            (format!("onceform_{name}"), "form")
        };
        let _ = writeln!(out, "# HELP {family} {}", if hooks { hook_help } else { help });
        let _ = writeln!(out, "# TYPE {family} {kind}");
        for (form, labels, value) in rows.clone() {
            let source = RecordKind::scope_source(form);
            let label = match hooks {
                true => source,
                false => source.is_none().then_some(form),
            };
            if let Some(label) = label {
                let _ = writeln!(out, "{family}{{{key}=\"{label}\"{labels}}} {value}");
            }
        }
    }
}

/// Prometheus text for `/metrics`.
pub fn render(s: &LifecycleStats, now: NaiveDateTime) -> String {
    let mut out = String::new();
    by_form_and_source(
        &mut out,
        "purged_rows_total",
        "counter",
        [
            "Rows purged by retention or erasure, by form and kind.",
            "Inbound events purged by retention, by source and kind (content, quarantine, keys).",
        ],
        s.purged.iter().map(|(form, kind, n)| (form.as_str(), format!(",kind=\"{kind}\""), n.to_string())),
    );
    by_form_and_source(
        &mut out,
        "oldest_content_age_seconds",
        "gauge",
        [
            "Age of the oldest submission whose content is kept.",
            "Age of the oldest inbound event whose body is kept.",
        ],
        s.oldest_content
            .iter()
            .map(|(form, t)| (form.as_str(), String::new(), (now - *t).num_seconds().max(0).to_string())),
    );
    let (at, ms) = s.last_pass.map(|(t, ms)| (t.and_utc().timestamp(), ms)).unwrap_or((0, 0));
    let _ = writeln!(
        out,
        "# HELP onceform_purge_last_run_timestamp_seconds When the last retention pass started (0: never)."
    );
    let _ = writeln!(out, "# TYPE onceform_purge_last_run_timestamp_seconds gauge");
    let _ = writeln!(out, "onceform_purge_last_run_timestamp_seconds {at}");
    let _ = writeln!(
        out,
        "# HELP onceform_purge_last_run_duration_seconds How long the last retention pass took."
    );
    let _ = writeln!(out, "# TYPE onceform_purge_last_run_duration_seconds gauge");
    let _ = writeln!(out, "onceform_purge_last_run_duration_seconds {:.3}", ms as f64 / 1000.0);
    let _ = writeln!(
        out,
        "# HELP onceform_redelivery_spread_seconds First to last delivery of one operation ID ({SPREAD_DAYS} days)."
    );
    let _ = writeln!(out, "# TYPE onceform_redelivery_spread_seconds histogram");
    for (form, spreads) in &s.spreads {
        for le in SPREAD_BUCKETS {
            let n = spreads.iter().filter(|v| **v <= le).count();
            let _ =
                writeln!(out, "onceform_redelivery_spread_seconds_bucket{{form=\"{form}\",le=\"{le}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "onceform_redelivery_spread_seconds_bucket{{form=\"{form}\",le=\"+Inf\"}} {}",
            spreads.len()
        );
        let _ = writeln!(
            out,
            "onceform_redelivery_spread_seconds_sum{{form=\"{form}\"}} {:.3}",
            spreads.iter().sum::<f64>()
        );
        let _ =
            writeln!(out, "onceform_redelivery_spread_seconds_count{{form=\"{form}\"}} {}", spreads.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p99_of_the_spreads() {
        let mut s = LifecycleStats::default();
        s.spreads.insert("contact".into(), (1..=100).map(f64::from).collect());
        assert_eq!(s.spread_p99("contact"), Some(99.0));
        s.spreads.insert("one".into(), vec![5.0]);
        assert_eq!(s.spread_p99("one"), Some(5.0));
        assert_eq!(s.spread_p99("none"), None);
        let text = render(&s, NaiveDateTime::default());
        assert!(
            text.contains("onceform_redelivery_spread_seconds_bucket{form=\"contact\",le=\"60\"} 60"),
            "{text}"
        );
        assert!(text.contains("onceform_purge_last_run_timestamp_seconds 0"));
    }

    #[test]
    fn a_webhook_source_s_rows_are_labelled_by_source() {
        let s = LifecycleStats {
            purged: vec![("contact".into(), "content".into(), 2), ("hook:helpdesk".into(), "keys".into(), 3)],
            ..LifecycleStats::default()
        };
        let text = render(&s, NaiveDateTime::default());
        assert!(text.contains("onceform_purged_rows_total{form=\"contact\",kind=\"content\"} 2"), "{text}");
        assert!(
            text.contains("onceform_hook_purged_rows_total{source=\"helpdesk\",kind=\"keys\"} 3"),
            "{text}"
        );
        assert!(!text.contains("form=\"hook:"), "{text}");
    }
}
