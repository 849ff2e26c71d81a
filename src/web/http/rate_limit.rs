//! Per-client token buckets for the public submit endpoints.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

use crate::config::RateLimitConfig;

/// Buckets kept before idle ones are dropped.
const MAX_BUCKETS: usize = 50_000;

#[derive(Debug, Default)]
pub struct RateLimiter {
    enabled: bool,
    buckets: Mutex<HashMap<(String, IpAddr), Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl RateLimiter {
    pub fn new(enabled: bool) -> Self {
        RateLimiter { enabled, buckets: Mutex::default() }
    }

    /// Takes one token for `client` on `form`; `Err(seconds)` says when to retry.
    pub fn check(&self, form: &str, client: IpAddr, limit: RateLimitConfig) -> Result<(), u64> {
        if !self.enabled {
            return Ok(());
        }
        let capacity = f64::from(limit.requests);
        let per_second = capacity / f64::from(limit.per_seconds);
        let now = Instant::now();
        let Ok(mut buckets) = self.buckets.lock() else { return Ok(()) };
        if buckets.len() >= MAX_BUCKETS {
            buckets.retain(|_, b| refill(b, now, per_second, capacity) < capacity);
        }
        let key = (form.to_string(), super::client_bucket(client));
        let bucket = buckets.entry(key).or_insert(Bucket { tokens: capacity, last: now });
        let tokens = refill(bucket, now, per_second, capacity);
        if tokens >= 1.0 {
            *bucket = Bucket { tokens: tokens - 1.0, last: now };
            Ok(())
        } else {
            Err(((1.0 - tokens) / per_second).ceil().max(1.0) as u64)
        }
    }
}

fn refill(b: &Bucket, now: Instant, per_second: f64, capacity: f64) -> f64 {
    (b.tokens + now.duration_since(b.last).as_secs_f64() * per_second).min(capacity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allows_a_burst_then_says_when_to_retry() {
        let rl = RateLimiter::new(true);
        let ip: IpAddr = [127, 0, 0, 1].into();
        let limit = RateLimitConfig { requests: 3, per_seconds: 60 };
        for _ in 0..3 {
            assert_eq!(rl.check("contact", ip, limit), Ok(()));
        }
        assert_eq!(rl.check("contact", ip, limit), Err(20));
        assert_eq!(rl.check("other", ip, limit), Ok(()), "buckets are per form");
        let v6 = |s: &str| s.parse::<IpAddr>().unwrap();
        let one = RateLimitConfig { requests: 1, per_seconds: 60 };
        assert_eq!(rl.check("contact", v6("2001:db8::1"), one), Ok(()));
        assert!(rl.check("contact", v6("2001:db8::ffff:2"), one).is_err(), "one bucket per /64");
        assert_eq!(rl.check("contact", v6("2001:db8:0:1::1"), one), Ok(()));
        assert!(RateLimiter::new(false)
            .check("contact", ip, RateLimitConfig { requests: 1, per_seconds: 60 })
            .is_ok());
    }
}
