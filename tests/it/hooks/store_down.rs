//! Inbound webhooks with `when_store_down = "reject"` (the default): while the database is
//! unreachable or locked a delivery is 503 with Retry-After and nothing is half-written;
//! the sender's redelivery afterwards is stored once and its handler runs once.

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use onceform::web::hooks::verify::standard_webhooks;

use crate::support::crm::FakeCrm;
use crate::support::delivery::wire;
use crate::support::hooks::{hook, secret_var, HookApp, Inbound};
use crate::support::proxy::Proxy;
use crate::support::receiver::Receiver;
use crate::support::smtp::SmtpSink;
use crate::support::{spawn_on, test_config, Backend, TestDb};

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const BODY: &str = r#"{"ticket":"D","text":"while the database is down"}"#;

async fn app_on(db: TestDb, url: &str, receiver: &Receiver) -> HookApp {
    let var = secret_var("sw", WHSEC);
    let (crm, smtp) = (FakeCrm::start().await, SmtpSink::start().await);
    let mut config = test_config(url);
    wire(&mut config, &crm, &smtp);
    config.database.acquire_timeout_ms = 500;
    config.database.busy_timeout_ms = 200;
    let cfg = format!(
        "verify = \"standard-webhooks\"\nsecret_env = \"{var}\"\nwhen_store_down = \"reject\"\n\
         [[handlers]]\nname = \"to-crm\"\nkind = \"forward\"\nurl = \"{}\"\n",
        receiver.events_url()
    );
    config.hooks.insert("helpdesk".into(), hook(&cfg));
    HookApp { app: spawn_on(db, config).await, crm, smtp }
}

async fn deliver(app: &HookApp) -> reqwest::Response {
    let key = standard_webhooks::decode_secret(WHSEC).unwrap();
    let ts = chrono::Utc::now().timestamp();
    let headers = vec![
        ("webhook-id", "evt-D".to_string()),
        ("webhook-timestamp", ts.to_string()),
        ("webhook-signature", standard_webhooks::sign(&key, "evt-D", ts, BODY.as_bytes())),
    ];
    app.post("helpdesk", &headers, BODY).await
}

async fn assert_rejected(app: &HookApp) {
    let resp = deliver(app).await;
    assert_eq!(resp.status(), 503);
    assert!(resp.headers().get("retry-after").is_some());
}

async fn assert_redelivery_stored_once(app: &HookApp, receiver: &Receiver) {
    assert_eq!(app.inbound().await, Inbound::default(), "nothing half-written");
    assert_eq!(deliver(app).await.status(), 200);
    assert_eq!(deliver(app).await.status(), 200);
    app.settle(&app.worker()).await;
    assert_eq!(app.inbound().await.events, 1);
    assert_eq!(receiver.calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_unreachable_answers_503_and_the_redelivery_runs_once() {
    let db = TestDb::new(Backend::Postgres);
    let proxy = Proxy::start(db.host_port()).await;
    let url = db.url_via(&format!("127.0.0.1:{}", proxy.port));
    let receiver = Receiver::start().await;
    let app = app_on(db, &url, &receiver).await;
    proxy.cut();
    assert_rejected(&app).await;
    proxy.restore();
    assert_redelivery_stored_once(&app, &receiver).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_locked_answers_503_and_the_redelivery_runs_once() {
    let db = TestDb::new(Backend::Sqlite);
    let (url, path) = (db.url.clone(), db.url.trim_start_matches("sqlite://").to_string());
    let receiver = Receiver::start().await;
    let app = app_on(db, &url, &receiver).await;
    let mut locker = SqliteConnection::establish(&path).unwrap();
    locker.batch_execute("PRAGMA busy_timeout = 5000; BEGIN EXCLUSIVE").unwrap();
    assert_rejected(&app).await;
    locker.batch_execute("ROLLBACK").unwrap();
    assert_redelivery_stored_once(&app, &receiver).await;
}
