//! Inbound webhook tests' harness: an app with `[hooks.*]` sources, signing helpers, row
//! counts of the inbound tables, and a worker loop that settles handler records.

use std::time::{Duration, Instant};

use diesel::prelude::*;
use onceform::config::Config;
use onceform::db::schema::{
    inbound_conflicts, inbound_deliveries, inbound_events, inbound_quarantine, side_effects,
};
use onceform::db::DbError;
use onceform::services::worker::Worker;
use onceform::web::hooks::HookConfig;
use onceform::with_conn;

use super::delivery::wire;
use super::{crm::FakeCrm, smtp::SmtpSink, spawn_app_with, Backend, TestApp};

/// A secret env var name unique to this test process, set to `value`.
pub fn secret_var(name: &str, value: &str) -> String {
    let var = format!("ONCEFORM_TEST_HOOK_{}_{}", name.to_uppercase(), std::process::id());
    std::env::set_var(&var, value);
    var
}

pub fn hook(toml_text: &str) -> HookConfig {
    toml::from_str(toml_text).unwrap()
}

pub struct HookApp {
    pub app: TestApp,
    pub crm: FakeCrm,
    pub smtp: SmtpSink,
}

/// The app with `sources` configured, wired to a fake CRM and SMTP sink with fast timings.
pub async fn spawn_hook_app(backend: Backend, sources: Vec<(&str, HookConfig)>) -> HookApp {
    spawn_hook_app_with(backend, sources, |_| {}).await
}

pub async fn spawn_hook_app_with(
    backend: Backend,
    sources: Vec<(&str, HookConfig)>,
    tweak: impl FnOnce(&mut Config),
) -> HookApp {
    let (crm, smtp) = (FakeCrm::start().await, SmtpSink::start().await);
    let app = spawn_app_with(backend, |c| {
        wire(c, &crm, &smtp);
        for (name, h) in sources {
            c.hooks.insert(name.to_string(), h);
        }
        tweak(c);
    })
    .await;
    HookApp { app, crm, smtp }
}

/// Row counts of the inbound tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Inbound {
    pub events: i64,
    pub deliveries: i64,
    pub conflicts: i64,
    pub quarantined: i64,
}

impl HookApp {
    pub async fn post(&self, source: &str, headers: &[(&str, String)], body: &str) -> reqwest::Response {
        let mut req = self.app.client.post(self.app.url(&format!("/hooks/{source}"))).body(body.to_string());
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        req.send().await.unwrap()
    }

    /// One Standard Webhooks delivery to `source`, signed with `whsec` for message `id`.
    pub async fn post_signed(&self, source: &str, whsec: &str, id: &str, body: &str) -> reqwest::Response {
        use onceform::web::hooks::verify::standard_webhooks;
        let key = standard_webhooks::decode_secret(whsec).unwrap();
        let ts = chrono::Utc::now().timestamp();
        let headers = vec![
            ("webhook-id", id.to_string()),
            ("webhook-timestamp", ts.to_string()),
            ("webhook-signature", standard_webhooks::sign(&key, id, ts, body.as_bytes())),
        ];
        self.post(source, &headers, body).await
    }

    pub async fn inbound(&self) -> Inbound {
        self.app
            .query(|pool| {
                with_conn!(pool, |c| {
                    Ok::<_, DbError>(Inbound {
                        events: inbound_events::table.count().get_result(c)?,
                        deliveries: inbound_deliveries::table.count().get_result(c)?,
                        conflicts: inbound_conflicts::table.count().get_result(c)?,
                        quarantined: inbound_quarantine::table.count().get_result(c)?,
                    })
                })
            })
            .await
    }

    /// The stored body of (source, event ID).
    pub async fn stored_body(&self, source: &str, event_id: &str) -> Option<String> {
        let (source, event_id) = (source.to_string(), event_id.to_string());
        self.app
            .query(move |pool| {
                with_conn!(pool, |c| inbound_events::table
                    .filter(inbound_events::source.eq(&source))
                    .filter(inbound_events::event_id.eq(&event_id))
                    .select(inbound_events::body)
                    .first::<Option<String>>(c)
                    .optional()
                    .map(Option::flatten)
                    .map_err(DbError::from))
            })
            .await
    }

    /// (kind, batch, state, key) of every handler record, ordered.
    pub async fn handler_states(&self) -> Vec<(String, i32, String, String)> {
        self.app
            .query(|pool| {
                with_conn!(pool, |c| side_effects::table
                    .filter(side_effects::kind.like("hook:%"))
                    .order((side_effects::kind, side_effects::effect_key))
                    .select((
                        side_effects::kind,
                        side_effects::batch,
                        side_effects::state,
                        side_effects::effect_key
                    ))
                    .load(c)
                    .map_err(DbError::from))
            })
            .await
    }

    pub fn worker(&self) -> Worker {
        let registry =
            onceform::app::registry(self.app.config.clone(), crate::support::test_keyring()).unwrap();
        Worker::new(
            onceform::db::Writes::pooled(self.app.pool.clone()),
            registry,
            self.app.config.worker.clone(),
        )
    }

    /// Worker passes until no handler record is PENDING, SENDING or UNKNOWN with a lookup due.
    pub async fn settle(&self, worker: &Worker) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            worker.run_once().await;
            let open = self
                .handler_states()
                .await
                .into_iter()
                .filter(|(_, _, s, _)| s == "PENDING" || s == "SENDING" || s == "UNKNOWN")
                .count();
            if open == 0 {
                return;
            }
            assert!(Instant::now() < deadline, "handlers did not settle: {:?}", self.handler_states().await);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
