//! Delivery tests' harness: the app wired to a fake CRM and an SMTP sink, an in-process
//! worker, and a helper that drives it until the queue settles.

use std::time::{Duration, Instant};

use chrono::NaiveDateTime;
use diesel::prelude::*;
use onceform::db::schema::{effect_attempts, side_effects, submissions};
use onceform::db::DbError;
use onceform::services::worker::Worker;
use onceform::with_conn;

use super::crm::FakeCrm;
use super::smtp::SmtpSink;
use super::{spawn_app_with, Backend, TestApp};
use onceform::config::Config;

pub struct DeliveryApp {
    pub app: TestApp,
    pub crm: FakeCrm,
    pub smtp: SmtpSink,
}

/// Fast timings for tests: 300 ms calls, 20 ms backoff and reconciliation delays.
pub fn wire(config: &mut Config, crm: &FakeCrm, smtp: &SmtpSink) {
    config.crm.adapter = Some("generic".into());
    config.crm.url = Some(format!("{}/leads", crm.url));
    super::set_crm(config, "generic", &[("lookup_url", &crm.lookup_url())]);
    config.smtp.url = Some(smtp.url.clone());
    let w = &mut config.worker;
    w.call_timeout_ms = 300;
    w.lease_seconds = 5;
    w.backoff_base_ms = 20;
    w.backoff_max_seconds = 1;
    w.reconcile_after_ms = 20;
    w.poll_ms = 20;
    w.max_attempts = 5;
}

pub async fn spawn_delivery_app(backend: Backend, tweak: impl FnOnce(&mut Config)) -> DeliveryApp {
    let (crm, smtp) = (FakeCrm::start().await, SmtpSink::start().await);
    let app = spawn_app_with(backend, |c| {
        wire(c, &crm, &smtp);
        tweak(c);
    })
    .await;
    DeliveryApp { app, crm, smtp }
}

#[derive(Debug, Clone, Queryable)]
pub struct EffectView {
    pub kind: String,
    pub state: String,
    pub attempts: i32,
    pub provider_ref: Option<String>,
    pub next_attempt_at: NaiveDateTime,
}

impl DeliveryApp {
    pub fn worker(&self) -> Worker {
        let registry =
            onceform::app::registry(self.app.config.clone(), crate::support::test_keyring()).unwrap();
        Worker::new(
            onceform::db::Writes::pooled(self.app.pool.clone()),
            registry,
            self.app.config.worker.clone(),
        )
    }

    /// Runs worker passes until nothing is PENDING (unless held for a duplicate decision) or
    /// SENDING and no CRM outcome (`crm_lead`, `crm_note`, `pipedrive`, `zoho`) is UNKNOWN (emails without a lookup may stay UNKNOWN: they
    /// wait for an admin).
    pub async fn settle(&self, worker: &Worker) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            worker.run_once().await;
            let open = self
                .app
                .query(|pool| {
                    with_conn!(pool, |c| side_effects::table
                        .filter(
                            (side_effects::state.eq("PENDING").and(side_effects::held.eq(false)))
                                .or(side_effects::state.eq("SENDING"))
                                .or(side_effects::state.eq("UNKNOWN").and(side_effects::kind.eq_any([
                                    "crm_lead",
                                    "crm_note",
                                    "pipedrive",
                                    "zoho"
                                ]))),
                        )
                        .count()
                        .get_result::<i64>(c)
                        .map_err(DbError::from))
                })
                .await;
            if open == 0 {
                return;
            }
            assert!(Instant::now() < deadline, "the queue did not settle: {:?}", self.effects(None).await);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Every effect record (of the submission under `key`, if given), ordered by kind.
    pub async fn effects(&self, key: Option<&str>) -> Vec<EffectView> {
        let key = key.map(String::from);
        self.app
            .query(move |pool| {
                with_conn!(pool, |c| {
                    let mut q = side_effects::table
                        .inner_join(submissions::table)
                        .select((
                            side_effects::kind,
                            side_effects::state,
                            side_effects::attempts,
                            side_effects::provider_ref,
                            side_effects::next_attempt_at,
                        ))
                        .order((side_effects::kind, side_effects::batch))
                        .into_boxed();
                    if let Some(k) = &key {
                        q = q.filter(submissions::operation_id.eq(k.clone()));
                    }
                    q.load::<EffectView>(c).map_err(DbError::from)
                })
            })
            .await
    }

    pub async fn effect(&self, key: &str, kind: &str) -> EffectView {
        self.effects(Some(key)).await.into_iter().find(|e| e.kind == kind).unwrap()
    }

    /// (outcome, error_class) of each attempt and lookup of one effect, oldest first.
    pub async fn attempts(&self, key: &str, kind: &str) -> Vec<(String, Option<String>)> {
        let (key, kind) = (key.to_string(), kind.to_string());
        self.app
            .query(move |pool| {
                with_conn!(pool, |c| effect_attempts::table
                    .inner_join(side_effects::table.inner_join(submissions::table))
                    .filter(submissions::operation_id.eq(&key))
                    .filter(side_effects::kind.eq(&kind))
                    .order(effect_attempts::started_at)
                    .select((effect_attempts::outcome, effect_attempts::error_class))
                    .load(c)
                    .map_err(DbError::from))
            })
            .await
    }
}
