//! Inbound webhooks with `when_store_down = "spool"`: while PostgreSQL is unreachable a
//! verified delivery is fsynced to the local spool and answered 200; a process killed with
//! its spool full replays it at the next start, a redelivery during that replay is the same
//! event, each handler runs once; a full spool answers 503.

use std::time::{Duration, Instant};

use onceform::web::hooks::verify::standard_webhooks;

use crate::support::hooks::{hook, secret_var, HookApp};
use crate::support::proxy::Proxy;
use crate::support::receiver::Receiver;
use crate::support::serve_process::ServeProcess;
use crate::support::{spawn_on, test_config, Backend, TestDb};

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

async fn deliver(client: &reqwest::Client, base: &str, id: &str, body: &str) -> reqwest::Response {
    let key = standard_webhooks::decode_secret(WHSEC).unwrap();
    let ts = chrono::Utc::now().timestamp();
    client
        .post(format!("{base}/hooks/helpdesk"))
        .header("webhook-id", id)
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", standard_webhooks::sign(&key, id, ts, body.as_bytes()))
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

fn spool_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "jsonl"))).count()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spooled_delivery_survives_a_kill_and_its_handler_runs_once() {
    let db = TestDb::new(Backend::Postgres);
    let proxy = Proxy::start(db.host_port()).await;
    let url = db.url_via(&format!("127.0.0.1:{}", proxy.port));
    let receiver = Receiver::start().await;
    let dir = std::env::temp_dir().join(format!("onceform-spool-it-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let spool = dir.join("spool");
    let config = format!(
        "{}\n[worker]\npoll_ms = 50\n\
         [hooks.helpdesk]\nverify = \"standard-webhooks\"\nsecret_env = \"HOOKS_TEST_SECRET\"\nwhen_store_down = \"spool\"\n\
         [[hooks.helpdesk.handlers]]\nname = \"sync\"\nkind = \"forward\"\nurl = \"{}\"\n",
        onceform::config::DEFAULT_CONFIG
            .replace("[server]\n", &format!("[server]\nspool_dir = {:?}\n", spool.display().to_string()))
            .replace("[database]\n", "[database]\nacquire_timeout_ms = 500\n"),
        receiver.events_url()
    );
    assert!(config.contains("spool_dir"), "the default config has a [server] table");
    let path = dir.join("onceform.toml");
    std::fs::write(&path, config).unwrap();
    let start = || {
        let mut cmd = ServeProcess::command(&url, &["--config", path.to_str().unwrap()]);
        cmd.env("HOOKS_TEST_SECRET", WHSEC).env("ONCEFORM_SECRET", "a-test-secret-of-thirty-two-chars!");
        cmd.current_dir(&dir);
        ServeProcess::start(cmd)
    };
    let client = reqwest::Client::new();
    let (s, t) = (r#"{"ticket":"S","state":"open"}"#, r#"{"ticket":"T","state":"closed"}"#);

    let first = start();
    proxy.cut();
    for (id, body) in [("evt-S", s), ("evt-S", s), ("evt-T", t)] {
        let resp = deliver(&client, &first.address, id, body).await;
        assert_eq!(resp.status(), 200, "{id}: answered while the database is down");
        assert_eq!(resp.json::<serde_json::Value>().await.unwrap()["status"], "spooled");
    }
    assert!(spool_files(&spool) >= 1, "in the spool");
    drop(first); // SIGKILL, its spool not replayed
    proxy.restore();

    let second = start();
    // The sender's own redelivery arrives while the spool is being replayed.
    let redelivered = deliver(&client, &second.address, "evt-S", s).await;
    assert_eq!(redelivered.status(), 200);
    let deadline = Instant::now() + Duration::from_secs(20);
    while receiver.calls().len() < 2 || spool_files(&spool) > 0 {
        assert!(
            Instant::now() < deadline,
            "not replayed: {:?}, {} spool file(s)",
            receiver.calls(),
            spool_files(&spool)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut keys: Vec<String> = receiver.calls().into_iter().map(|(k, _)| k).collect();
    keys.sort();
    assert_eq!(keys, ["helpdesk:sync:evt-S:0", "helpdesk:sync:evt-T:0"], "each event's handler ran once");
    drop(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_spool_answers_503() {
    let db = TestDb::new(Backend::Postgres);
    let proxy = Proxy::start(db.host_port()).await;
    let url = db.url_via(&format!("127.0.0.1:{}", proxy.port));
    let var = secret_var("sw", WHSEC);
    let mut config = test_config(&url);
    config.database.acquire_timeout_ms = 500;
    config.server.spool_max_bytes = 4096;
    let cfg =
        format!("verify = \"standard-webhooks\"\nsecret_env = \"{var}\"\nwhen_store_down = \"spool\"\n");
    config.hooks.insert("helpdesk".into(), hook(&cfg));
    let app = HookApp {
        app: spawn_on(db, config).await,
        crm: crate::support::crm::FakeCrm::start().await,
        smtp: crate::support::smtp::SmtpSink::start().await,
    };
    proxy.cut();
    let body = format!(r#"{{"ticket":"F","text":"{}"}}"#, "x".repeat(1000));
    let mut statuses = Vec::new();
    for i in 0..8 {
        statuses.push(
            deliver(&app.app.client, &app.app.address, &format!("evt-{i}"), &body).await.status().as_u16(),
        );
    }
    assert_eq!(&statuses[..3], [200, 200, 200], "{statuses:?}");
    assert_eq!(statuses.last(), Some(&503), "{statuses:?}");
    proxy.restore();
    let deadline = Instant::now() + Duration::from_secs(20);
    while app.inbound().await.events < 3 {
        assert!(Instant::now() < deadline, "the spool was not replayed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let spooled = statuses.iter().filter(|s| **s == 200).count() as i64;
    assert_eq!(app.inbound().await.events, spooled, "every 200 stored, no 503 stored");
    let metrics = app.app.metrics().await;
    assert!(metrics.contains("onceform_hook_spool_files 0\n"), "{metrics}");
}
