//! `GET /metrics`: the one endpoint that reports on every area (database and queue, sign-in
//! throttle, inbound webhooks, data lifecycle), so it lives where every area is known. One
//! registry holds every family; the `prometheus` crate encodes it in the text format 0.0.4.

use actix_web::http::header::{HeaderValue, WWW_AUTHENTICATE};
use actix_web::{web, HttpRequest, HttpResponse};
use chrono::NaiveDateTime;

use crate::base::clock::now;
use crate::base::metrics::{self, Collector, Desc, MetricFamily, Registry};
use crate::db::hooks::{HookStats, HookStore};
use crate::db::{DbError, Queue, QueueStats, Stats, Store};
use crate::services::accounts::LoginThrottle;
use crate::services::lifecycle::metrics::LifecycleStats;
use crate::web::hooks::Hooks;
use crate::web::http::problem::{Problem, ProblemKind};
use crate::web::http::{db_problem, MetricsCache};
use crate::web::state::AppState;
use crate::with_conn;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/metrics", web::get().to(metrics));
}

/// What one refresh of the cache reads: the database's figures, and this process's dropped
/// delivery rows, at `at`.
pub struct Figures {
    stats: Stats,
    queue: QueueStats,
    hooks: HookStats,
    lifecycle: LifecycleStats,
    dropped: u64,
    at: NaiveDateTime,
}

/// The database figures at most `server.metrics_cache_ms` old.
pub type FiguresCache = MetricsCache<Figures>;

/// The registry `/metrics` encodes.
pub struct Metrics {
    registry: Registry,
}

impl Metrics {
    /// Every family: the database's (read from `cache` when scraped), then this process's
    /// live counters and gauges. A family declared twice is an error.
    pub fn new(
        cache: web::Data<FiguresCache>,
        state: &AppState,
        throttle: &LoginThrottle,
        hooks: &Hooks,
    ) -> metrics::Result<Metrics> {
        let registry = Registry::new();
        let stored = Stored {
            cache,
            figures: crate::services::figures::Families::new()?,
            hooks: crate::web::hooks::metrics::StoredFamilies::new()?,
            lifecycle: crate::services::lifecycle::metrics::Families::new()?,
        };
        let live: [Box<dyn Collector>; 4] = [
            Box::new(stored),
            Box::new(state.refused.collector()),
            Box::new(state.forms.failures_counter()),
            Box::new(crate::db::primary_pg::Counters::new(state.pool.health())?),
        ];
        let hooks = crate::web::hooks::metrics::Live::collectors(hooks)?;
        for collector in live.into_iter().chain(hooks).chain(throttle.collectors()) {
            registry.register(collector)?;
        }
        Ok(Metrics { registry })
    }
}

/// The database's families, built from the figures the cache holds when scraped.
struct Stored {
    cache: web::Data<FiguresCache>,
    figures: crate::services::figures::Families,
    hooks: crate::web::hooks::metrics::StoredFamilies,
    lifecycle: crate::services::lifecycle::metrics::Families,
}

impl Collector for Stored {
    fn desc(&self) -> Vec<&Desc> {
        let mut descs = self.figures.descs();
        descs.extend(self.hooks.descs());
        descs.extend(self.lifecycle.descs());
        descs
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let Some(f) = self.cache.latest() else { return Vec::new() };
        let mut out = self.figures.collect(&f.stats, &f.queue, f.dropped, f.at);
        out.extend(self.hooks.collect(&f.hooks));
        out.extend(self.lifecycle.collect(&f.lifecycle, f.at));
        out
    }
}

/// Prometheus text: the database figures at most `server.metrics_cache_ms` old, and this
/// process's live counters.
async fn metrics(
    state: web::Data<AppState>,
    cache: web::Data<FiguresCache>,
    registry: web::Data<Metrics>,
    req: HttpRequest,
) -> HttpResponse {
    if let Some(token) = &state.config.server.metrics_token {
        if !crate::web::http::admits_bearer(token, &req) {
            let mut resp =
                Problem::new(ProblemKind::Unauthorized, "send Authorization: Bearer <the metrics token>")
                    .response();
            resp.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return resp;
        }
    }
    if let Err(problem) = cache.get_or_refresh(|| database_figures(&state)).await {
        return problem.response();
    }
    match metrics::encode(&registry.registry) {
        Ok(text) => HttpResponse::Ok().content_type(metrics::TEXT_FORMAT).body(text),
        Err(e) => {
            tracing::error!(error = %e, "cannot encode /metrics");
            Problem::new(ProblemKind::Internal, "the metrics could not be encoded").response()
        }
    }
}

async fn database_figures(state: &AppState) -> Result<Figures, Problem> {
    let log = state.acceptor.deliveries();
    log.flush().await;
    let dropped = log.dropped();
    let pool = state.pool.clone();
    let at = now();
    let read = move || {
        let lifecycle = crate::services::lifecycle::metrics::read(&pool, at)?;
        with_conn!(&pool, |c| Ok::<_, DbError>((c.stats()?, c.queue_stats()?, c.hook_stats()?, lifecycle)))
    };
    match web::block(read).await {
        Ok(Ok((stats, queue, hooks, lifecycle))) => {
            Ok(Figures { stats, queue, hooks, lifecycle, dropped, at })
        }
        Ok(Err(e)) => Err(db_problem(e)),
        Err(_) => Err(Problem::unavailable()),
    }
}
