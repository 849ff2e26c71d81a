//! What the chat vendor fakes (`teams`, `discord`, `telegram`, `line`, …) and their tests share: the
//! faults a test queues, what a fake records, and the demo form wired to one chat kind.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use diesel::prelude::*;
use onceform::config::{Config, DEFAULT_CONFIG};
use onceform::db::schema::{effect_attempts, side_effects, submissions};
use onceform::db::DbError;
use onceform::with_conn;
use serde_json::Value;

use super::delivery::{spawn_delivery_app, DeliveryApp};
use super::Backend;

/// `[server] public_url` in these tests: the admin links start here.
pub const PUBLIC_URL: &str = "https://forms.example.com";

/// What the next request that passes the vendor's checks meets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// Posts, then answers only after this long (the client has given up).
    SlowAfterPost(Duration),
    /// The vendor's own 429, asking for this many seconds; nothing is posted.
    RateLimited(f64),
    /// This 5xx; nothing is posted.
    ServerError(u16),
    /// Teams' old connectors: a 200 whose body says it was throttled; nothing is posted.
    ThrottledIn200,
    /// LINE's 429 for an account past its monthly message limit; nothing is posted.
    OverMonthlyLimit,
}

/// One message the vendor posted.
#[derive(Debug, Clone)]
pub struct Posted {
    /// The request's JSON body.
    pub body: Value,
    /// The ID the vendor gave it.
    pub id: String,
}

/// What every chat fake keeps.
#[derive(Debug, Default)]
pub struct Log {
    pub posted: Vec<Posted>,
    pub faults: VecDeque<Fault>,
    /// When each request arrived, refused and faulted ones included.
    pub arrivals: Vec<Instant>,
    /// Each refused request's rule (`auth`, `content: too long`, …).
    pub refused: Vec<String>,
}

/// A variable named for this test holding `value` (nextest runs each test in its own process;
/// the name is unique anyway).
pub fn env_var(value: &str) -> String {
    let var = format!("ONCEFORM_TEST_CHAT_{}", uuid::Uuid::new_v4().simple());
    std::env::set_var(&var, value);
    var
}

/// The demo form with `kind` as its only effect, `table` the body of `[forms.contact.KIND]`,
/// `[server] public_url` set; `tweak` changes the rest.
pub async fn chat_app(
    backend: Backend,
    kind: &str,
    table: &str,
    tweak: impl FnOnce(&mut Config),
) -> DeliveryApp {
    let effects = r#"effects = ["crm_lead", "confirmation_email", "owner_notification"]"#;
    assert!(DEFAULT_CONFIG.contains(effects));
    let text = DEFAULT_CONFIG.replace(effects, &format!("effects = [\"{kind}\"]"))
        + &format!("\n[forms.contact.{kind}]\n{table}\n");
    let parsed = Config::parse(&text).unwrap();
    assert_eq!(onceform::services::check_config::problems(&parsed), Vec::<String>::new());
    spawn_delivery_app(backend, |c| {
        c.forms = parsed.forms;
        c.server.public_url = Some(format!("{PUBLIC_URL}/"));
        tweak(c);
    })
    .await
}

/// (outcome, error_class, detail) of each attempt of the `kind` record of the submission
/// under `key`, oldest first.
pub async fn attempts(
    d: &DeliveryApp,
    key: &str,
    kind: &str,
) -> Vec<(String, Option<String>, Option<String>)> {
    let (key, kind) = (key.to_string(), kind.to_string());
    d.app
        .query(move |pool| {
            with_conn!(pool, |c| effect_attempts::table
                .inner_join(side_effects::table.inner_join(submissions::table))
                .filter(submissions::operation_id.eq(&key))
                .filter(side_effects::kind.eq(&kind))
                .order(effect_attempts::started_at)
                .select((effect_attempts::outcome, effect_attempts::error_class, effect_attempts::detail))
                .load(c)
                .map_err(DbError::from))
        })
        .await
}

/// The ID of the submission stored under `key`.
pub async fn submission_id(d: &DeliveryApp, key: &str) -> String {
    super::vendor::submission_id(&d.app, key).await
}

/// The submission's admin page as an admin sees it.
pub async fn admin_page(d: &DeliveryApp, key: &str) -> String {
    let id = submission_id(d, key).await;
    let session = d.app.sign_in(onceform::services::accounts::Role::Admin).await;
    let page = d.app.admin_get(Some(&session), &format!("/admin/submissions/{id}")).await;
    assert_eq!(page.status(), 200);
    page.text().await.unwrap()
}

/// The fault scenarios every chat kind meets the same way; `log` is its fake's.
pub mod scenario {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::{attempts, Fault, Log};
    use crate::support::delivery::DeliveryApp;
    use crate::support::{inquiry, new_key};

    fn posted(log: &Arc<Mutex<Log>>) -> usize {
        log.lock().unwrap().posted.len()
    }

    /// The vendor posts, then answers after the call's timeout: UNKNOWN, for an admin; the
    /// worker never sends it again on its own.
    pub async fn timeout_after_posting(d: &DeliveryApp, log: &Arc<Mutex<Log>>, kind: &str) {
        log.lock().unwrap().faults.push_back(Fault::SlowAfterPost(Duration::from_millis(1500)));
        let key = new_key();
        assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
        let worker = d.worker();
        d.settle(&worker).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        worker.run_until_idle().await;

        let effect = d.effect(&key, kind).await;
        assert_eq!((effect.state.as_str(), effect.attempts), ("UNKNOWN", 1), "waits for an admin");
        let tried = attempts(d, &key, kind).await;
        assert_eq!(tried, [("ambiguous".to_string(), Some("timeout".to_string()), None)]);
        assert_eq!(posted(log), 1, "posted once, never resent");
        assert_eq!(log.lock().unwrap().arrivals.len(), 1, "one request");
    }

    /// The vendor's 429 (`fault`): retried no sooner than `at_least` later, posted once; the
    /// attempt keeps the vendor's words (`words`).
    pub async fn rate_limited(
        d: &DeliveryApp,
        log: &Arc<Mutex<Log>>,
        kind: &str,
        fault: Fault,
        at_least: Duration,
        words: &str,
    ) {
        log.lock().unwrap().faults.push_back(fault);
        let key = new_key();
        assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
        let worker = d.worker();
        d.settle(&worker).await;

        let effect = d.effect(&key, kind).await;
        assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 2));
        let tried = attempts(d, &key, kind).await;
        assert_eq!(
            (tried[0].0.as_str(), tried[0].1.as_deref()),
            ("transient", Some("http_429")),
            "{tried:?}"
        );
        let detail = tried[0].2.clone().unwrap_or_default();
        assert!(detail.contains(words), "the vendor's words on the attempt: {detail:?}");
        assert_eq!(posted(log), 1, "exactly one message in the end");
        let arrivals = log.lock().unwrap().arrivals.clone();
        assert_eq!(arrivals.len(), 2, "{arrivals:?}");
        let waited = arrivals[1] - arrivals[0];
        assert!(waited >= at_least, "retried after {waited:?}, asked to wait {at_least:?}");
    }

    /// A 5xx did not post: retried with the usual backoff, posted once.
    pub async fn server_error(d: &DeliveryApp, log: &Arc<Mutex<Log>>, kind: &str, status: u16) {
        log.lock().unwrap().faults.push_back(Fault::ServerError(status));
        let key = new_key();
        assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
        let worker = d.worker();
        d.settle(&worker).await;

        let effect = d.effect(&key, kind).await;
        assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 2));
        let tried = attempts(d, &key, kind).await;
        let class = format!("http_{status}");
        assert_eq!((tried[0].0.as_str(), tried[0].1.as_deref()), ("transient", Some(class.as_str())));
        assert_eq!(posted(log), 1);
    }

    /// The vendor refuses the request (`status`): failed for good at once, the vendor's words
    /// on the attempt and on the submission's admin page.
    pub async fn refused(d: &DeliveryApp, log: &Arc<Mutex<Log>>, kind: &str, status: u16, words: &str) {
        let key = new_key();
        assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
        let worker = d.worker();
        d.settle(&worker).await;

        let effect = d.effect(&key, kind).await;
        assert_eq!((effect.state.as_str(), effect.attempts), ("FAILED_FINAL", 1));
        let tried = attempts(d, &key, kind).await;
        let class = format!("http_{status}");
        assert_eq!((tried[0].0.as_str(), tried[0].1.as_deref()), ("permanent", Some(class.as_str())));
        let detail = tried[0].2.clone().unwrap_or_default();
        assert!(detail.contains(words), "the vendor's words on the attempt: {detail:?}");
        assert_eq!(posted(log), 0);
        let page = super::admin_page(d, &key).await;
        assert!(page.contains(words), "the vendor's words on the submission's page");
    }
}
