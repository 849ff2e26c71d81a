//! `[worker]`: the side-effect workers.

use serde::Deserialize;
use validator::Validate;

/// The side-effect workers (inside `serve`, or alone as `onceform worker`).
#[derive(Debug, Clone, Deserialize, Validate)]
#[serde(deny_unknown_fields, default)]
pub struct WorkerConfig {
    /// Run the workers inside `serve`.
    pub enabled: bool,
    /// Effects in flight at once in one process.
    #[validate(range(min = 1, max = 1024))]
    pub concurrency: usize,
    /// Idle wait between polls.
    #[validate(range(min = 10, max = 60000))]
    pub poll_ms: u64,
    /// A SENDING record whose lease runs out (its worker died) becomes UNKNOWN.
    #[validate(range(min = 1, max = 86400))]
    pub lease_seconds: u64,
    /// Hard limit on one delivery call (HTTP request, SMTP send).
    #[validate(range(min = 10, max = 600000))]
    pub call_timeout_ms: u64,
    #[validate(range(min = 1, max = 100))]
    pub max_attempts: i32,
    /// First retry delay; doubled per attempt, jittered, capped by `backoff_max_seconds`.
    #[validate(range(min = 1, max = 3600000))]
    pub backoff_base_ms: u64,
    #[validate(range(min = 1, max = 604800))]
    pub backoff_max_seconds: u64,
    /// How soon an UNKNOWN outcome is looked up (and again after a failed lookup).
    #[validate(range(min = 1, max = 3600000))]
    pub reconcile_after_ms: u64,
    /// Where `onceform worker` writes its process ID (`onceform reload` signals it).
    pub pid_file: String,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            concurrency: 16,
            poll_ms: 500,
            lease_seconds: 60,
            call_timeout_ms: 10_000,
            max_attempts: 8,
            backoff_base_ms: 2_000,
            backoff_max_seconds: 3_600,
            reconcile_after_ms: 30_000,
            pid_file: "./data/onceform-worker.pid".into(),
        }
    }
}
