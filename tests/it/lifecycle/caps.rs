//! The confirmation cap's rows (a recipient's keyed digest and a time: personal data) go
//! with the retention pass once their window has passed; the address then gets a
//! confirmation again. Erasing the person deletes their cap at once.

use chrono::Duration;
use serde_json::{json, Value};

use crate::on_both_backends;
use crate::support::delivery::{spawn_delivery_app, DeliveryApp};
use crate::support::{new_key, test_keyring, Backend};

on_both_backends!(
    caps_past_their_window_are_purged_and_the_address_is_confirmed_again,
    erasing_the_address_deletes_its_cap_at_once
);

const ADDRESS: &str = "ada.lovelace@example.org";

/// Submits a new inquiry from `ADDRESS`; the confirmation's state in the answer.
async fn confirmation_state(d: &DeliveryApp) -> String {
    let body = json!({"name": "Ada Lovelace", "email": ADDRESS, "topic": "Sales",
                      "message": format!("Engine question {}", new_key())});
    let resp = d.app.submit(&new_key(), &body).await;
    assert_eq!(resp.status(), 201);
    let body: Value = resp.json().await.unwrap();
    let effects = body["effects"].as_array().unwrap();
    let confirmation = effects.iter().find(|e| e["kind"] == "confirmation_email").unwrap();
    confirmation["state"].as_str().unwrap().to_string()
}

async fn caps(d: &DeliveryApp) -> i64 {
    d.app
        .query(|pool| {
            use diesel::prelude::*;
            use onceform::db::schema::confirmation_caps;
            onceform::with_conn!(pool, |c| confirmation_caps::table
                .count()
                .get_result(c)
                .map_err(onceform::db::DbError::from))
        })
        .await
}

/// The retention pass as it would run `minutes` from now, as `serve`'s schedule runs it (on
/// SQLite through the writer the app's accepts use): the contact form's caps it deleted.
async fn purge_in(d: &DeliveryApp, minutes: i64) -> Option<i64> {
    let config = d.app.config.clone();
    let at = onceform::base::clock::now() + Duration::minutes(minutes);
    let report = d
        .app
        .query(move |pool| {
            let writes = onceform::db::Writes::shared(pool, &config.database).unwrap();
            onceform::services::lifecycle::purge::run_pass(&writes, &config, at)
        })
        .await;
    report.caps.into_iter().find(|(form, _)| form == "contact").map(|(_, n)| n)
}

async fn caps_past_their_window_are_purged_and_the_address_is_confirmed_again(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    assert_eq!(confirmation_state(&d).await, "PENDING");
    assert_eq!(confirmation_state(&d).await, "CANCELLED", "capped within the hour");
    assert_eq!(caps(&d).await, 1);

    assert_eq!(purge_in(&d, 30).await, Some(0), "still capping: kept");
    assert_eq!(caps(&d).await, 1);
    assert_eq!(confirmation_state(&d).await, "CANCELLED");

    assert_eq!(purge_in(&d, 61).await, Some(1), "the window has passed");
    assert_eq!(caps(&d).await, 0, "no row left holding the address's digest");
    assert_eq!(confirmation_state(&d).await, "PENDING", "a confirmation again");
    d.settle(&d.worker()).await;
    let sent = d.smtp.messages().into_iter().filter(|m| m.contains(&format!("\nTo: {ADDRESS}\r\n"))).count();
    assert_eq!(sent, 2, "the first confirmation and the one after the purge");

    let metrics = d.app.client.get(d.app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    let row = "onceform_purged_rows_total{form=\"contact\",kind=\"confirmation_caps\"} 1";
    assert!(metrics.contains(row), "{metrics}");
}

async fn erasing_the_address_deletes_its_cap_at_once(backend: Backend) {
    use onceform::services::lifecycle::erase::{erase, Actor, Files, Person};
    let d = spawn_delivery_app(backend, |_| {}).await;
    assert_eq!(confirmation_state(&d).await, "PENDING");
    assert_eq!(caps(&d).await, 1);
    let person = Person::Email(ADDRESS.to_uppercase());
    d.app
        .query(move |pool| {
            erase(pool, &test_keyring(), &Files::default(), &Default::default(), &person, true, &Actor::cli())
        })
        .await;
    assert_eq!(caps(&d).await, 1, "a dry run changes nothing");
    let person = Person::Email(ADDRESS.to_uppercase());
    d.app
        .query(move |pool| {
            erase(
                pool,
                &test_keyring(),
                &Files::default(),
                &Default::default(),
                &person,
                false,
                &Actor::cli(),
            )
        })
        .await;
    assert_eq!(caps(&d).await, 0, "nothing left holding the address's digest");
}
