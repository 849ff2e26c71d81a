//! Journey IDs: one visitor's inquiries tied together, apart from key and fingerprint.

use onceform::services::accounts::Role;

use crate::on_both_backends;
use crate::support::delivery::spawn_delivery_app;
use crate::support::{inquiry, new_key, Backend};

on_both_backends!(two_inquiries_of_one_journey_are_two_submissions_linked_in_the_admin);

async fn two_inquiries_of_one_journey_are_two_submissions_linked_in_the_admin(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let app = &d.app;
    let journey = "jrn-7f3a9c2e1b";
    let (first, second) = (new_key(), new_key());
    let resp = app
        .client
        .post(app.url("/api/forms/contact/submissions"))
        .header("Idempotency-Key", &first)
        .header("Onceform-Journey-Id", journey)
        .json(&inquiry("First question"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let mut body = inquiry("A second, different question");
    body["journey_id"] = journey.into();
    assert_eq!(app.submit(&second, &body).await.status(), 201);
    let other = new_key();
    assert_eq!(app.submit(&other, &inquiry("Someone else")).await.status(), 201);

    // Not part of the fingerprint: a retry under another journey ID still replays.
    let mut retry = inquiry("A second, different question");
    retry["journey_id"] = "another-journey".into();
    assert_eq!(app.submit(&second, &retry).await.status(), 200);
    assert_eq!(app.stats().await.submissions, 3, "two submissions of the journey, one other");

    let admin = app.sign_in(Role::Viewer).await;
    let list = app.admin_get(Some(&admin), &format!("/admin/submissions?journey={journey}")).await;
    let html = list.text().await.unwrap();
    assert!(html.contains(r#"data-n="2""#), "the journey filter finds both: {html}");
    assert!(html.contains("First question") && html.contains("A second, different question"));
    assert!(!html.contains("Someone else"));

    let worker = d.worker();
    d.settle(&worker).await;
    let bodies = d.crm.state.lock().unwrap().bodies.clone();
    let with_journey = bodies.iter().filter(|b| b["fields"]["journey_id"] == journey).count();
    assert_eq!(with_journey, 2, "the CRM gets the journey with each lead: {bodies:?}");
}
