//! Issue 42's change feed, small (`cargo bench --bench feed` runs it at 20,000): four `serve`
//! processes on one PostgreSQL database accept 500 submissions (every tenth sent again to
//! another process) while the example consumer follows `/api/v1/changes` from a different
//! process each run and is stopped dead twice mid-way. Once every effect is delivered, its
//! copy holds exactly the submissions the clients were answered, every change once, and each
//! effect record's states in the order the `changes` table recorded them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text};
use onceform::db::{DbError, Pool};
use onceform::with_conn;
use serde_json::{json, Value};

use crate::support::serve_process::ServeProcess;
use crate::support::{test_config, Backend, TestDb};
use crate::web::changes_consumer::consumer::{self, Consumer};

const SUBMISSIONS: usize = 500;

/// What the `changes` table holds of one submission: its changes, its acceptances, and the
/// (effect record, state) of each effect change in feed order.
type Recorded = (u64, u64, Vec<(String, String)>);

#[derive(QueryableByName)]
struct ChangeRow {
    #[diesel(sql_type = Text)]
    submission_id: String,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Nullable<Text>)]
    subject_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    state: Option<String>,
}

/// Every change in feed order, and the effect records not yet SENT.
fn recorded(pool: &Pool) -> (Vec<ChangeRow>, i64) {
    with_conn!(pool, |c| (|| {
        let rows =
            diesel::sql_query("SELECT submission_id, kind, subject_id, state FROM changes ORDER BY xid, seq")
                .load::<ChangeRow>(c)?;
        use onceform::db::schema::side_effects;
        let open = side_effects::table
            .filter(side_effects::state.ne(onceform::domain::EffectState::Sent))
            .count()
            .get_result(c)?;
        Ok::<_, diesel::result::Error>((rows, open))
    })()
    .map_err(DbError::from))
    .unwrap()
}

/// One submission sent to `addr` (again after a refused connection); its status and ID.
async fn post(client: &reqwest::Client, addr: &str, key: &str, body: &Value) -> (u16, String) {
    let url = format!("{addr}/api/forms/contact/submissions");
    for _ in 0..20 {
        if let Ok(resp) = client.post(&url).header("Idempotency-Key", key).json(body).send().await {
            let status = resp.status().as_u16();
            let v: Value = resp.json().await.unwrap_or_default();
            return (status, v["submission_id"].as_str().unwrap_or_default().to_string());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{addr} never answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_processes_and_a_consumer_stopped_twice_end_with_every_change_once_in_order() {
    let db = TestDb::new(Backend::Postgres);
    let dir = std::env::temp_dir().join(format!("onceform-feed-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    // The default configuration: file CRM and mail files under the shared ./data, the workers
    // inside each `serve`.
    let servers: Vec<ServeProcess> = (0..4)
        .map(|_| {
            let mut cmd = ServeProcess::command(&db.url, &[]);
            cmd.current_dir(&dir);
            ServeProcess::start(cmd)
        })
        .collect();
    let addrs: Vec<String> = servers.iter().map(|s| s.address.clone()).collect();
    let pool = Pool::connect(&test_config(&db.url).database).unwrap();
    let token = {
        use onceform::services::read_api::tokens::{self, TokenRequest};
        let request = TokenRequest {
            name: "feed".into(),
            scopes: onceform::domain::Scopes::parse("read:submissions,read:effects").unwrap(),
            form: None,
            expires_days: None,
        };
        let actor = onceform::services::audit::Actor { id: "cli".into(), label: "command line".into() };
        tokens::create(&pool, &request, |_| true, &actor).unwrap().secret
    };
    let consumer = |run: usize| Consumer {
        base: addrs[run % addrs.len()].clone(),
        token: token.clone(),
        file: dir.join("copy.json"),
        limit: 50,
        follow: true,
    };

    let acked = Arc::new(AtomicUsize::new(0));
    let next = Arc::new(AtomicUsize::new(0));
    let client = reqwest::Client::new();
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let (client, addrs, acked, next) = (client.clone(), addrs.clone(), acked.clone(), next.clone());
            tokio::spawn(async move {
                let mut ids = BTreeSet::new();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= SUBMISSIONS {
                        return ids;
                    }
                    let key = format!("feed-{i}-{}", uuid::Uuid::new_v4().simple());
                    let body = json!({"name": format!("Visitor {i}"), "email": format!("visitor-{i}@example.com"),
                                      "topic": "Sales", "message": format!("Inquiry {i}")});
                    let (status, id) = post(&client, &addrs[i % 4], &key, &body).await;
                    assert_eq!(status, 201, "{key}");
                    if i % 10 == 0 {
                        assert_eq!(post(&client, &addrs[(i + 1) % 4], &key, &body).await, (200, id.clone()));
                    }
                    ids.insert(id);
                    acked.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();

    // The consumer runs while the clients submit, and is stopped dead (the task dropped at
    // whatever it awaited: mid-request or mid-save) at a third and at two thirds of them.
    let mut run = 0;
    for share in [1, 2] {
        let c = consumer(run);
        let task = tokio::spawn(async move { c.run(|_| {}).await });
        while acked.load(Ordering::SeqCst) < share * SUBMISSIONS / 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(!task.is_finished(), "the consumer ended on its own: {:?}", task.await);
        task.abort();
        run += 1;
    }
    let c = consumer(run);
    let last = tokio::spawn(async move { c.run(|_| {}).await });
    let mut sent = BTreeSet::new();
    for c in clients {
        sent.extend(c.await.unwrap());
    }
    assert_eq!(sent.len(), SUBMISSIONS);

    // Every effect delivered, then the copy caught up with every change written.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (changes, copy) = loop {
        let (changes, open) = tokio::task::block_in_place(|| recorded(&pool));
        let copy = consumer::load(&dir.join("copy.json")).unwrap();
        let applied: u64 = copy.submissions.values().map(|s| s.changes).sum();
        if open == 0 && applied as usize >= changes.len() {
            break (changes, copy);
        }
        assert!(
            Instant::now() < deadline,
            "not caught up: {open} effects open, {applied} of {} changes",
            changes.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    last.abort();
    drop(servers);

    assert_eq!(
        copy.submissions.keys().cloned().collect::<BTreeSet<_>>(),
        sent,
        "exactly the submissions answered"
    );
    let mut db_record: BTreeMap<&str, Recorded> = BTreeMap::new();
    for row in &changes {
        let entry = db_record.entry(&row.submission_id).or_default();
        entry.0 += 1;
        match row.kind.as_str() {
            "accepted" => entry.1 += 1,
            "effect_state" => {
                entry.2.push((row.subject_id.clone().unwrap(), row.state.clone().unwrap()));
            }
            other => panic!("an unexpected change: {other}"),
        }
    }
    assert_eq!(db_record.len(), SUBMISSIONS);
    for (id, (n, accepted, history)) in db_record {
        let copied = &copy.submissions[id];
        assert_eq!((accepted, copied.changes, copied.status.as_str()), (1, n, "accepted"), "{id}");
        assert_eq!(
            copied.history, history,
            "{id}: every state of every effect record, in the recorded order"
        );
        assert!(copied.effects.values().all(|(_, state)| state == "SENT"), "{id}: {:?}", copied.effects);
        assert_eq!(copied.effects.len(), 3, "{id}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
