//! The duplicate detector: a repeat is linked to its candidates, judged off the accept path
//! and kept in its cluster (one original and its members); `hold` keeps effects back until the screening (or a decision) releases them.

use onceform::config::DuplicatePolicy;
use onceform::db::admin::effects::EffectAdminStore;
use onceform::db::DbError;
use onceform::with_conn;
use serde_json::Value;

use crate::on_both_backends;
use crate::support::delivery::spawn_delivery_app;
use crate::support::{inquiry, new_key, spawn_app, Backend, TestApp};

on_both_backends!(
    a_repeat_with_the_same_email_and_topic_is_paired_with_reasons,
    hold_keeps_the_duplicates_effects_until_released,
    identical_keyless_posts_are_paired,
    a_flood_from_one_address_is_one_cluster_with_one_pair_per_repeat,
    hold_releases_a_repeat_that_scores_below_hold_score,
    a_repeat_is_paired_with_its_request_past_the_senders_newer_one,
);

type Pair = (String, String, f64, String, String);

/// Every pair, once the screener has scored them all (the accept path only links them).
async fn pairs(app: &TestApp) -> Vec<Pair> {
    app.screened_pairs().await
}

fn with(topic: &str, message: &str) -> Value {
    let mut v = inquiry(message);
    v["topic"] = topic.into();
    v
}

async fn a_repeat_with_the_same_email_and_topic_is_paired_with_reasons(backend: Backend) {
    let app = spawn_app(backend).await;
    let first: Value = app
        .submit(&new_key(), &with("Sales", "Quote for 40 units of the X200 please"))
        .await
        .json()
        .await
        .unwrap();
    let again: Value = app
        .submit(&new_key(), &with("Sales", "Quote for 40 units of X200, please"))
        .await
        .json()
        .await
        .unwrap();
    let other: Value =
        app.submit(&new_key(), &with("Support", "The display flickers")).await.json().await.unwrap();
    let mut stranger = with("Sales", "Quote for 40 units of the X200 please");
    stranger["email"] = "someone.else@example.com".into();
    stranger["name"] = "Someone Else".into();
    app.submit(&new_key(), &stranger).await;

    let pairs = pairs(&app).await;
    let top = &pairs[0];
    assert_eq!(
        (&top.0, &top.1),
        (
            &first["submission_id"].as_str().unwrap().to_string(),
            &again["submission_id"].as_str().unwrap().to_string()
        )
    );
    assert!(top.2 >= 0.9, "{top:?}");
    let reasons: Vec<String> = serde_json::from_str(&top.3).unwrap();
    for reason in ["same email", "same topic", "same product code", "same quantity"] {
        assert!(reasons.contains(&reason.to_string()), "{reason}: {reasons:?}");
    }
    assert!(reasons.iter().any(|r| r.starts_with("message ")), "{reasons:?}");
    assert_eq!(top.4, "open");
    // Changed with issue 22: the same sender's other request is listed apart, not queued.
    let to_other: Vec<&Pair> =
        pairs.iter().filter(|p| p.1 == other["submission_id"].as_str().unwrap()).collect();
    assert_eq!(to_other.len(), 1, "{pairs:?}");
    assert!(to_other[0].2 < 0.6 && to_other[0].4 == "same_sender", "{to_other:?}");
    assert_eq!(
        pairs.len(),
        2,
        "first~again, and the new request listed apart; the stranger has none: {pairs:?}"
    );
    assert_eq!(app.stats().await.submissions, 4, "pairs never merge inquiries");
}

async fn hold_keeps_the_duplicates_effects_until_released(backend: Backend) {
    let d = spawn_delivery_app(backend, |c| {
        let form = c.forms.get_mut("contact").unwrap();
        form.duplicates.policy = DuplicatePolicy::Hold;
        form.confirmation_window_minutes = 0; // the pair shares an address: hold, not the cap
    })
    .await;
    let (a, b) = (new_key(), new_key());
    d.app.submit(&a, &with("Sales", "Quote for 40 units of the X200 please")).await;
    d.app.submit(&b, &with("Sales", "Quote for 40 units of the X200 please!")).await;
    let worker = d.worker();
    d.settle(&worker).await;
    assert!(d.effects(Some(&a)).await.iter().all(|e| e.state == "SENT"));
    assert!(d.effects(Some(&b)).await.iter().all(|e| e.state == "PENDING"), "held for a decision");
    assert_eq!(d.crm.leads().len(), 1);

    let duplicate = pairs(&d.app).await[0].1.clone();
    d.app
        .query(move |pool| {
            with_conn!(pool, |c| c
                .release_held_of(&duplicate, onceform::base::clock::now())
                .map_err(DbError::from))
        })
        .await;
    d.settle(&worker).await;
    assert!(d.effects(Some(&b)).await.iter().all(|e| e.state == "SENT"), "released: delivered");
    assert_eq!(d.crm.leads().len(), 2);
}

async fn identical_keyless_posts_are_paired(backend: Backend) {
    let app = spawn_app(backend).await;
    // A static site's form: no operation ID, so each post is its own submission.
    let form =
        [("name", "Grace"), ("email", "grace@example.com"), ("topic", "Support"), ("message", "Same words")];
    for _ in 0..2 {
        assert_eq!(app.client.post(app.url("/f/contact")).form(&form).send().await.unwrap().status(), 303);
    }
    let pairs = pairs(&app).await;
    assert_eq!(pairs.len(), 1);
    assert_eq!(pairs[0].2, 1.0);
    assert!(pairs[0].3.contains("identical content"), "{:?}", pairs[0]);
}

async fn a_flood_from_one_address_is_one_cluster_with_one_pair_per_repeat(backend: Backend) {
    let app = spawn_app(backend).await;
    let mut ids = Vec::new();
    for _ in 0..12 {
        let resp = app.submit(&new_key(), &with("Sales", "Bot message number seven")).await;
        assert_eq!(resp.status(), 201);
        let body: Value = resp.json().await.unwrap();
        ids.push(body["submission_id"].as_str().unwrap().to_string());
    }
    let pairs = pairs(&app).await;
    assert_eq!(pairs.len(), 11, "one pair per repeat, not one per earlier submission: {pairs:?}");
    assert!(pairs.iter().all(|p| p.0 == ids[0]), "every repeat linked to the cluster's first");
    let mut members: Vec<&String> = pairs.iter().map(|p| &p.1).collect();
    members.sort();
    members.dedup();
    assert_eq!(members.len(), 11, "at most one pair row per submission");
    assert_eq!(app.stats().await.submissions, 12, "pairs never merge inquiries");

    // The review shows the cluster as one item with its members.
    let viewer = app.sign_in(onceform::services::accounts::Role::Viewer).await;
    let resp = app.admin_get(Some(&viewer), "/admin/duplicates").await;
    assert_eq!(resp.status(), 200);
    let page = resp.text().await.unwrap();
    assert_eq!(page.matches(r#"class="cluster""#).count(), 1, "one cluster");
    assert!(page.contains("12 submissions from this sender in 72 h"), "{page}");
    assert_eq!(page.matches(r#"<section id="pair-"#).count(), 11, "with its 11 members");
}

async fn hold_releases_a_repeat_that_scores_below_hold_score(backend: Backend) {
    let d = spawn_delivery_app(backend, |c| {
        let form = c.forms.get_mut("contact").unwrap();
        form.duplicates.policy = DuplicatePolicy::Hold;
        form.confirmation_window_minutes = 0; // the pair shares an address: hold, not the cap
    })
    .await;
    let (a, b) = (new_key(), new_key());
    d.app.submit(&a, &with("Sales", "Quote for 40 units of the X200 please")).await;
    d.app.submit(&b, &with("Support", "The display flickers after the update")).await;
    let pairs = pairs(&d.app).await;
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    assert!(pairs[0].2 < 0.8, "same address, different topic and text: {pairs:?}");
    assert_eq!(pairs[0].4, "same_sender", "the same sender's new request, never held: {pairs:?}");
    let worker = d.worker();
    d.settle(&worker).await;
    assert!(d.effects(Some(&b)).await.iter().all(|e| e.state == "SENT"), "released by the screening");
    assert_eq!(d.crm.leads().len(), 2);
}

/// The accept path links a submission to its most recent candidate and lists the others
/// with it; the screener keeps the one it repeats, wherever it is in the list.
async fn a_repeat_is_paired_with_its_request_past_the_senders_newer_one(backend: Backend) {
    let app = spawn_app(backend).await;
    let id = |v: Value| v["submission_id"].as_str().unwrap().to_string();
    let quote = app.submit(&new_key(), &with("Sales", "Quote for 40 units of the X200 please")).await;
    let quote = id(quote.json().await.unwrap());
    let support = app.submit(&new_key(), &with("Support", "The display flickers after an hour")).await;
    let support = id(support.json().await.unwrap());
    let again = app.submit(&new_key(), &with("Sales", "Quote for 40 units of X200, please")).await;
    let again = id(again.json().await.unwrap());

    let pairs = pairs(&app).await;
    let view: Vec<(&str, &str, &str)> =
        pairs.iter().map(|p| (p.0.as_str(), p.1.as_str(), p.4.as_str())).collect();
    assert_eq!(
        view,
        [(quote.as_str(), again.as_str(), "open"), (quote.as_str(), support.as_str(), "same_sender")],
        "the repeat with its request, the new request listed apart: {pairs:?}"
    );
}
