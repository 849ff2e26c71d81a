//! The clock every module reads: the current time at the precision both databases keep.

use chrono::{NaiveDateTime, SubsecRound, Utc};

/// The current time in UTC at the precision both databases keep (microseconds).
pub fn now() -> NaiveDateTime {
    Utc::now().naive_utc().trunc_subsecs(6)
}

/// Seconds since the Unix epoch (0 if the system clock is before it).
pub fn unix_seconds() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}
