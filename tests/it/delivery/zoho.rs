//! The Zoho CRM adapter against a loopback Zoho (accounts server and CRM API) that validates
//! every request by Zoho's documentation (see `support/zoho.rs` for the rules): Leads upsert
//! by an external-ID field, OAuth refresh, lookup by search.

use std::time::Duration;

use onceform::config::Config;

use crate::on_both_backends;
use crate::support::chat::{attempts, chat_app, env_var};
use crate::support::crm::Fault;
use crate::support::delivery::{spawn_delivery_app, DeliveryApp};
use crate::support::vendor::{crm_only, force_lead_state, inquiry_from, lead_ref, wire_vendor};
use crate::support::zoho::{FakeZoho, CLIENT_ID, CLIENT_SECRET, REFRESH_TOKEN};
use crate::support::{new_key, set_crm, Backend};

on_both_backends!(
    each_submission_is_one_lead_carrying_its_reference_with_one_token,
    a_timed_out_upsert_is_resent_and_an_unknown_one_found_and_nothing_is_created_twice,
    a_429_waits_for_the_rate_limit_reset_and_a_500_is_resent,
    zohos_refusal_fails_at_once_with_its_code_on_the_attempt,
    an_expired_token_is_refreshed_once_and_the_lead_sent,
    a_refused_refresh_token_fails_at_once_with_zohos_error_and_sends_nothing,
    a_form_of_its_own_with_effects_zoho_delivers_the_same_way,
);

/// The form's fields under the Leads fields' API names.
const FIELDS: &[(&str, &str)] =
    &[("name", "Last_Name"), ("email", "Email"), ("company", "Company"), ("message", "Description")];

/// `[crm.zoho]` (or a form's table) for the fake: its accounts server, the client, the
/// secrets in fresh variables.
fn settings(zoho: &FakeZoho) -> Vec<(&'static str, String)> {
    vec![
        ("accounts_url", zoho.url.clone()),
        ("client_id", CLIENT_ID.to_string()),
        ("client_secret_env", env_var(CLIENT_SECRET)),
        ("refresh_token_env", env_var(REFRESH_TOKEN)),
    ]
}

async fn app(backend: Backend, tweak: impl FnOnce(&mut Config)) -> (DeliveryApp, FakeZoho) {
    let zoho = FakeZoho::start().await;
    let table = settings(&zoho);
    let d = spawn_delivery_app(backend, |c| {
        wire_vendor(c, "zoho", &zoho.url, FIELDS);
        c.crm.url = None; // the API is where the token answer's api_domain says
        let table: Vec<(&str, &str)> = table.iter().map(|(k, v)| (*k, v.as_str())).collect();
        set_crm(c, "zoho", &table);
        crm_only(c);
        tweak(c);
    })
    .await;
    (d, zoho)
}

async fn outcomes(d: &DeliveryApp, key: &str, kind: &str) -> Vec<String> {
    d.attempts(key, kind).await.into_iter().map(|(o, _)| o).collect()
}

async fn each_submission_is_one_lead_carrying_its_reference_with_one_token(backend: Backend) {
    let (d, zoho) = app(backend, |_| {}).await;
    assert!(onceform::services::check_config::problems(&d.app.config).is_empty());
    let keys = [new_key(), new_key(), new_key()];
    for (i, key) in keys.iter().enumerate() {
        let status =
            d.app.submit(key, &inquiry_from(&format!("visitor{i}@example.com"), "Hi")).await.status();
        assert_eq!(status, 201);
    }
    d.settle(&d.worker()).await;

    let leads = zoho.leads();
    assert_eq!(leads.len(), 3, "{leads:?}");
    for (i, key) in keys.iter().enumerate() {
        let reference = lead_ref(&d.app, key).await;
        let lead = leads.iter().find(|l| l.fields.get("Onceform_Ref") == Some(&reference));
        let lead = lead.unwrap_or_else(|| panic!("no Lead carries {reference}: {leads:?}"));
        assert_eq!(lead.fields["Email"], format!("visitor{i}@example.com"));
        assert_eq!(lead.fields["Last_Name"], "Ada Lovelace");
        let record = d.effect(key, "crm_lead").await;
        assert_eq!((record.state.as_str(), record.provider_ref.as_deref()), ("SENT", Some(lead.id.as_str())));
    }
    assert_eq!(zoho.token_requests(), 1, "the access token is kept until it expires");
    assert_eq!((zoho.upserts(), zoho.refused()), (3, Vec::<String>::new()));
}

async fn a_timed_out_upsert_is_resent_and_an_unknown_one_found_and_nothing_is_created_twice(
    backend: Backend,
) {
    let (d, zoho) = app(backend, |_| {}).await;
    zoho.push_fault(Fault::SlowAfterCreate(Duration::from_millis(1500)));
    let key = new_key();
    d.app.submit(&key, &inquiry_from("slow@example.com", "Slow")).await;
    let worker = d.worker();
    worker.run_once().await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "PENDING", "an upsert is simply sent again");
    d.settle(&worker).await;
    assert_eq!(outcomes(&d, &key, "crm_lead").await, ["ambiguous", "sent"]);
    assert_eq!((zoho.leads().len(), zoho.upserts()), (1, 2), "sent twice, one Lead");
    let first = d.effect(&key, "crm_lead").await.provider_ref;
    assert_eq!(first.as_deref(), Some(zoho.leads()[0].id.as_str()));

    // The worker died after Zoho took the upsert: UNKNOWN, then found by the search.
    force_lead_state(&d.app, "UNKNOWN").await;
    d.settle(&worker).await;
    let lead = d.effect(&key, "crm_lead").await;
    assert_eq!((lead.state.as_str(), &lead.provider_ref), ("SENT", &first), "found by its external ID");
    assert_eq!((zoho.leads().len(), zoho.upserts()), (1, 2), "looked up, not sent again");
    assert!(zoho.refused().is_empty(), "{:?}", zoho.refused());
}

async fn a_429_waits_for_the_rate_limit_reset_and_a_500_is_resent(backend: Backend) {
    let (d, zoho) = app(backend, |_| {}).await;
    zoho.push_fault(Fault::RateLimited(2));
    let busy = new_key();
    d.app.submit(&busy, &inquiry_from("busy@example.com", "Busy")).await;
    let worker = d.worker();
    let before = onceform::base::clock::now();
    worker.run_once().await;
    let lead = d.effect(&busy, "crm_lead").await;
    assert_eq!(lead.state, "PENDING");
    assert!(
        lead.next_attempt_at >= before + chrono::Duration::milliseconds(1500),
        "not before X-RATELIMIT-RESET: {lead:?}"
    );
    d.settle(&worker).await;
    assert_eq!(d.effect(&busy, "crm_lead").await.state, "SENT");

    zoho.push_fault(Fault::Status(500));
    let hiccup = new_key();
    d.app.submit(&hiccup, &inquiry_from("hiccup@example.com", "Hiccup")).await;
    d.settle(&worker).await;
    assert_eq!(d.effect(&hiccup, "crm_lead").await.state, "SENT");
    let tried = d.attempts(&hiccup, "crm_lead").await;
    assert_eq!(tried[0], ("ambiguous".to_string(), Some("http_500".to_string())));
    assert_eq!(zoho.leads().len(), 2);
}

async fn zohos_refusal_fails_at_once_with_its_code_on_the_attempt(backend: Backend) {
    let (d, zoho) = app(backend, |c| {
        c.forms.get_mut("contact").unwrap().crm_fields.remove("company");
    })
    .await;
    let warnings = onceform::services::check_config::warnings(&d.app.config).join("\n");
    assert!(warnings.contains("Leads.Company is required and no field is mapped to it"), "{warnings}");
    assert!(warnings.contains("up to 120 characters, but Leads.Last_Name holds 80"), "{warnings}");
    let key = new_key();
    d.app.submit(&key, &inquiry_from("a@example.com", "No company")).await;
    d.settle(&d.worker()).await;
    let lead = d.effect(&key, "crm_lead").await;
    assert_eq!((lead.state.as_str(), lead.attempts), ("FAILED_FINAL", 1));
    let tried = attempts(&d, &key, "crm_lead").await;
    assert_eq!((tried[0].0.as_str(), tried[0].1.as_deref()), ("permanent", Some("http_400")));
    assert_eq!(tried[0].2.as_deref(), Some("MANDATORY_NOT_FOUND: required field not found (Company)"));
    assert_eq!(zoho.refused(), ["required fields"]);
    assert!(zoho.leads().is_empty());
}

async fn an_expired_token_is_refreshed_once_and_the_lead_sent(backend: Backend) {
    let (d, zoho) = app(backend, |_| {}).await;
    let worker = d.worker();
    let first = new_key();
    d.app.submit(&first, &inquiry_from("first@example.com", "First")).await;
    d.settle(&worker).await;
    zoho.expire_tokens();
    let second = new_key();
    d.app.submit(&second, &inquiry_from("second@example.com", "Second")).await;
    d.settle(&worker).await;
    assert_eq!(d.effect(&second, "crm_lead").await.state, "SENT");
    assert_eq!(outcomes(&d, &second, "crm_lead").await, ["sent"], "refreshed within the attempt");
    assert_eq!(zoho.token_requests(), 2);
    assert_eq!(zoho.refused(), ["auth"], "the expired token, once");
    assert_eq!(zoho.leads().len(), 2);
}

async fn a_form_of_its_own_with_effects_zoho_delivers_the_same_way(backend: Backend) {
    let zoho = FakeZoho::start().await;
    let table: String = settings(&zoho).iter().map(|(k, v)| format!("{k} = \"{v}\"\n")).collect();
    let d = chat_app(backend, "zoho", &table, |c| {
        let form = c.forms.get_mut("contact").unwrap();
        form.crm_fields = FIELDS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    })
    .await;
    zoho.push_fault(Fault::DropAfterCreate);
    let key = new_key();
    d.app.submit(&key, &inquiry_from("own@example.com", "Own table")).await;
    d.settle(&d.worker()).await;
    let record = d.effect(&key, "zoho").await;
    let leads = zoho.leads();
    assert_eq!(leads.len(), 1, "{leads:?}");
    assert_eq!((record.state.as_str(), record.provider_ref.as_deref()), ("SENT", Some(leads[0].id.as_str())));
    assert!(leads[0].fields["Onceform_Ref"].ends_with(":zoho:0"), "the record's own key: {leads:?}");
    assert_eq!(outcomes(&d, &key, "zoho").await, ["ambiguous", "sent"]);
    assert!(d.effects(Some(&key)).await.iter().all(|e| e.kind == "zoho"), "no crm_lead record");
}

async fn a_refused_refresh_token_fails_at_once_with_zohos_error_and_sends_nothing(backend: Backend) {
    let zoho = FakeZoho::start().await;
    let mut table = settings(&zoho);
    table.retain(|(k, _)| *k != "refresh_token_env");
    table.push(("refresh_token_env", env_var("1000.a-revoked-refresh-token")));
    let d = spawn_delivery_app(backend, |c| {
        wire_vendor(c, "zoho", &zoho.url, FIELDS);
        c.crm.url = None;
        let table: Vec<(&str, &str)> = table.iter().map(|(k, v)| (*k, v.as_str())).collect();
        set_crm(c, "zoho", &table);
        crm_only(c);
    })
    .await;
    let key = new_key();
    d.app.submit(&key, &inquiry_from("a@example.com", "Revoked")).await;
    d.settle(&d.worker()).await;
    let lead = d.effect(&key, "crm_lead").await;
    assert_eq!((lead.state.as_str(), lead.attempts), ("FAILED_FINAL", 1));
    let tried = attempts(&d, &key, "crm_lead").await;
    assert_eq!(tried[0].1.as_deref(), Some("zoho_token_refused"));
    assert_eq!(tried[0].2.as_deref(), Some("token refused: invalid_code"), "Zoho's error on the attempt");
    assert_eq!((zoho.refused(), zoho.upserts()), (vec!["token: refresh_token".to_string()], 0));
}
