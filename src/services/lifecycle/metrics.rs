//! What `/metrics` and the retention page show of the lifecycle: rows purged by form (a
//! webhook source's: by source) and kind, the last pass, the oldest content kept, and the
//! redelivery spread (first to last delivery of one operation ID, per form, over the
//! deliveries of the last 30 days).

use std::collections::BTreeMap;

use crate::base::metrics::{Desc, Family, MetricFamily, MetricType, Result};
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

pub fn read(pool: &Pool, now: NaiveDateTime) -> std::result::Result<LifecycleStats, DbError> {
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

/// A family by form and its twin by webhook source for the rows of sources' events (named by
/// `RecordKind::source_scope`): `onceform_{name}{form=…}`, `onceform_hook_{name}{source=…}`.
struct ByFormAndSource {
    forms: Family,
    sources: Family,
}

impl ByFormAndSource {
    /// `help` is the forms' family's, then the sources'; `labels` follow `form` / `source`.
    fn new(name: &str, kind: MetricType, [help, hook_help]: [&str; 2], labels: &[&str]) -> Result<Self> {
        let with = |first: &'static str| [&[first], labels].concat();
        Ok(ByFormAndSource {
            forms: Family::new(&format!("onceform_{name}"), help, kind, &with("form"))?,
            sources: Family::new(&format!("onceform_hook_{name}"), hook_help, kind, &with("source"))?,
        })
    }

    /// `rows` are (form, more label values, value): a source's scope goes to the twin.
    fn collect<'a>(&self, rows: impl Iterator<Item = (&'a str, Vec<&'a str>, f64)>) -> [MetricFamily; 2] {
        let (mut forms, mut sources) = (self.forms.samples(), self.sources.samples());
        for (form, labels, value) in rows {
            match RecordKind::scope_source(form) {
                Some(source) => sources.value(&[&[source], &labels[..]].concat(), value),
                None => forms.value(&[&[form], &labels[..]].concat(), value),
            }
        }
        [forms.finish(), sources.finish()]
    }
}

/// The lifecycle's families on `/metrics`, declared once.
pub struct Families {
    purged: ByFormAndSource,
    oldest_content: ByFormAndSource,
    last_run: Family,
    last_duration: Family,
    spread: Family,
}

impl Families {
    pub fn new() -> Result<Families> {
        Ok(Families {
            purged: ByFormAndSource::new(
                "purged_rows_total",
                MetricType::COUNTER,
                [
                    "Rows purged by retention or erasure, by form and kind.",
                    "Inbound events purged by retention, by source and kind (content, quarantine, keys).",
                ],
                &["kind"],
            )?,
            oldest_content: ByFormAndSource::new(
                "oldest_content_age_seconds",
                MetricType::GAUGE,
                [
                    "Age of the oldest submission whose content is kept.",
                    "Age of the oldest inbound event whose body is kept.",
                ],
                &[],
            )?,
            last_run: Family::gauge(
                "onceform_purge_last_run_timestamp_seconds",
                "When the last retention pass started (0: never).",
                &[],
            )?,
            last_duration: Family::gauge(
                "onceform_purge_last_run_duration_seconds",
                "How long the last retention pass took.",
                &[],
            )?,
            spread: Family::new(
                "onceform_redelivery_spread_seconds",
                format!("First to last delivery of one operation ID ({SPREAD_DAYS} days)."),
                MetricType::HISTOGRAM,
                &["form"],
            )?,
        })
    }

    pub fn descs(&self) -> Vec<&Desc> {
        [&self.purged, &self.oldest_content]
            .into_iter()
            .flat_map(|twins| [&twins.forms, &twins.sources])
            .chain([&self.last_run, &self.last_duration, &self.spread])
            .map(Family::desc)
            .collect()
    }

    /// The samples of `s`, read at `now`.
    pub fn collect(&self, s: &LifecycleStats, now: NaiveDateTime) -> Vec<MetricFamily> {
        let mut out = Vec::with_capacity(7);
        out.extend(
            self.purged.collect(
                s.purged.iter().map(|(form, kind, n)| (form.as_str(), vec![kind.as_str()], *n as f64)),
            ),
        );
        out.extend(
            self.oldest_content.collect(
                s.oldest_content
                    .iter()
                    .map(|(form, t)| (form.as_str(), vec![], (now - *t).num_seconds().max(0) as f64)),
            ),
        );
        let (at, ms) = s.last_pass.map(|(t, ms)| (t.and_utc().timestamp(), ms)).unwrap_or((0, 0));
        out.push(self.last_run.single(at as f64));
        out.push(self.last_duration.single(ms as f64 / 1000.0));
        let mut spread = self.spread.samples();
        for (form, spreads) in &s.spreads {
            let buckets: Vec<(f64, u64)> = SPREAD_BUCKETS
                .iter()
                .map(|le| (*le, spreads.iter().filter(|v| **v <= *le).count() as u64))
                .collect();
            spread.histogram(&[form], &buckets, spreads.iter().sum(), spreads.len() as u64);
        }
        out.push(spread.finish());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(s: &LifecycleStats, now: NaiveDateTime) -> String {
        crate::base::metrics::encode_families(&Families::new().unwrap().collect(s, now)).unwrap()
    }

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
