//! Who may read `/metrics` (`ONCEFORM_METRICS_TOKEN`), and the cached figures it serves so
//! that scrapes do not count whole tables each time.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::config::MetricsToken;
use actix_web::http::header::AUTHORIZATION;
use actix_web::HttpRequest;

/// `Authorization: Bearer TOKEN` names `token`.
pub fn admits_bearer(token: &MetricsToken, req: &HttpRequest) -> bool {
    let given = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .unwrap_or("");
    token.matches(given)
}

/// The last figures read from the database (`server.metrics_cache_ms`); one scrape at a
/// time refreshes them, the others wait for that one instead of querying too.
pub struct MetricsCache<T> {
    max_age: Duration,
    /// Held by the scrape that checks the age and refreshes.
    refreshing: tokio::sync::Mutex<()>,
    /// The figures and when they were read: what the collectors of `/metrics` read.
    last: Mutex<Option<(Instant, Arc<T>)>>,
}

impl<T> MetricsCache<T> {
    pub fn new(max_age: Duration) -> MetricsCache<T> {
        MetricsCache { max_age, refreshing: Default::default(), last: Mutex::new(None) }
    }

    /// The cached figures if younger than their max age, else `refresh()`'s (kept on success).
    pub async fn get_or_refresh<E, F>(&self, refresh: impl FnOnce() -> F) -> Result<Arc<T>, E>
    where
        F: std::future::Future<Output = Result<T, E>>,
    {
        let _turn = self.refreshing.lock().await;
        if let Some((at, figures)) = self.read().as_ref() {
            if at.elapsed() < self.max_age {
                return Ok(figures.clone());
            }
        }
        let figures = Arc::new(refresh().await?);
        *self.read() = Some((Instant::now(), figures.clone()));
        Ok(figures)
    }

    /// The figures read last, if any were.
    pub fn latest(&self) -> Option<Arc<T>> {
        self.read().as_ref().map(|(_, figures)| figures.clone())
    }

    fn read(&self) -> std::sync::MutexGuard<'_, Option<(Instant, Arc<T>)>> {
        self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_redacted() {
        assert!(!format!("{:?}", MetricsToken::new("s3cret".into())).contains("s3cret"));
    }

    #[tokio::test]
    async fn a_fresh_result_is_served_from_the_cache() {
        let cache = MetricsCache::new(Duration::from_secs(60));
        let first = cache.get_or_refresh(|| async { Ok::<_, ()>("one".to_string()) }).await.unwrap();
        let second = cache.get_or_refresh(|| async { Ok::<_, ()>("two".to_string()) }).await.unwrap();
        assert_eq!((first.as_str(), second.as_str()), ("one", "one"));
        assert_eq!(cache.latest().as_deref().map(String::as_str), Some("one"));
    }
}
