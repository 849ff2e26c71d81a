//! In headless Chromium: sign in, review a duplicate pair, resolve an UNKNOWN effect, and
//! keep screenshots of the dashboard and the duplicate review (target/test-artifacts/).

use std::time::Duration;

use diesel::prelude::*;
use onceform::db::schema::duplicate_pairs;
use onceform::db::DbError;
use onceform::services::accounts::Role;
use onceform::with_conn;

use crate::support::browser::Browser;
use crate::support::crm::Fault;
use crate::support::delivery::spawn_delivery_app;
use crate::support::{inquiry, new_key, Backend};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_reviews_a_duplicate_and_resolves_an_unknown_effect_in_a_browser() {
    // No lookup URL: an UNKNOWN lead waits for an admin.
    let d = spawn_delivery_app(Backend::Sqlite, |c| crate::support::set_crm(c, "generic", &[])).await;
    let app = &d.app;
    d.crm.push_fault(Fault::SlowAfterCreate(Duration::from_secs(2)));
    let (first, second) = (new_key(), new_key());
    app.submit(&first, &inquiry("Quote for 40 units of the X200 please")).await;
    let worker = d.worker();
    worker.run_once().await;
    assert_eq!(d.effect(&first, "crm_lead").await.state, "UNKNOWN");
    app.submit(&second, &inquiry("Quote for 40 units of the X200, please")).await;
    app.create_user("reviewer@example.com", Role::Admin).await;

    let browser = Browser::start().await;
    browser.goto(&app.url("/admin/login")).await;
    browser.type_into("input[name=email]", "reviewer@example.com").await;
    browser.type_into("input[name=password]", "a long enough password").await;
    browser.click("form[action='/admin/login'] button").await;
    browser.wait_for_text("Dashboard").await;
    assert!(browser.current_url().await.ends_with("/admin"), "{}", browser.current_url().await);
    browser.screenshot("dashboard").await;

    browser.goto(&app.url("/admin/duplicates")).await;
    assert!(browser.source().await.contains("same email"));
    browser.screenshot("duplicate-review").await;
    browser.click("form[action$='/duplicate'] button").await;
    browser.wait_for_text("class=\"flash\"").await;
    let status: String = app
        .query(|pool| {
            with_conn!(pool, |c| duplicate_pairs::table
                .select(duplicate_pairs::status)
                .first(c)
                .map_err(DbError::from))
        })
        .await;
    assert_eq!(status, "duplicate");

    browser.goto(&app.url("/admin/effects?state=UNKNOWN")).await;
    browser.type_into("form[action$='/mark-sent'] input[name=provider_ref]", "L-1").await;
    browser.type_into("form[action$='/mark-sent'] input[name=note]", "seen in the CRM").await;
    browser.click("form[action$='/mark-sent'] button").await;
    browser.wait_for_text("Mark sent: done.").await;
    let lead = d.effect(&first, "crm_lead").await;
    assert_eq!((lead.state.as_str(), lead.provider_ref.as_deref()), ("SENT", Some("L-1")));
}
