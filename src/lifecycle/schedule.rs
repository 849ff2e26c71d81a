//! The retention pass inside `serve`: every `[purge] interval_seconds`, on its own thread.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::purge;
use crate::config::retention::scopes;
use crate::config::Config;
use crate::db::Pool;
use crate::deliveries::now;

/// Starts the schedule unless `[purge] enabled = false` or no form or webhook source has a
/// retention window.
pub fn spawn(config: &Config, pool: &Pool, stopped: watch::Receiver<bool>) -> Option<JoinHandle<()>> {
    let any = scopes(config).iter().any(|s| s.retention.any());
    if !config.purge.enabled || !any {
        return None;
    }
    let (config, pool) = (config.clone(), pool.clone());
    Some(std::thread::spawn(move || loop {
        match purge::run_pass(&pool, &config, now()) {
            Ok(report) if report.total() > 0 => {
                tracing::info!(rows = report.total(), ms = report.duration_ms, "retention pass")
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
