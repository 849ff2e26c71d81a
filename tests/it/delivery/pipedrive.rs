//! The Pipedrive adapter against a loopback Pipedrive that validates every request by
//! Pipedrive's API reference (see `support/pipedrive.rs` for the rules): a person and a lead
//! carrying the reference, looked up before anything is resent.

use std::time::Duration;

use onceform::config::Config;

use crate::on_both_backends;
use crate::support::chat::{attempts, chat_app};
use crate::support::crm::Fault;
use crate::support::delivery::{spawn_delivery_app, DeliveryApp};
use crate::support::pipedrive::{FakePipedrive, MESSAGE_KEY, REFERENCE_KEY};
use crate::support::vendor::{crm_only, inquiry_from, lead_ref, set_token, wire_vendor, TOKEN_ENV};
use crate::support::{new_key, set_crm, Backend};

on_both_backends!(
    each_submission_is_a_person_and_a_lead_carrying_its_reference,
    a_timeout_after_the_lead_was_created_is_unknown_then_found_and_nothing_is_created_twice,
    a_429_waits_for_the_rate_limit_reset_and_a_500_is_looked_up_then_resent,
    pipedrives_refusal_fails_at_once_with_its_error_on_the_attempt,
    a_form_of_its_own_with_effects_pipedrive_delivers_the_same_way,
);

/// The form's fields under the mapping's names: the person's, the title, a custom field.
const FIELDS: &[(&str, &str)] =
    &[("name", "name"), ("email", "email"), ("topic", "title"), ("message", MESSAGE_KEY)];

async fn app(backend: Backend, tweak: impl FnOnce(&mut Config)) -> (DeliveryApp, FakePipedrive) {
    let pipedrive = FakePipedrive::start().await;
    let url = pipedrive.url.clone();
    let d = spawn_delivery_app(backend, |c| {
        wire_vendor(c, "pipedrive", &url, FIELDS);
        set_crm(c, "pipedrive", &[("reference_field", REFERENCE_KEY)]);
        crm_only(c);
        tweak(c);
    })
    .await;
    (d, pipedrive)
}

async fn outcomes(d: &DeliveryApp, key: &str, kind: &str) -> Vec<String> {
    d.attempts(key, kind).await.into_iter().map(|(o, _)| o).collect()
}

async fn each_submission_is_a_person_and_a_lead_carrying_its_reference(backend: Backend) {
    let (d, pipedrive) = app(backend, |_| {}).await;
    let warnings = onceform::services::check_config::warnings(&d.app.config);
    assert!(warnings.iter().all(|w| !w.contains("Lead.title") && !w.contains("Person.name")), "{warnings:?}");
    let keys = [new_key(), new_key()];
    for (i, key) in keys.iter().enumerate() {
        let status =
            d.app.submit(key, &inquiry_from(&format!("visitor{i}@example.com"), "Hi")).await.status();
        assert_eq!(status, 201);
    }
    let worker = d.worker();
    d.settle(&worker).await;
    // The same visitor again, later: the person is found by email, not made twice.
    let again = new_key();
    d.app.submit(&again, &inquiry_from("visitor0@example.com", "Me again")).await;
    d.settle(&worker).await;

    let (leads, persons) = (pipedrive.leads(), pipedrive.persons());
    assert_eq!((leads.len(), persons.len()), (3, 2), "{leads:?} {persons:?}");
    for key in keys.iter().chain([&again]) {
        let reference = lead_ref(&d.app, key).await;
        let lead = leads.iter().find(|l| l.custom.get(REFERENCE_KEY) == Some(&reference));
        let lead = lead.unwrap_or_else(|| panic!("no lead carries {reference}: {leads:?}"));
        assert_eq!(lead.title, "Sales");
        let record = d.effect(key, "crm_lead").await;
        assert_eq!((record.state.as_str(), record.provider_ref.as_deref()), ("SENT", Some(lead.id.as_str())));
    }
    let person = |email: &str| persons.iter().find(|p| p.emails == [email]).unwrap().id;
    assert_eq!(leads.iter().filter(|l| l.person_id == person("visitor0@example.com")).count(), 2);
    assert_eq!(persons[0].name, "Ada Lovelace");
    assert!(leads.iter().any(|l| l.custom.get(MESSAGE_KEY).map(String::as_str) == Some("Me again")));
    assert_eq!((pipedrive.lead_creates(), pipedrive.refused()), (3, Vec::<String>::new()));
}

async fn a_timeout_after_the_lead_was_created_is_unknown_then_found_and_nothing_is_created_twice(
    backend: Backend,
) {
    let (d, pipedrive) = app(backend, |_| {}).await;
    pipedrive.push_fault(Fault::SlowAfterCreate(Duration::from_millis(1500)));
    let key = new_key();
    d.app.submit(&key, &inquiry_from("slow@example.com", "Slow")).await;
    let worker = d.worker();
    worker.run_once().await;
    assert_eq!(
        d.effect(&key, "crm_lead").await.state,
        "UNKNOWN",
        "two requests, no upsert: never resent blindly"
    );
    d.settle(&worker).await;

    let lead = d.effect(&key, "crm_lead").await;
    let leads = pipedrive.leads();
    assert_eq!((leads.len(), pipedrive.persons().len(), pipedrive.lead_creates()), (1, 1, 1), "{leads:?}");
    assert_eq!((lead.state.as_str(), lead.provider_ref.as_deref()), ("SENT", Some(leads[0].id.as_str())));
    assert_eq!(outcomes(&d, &key, "crm_lead").await, ["ambiguous", "lookup_found"]);

    // Sent again with the same reference (as after "mark not sent"): found, not made again.
    crate::support::vendor::force_lead_state(&d.app, "PENDING").await;
    d.settle(&worker).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "SENT");
    assert_eq!((pipedrive.leads().len(), pipedrive.persons().len(), pipedrive.lead_creates()), (1, 1, 1));
}

async fn a_429_waits_for_the_rate_limit_reset_and_a_500_is_looked_up_then_resent(backend: Backend) {
    let (d, pipedrive) = app(backend, |_| {}).await;
    pipedrive.push_fault(Fault::RateLimited(2));
    let busy = new_key();
    d.app.submit(&busy, &inquiry_from("busy@example.com", "Busy")).await;
    let worker = d.worker();
    let before = onceform::base::clock::now();
    worker.run_once().await;
    let lead = d.effect(&busy, "crm_lead").await;
    assert_eq!(lead.state, "PENDING");
    assert!(
        lead.next_attempt_at >= before + chrono::Duration::seconds(2),
        "not before x-ratelimit-reset: {lead:?}"
    );
    d.settle(&worker).await;
    assert_eq!(d.effect(&busy, "crm_lead").await.state, "SENT");
    assert_eq!(
        d.attempts(&busy, "crm_lead").await[0],
        ("transient".to_string(), Some("http_429".to_string()))
    );

    pipedrive.push_fault(Fault::Status(500));
    let hiccup = new_key();
    d.app.submit(&hiccup, &inquiry_from("hiccup@example.com", "Hiccup")).await;
    d.settle(&worker).await;
    assert_eq!(d.effect(&hiccup, "crm_lead").await.state, "SENT");
    let tried = outcomes(&d, &hiccup, "crm_lead").await;
    assert_eq!(tried.first().map(String::as_str), Some("ambiguous"), "{tried:?}");
    assert_eq!(tried.last().map(String::as_str), Some("sent"), "{tried:?}");
    // One lead and one person per visitor: the person of the refused try was found by email.
    assert_eq!((pipedrive.leads().len(), pipedrive.persons().len()), (2, 2));
    assert!(pipedrive.refused().is_empty(), "{:?}", pipedrive.refused());
}

async fn pipedrives_refusal_fails_at_once_with_its_error_on_the_attempt(backend: Backend) {
    // No title: check-config says so, and Pipedrive refuses the lead.
    let (d, pipedrive) = app(backend, |c| {
        c.forms.get_mut("contact").unwrap().crm_fields.remove("topic");
    })
    .await;
    let warnings = onceform::services::check_config::warnings(&d.app.config).join("\n");
    assert!(
        warnings.contains("forms.contact.crm_fields: Lead.title is required and no field is mapped to it"),
        "{warnings}"
    );
    let key = new_key();
    d.app.submit(&key, &inquiry_from("a@example.com", "No title")).await;
    d.settle(&d.worker()).await;
    let lead = d.effect(&key, "crm_lead").await;
    assert_eq!((lead.state.as_str(), lead.attempts), ("FAILED_FINAL", 1));
    let tried = attempts(&d, &key, "crm_lead").await;
    assert_eq!((tried[0].0.as_str(), tried[0].1.as_deref()), ("permanent", Some("http_400")));
    let detail = tried[0].2.clone().unwrap_or_default();
    assert!(detail.starts_with("Lead title is required"), "Pipedrive's words on the attempt: {detail:?}");
    assert_eq!(pipedrive.refused(), ["lead: title"]);
    assert!(pipedrive.leads().is_empty());
}

async fn a_form_of_its_own_with_effects_pipedrive_delivers_the_same_way(backend: Backend) {
    set_token();
    let pipedrive = FakePipedrive::start().await;
    let table = format!(
        "url = \"{}\"\ntoken_env = \"{TOKEN_ENV}\"\nreference_field = \"{REFERENCE_KEY}\"\nauth = \"api_token\"",
        pipedrive.url
    );
    let d = chat_app(backend, "pipedrive", &table, |c| {
        let form = c.forms.get_mut("contact").unwrap();
        form.crm_fields = FIELDS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    })
    .await;
    let key = new_key();
    pipedrive.push_fault(Fault::SlowAfterCreate(Duration::from_millis(1500)));
    d.app.submit(&key, &inquiry_from("own@example.com", "Own table")).await;
    let worker = d.worker();
    worker.run_once().await;
    assert_eq!(d.effect(&key, "pipedrive").await.state, "UNKNOWN");
    d.settle(&worker).await;
    let record = d.effect(&key, "pipedrive").await;
    let leads = pipedrive.leads();
    assert_eq!(leads.len(), 1, "{leads:?}");
    assert_eq!((record.state.as_str(), record.provider_ref.as_deref()), ("SENT", Some(leads[0].id.as_str())));
    assert!(leads[0].custom[REFERENCE_KEY].ends_with(":pipedrive:0"), "the record's own key: {leads:?}");
    assert_eq!(outcomes(&d, &key, "pipedrive").await, ["ambiguous", "lookup_found"]);
    assert!(d.effects(Some(&key)).await.iter().all(|e| e.kind == "pipedrive"), "no crm_lead record");
}
