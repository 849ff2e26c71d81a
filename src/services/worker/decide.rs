//! The next state after an attempt or a lookup, and the backoff between attempts.

use std::time::Duration;

use chrono::NaiveDateTime;

use crate::config::WorkerConfig;
use crate::db::models::Transition;
use crate::domain::EffectState;
use crate::services::effects::{Lookup, Outcome, Report};

/// success → SENT; transient → PENDING later (or FAILED_FINAL once attempts are spent);
/// permanent → FAILED_FINAL; ambiguous → UNKNOWN, unless resending is harmless (an upsert),
/// in which case it is retried like a transient failure.
pub fn after_attempt(
    report: &Report,
    attempt: i32,
    idempotent: bool,
    cfg: &WorkerConfig,
    now: NaiveDateTime,
) -> Transition {
    let class = report.error_class.clone();
    match &report.outcome {
        Outcome::Sent { provider_ref } => to(EffectState::Sent, now, Some(provider_ref.clone()), None),
        Outcome::Permanent => to(EffectState::FailedFinal, now, None, class),
        Outcome::Ambiguous if !idempotent => {
            to(EffectState::Unknown, now + ms(cfg.reconcile_after_ms), None, class)
        }
        Outcome::Transient { .. } | Outcome::Ambiguous if attempt >= cfg.max_attempts => to(
            EffectState::FailedFinal,
            now,
            None,
            Some(format!("attempts exhausted ({})", class.as_deref().unwrap_or("error"))),
        ),
        Outcome::Transient { retry_after } => {
            to(EffectState::Pending, now + next_delay(attempt, *retry_after, cfg), None, class)
        }
        Outcome::Ambiguous => to(EffectState::Pending, now + next_delay(attempt, None, cfg), None, class),
    }
}

/// found → SENT; certainly absent → PENDING now; a failed lookup leaves it UNKNOWN.
pub fn after_lookup(lookup: &Lookup, now: NaiveDateTime) -> Option<Transition> {
    match lookup {
        Lookup::Found { provider_ref } => Some(to(EffectState::Sent, now, Some(provider_ref.clone()), None)),
        Lookup::Absent => Some(to(EffectState::Pending, now, None, Some("lookup: not delivered".into()))),
        Lookup::Failed { .. } => None,
    }
}

/// Exponential from `backoff_base_ms`, jittered to 50–100 %, capped at `backoff_max_seconds`;
/// never earlier than the target's Retry-After.
pub fn next_delay(attempt: i32, retry_after: Option<Duration>, cfg: &WorkerConfig) -> chrono::Duration {
    let exp = 2u64.saturating_pow(u32::try_from(attempt.max(1) - 1).unwrap_or(0).min(32));
    let backoff = cfg.backoff_base_ms.saturating_mul(exp).min(cfg.backoff_max_seconds.saturating_mul(1000));
    let jittered = (backoff as f64 * (0.5 + fastrand::f64() * 0.5)) as u64;
    let floor = retry_after.map(|d| d.as_millis() as u64).unwrap_or(0);
    ms(jittered.max(floor))
}

fn ms(n: u64) -> chrono::Duration {
    chrono::Duration::milliseconds(i64::try_from(n).unwrap_or(i64::MAX / 2))
}

fn to(
    state: EffectState,
    at: NaiveDateTime,
    provider_ref: Option<String>,
    last_error: Option<String>,
) -> Transition {
    Transition { state, next_attempt_at: at, provider_ref, last_error }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> WorkerConfig {
        WorkerConfig {
            max_attempts: 3,
            backoff_base_ms: 1000,
            backoff_max_seconds: 10,
            ..WorkerConfig::default()
        }
    }

    fn now() -> NaiveDateTime {
        crate::base::clock::now()
    }

    #[test]
    fn states_follow_the_outcome() {
        let t = now();
        let sent = after_attempt(&Report::sent("L-1"), 1, false, &cfg(), t);
        assert_eq!((sent.state, sent.provider_ref.as_deref()), (EffectState::Sent, Some("L-1")));
        let amb = Report::failed(Outcome::Ambiguous, "timeout");
        assert_eq!(after_attempt(&amb, 1, false, &cfg(), t).state, EffectState::Unknown);
        assert_eq!(
            after_attempt(&amb, 1, true, &cfg(), t).state,
            EffectState::Pending,
            "an upsert is retried"
        );
        let perm = Report::failed(Outcome::Permanent, "http_400");
        assert_eq!(after_attempt(&perm, 1, false, &cfg(), t).state, EffectState::FailedFinal);
        let tr = Report::failed(Outcome::Transient { retry_after: None }, "connect");
        assert_eq!(after_attempt(&tr, 2, false, &cfg(), t).state, EffectState::Pending);
        let last = after_attempt(&tr, 3, false, &cfg(), t);
        assert_eq!(last.state, EffectState::FailedFinal);
        assert_eq!(last.last_error.as_deref(), Some("attempts exhausted (connect)"));
    }

    #[test]
    fn backoff_grows_is_capped_and_honours_retry_after() {
        for attempt in 1..=8 {
            let d = next_delay(attempt, None, &cfg()).num_milliseconds();
            let full = (1000i64 << (attempt - 1)).min(10_000);
            assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d}");
        }
        let d = next_delay(1, Some(Duration::from_secs(30)), &cfg()).num_milliseconds();
        assert_eq!(d, 30_000, "Retry-After wins over the cap");
    }

    #[test]
    fn lookups_resolve_or_wait() {
        let t = now();
        assert_eq!(
            after_lookup(&Lookup::Found { provider_ref: "X".into() }, t).unwrap().state,
            EffectState::Sent
        );
        assert_eq!(after_lookup(&Lookup::Absent, t).unwrap().state, EffectState::Pending);
        assert!(after_lookup(&Lookup::Failed { error_class: "x".into() }, t).is_none());
    }
}
