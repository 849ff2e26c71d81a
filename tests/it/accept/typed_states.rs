//! States read from the database are typed: text no state has is an error, never a guess.

use diesel::prelude::*;
use onceform::db::schema::side_effects;
use onceform::db::DbError;
use onceform::with_conn;

use crate::on_both_backends;
use crate::support::{inquiry, new_key, spawn_app, Backend};

on_both_backends!(an_unknown_state_in_the_database_is_an_error_not_a_guess);

async fn an_unknown_state_in_the_database_is_an_error_not_a_guess(backend: Backend) {
    let app = spawn_app(backend).await;
    let key = new_key();
    assert_eq!(app.submit(&key, &inquiry("Typed states")).await.status(), 201);
    let status_url = app.url(&format!("/api/forms/contact/submissions/{key}"));
    let http = reqwest::Client::new();
    let resp = http.get(&status_url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert!(body["effects"].as_array().unwrap().iter().all(|e| e["state"] == "PENDING"), "{body}");

    // A misspelt state written behind the application's back (wrong case).
    app.query(|pool| {
        with_conn!(pool, |c| diesel::update(side_effects::table)
            .set(side_effects::state.eq("Pending"))
            .execute(c)
            .map_err(DbError::from))
    })
    .await;
    let resp = http.get(&status_url).send().await.unwrap();
    assert_eq!(resp.status(), 500, "the row cannot be read as a state");
    assert!(!resp.text().await.unwrap().contains("Pending"), "no guessed state is shown");
}
