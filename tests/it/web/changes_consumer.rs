//! The example consumer of the change feed (`examples/changes_consumer.rs`) against a served
//! app whose worker delivers: killed again and again mid-way (while new submissions arrive)
//! and restarted, its local copy ends equal to the server's state, with no change missed or
//! applied twice.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::on_both_backends;
use crate::support::delivery::spawn_delivery_app;
use crate::support::{inquiry, new_key, Backend, TestApp};

#[path = "../../../examples/changes_consumer.rs"]
#[allow(dead_code)]
pub(crate) mod consumer;

use consumer::{Consumer, Copy};

on_both_backends!(the_example_consumer_resumes_after_kills_without_missing_or_repeating_a_change);

async fn submit(app: &TestApp, i: usize) {
    let mut body = inquiry(&format!("Inquiry number {i} for the consumer"));
    body["email"] = format!("consumer-{i}@example.com").into();
    let key = new_key();
    assert_eq!(app.submit(&key, &body).await.status(), 201);
    if i.is_multiple_of(3) {
        body["message"] = "other content".into();
        assert_eq!(app.submit(&key, &body).await.status(), 409);
    }
}

/// A token made through the use case (as `onceform api-token create` does).
pub(crate) async fn token(app: &TestApp) -> String {
    use onceform::services::read_api::tokens::{self, TokenRequest};
    let request = TokenRequest {
        name: "consumer".into(),
        scopes: onceform::domain::Scopes::parse("read:submissions,read:effects").unwrap(),
        form: None,
        expires_days: None,
    };
    let actor = onceform::services::audit::Actor { id: "cli".into(), label: "command line".into() };
    app.query(move |pool| Ok(tokens::create(pool, &request, |_| true, &actor).unwrap().secret)).await
}

async fn get_json(app: &TestApp, token: &str, path: &str) -> Value {
    let resp = app.client.get(app.url(path)).bearer_auth(token).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{path}");
    resp.json().await.unwrap()
}

async fn the_example_consumer_resumes_after_kills_without_missing_or_repeating_a_change(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let (app, worker) = (&d.app, d.worker());
    let token = token(app).await;
    let dir = std::env::temp_dir().join(format!("onceform-consumer-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let consumer = std::sync::Arc::new(Consumer {
        base: app.url(""),
        token: token.clone(),
        file: dir.join("copy.json"),
        limit: 3,
        follow: false,
    });
    for i in 0..4 {
        submit(app, i).await;
    }
    d.settle(&worker).await;

    // Killed after a little longer each time (mid-page, between pages), with new changes
    // arriving between runs; then restarted until it reaches the end of the feed.
    let mut printed = 0;
    for run in 0.. {
        assert!(run < 200, "the consumer never reaches the end of the feed");
        let (said, lines) = std::sync::mpsc::channel();
        let c = consumer.clone();
        let task = tokio::spawn(async move { c.run(|line| said.send(line).unwrap()).await });
        tokio::time::sleep(Duration::from_millis(2 * run)).await;
        let finished = task.is_finished();
        task.abort(); // SIGKILL's counterpart: it stops at whatever it was awaiting
        printed += lines.try_iter().count();
        if run < 6 {
            submit(app, 4 + run as usize).await;
            d.settle(&worker).await;
        } else if finished {
            break;
        }
    }

    // On PostgreSQL the feed serves a change once every older transaction of the server has
    // ended (other tests' included): run the consumer to the end of the feed again until the
    // server's state is all in it. The copy is then what the whole feed, applied once from
    // the start, gives, and equal to the server's state.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        consumer.run(|_| printed += 1).await.unwrap();
        let copy = consumer::load(&consumer.file).unwrap();
        let (expected, total) = whole_feed(app, &token).await;
        let state = server_state(app, &token, &copy).await;
        let caught_up =
            copy.submissions.len() == 10 && state.iter().all(|(id, e)| copy.submissions[id].effects == *e);
        if caught_up && copy == expected {
            assert!(printed <= total, "a change printed twice: {printed} lines for {total} changes");
            assert!(copy.submissions.values().all(|s| s.status == "accepted"));
            assert!(copy.submissions.values().any(|s| s.conflicts == 1), "the conflicts are in it");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the copy never caught up: {copy:?}\nexpected {expected:?}\nserver {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The whole feed applied once from the start, and how many changes it has.
pub(crate) async fn whole_feed(app: &TestApp, token: &str) -> (Copy, usize) {
    let mut expected = Copy::default();
    let (mut cursor, mut total) = (String::new(), 0);
    loop {
        let path = match cursor.as_str() {
            "" => "/api/v1/changes?limit=500".to_string(),
            c => format!("/api/v1/changes?limit=500&cursor={c}"),
        };
        let page = get_json(app, token, &path).await;
        let items = page["items"].as_array().unwrap();
        items.iter().for_each(|change| {
            expected.apply(change);
        });
        total += items.len();
        cursor = page["next_cursor"].as_str().unwrap().to_string();
        if items.is_empty() {
            expected.cursor = Some(cursor);
            return (expected, total);
        }
    }
}

/// Every effect record (ID → kind, state) of each submission of `copy`, as the server has it.
async fn server_state(
    app: &TestApp,
    token: &str,
    copy: &Copy,
) -> BTreeMap<String, BTreeMap<String, (String, String)>> {
    let mut state = BTreeMap::new();
    for id in copy.submissions.keys() {
        let detail = get_json(app, token, &format!("/api/v1/submissions/{id}")).await;
        let effects = detail["effects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let text = |k: &str| e[k].as_str().unwrap().to_string();
                (text("id"), (text("kind"), text("state")))
            })
            .collect();
        state.insert(id.clone(), effects);
    }
    state
}
