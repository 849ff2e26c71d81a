//! Who may read `/metrics` (`ONCEFORM_METRICS_TOKEN`), and the cached figures it serves so
//! that scrapes do not count whole tables each time.

use std::sync::Arc;
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

/// The last rendering of the database figures (`server.metrics_cache_ms`); one scrape at
/// a time refreshes it, the others wait for that one instead of querying too.
#[derive(Default)]
pub struct MetricsCache {
    max_age: Duration,
    last: tokio::sync::Mutex<Option<(Instant, Arc<String>)>>,
}

impl MetricsCache {
    pub fn new(max_age: Duration) -> MetricsCache {
        MetricsCache { max_age, last: Default::default() }
    }

    /// The cached text if younger than its max age, else `refresh()`'s (kept on success).
    pub async fn get_or_refresh<E, F>(&self, refresh: impl FnOnce() -> F) -> Result<Arc<String>, E>
    where
        F: std::future::Future<Output = Result<String, E>>,
    {
        let mut last = self.last.lock().await;
        if let Some((at, text)) = last.as_ref() {
            if at.elapsed() < self.max_age {
                return Ok(text.clone());
            }
        }
        let text = Arc::new(refresh().await?);
        *last = Some((Instant::now(), text.clone()));
        Ok(text)
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
    }
}
