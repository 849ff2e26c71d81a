//! The database figures and the queue on `/metrics`: their families, declared once, and the
//! samples of one scrape (built from the figures `app::metrics` read, never kept in gauges).

use chrono::NaiveDateTime;

use crate::base::metrics::{Desc, Family, MetricFamily, Result};
pub use crate::db::hooks::HookStats;
pub use crate::db::{QueueStats, Stats};
use crate::domain::EffectState;

pub struct Families {
    deliveries: Family,
    dropped: Family,
    submissions: Family,
    side_effects: Family,
    open_conflicts: Family,
    open_duplicate_pairs: Family,
    /// `onceform_effects_unknown`, `onceform_effects_failed_final`.
    by_state: [(EffectState, Family); 2],
    oldest_pending: Family,
    attempts: Family,
    reconciliations: Family,
}

impl Families {
    pub fn new() -> Result<Families> {
        let by_state = |state: EffectState, name: &str| {
            Family::gauge(
                &format!("onceform_effects_{name}"),
                format!("Side-effect records in state {state}."),
                &[],
            )
            .map(|family| (state, family))
        };
        Ok(Families {
            deliveries: Family::counter(
                "onceform_deliveries_total",
                "Requests received by the submit endpoints, by outcome.",
                &["outcome"],
            )?,
            dropped: Family::counter(
                "onceform_deliveries_dropped_total",
                "Delivery rows this process could not write (queue full, database down).",
                &[],
            )?,
            submissions: Family::counter("onceform_submissions_total", "Logical submissions stored.", &[])?,
            side_effects: Family::gauge(
                "onceform_side_effects",
                "Side-effect records by kind and state.",
                &["kind", "state"],
            )?,
            open_conflicts: Family::gauge(
                "onceform_open_conflicts",
                "Conflicting attempts awaiting review.",
                &[],
            )?,
            open_duplicate_pairs: Family::gauge(
                "onceform_open_duplicate_pairs",
                "Suspected duplicate pairs awaiting a decision.",
                &[],
            )?,
            by_state: [
                by_state(EffectState::Unknown, "unknown")?,
                by_state(EffectState::FailedFinal, "failed_final")?,
            ],
            oldest_pending: Family::gauge(
                "onceform_oldest_pending_age_seconds",
                "Age of the oldest PENDING record.",
                &[],
            )?,
            attempts: Family::counter(
                "onceform_attempts_total",
                "Delivery attempts by outcome.",
                &["outcome"],
            )?,
            reconciliations: Family::counter(
                "onceform_reconciliations_total",
                "Lookups of UNKNOWN outcomes by result.",
                &["outcome"],
            )?,
        })
    }

    pub fn descs(&self) -> Vec<&Desc> {
        let [(_, unknown), (_, failed_final)] = &self.by_state;
        [
            &self.deliveries,
            &self.dropped,
            &self.submissions,
            &self.side_effects,
            &self.open_conflicts,
            &self.open_duplicate_pairs,
            unknown,
            failed_final,
            &self.oldest_pending,
            &self.attempts,
            &self.reconciliations,
        ]
        .into_iter()
        .map(Family::desc)
        .collect()
    }

    /// The samples of `s` and `q` read at `now`, and this process's `dropped_deliveries`.
    pub fn collect(
        &self,
        s: &Stats,
        q: &QueueStats,
        dropped_deliveries: u64,
        now: NaiveDateTime,
    ) -> Vec<MetricFamily> {
        let mut deliveries = self.deliveries.samples();
        for (outcome, n) in &s.deliveries {
            deliveries.value(&[outcome.as_str()], *n as f64);
        }
        let mut effects = self.side_effects.samples();
        for (kind, state, n) in &s.effects {
            effects.value(&[kind, state.as_str()], *n as f64);
        }
        let mut out = vec![
            deliveries.finish(),
            self.dropped.single(dropped_deliveries as f64),
            self.submissions.single(s.submissions as f64),
            effects.finish(),
            self.open_conflicts.single(s.open_conflicts as f64),
            self.open_duplicate_pairs.single(s.open_duplicate_pairs as f64),
        ];
        for (state, family) in &self.by_state {
            let n: i64 = s.effects.iter().filter(|(_, st, _)| st == state).map(|(_, _, n)| n).sum();
            out.push(family.single(n as f64));
        }
        let age =
            q.oldest_pending.map(|t| (now - t).num_milliseconds().max(0) as f64 / 1000.0).unwrap_or(0.0);
        out.push(self.oldest_pending.single(age));
        let (mut attempts, mut lookups) = (self.attempts.samples(), self.reconciliations.samples());
        for (outcome, n) in &q.attempts {
            if outcome.is_lookup() {
                lookups.value(&[outcome.as_str().trim_start_matches("lookup_")], *n as f64);
            } else {
                attempts.value(&[outcome.as_str()], *n as f64);
            }
        }
        out.extend([attempts.finish(), lookups.finish()]);
        out
    }
}
