//! Inbound webhooks, issue 13 "what must be shown" 7: 64 simultaneous deliveries of one event
//! across two `onceform serve` processes on one database store one event, and each handler
//! calls its receiver once (the processes' own workers deliver).

use std::time::{Duration, Instant};

use onceform::web::hooks::verify::standard_webhooks;
use serde_json::json;

use crate::on_both_backends;
use crate::support::receiver::Receiver;
use crate::support::serve_process::ServeProcess;
use crate::support::{Backend, TestDb};

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

async fn sixty_four_deliveries_across_two_processes_store_one_event_and_call_each_handler_once(
    backend: Backend,
) {
    let db = TestDb::new(backend);
    let (crm, audit) = (Receiver::start().await, Receiver::start().await);
    let dir = std::env::temp_dir().join(format!("onceform-hooks-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = format!(
        "{}\n[worker]\npoll_ms = 50\n\n[hooks.helpdesk]\nverify = \"standard-webhooks\"\nsecret_env = \"HOOKS_TEST_SECRET\"\n\
         [[hooks.helpdesk.handlers]]\nname = \"to-crm\"\nkind = \"forward\"\nurl = \"{}\"\n\
         [[hooks.helpdesk.handlers]]\nname = \"audit\"\nkind = \"forward\"\nurl = \"{}\"\n",
        onceform::config::DEFAULT_CONFIG,
        crm.events_url(),
        audit.events_url()
    );
    let path = dir.join("onceform.toml");
    std::fs::write(&path, config).unwrap();
    // One after the other: two processes migrating one fresh SQLite file at once race.
    let config = path.to_str().unwrap();
    let servers: Vec<ServeProcess> = (0..2)
        .map(|_| {
            let mut cmd = ServeProcess::command(&db.url, &["--config", config]);
            cmd.env("HOOKS_TEST_SECRET", WHSEC);
            ServeProcess::start(cmd)
        })
        .collect();

    let body = json!({"ticket": "T-64", "text": "one event, many deliveries"}).to_string();
    let key = standard_webhooks::decode_secret(WHSEC).unwrap();
    let client = reqwest::Client::new();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..64 {
        let (client, body, key) = (client.clone(), body.clone(), key.clone());
        let url = format!("{}/hooks/helpdesk", servers[i % 2].address);
        set.spawn(async move {
            let ts = chrono::Utc::now().timestamp();
            let resp = client
                .post(url)
                .header("webhook-id", "evt-64")
                .header("webhook-timestamp", ts.to_string())
                .header("webhook-signature", standard_webhooks::sign(&key, "evt-64", ts, body.as_bytes()))
                .body(body)
                .send()
                .await
                .unwrap();
            (resp.status().as_u16(), resp.headers().contains_key("idempotent-replayed"))
        });
    }
    let answers = set.join_all().await;
    assert!(answers.iter().all(|(s, _)| *s == 200), "every delivery is acknowledged: {answers:?}");
    assert_eq!(answers.iter().filter(|(_, replayed)| !replayed).count(), 1, "one stored the event");

    let deadline = Instant::now() + Duration::from_secs(30);
    while crm.calls().is_empty() || audit.calls().is_empty() {
        assert!(Instant::now() < deadline, "the handlers did not run");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let metrics = loop {
        let text =
            client.get(format!("{}/metrics", servers[1].address)).send().await.unwrap().text().await.unwrap();
        let sent = ["to-crm", "audit"].iter().all(|h| {
            text.contains(&format!(
                "onceform_hook_handler_effects{{source=\"helpdesk\",handler=\"{h}\",state=\"SENT\"}} 1"
            ))
        });
        if sent {
            break text;
        }
        assert!(Instant::now() < deadline, "the handlers did not finish:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(metrics.contains("onceform_hook_events_total{source=\"helpdesk\"} 1"));
    assert!(metrics.contains("onceform_hook_deliveries_total{source=\"helpdesk\",outcome=\"replayed\"} 63"));
    assert_eq!(crm.calls().iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["helpdesk:to-crm:evt-64:0"]);
    assert_eq!(
        audit.calls().iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["helpdesk:audit:evt-64:0"]
    );
    drop(servers);
    let _ = std::fs::remove_dir_all(&dir);
}

on_both_backends!(sixty_four_deliveries_across_two_processes_store_one_event_and_call_each_handler_once);
