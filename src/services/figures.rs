//! The Prometheus text of the database figures and the queue (served by `app::metrics`).

use std::fmt::Write;

use chrono::NaiveDateTime;

pub use crate::db::hooks::HookStats;
pub use crate::db::{QueueStats, Stats};
use crate::domain::EffectState;

/// The Prometheus text of the database figures and the queue.
pub fn render(s: &Stats, q: &QueueStats, dropped_deliveries: u64, now: NaiveDateTime) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# HELP onceform_deliveries_total Requests received by the submit endpoints, by outcome."
    );
    let _ = writeln!(out, "# TYPE onceform_deliveries_total counter");
    for (outcome, n) in &s.deliveries {
        let _ = writeln!(out, "onceform_deliveries_total{{outcome=\"{outcome}\"}} {n}");
    }
    let _ = writeln!(
        out,
        "# HELP onceform_deliveries_dropped_total Delivery rows this process could not write (queue full, database down)."
    );
    let _ = writeln!(out, "# TYPE onceform_deliveries_dropped_total counter");
    let _ = writeln!(out, "onceform_deliveries_dropped_total {dropped_deliveries}");
    let _ = writeln!(out, "# HELP onceform_submissions_total Logical submissions stored.");
    let _ = writeln!(out, "# TYPE onceform_submissions_total counter");
    let _ = writeln!(out, "onceform_submissions_total {}", s.submissions);
    let _ = writeln!(out, "# HELP onceform_side_effects Side-effect records by kind and state.");
    let _ = writeln!(out, "# TYPE onceform_side_effects gauge");
    for (kind, state, n) in &s.effects {
        let _ = writeln!(out, "onceform_side_effects{{kind=\"{kind}\",state=\"{state}\"}} {n}");
    }
    let _ = writeln!(out, "# HELP onceform_open_conflicts Conflicting attempts awaiting review.");
    let _ = writeln!(out, "# TYPE onceform_open_conflicts gauge");
    let _ = writeln!(out, "onceform_open_conflicts {}", s.open_conflicts);
    let _ =
        writeln!(out, "# HELP onceform_open_duplicate_pairs Suspected duplicate pairs awaiting a decision.");
    let _ = writeln!(out, "# TYPE onceform_open_duplicate_pairs gauge");
    let _ = writeln!(out, "onceform_open_duplicate_pairs {}", s.open_duplicate_pairs);
    for (state, name) in [(EffectState::Unknown, "unknown"), (EffectState::FailedFinal, "failed_final")] {
        let n: i64 = s.effects.iter().filter(|(_, st, _)| *st == state).map(|(_, _, n)| n).sum();
        let _ = writeln!(out, "# HELP onceform_effects_{name} Side-effect records in state {state}.");
        let _ = writeln!(out, "# TYPE onceform_effects_{name} gauge");
        let _ = writeln!(out, "onceform_effects_{name} {n}");
    }
    let age = q.oldest_pending.map(|t| (now - t).num_milliseconds().max(0) as f64 / 1000.0).unwrap_or(0.0);
    let _ = writeln!(out, "# HELP onceform_oldest_pending_age_seconds Age of the oldest PENDING record.");
    let _ = writeln!(out, "# TYPE onceform_oldest_pending_age_seconds gauge");
    let _ = writeln!(out, "onceform_oldest_pending_age_seconds {age:.3}");
    let (lookups, attempts): (Vec<_>, Vec<_>) = q.attempts.iter().partition(|(o, _)| o.is_lookup());
    let _ = writeln!(out, "# HELP onceform_attempts_total Delivery attempts by outcome.");
    let _ = writeln!(out, "# TYPE onceform_attempts_total counter");
    for (outcome, n) in attempts {
        let _ = writeln!(out, "onceform_attempts_total{{outcome=\"{outcome}\"}} {n}");
    }
    let _ = writeln!(out, "# HELP onceform_reconciliations_total Lookups of UNKNOWN outcomes by result.");
    let _ = writeln!(out, "# TYPE onceform_reconciliations_total counter");
    for (outcome, n) in lookups {
        let result = outcome.as_str().trim_start_matches("lookup_");
        let _ = writeln!(out, "onceform_reconciliations_total{{outcome=\"{result}\"}} {n}");
    }
    out
}
