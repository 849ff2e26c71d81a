//! The HubSpot adapter against a loopback HubSpot that validates every request by HubSpot's
//! published description of the CRM v3 contacts API (see `support/hubspot.rs` for the rules).

use std::time::Duration;

use onceform::config::Config;

use crate::on_both_backends;
use crate::support::crm::Fault;
use crate::support::delivery::{spawn_delivery_app, DeliveryApp};
use crate::support::hubspot::FakeHubspot;
use crate::support::vendor::{crm_only, force_lead_state, inquiry_from, lead_ref, wire_vendor};
use crate::support::{new_key, Backend};

on_both_backends!(
    three_submissions_make_three_contacts_each_carrying_its_reference,
    a_dropped_or_timed_out_upsert_is_resent_and_creates_nothing_new,
    a_repeat_after_unknown_creates_nothing_new,
    a_500_is_resent_and_a_429_waits_for_retry_after,
    a_property_hubspot_does_not_have_is_refused_and_fails_at_once,
    a_missing_token_is_refused_and_fails_at_once,
    a_second_contact_with_a_known_email_fails_as_contact_exists,
);

/// The form's fields under HubSpot's default contact property names.
const FIELDS: &[(&str, &str)] =
    &[("name", "firstname"), ("email", "email"), ("company", "company"), ("message", "message")];

async fn app(backend: Backend, tweak: impl FnOnce(&mut Config)) -> (DeliveryApp, FakeHubspot) {
    let hubspot = FakeHubspot::start().await;
    let url = hubspot.url.clone();
    let d = spawn_delivery_app(backend, |c| {
        wire_vendor(c, "hubspot", &url, FIELDS);
        crm_only(c);
        tweak(c);
    })
    .await;
    (d, hubspot)
}

async fn outcomes(d: &DeliveryApp, key: &str) -> Vec<String> {
    d.attempts(key, "crm_lead").await.into_iter().map(|(o, _)| o).collect()
}

async fn three_submissions_make_three_contacts_each_carrying_its_reference(backend: Backend) {
    let (d, hubspot) = app(backend, |_| {}).await;
    let keys = [new_key(), new_key(), new_key()];
    for (i, key) in keys.iter().enumerate() {
        let status =
            d.app.submit(key, &inquiry_from(&format!("visitor{i}@example.com"), "Hi")).await.status();
        assert_eq!(status, 201);
    }
    d.settle(&d.worker()).await;

    let contacts = hubspot.contacts();
    assert_eq!(contacts.len(), 3, "{contacts:?}");
    for (i, key) in keys.iter().enumerate() {
        let reference = lead_ref(&d.app, key).await;
        let contact = contacts.iter().find(|c| c.properties.get("onceform_ref") == Some(&reference));
        let contact = contact.unwrap_or_else(|| panic!("no contact carries {reference}: {contacts:?}"));
        assert_eq!(contact.properties["email"], format!("visitor{i}@example.com"));
        assert_eq!(contact.properties["firstname"], "Ada Lovelace");
        let lead = d.effect(key, "crm_lead").await;
        assert_eq!((lead.state.as_str(), lead.provider_ref.as_deref()), ("SENT", Some(contact.id.as_str())));
    }
    assert_eq!((hubspot.upserts(), hubspot.refused()), (3, Vec::<String>::new()));
}

async fn a_dropped_or_timed_out_upsert_is_resent_and_creates_nothing_new(backend: Backend) {
    let (d, hubspot) = app(backend, |_| {}).await;
    hubspot.push_fault(Fault::DropAfterCreate);
    let dropped = new_key();
    d.app.submit(&dropped, &inquiry_from("dropped@example.com", "Dropped")).await;
    let worker = d.worker();
    worker.run_once().await;
    let lead = d.effect(&dropped, "crm_lead").await;
    assert_eq!(lead.state, "PENDING", "an upsert may simply be sent again, never held UNKNOWN");
    d.settle(&worker).await;

    hubspot.push_fault(Fault::SlowAfterCreate(Duration::from_millis(1500)));
    let slow = new_key();
    d.app.submit(&slow, &inquiry_from("slow@example.com", "Slow")).await;
    d.settle(&worker).await;

    let contacts = hubspot.contacts();
    assert_eq!(contacts.len(), 2, "one contact per submission: {contacts:?}");
    assert_eq!(hubspot.upserts(), 4, "each sent twice");
    for key in [&dropped, &slow] {
        assert_eq!(outcomes(&d, key).await, ["ambiguous", "sent"]);
        let reference = lead_ref(&d.app, key).await;
        let contact = contacts.iter().find(|c| c.properties["onceform_ref"] == reference).unwrap();
        assert_eq!(d.effect(key, "crm_lead").await.provider_ref.as_deref(), Some(contact.id.as_str()));
    }
    assert!(hubspot.refused().is_empty(), "{:?}", hubspot.refused());
}

async fn a_repeat_after_unknown_creates_nothing_new(backend: Backend) {
    let (d, hubspot) = app(backend, |_| {}).await;
    let key = new_key();
    d.app.submit(&key, &inquiry_from("ada@example.com", "Once")).await;
    let worker = d.worker();
    d.settle(&worker).await;
    let first = d.effect(&key, "crm_lead").await.provider_ref;

    // The worker died after HubSpot took the upsert: the lease ran out, the lead is UNKNOWN.
    force_lead_state(&d.app, "UNKNOWN").await;
    d.settle(&worker).await;
    let lead = d.effect(&key, "crm_lead").await;
    assert_eq!((lead.state.as_str(), &lead.provider_ref), ("SENT", &first), "found by its reference");
    assert_eq!(hubspot.upserts(), 1, "looked up, not sent again");

    // Sent again with the same reference (as after an admin marks an UNKNOWN lead "not sent"):
    // the upsert finds the same contact.
    force_lead_state(&d.app, "PENDING").await;
    d.settle(&worker).await;
    let lead = d.effect(&key, "crm_lead").await;
    assert_eq!((lead.state.as_str(), &lead.provider_ref), ("SENT", &first));
    assert_eq!((hubspot.upserts(), hubspot.contacts().len()), (2, 1), "sent twice, one contact");
    assert_eq!(outcomes(&d, &key).await, ["sent", "lookup_found", "sent"]);
}

async fn a_500_is_resent_and_a_429_waits_for_retry_after(backend: Backend) {
    let (d, hubspot) = app(backend, |_| {}).await;
    hubspot.push_fault(Fault::Status(500));
    let key = new_key();
    d.app.submit(&key, &inquiry_from("a@example.com", "Hiccup")).await;
    let worker = d.worker();
    d.settle(&worker).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "SENT");
    let attempts = d.attempts(&key, "crm_lead").await;
    assert_eq!(attempts[0], ("ambiguous".to_string(), Some("http_500".to_string())));
    assert_eq!(attempts.len(), 2, "{attempts:?}");

    hubspot.push_fault(Fault::RateLimited(1));
    let busy = new_key();
    d.app.submit(&busy, &inquiry_from("b@example.com", "Busy")).await;
    let before = onceform::base::clock::now();
    worker.run_once().await;
    let lead = d.effect(&busy, "crm_lead").await;
    assert_eq!(lead.state, "PENDING");
    assert!(
        lead.next_attempt_at >= before + chrono::Duration::seconds(1),
        "not before Retry-After: {lead:?}"
    );
    d.settle(&worker).await;
    assert_eq!(d.effect(&busy, "crm_lead").await.state, "SENT");
    assert_eq!(hubspot.contacts().len(), 2);
}

async fn a_property_hubspot_does_not_have_is_refused_and_fails_at_once(backend: Backend) {
    let (d, hubspot) = app(backend, |c| {
        c.forms.get_mut("contact").unwrap().crm_fields.insert("name".into(), "full_name".into());
    })
    .await;
    let key = new_key();
    d.app.submit(&key, &inquiry_from("a@example.com", "Drift")).await;
    d.settle(&d.worker()).await;
    let lead = d.effect(&key, "crm_lead").await;
    assert_eq!((lead.state.as_str(), lead.attempts), ("FAILED_FINAL", 1));
    assert_eq!(d.attempts(&key, "crm_lead").await, [("permanent".to_string(), Some("http_400".to_string()))]);
    assert_eq!(hubspot.refused(), ["property full_name"]);
    assert!(hubspot.contacts().is_empty());
}

async fn a_missing_token_is_refused_and_fails_at_once(backend: Backend) {
    let (d, hubspot) = app(backend, |c| c.crm.token_env = "ONCEFORM_TEST_UNSET_TOKEN".into()).await;
    let key = new_key();
    d.app.submit(&key, &inquiry_from("a@example.com", "No token")).await;
    d.settle(&d.worker()).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "FAILED_FINAL");
    assert_eq!(d.attempts(&key, "crm_lead").await[0].1.as_deref(), Some("http_401"));
    assert_eq!(hubspot.refused(), ["auth"]);
}

async fn a_second_contact_with_a_known_email_fails_as_contact_exists(backend: Backend) {
    let (d, hubspot) = app(backend, |_| {}).await;
    let (first, second) = (new_key(), new_key());
    d.app.submit(&first, &inquiry_from("ada@example.com", "First inquiry")).await;
    let worker = d.worker();
    d.settle(&worker).await;
    d.app.submit(&second, &inquiry_from("ada@example.com", "Second inquiry")).await;
    d.settle(&worker).await;

    assert_eq!(d.effect(&first, "crm_lead").await.state, "SENT");
    let lead = d.effect(&second, "crm_lead").await;
    assert_eq!((lead.state.as_str(), lead.attempts), ("FAILED_FINAL", 1), "for an admin to decide");
    assert_eq!(d.attempts(&second, "crm_lead").await[0].1.as_deref(), Some("contact_exists"));
    assert_eq!(hubspot.contacts().len(), 1);
}
