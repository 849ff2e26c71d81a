//! Per-source figures for `/metrics`: deliveries by outcome, events, conflicts, the
//! quarantine, signature failures, handler states, redelivery spread and ingest latency.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use super::Hooks;
use crate::services::figures::HookStats;

pub fn render(out: &mut String, hooks: &Hooks, s: &HookStats) {
    if hooks.sources().next().is_none() && s.deliveries.is_empty() {
        return;
    }
    let mut family = |name: &str, kind: &str, help: &str| {
        let _ = writeln!(out, "# HELP onceform_hook_{name} {help}");
        let _ = writeln!(out, "# TYPE onceform_hook_{name} {kind}");
    };
    family("deliveries_total", "counter", "Inbound webhook requests stored, by source and outcome.");
    for (source, outcome, n) in &s.deliveries {
        let _ =
            writeln!(out, "onceform_hook_deliveries_total{{source=\"{source}\",outcome=\"{outcome}\"}} {n}");
    }
    let _ = writeln!(out, "# HELP onceform_hook_events_total Distinct inbound events stored, by source.");
    let _ = writeln!(out, "# TYPE onceform_hook_events_total counter");
    for (source, n, _) in &s.events {
        let _ = writeln!(out, "onceform_hook_events_total{{source=\"{source}\"}} {n}");
    }
    let _ = writeln!(
        out,
        "# HELP onceform_hook_redelivery_spread_seconds Largest first-to-last arrival of one event ID (recent redeliveries)."
    );
    let _ = writeln!(out, "# TYPE onceform_hook_redelivery_spread_seconds gauge");
    for (source, _, spread) in &s.events {
        let _ = writeln!(out, "onceform_hook_redelivery_spread_seconds{{source=\"{source}\"}} {spread:.3}");
    }
    let _ = writeln!(
        out,
        "# HELP onceform_hook_open_conflicts Same event ID, different content, awaiting review."
    );
    let _ = writeln!(out, "# TYPE onceform_hook_open_conflicts gauge");
    for (source, n) in &s.conflicts {
        let _ = writeln!(out, "onceform_hook_open_conflicts{{source=\"{source}\"}} {n}");
    }
    let _ = writeln!(
        out,
        "# HELP onceform_hook_quarantined Deliveries with no usable event ID awaiting an admin."
    );
    let _ = writeln!(out, "# TYPE onceform_hook_quarantined gauge");
    for (source, n) in &s.quarantined {
        let _ = writeln!(out, "onceform_hook_quarantined{{source=\"{source}\"}} {n}");
    }
    let _ =
        writeln!(out, "# HELP onceform_hook_handler_effects Handler records by source, handler and state.");
    let _ = writeln!(out, "# TYPE onceform_hook_handler_effects gauge");
    for (kind, state, n) in &s.handlers {
        let (source, handler) = (kind.source(), kind.handler());
        let _ = writeln!(
            out,
            "onceform_hook_handler_effects{{source=\"{source}\",handler=\"{handler}\",state=\"{state}\"}} {n}"
        );
    }
    let _ = writeln!(out, "# HELP onceform_hook_signature_failures_total Deliveries refused by this process for a bad or stale signature.");
    let _ = writeln!(out, "# TYPE onceform_hook_signature_failures_total counter");
    for src in hooks.sources() {
        let n = src.signature_failures.load(Ordering::Relaxed);
        let _ = writeln!(out, "onceform_hook_signature_failures_total{{source=\"{}\"}} {n}", src.name);
    }
    let _ = writeln!(out, "# HELP onceform_hook_ingest_seconds Time from arrival to answer in this process.");
    let _ = writeln!(out, "# TYPE onceform_hook_ingest_seconds summary");
    for src in hooks.sources() {
        let sum = src.ingest_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let n = src.ingested.load(Ordering::Relaxed);
        let _ = writeln!(out, "onceform_hook_ingest_seconds_sum{{source=\"{}\"}} {sum:.6}", src.name);
        let _ = writeln!(out, "onceform_hook_ingest_seconds_count{{source=\"{}\"}} {n}", src.name);
    }
}

/// The webhook spool of this process's directory (`when_store_down = "spool"`): files, bytes
/// and the age of its oldest record; nothing when no source spools.
pub fn render_spool(out: &mut String, hooks: &Hooks, now: chrono::NaiveDateTime) {
    let Some(spool) = hooks.spool() else { return };
    let stats = spool.stats();
    let age = stats.oldest.map_or(0.0, |t| (now - t).num_milliseconds().max(0) as f64 / 1e3);
    for (name, help, value) in [
        ("spool_files", "Webhook spool files waiting to be replayed into the store.", stats.files as f64),
        ("spool_bytes", "Bytes in the webhook spool.", stats.bytes as f64),
        ("spool_oldest_age_seconds", "Age of the oldest spooled delivery (0: none).", age),
    ] {
        let _ = writeln!(out, "# HELP onceform_hook_{name} {help}");
        let _ = writeln!(out, "# TYPE onceform_hook_{name} gauge");
        let _ = writeln!(out, "onceform_hook_{name} {value}");
    }
}
