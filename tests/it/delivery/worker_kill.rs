//! A real `onceform worker` process killed with SIGKILL while a chat vendor holds its request
//! unanswered, then a new worker: a kind without idempotency (`teams`) is never sent blindly
//! again (UNKNOWN once the lease runs out, one request in all); a kind with it (`line`) is
//! sent again under the same retry key, LINE answers 409, and the record is SENT with one
//! message delivered.

use std::time::{Duration, Instant};

use onceform::config::{Config, DEFAULT_CONFIG};

use super::workers::{config_file, wait_for};
use crate::support::chat::{env_var, Fault};
use crate::support::crm::FakeCrm;
use crate::support::line::{FakeLine, GROUP_ID, TOKEN};
use crate::support::smtp::SmtpSink;
use crate::support::teams::FakeTeams;
use crate::support::worker_process::WorkerProcess;
use crate::support::{seed, Backend, TestDb};

crate::on_both_backends!(
    teams_killed_mid_call_ends_unknown_and_is_never_sent_again,
    line_killed_mid_call_ends_sent_with_one_message_delivered,
);

/// How long the vendor holds the first request: far past the kill and the lease.
const HELD: Duration = Duration::from_secs(60);

/// A worker's configuration file: the demo form with `kind` (its table `table`) as its only
/// effect; calls time out after 5 s, leases after 6 s.
fn kind_config(db: &TestDb, crm: &FakeCrm, smtp: &SmtpSink, kind: &str, table: &str) -> std::path::PathBuf {
    let path = config_file(db, crm, smtp, 6);
    let effects = r#"effects = ["crm_lead", "confirmation_email", "owner_notification"]"#;
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(effects));
    let text = text
        .replace(effects, &format!("effects = [\"{kind}\"]"))
        .replace("call_timeout_ms = 500", "call_timeout_ms = 5000")
        + &format!("\n[forms.contact.{kind}]\n{table}\n");
    assert!(DEFAULT_CONFIG.contains("[forms.contact]"));
    std::fs::write(&path, text).unwrap();
    path
}

fn parsed(path: &std::path::Path) -> Config {
    let config = onceform::services::check_config::load(Some(path), |_| None).unwrap();
    assert_eq!(onceform::services::check_config::problems(&config), Vec::<String>::new());
    config
}

/// The state of the one record of `kind`.
async fn state(config: &Config, kind: &str) -> String {
    let (config, kind) = (config.clone(), kind.to_string());
    tokio::task::spawn_blocking(move || {
        let pool = onceform::db::Pool::connect(&config.database).unwrap();
        let stats = onceform::with_conn!(&pool, |c| onceform::db::Store::stats(c)
            .map_err(onceform::db::DbError::from))
        .unwrap();
        let states: Vec<String> = stats
            .effects
            .into_iter()
            .filter(|(k, _, n)| *k == kind && *n > 0)
            .map(|(_, s, _)| s.to_string())
            .collect();
        assert_eq!(states.len(), 1, "one record: {states:?}");
        states[0].clone()
    })
    .await
    .unwrap()
}

/// Polls the record of `kind` until it is `want`, never seeing one of `never` on the way.
async fn until_state(config: &Config, kind: &str, want: &str, never: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = state(config, kind).await;
        if now == want {
            return;
        }
        assert!(!never.contains(&now.as_str()), "went {now} on the way to {want}");
        assert!(Instant::now() < deadline, "still {now}, waiting for {want}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn teams_killed_mid_call_ends_unknown_and_is_never_sent_again(backend: Backend) {
    let db = TestDb::new(backend);
    let (crm, smtp, teams) = (FakeCrm::start().await, SmtpSink::start().await, FakeTeams::start().await);
    teams.state.lock().unwrap().faults.push_back(Fault::SlowAfterPost(HELD));
    let var = env_var(&teams.webhook_url());
    let path = kind_config(&db, &crm, &smtp, "teams", &format!("url_env = \"{var}\""));
    let config = parsed(&path);
    seed(&onceform::db::Pool::connect(&config.database).unwrap(), &config, 1).await;

    let mut first = WorkerProcess::start(&path);
    wait_for("the Teams call", Duration::from_secs(10), || !teams.posted().is_empty()).await;
    first.kill9();
    assert_eq!(state(&config, "teams").await, "SENDING");

    let _second = WorkerProcess::start(&path);
    until_state(&config, "teams", "UNKNOWN", &["PENDING", "SENT", "FAILED_FINAL"]).await;
    // The second worker keeps polling: the record stays UNKNOWN, waiting for an admin.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(state(&config, "teams").await, "UNKNOWN");
    assert_eq!(teams.state.lock().unwrap().arrivals.len(), 1, "one request in all, never a blind resend");
    assert_eq!(teams.posted().len(), 1);
}

async fn line_killed_mid_call_ends_sent_with_one_message_delivered(backend: Backend) {
    let db = TestDb::new(backend);
    let (crm, smtp, line) = (FakeCrm::start().await, SmtpSink::start().await, FakeLine::start().await);
    line.state.lock().unwrap().faults.push_back(Fault::SlowAfterPost(HELD));
    let var = env_var(TOKEN);
    let table = format!("token_env = \"{var}\"\nto = \"{GROUP_ID}\"\napi_url = \"{}\"", line.url);
    let path = kind_config(&db, &crm, &smtp, "line", &table);
    let config = parsed(&path);
    seed(&onceform::db::Pool::connect(&config.database).unwrap(), &config, 1).await;

    let mut first = WorkerProcess::start(&path);
    wait_for("the LINE call", Duration::from_secs(10), || !line.posted().is_empty()).await;
    first.kill9();
    assert_eq!(state(&config, "line").await, "SENDING");

    let _second = WorkerProcess::start(&path);
    until_state(&config, "line", "SENT", &["PENDING", "FAILED_FINAL"]).await;
    assert_eq!(line.posted().len(), 1, "LINE delivered one message");
    assert_eq!(line.conflicts(), 1, "the second push was answered 409");
    let keys = line.keys_seen();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys[0].is_some() && keys[0] == keys[1], "the same retry key twice: {keys:?}");
}
