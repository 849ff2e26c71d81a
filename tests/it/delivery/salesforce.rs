//! The Salesforce adapter against a loopback Salesforce that validates every request by
//! Salesforce's REST API documentation (see `support/salesforce.rs` for the rules).

use std::time::Duration;

use onceform::config::Config;

use crate::on_both_backends;
use crate::support::crm::Fault;
use crate::support::delivery::{spawn_delivery_app, DeliveryApp};
use crate::support::salesforce::FakeSalesforce;
use crate::support::vendor::{
    crm_only, force_lead_state, inquiry_from, lead_ref, submission_id, wire_vendor,
};
use crate::support::{new_key, Backend};
use onceform::services::accounts::Role;

on_both_backends!(
    three_submissions_make_three_leads_each_carrying_its_reference,
    a_dropped_or_timed_out_upsert_is_resent_and_creates_nothing_new,
    a_repeat_after_unknown_creates_nothing_new,
    a_500_is_resent_and_a_429_waits_for_retry_after,
    fields_salesforce_refuses_fail_at_once,
    an_embed_js_lead_with_a_journey_id_reaches_salesforce,
    a_blank_optional_company_is_filled_from_the_default,
    salesforces_refusal_is_shown_on_the_admin_submission_page,
);

/// The form's fields under the Lead's field names.
const FIELDS: &[(&str, &str)] =
    &[("name", "LastName"), ("email", "Email"), ("company", "Company"), ("message", "Description")];

async fn app(backend: Backend, tweak: impl FnOnce(&mut Config)) -> (DeliveryApp, FakeSalesforce) {
    let salesforce = FakeSalesforce::start().await;
    let url = salesforce.url.clone();
    let d = spawn_delivery_app(backend, |c| {
        wire_vendor(c, "salesforce", &url, FIELDS);
        crm_only(c);
        tweak(c);
    })
    .await;
    (d, salesforce)
}

async fn outcomes(d: &DeliveryApp, key: &str) -> Vec<String> {
    d.attempts(key, "crm_lead").await.into_iter().map(|(o, _)| o).collect()
}

async fn three_submissions_make_three_leads_each_carrying_its_reference(backend: Backend) {
    let (d, salesforce) = app(backend, |_| {}).await;
    let keys = [new_key(), new_key(), new_key()];
    for (i, key) in keys.iter().enumerate() {
        let status =
            d.app.submit(key, &inquiry_from(&format!("visitor{i}@example.com"), "Hi")).await.status();
        assert_eq!(status, 201);
    }
    d.settle(&d.worker()).await;

    let leads = salesforce.leads();
    assert_eq!(leads.len(), 3, "{leads:?}");
    for (i, key) in keys.iter().enumerate() {
        let reference = lead_ref(&d.app, key).await;
        let record = leads.iter().find(|l| l.fields.get("Onceform_Ref__c") == Some(&reference));
        let record = record.unwrap_or_else(|| panic!("no Lead carries {reference}: {leads:?}"));
        assert_eq!(record.fields["Email"], format!("visitor{i}@example.com"));
        assert_eq!(record.fields["Company"], "Analytical Engines");
        let lead = d.effect(key, "crm_lead").await;
        assert_eq!((lead.state.as_str(), lead.provider_ref.as_deref()), ("SENT", Some(record.id.as_str())));
    }
    assert_eq!((salesforce.upserts(), salesforce.refused()), (3, Vec::<String>::new()));
}

async fn a_dropped_or_timed_out_upsert_is_resent_and_creates_nothing_new(backend: Backend) {
    let (d, salesforce) = app(backend, |_| {}).await;
    salesforce.push_fault(Fault::DropAfterCreate);
    let dropped = new_key();
    d.app.submit(&dropped, &inquiry_from("dropped@example.com", "Dropped")).await;
    let worker = d.worker();
    worker.run_once().await;
    assert_eq!(d.effect(&dropped, "crm_lead").await.state, "PENDING", "an upsert is simply sent again");
    d.settle(&worker).await;

    salesforce.push_fault(Fault::SlowAfterCreate(Duration::from_millis(1500)));
    let slow = new_key();
    d.app.submit(&slow, &inquiry_from("slow@example.com", "Slow")).await;
    d.settle(&worker).await;

    let leads = salesforce.leads();
    assert_eq!(leads.len(), 2, "one Lead per submission: {leads:?}");
    assert_eq!(salesforce.upserts(), 4, "each sent twice");
    for key in [&dropped, &slow] {
        assert_eq!(outcomes(&d, key).await, ["ambiguous", "sent"]);
        let reference = lead_ref(&d.app, key).await;
        let record = leads.iter().find(|l| l.fields["Onceform_Ref__c"] == reference).unwrap();
        assert_eq!(d.effect(key, "crm_lead").await.provider_ref.as_deref(), Some(record.id.as_str()));
    }
    assert!(salesforce.refused().is_empty(), "{:?}", salesforce.refused());
}

async fn a_repeat_after_unknown_creates_nothing_new(backend: Backend) {
    let (d, salesforce) = app(backend, |_| {}).await;
    let key = new_key();
    d.app.submit(&key, &inquiry_from("ada@example.com", "Once")).await;
    let worker = d.worker();
    d.settle(&worker).await;
    let first = d.effect(&key, "crm_lead").await.provider_ref;

    // The worker died after Salesforce took the upsert: the lead is UNKNOWN, then looked up.
    force_lead_state(&d.app, "UNKNOWN").await;
    d.settle(&worker).await;
    let lead = d.effect(&key, "crm_lead").await;
    assert_eq!((lead.state.as_str(), &lead.provider_ref), ("SENT", &first), "found by its external ID");
    assert_eq!(salesforce.upserts(), 1, "looked up, not sent again");

    // Sent again with the same reference (as after an admin marks an UNKNOWN lead "not sent"):
    // the upsert updates the same Lead (200).
    force_lead_state(&d.app, "PENDING").await;
    d.settle(&worker).await;
    let lead = d.effect(&key, "crm_lead").await;
    assert_eq!((lead.state.as_str(), &lead.provider_ref), ("SENT", &first));
    assert_eq!((salesforce.upserts(), salesforce.leads().len()), (2, 1), "sent twice, one Lead");
    assert_eq!(outcomes(&d, &key).await, ["sent", "lookup_found", "sent"]);
    assert!(salesforce.refused().is_empty(), "{:?}", salesforce.refused());
}

async fn a_500_is_resent_and_a_429_waits_for_retry_after(backend: Backend) {
    let (d, salesforce) = app(backend, |_| {}).await;
    salesforce.push_fault(Fault::Status(500));
    let key = new_key();
    d.app.submit(&key, &inquiry_from("a@example.com", "Hiccup")).await;
    let worker = d.worker();
    d.settle(&worker).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "SENT");
    let attempts = d.attempts(&key, "crm_lead").await;
    assert_eq!(attempts[0], ("ambiguous".to_string(), Some("http_500".to_string())));
    assert_eq!(attempts.len(), 2, "{attempts:?}");

    salesforce.push_fault(Fault::RateLimited(1));
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
    assert_eq!(salesforce.leads().len(), 2);
}

async fn fields_salesforce_refuses_fail_at_once(backend: Backend) {
    let (d, salesforce) = app(backend, |c| {
        let fields = &mut c.forms.get_mut("contact").unwrap().crm_fields;
        fields.remove("company");
        fields.insert("topic".into(), "full_topic".into());
    })
    .await;
    let key = new_key();
    d.app.submit(&key, &inquiry_from("a@example.com", "Drift")).await;
    d.settle(&d.worker()).await;
    let lead = d.effect(&key, "crm_lead").await;
    assert_eq!((lead.state.as_str(), lead.attempts), ("FAILED_FINAL", 1));
    assert_eq!(d.attempts(&key, "crm_lead").await, [("permanent".to_string(), Some("http_400".to_string()))]);
    assert_eq!(salesforce.refused(), ["field full_topic"]);

    let (d, salesforce) = app(backend, |c| {
        c.forms.get_mut("contact").unwrap().crm_fields.remove("company");
    })
    .await;
    d.app.submit(&key, &inquiry_from("a@example.com", "No company")).await;
    d.settle(&d.worker()).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "FAILED_FINAL");
    assert_eq!(salesforce.refused(), ["required fields"], "Company is required on a new Lead");
    assert!(salesforce.leads().is_empty());
}

/// What embed.js sends: the fields and the visitor's journey ID in `Onceform-Journey-Id`.
async fn submit_with_journey(d: &DeliveryApp, key: &str, journey: &str) {
    let resp = d
        .app
        .client
        .post(d.app.url("/api/forms/contact/submissions"))
        .header("Idempotency-Key", key)
        .header("Onceform-Journey-Id", journey)
        .json(&inquiry_from("journey@example.com", "From the embedded form"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
}

/// Issue 26: every lead with a journey ID was refused, `No such column 'journey_id' on sobject
/// of type Lead`, because the journey was added to every lead whatever the mapping.
async fn an_embed_js_lead_with_a_journey_id_reaches_salesforce(backend: Backend) {
    let (d, salesforce) = app(backend, |_| {}).await;
    let key = new_key();
    submit_with_journey(&d, &key, "jrn-5d2c").await;
    d.settle(&d.worker()).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "SENT");
    assert_eq!(salesforce.refused(), Vec::<String>::new());
    let leads = salesforce.leads();
    assert_eq!(leads.len(), 1);
    assert!(!leads[0].fields.contains_key("Journey__c"), "not mapped, not sent: {leads:?}");

    // Where the mapping names a field for it, the journey goes there.
    let (d, salesforce) = app(backend, |c| {
        c.forms.get_mut("contact").unwrap().crm_fields.insert("journey_id".into(), "Journey__c".into());
    })
    .await;
    let key = new_key();
    submit_with_journey(&d, &key, "jrn-5d2c").await;
    d.settle(&d.worker()).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "SENT");
    assert_eq!(salesforce.leads()[0].fields["Journey__c"], "jrn-5d2c");
    assert!(
        onceform::services::check_config::problems(&d.app.config).is_empty(),
        "{:?}",
        onceform::services::check_config::problems(&d.app.config)
    );
}

/// Lead's `Company` is required; the form's `company` is optional. A blank one is refused
/// (`REQUIRED_FIELD_MISSING`) unless `crm_defaults` fills it, which check-config asks for.
async fn a_blank_optional_company_is_filled_from_the_default(backend: Backend) {
    let mut blank = inquiry_from("solo@example.com", "Just me");
    blank["company"] = "".into();

    let (d, salesforce) = app(backend, |_| {}).await;
    let warnings = onceform::services::check_config::warnings(&d.app.config).join("\n");
    assert!(
        warnings.contains("forms.contact.crm_fields: Lead.Company is required and the optional field `company` can leave it blank"),
        "{warnings}"
    );
    let key = new_key();
    d.app.submit(&key, &blank).await;
    d.settle(&d.worker()).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "FAILED_FINAL");
    assert_eq!(salesforce.refused(), ["required fields"]);

    let (d, salesforce) = app(backend, |c| {
        c.forms.get_mut("contact").unwrap().crm_defaults.insert("Company".into(), "Private person".into());
    })
    .await;
    let warnings = onceform::services::check_config::warnings(&d.app.config).join("\n");
    assert!(!warnings.contains("Lead.Company"), "{warnings}");
    let (blank_key, named_key) = (new_key(), new_key());
    d.app.submit(&blank_key, &blank).await;
    d.app.submit(&named_key, &inquiry_from("ada@example.com", "With a company")).await;
    d.settle(&d.worker()).await;
    let leads = salesforce.leads();
    let company = |key: String| {
        leads.iter().find(|l| l.fields["Onceform_Ref__c"] == key).unwrap().fields["Company"].clone()
    };
    assert_eq!(company(lead_ref(&d.app, &blank_key).await), "Private person");
    assert_eq!(company(lead_ref(&d.app, &named_key).await), "Analytical Engines", "a given company is kept");
    assert!(salesforce.refused().is_empty(), "{:?}", salesforce.refused());
}

/// Issue 26: the admin showed only `http_400 / HTTP 400`; Salesforce's error body says why.
async fn salesforces_refusal_is_shown_on_the_admin_submission_page(backend: Backend) {
    let (d, salesforce) = app(backend, |_| {}).await;
    let warnings = onceform::services::check_config::warnings(&d.app.config).join("\n");
    assert!(warnings.contains("up to 120 characters, but Lead.LastName holds 80"), "{warnings}");
    assert!(warnings.contains("up to 254 characters, but Lead.Email holds 80"), "{warnings}");

    let mut long = inquiry_from("long@example.com", "A long name");
    long["name"] = format!("<b>{}", "x".repeat(100)).into();
    let key = new_key();
    assert_eq!(d.app.submit(&key, &long).await.status(), 201, "the form allows 120 characters");
    d.settle(&d.worker()).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "FAILED_FINAL");
    assert_eq!(salesforce.refused(), ["length LastName"]);

    let admin = d.app.sign_in(Role::Viewer).await;
    let page = d
        .app
        .admin_get(Some(&admin), &format!("/admin/submissions/{}", submission_id(&d.app, &key).await))
        .await;
    let html = page.text().await.unwrap();
    assert!(html.contains("HTTP 400") && html.contains("http_400"), "{html}");
    assert!(html.contains("STRING_TOO_LONG: Last Name: data value too large:"), "{html}");
    assert!(html.contains("(max length=80) (fields: LastName)"), "{html}");
    assert!(html.contains("&#60;b&#62;xxx") && !html.contains("<b>xxx"), "the vendor's words are escaped");
}
