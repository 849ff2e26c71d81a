//! Per-source figures for `/metrics`: deliveries by outcome, events, conflicts, the
//! quarantine and handler states (read from the store at scrape time), and this process's
//! signature failures, ingest time and spool (live).

use crate::base::clock::now;
use crate::base::metrics::{Collector, Desc, Family, IntCounterVec, MetricFamily, MetricType, Opts, Result};
use crate::services::figures::HookStats;

use super::Hooks;

/// `onceform_hook_signature_failures_total{source}`, a counter per source (`Hooks::load`).
pub fn signature_failures() -> Result<IntCounterVec> {
    IntCounterVec::new(
        Opts::new(
            "onceform_hook_signature_failures_total",
            "Deliveries refused by this process for a bad or stale signature.",
        ),
        &["source"],
    )
}

/// The families of the store's figures by source, declared once.
pub struct StoredFamilies {
    deliveries: Family,
    events: Family,
    spread: Family,
    conflicts: Family,
    quarantined: Family,
    handlers: Family,
}

impl StoredFamilies {
    pub fn new() -> Result<StoredFamilies> {
        let source = &["source"];
        Ok(StoredFamilies {
            deliveries: Family::counter(
                "onceform_hook_deliveries_total",
                "Inbound webhook requests stored, by source and outcome.",
                &["source", "outcome"],
            )?,
            events: Family::counter(
                "onceform_hook_events_total",
                "Distinct inbound events stored, by source.",
                source,
            )?,
            spread: Family::gauge(
                "onceform_hook_redelivery_spread_seconds",
                "Largest first-to-last arrival of one event ID (recent redeliveries).",
                source,
            )?,
            conflicts: Family::gauge(
                "onceform_hook_open_conflicts",
                "Same event ID, different content, awaiting review.",
                source,
            )?,
            quarantined: Family::gauge(
                "onceform_hook_quarantined",
                "Deliveries with no usable event ID awaiting an admin.",
                source,
            )?,
            handlers: Family::gauge(
                "onceform_hook_handler_effects",
                "Handler records by source, handler and state.",
                &["source", "handler", "state"],
            )?,
        })
    }

    pub fn descs(&self) -> Vec<&Desc> {
        [&self.deliveries, &self.events, &self.spread, &self.conflicts, &self.quarantined, &self.handlers]
            .into_iter()
            .map(Family::desc)
            .collect()
    }

    pub fn collect(&self, s: &HookStats) -> Vec<MetricFamily> {
        let mut deliveries = self.deliveries.samples();
        for (source, outcome, n) in &s.deliveries {
            deliveries.value(&[source, outcome.as_str()], *n as f64);
        }
        let (mut events, mut spread) = (self.events.samples(), self.spread.samples());
        for (source, n, seconds) in &s.events {
            events.value(&[source], *n as f64);
            spread.value(&[source], *seconds);
        }
        let mut conflicts = self.conflicts.samples();
        for (source, n) in &s.conflicts {
            conflicts.value(&[source], *n as f64);
        }
        let mut quarantined = self.quarantined.samples();
        for (source, n) in &s.quarantined {
            quarantined.value(&[source], *n as f64);
        }
        let mut handlers = self.handlers.samples();
        for (kind, state, n) in &s.handlers {
            handlers.value(&[kind.source(), kind.handler(), state.as_str()], *n as f64);
        }
        [deliveries, events, spread, conflicts, quarantined, handlers]
            .into_iter()
            .map(|f| f.finish())
            .collect()
    }
}

/// This process's live figures of the sources, read when `/metrics` is scraped: the ingest
/// time by source, and the spool of this process's directory (`when_store_down = "spool"`:
/// files, bytes, the age of its oldest record; nothing when no source spools).
pub struct Live {
    hooks: Hooks,
    ingest: Family,
    spool: [Family; 3],
}

impl Live {
    pub fn new(hooks: Hooks) -> Result<Live> {
        Ok(Live {
            hooks,
            ingest: Family::new(
                "onceform_hook_ingest_seconds",
                "Time from arrival to answer in this process.",
                MetricType::SUMMARY,
                &["source"],
            )?,
            spool: [
                Family::gauge(
                    "onceform_hook_spool_files",
                    "Webhook spool files waiting to be replayed into the store.",
                    &[],
                )?,
                Family::gauge("onceform_hook_spool_bytes", "Bytes in the webhook spool.", &[])?,
                Family::gauge(
                    "onceform_hook_spool_oldest_age_seconds",
                    "Age of the oldest spooled delivery (0: none).",
                    &[],
                )?,
            ],
        })
    }

    /// The collectors of the sources' live figures, for the registry of `/metrics`.
    pub fn collectors(hooks: &Hooks) -> Result<Vec<Box<dyn Collector>>> {
        Ok(vec![Box::new(hooks.signature_failures.clone()), Box::new(Live::new(hooks.clone())?)])
    }
}

impl Collector for Live {
    fn desc(&self) -> Vec<&Desc> {
        std::iter::once(&self.ingest).chain(&self.spool).map(Family::desc).collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let mut ingest = self.ingest.samples();
        for src in self.hooks.sources() {
            let (sum, count) = src.ingest.get();
            ingest.summary(&[&src.name], sum, count);
        }
        let mut out = vec![ingest.finish()];
        if let Some(spool) = self.hooks.spool() {
            let stats = spool.stats();
            let age = stats.oldest.map_or(0.0, |t| (now() - t).num_milliseconds().max(0) as f64 / 1e3);
            let [files, bytes, oldest] = &self.spool;
            out.extend([
                files.single(stats.files as f64),
                bytes.single(stats.bytes as f64),
                oldest.single(age),
            ]);
        }
        out
    }
}
