//! The retention pass inside `serve`: every `[purge] interval_seconds`, on its own thread.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::purge;
use crate::base::clock::now;
use crate::config::retention::scopes;
use crate::config::Config;
use crate::db::Writes;

/// Starts the schedule unless `[purge] enabled = false` or no form or webhook source has a
/// retention window, no form a confirmation cap (whose rows the pass deletes once their
/// window has passed) and no form a file field (whose unused uploads the pass sweeps).
pub fn spawn(config: &Config, writes: Writes, stopped: watch::Receiver<bool>) -> Option<JoinHandle<()>> {
    let any = scopes(config).iter().any(|s| s.retention.any())
        || config.forms.values().any(|f| f.confirmation_window_minutes > 0 || f.has_file_field());
    if !config.purge.enabled || !any {
        return None;
    }
    let config = config.clone();
    Some(std::thread::spawn(move || loop {
        match purge::run_pass(&writes, &config, now()) {
            Ok(report) if report.total() + report.caps_total() > 0 => {
                let (rows, caps) = (report.total(), report.caps_total());
                tracing::info!(rows, caps, ms = report.duration_ms, "retention pass")
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "retention pass failed; trying again at the next one"),
        }
        let next = Instant::now() + Duration::from_secs(config.purge.interval_seconds);
        while Instant::now() < next {
            if *stopped.borrow() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }))
}
