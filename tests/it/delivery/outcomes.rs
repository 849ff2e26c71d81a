//! Side-effect delivery through a real loopback CRM and a real SMTP server, fault by fault.

use std::time::Duration;

use diesel::prelude::*;
use onceform::db::schema::submissions;
use onceform::db::DbError;
use onceform::with_conn;

use crate::on_both_backends;
use crate::support::crm::Fault;
use crate::support::delivery::spawn_delivery_app;
use crate::support::{inquiry, new_key, Backend};

on_both_backends!(
    happy_path_delivers_one_lead_one_confirmation_one_owner_email,
    a_lead_created_then_timed_out_is_reconciled_not_resent,
    a_500_before_creating_is_looked_up_then_retried_once,
    a_dropped_connection_after_create_is_reconciled,
    rate_limits_are_honoured_and_bad_requests_fail_at_once,
    transient_failures_exhaust_the_attempts,
    an_smtp_drop_after_data_is_held_unknown_and_never_resent,
    one_kind_failing_never_blocks_another,
    smtp_4xx_is_retried_and_5xx_fails_at_once,
    fields_that_do_not_parse_fail_the_job_instead_of_sending_it_empty,
);

async fn happy_path_delivers_one_lead_one_confirmation_one_owner_email(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Please call me back")).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;

    let effects = d.effects(Some(&key)).await;
    assert_eq!(effects.len(), 3);
    for e in &effects {
        assert_eq!((e.state.as_str(), e.attempts), ("SENT", 1), "{e:?}");
        assert!(e.provider_ref.as_deref().is_some_and(|r| !r.is_empty()), "{e:?}");
        assert_eq!(d.attempts(&key, &e.kind).await, [("sent".to_string(), None)]);
    }
    assert_eq!(d.effect(&key, "crm_lead").await.provider_ref.as_deref(), Some("L-1"));

    let leads = d.crm.leads();
    assert_eq!(leads.len(), 1);
    let body = d.crm.state.lock().unwrap().bodies[0].clone();
    assert_eq!(body["fields"]["full_name"], "Ada Lovelace", "fields mapped by crm_fields");
    assert_eq!(body["external_ref"], leads[0].0.as_str());

    let mail = d.smtp.messages();
    assert_eq!(mail.len(), 2);
    let confirmation =
        mail.iter().find(|m| m.contains("\nTo: ada@example.com")).expect("confirmation to the visitor");
    assert!(confirmation.contains("We received your message"), "{confirmation}");
    let owner = mail.iter().find(|m| m.contains("\nTo: sales@example.com")).expect("owner notification");
    assert!(owner.contains("Reply-To: ada@example.com"), "{owner}");
    assert!(owner.contains("Please call me back"));

    worker.run_until_idle().await;
    assert_eq!((d.crm.leads().len(), d.smtp.messages().len()), (1, 2), "nothing is sent twice");
}

async fn a_lead_created_then_timed_out_is_reconciled_not_resent(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    d.crm.push_fault(Fault::SlowAfterCreate(Duration::from_millis(1500)));
    let key = new_key();
    d.app.submit(&key, &inquiry("Slow CRM")).await;
    let worker = d.worker();

    worker.run_once().await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "UNKNOWN", "a timeout is not a failure");

    d.settle(&worker).await;
    let lead = d.effect(&key, "crm_lead").await;
    assert_eq!((lead.state.as_str(), lead.provider_ref.as_deref()), ("SENT", Some("L-1")));
    assert_eq!(d.crm.leads().len(), 1, "the CRM holds exactly one lead");
    assert_eq!(d.crm.create_requests(), 1, "never resent blindly");
    let outcomes: Vec<String> = d.attempts(&key, "crm_lead").await.into_iter().map(|(o, _)| o).collect();
    assert_eq!(outcomes, ["ambiguous", "lookup_found"]);

    let metrics = d.app.client.get(d.app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    for line in [
        "onceform_reconciliations_total{outcome=\"found\"} 1",
        "onceform_attempts_total{outcome=\"ambiguous\"} 1",
        "onceform_attempts_total{outcome=\"sent\"} 2",
        "onceform_side_effects{kind=\"crm_lead\",state=\"SENT\"} 1",
        "onceform_effects_unknown 0",
        "onceform_oldest_pending_age_seconds 0\n",
    ] {
        assert!(metrics.contains(line), "{line} missing from:\n{metrics}");
    }
}

async fn a_500_before_creating_is_looked_up_then_retried_once(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    d.crm.push_fault(Fault::Status(500));
    let key = new_key();
    d.app.submit(&key, &inquiry("CRM hiccup")).await;
    let worker = d.worker();

    worker.run_once().await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "UNKNOWN");
    d.settle(&worker).await;

    assert_eq!(d.effect(&key, "crm_lead").await.state, "SENT");
    assert_eq!(d.crm.leads().len(), 1);
    let attempts = d.attempts(&key, "crm_lead").await;
    let outcomes: Vec<&str> = attempts.iter().map(|(o, _)| o.as_str()).collect();
    assert_eq!(outcomes, ["ambiguous", "lookup_absent", "sent"]);
    assert_eq!(attempts[0].1.as_deref(), Some("http_500"));
}

async fn a_dropped_connection_after_create_is_reconciled(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    d.crm.push_fault(Fault::DropAfterCreate);
    let key = new_key();
    d.app.submit(&key, &inquiry("Dropped")).await;
    let worker = d.worker();
    d.settle(&worker).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "SENT");
    assert_eq!((d.crm.leads().len(), d.crm.create_requests()), (1, 1));
    assert_eq!(
        d.attempts(&key, "crm_lead").await[0],
        ("ambiguous".to_string(), Some("connection_dropped".to_string()))
    );
}

async fn rate_limits_are_honoured_and_bad_requests_fail_at_once(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    d.crm.push_fault(Fault::RateLimited(2));
    let key = new_key();
    d.app.submit(&key, &inquiry("Busy CRM")).await;
    let worker = d.worker();

    let before = onceform::base::clock::now();
    worker.run_once().await;
    let lead = d.effect(&key, "crm_lead").await;
    assert_eq!(lead.state, "PENDING");
    assert!(
        lead.next_attempt_at >= before + chrono::Duration::seconds(2),
        "not before Retry-After: {lead:?}"
    );
    worker.run_once().await;
    assert_eq!(d.crm.create_requests(), 1, "no attempt before Retry-After");
    d.settle(&worker).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "SENT");
    assert!(onceform::base::clock::now() >= before + chrono::Duration::seconds(2));

    d.crm.push_fault(Fault::Status(400));
    let bad = new_key();
    d.app.submit(&bad, &inquiry("Rejected by the CRM")).await;
    d.settle(&worker).await;
    let lead = d.effect(&bad, "crm_lead").await;
    assert_eq!((lead.state.as_str(), lead.attempts), ("FAILED_FINAL", 1));
    assert_eq!(d.attempts(&bad, "crm_lead").await, [("permanent".to_string(), Some("http_400".to_string()))]);
}

async fn transient_failures_exhaust_the_attempts(backend: Backend) {
    let d = spawn_delivery_app(backend, |c| c.worker.max_attempts = 3).await;
    for _ in 0..3 {
        d.crm.push_fault(Fault::Status(503));
    }
    let key = new_key();
    d.app.submit(&key, &inquiry("CRM down")).await;
    d.settle(&d.worker()).await;
    let lead = d.effect(&key, "crm_lead").await;
    assert_eq!((lead.state.as_str(), lead.attempts), ("FAILED_FINAL", 3));
    let history = d.attempts(&key, "crm_lead").await;
    assert_eq!(history, vec![("transient".to_string(), Some("http_503".to_string())); 3]);
    assert!(d.crm.leads().is_empty());
}

async fn an_smtp_drop_after_data_is_held_unknown_and_never_resent(backend: Backend) {
    let d = spawn_delivery_app(backend, |c| {
        c.forms.get_mut("contact").unwrap().effects.retain(|k| k.as_str() == "confirmation_email")
    })
    .await;
    d.smtp.drop_after_data(1);
    let key = new_key();
    d.app.submit(&key, &inquiry("Mail trouble")).await;
    let worker = d.worker();
    d.settle(&worker).await;
    for _ in 0..5 {
        worker.run_once().await;
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let mail = d.effect(&key, "confirmation_email").await;
    assert_eq!((mail.state.as_str(), mail.attempts), ("UNKNOWN", 1), "held for an admin");
    assert_eq!(d.smtp.messages().len(), 1, "no second email");
    assert_eq!(d.attempts(&key, "confirmation_email").await[0].0, "ambiguous");
}

async fn one_kind_failing_never_blocks_another(backend: Backend) {
    let d = spawn_delivery_app(backend, |c| c.worker.max_attempts = 2).await;
    d.crm.push_fault(Fault::Status(503));
    d.crm.push_fault(Fault::Status(503));
    let key = new_key();
    d.app.submit(&key, &inquiry("Half a success")).await;
    d.settle(&d.worker()).await;
    let states: Vec<(String, String)> =
        d.effects(Some(&key)).await.into_iter().map(|e| (e.kind, e.state)).collect();
    assert_eq!(
        states,
        [("confirmation_email", "SENT"), ("crm_lead", "FAILED_FINAL"), ("owner_notification", "SENT")]
            .map(|(k, s)| (k.to_string(), s.to_string()))
    );
    assert_eq!(d.smtp.messages().len(), 2);
}

async fn smtp_4xx_is_retried_and_5xx_fails_at_once(backend: Backend) {
    let d = spawn_delivery_app(backend, |c| {
        c.forms.get_mut("contact").unwrap().effects.retain(|k| k.as_str() == "confirmation_email")
    })
    .await;
    d.smtp.refuse_next(451);
    let retried = new_key();
    d.app.submit(&retried, &inquiry("Greylisted")).await;
    let worker = d.worker();
    d.settle(&worker).await;
    let mail = d.effect(&retried, "confirmation_email").await;
    assert_eq!((mail.state.as_str(), mail.attempts), ("SENT", 2));
    let history = d.attempts(&retried, "confirmation_email").await;
    assert_eq!(history[0], ("transient".to_string(), Some("smtp_451".to_string())));

    d.smtp.refuse_next(550);
    let refused = new_key();
    let mut body = inquiry("No such mailbox");
    body["email"] = "nobody@example.com".into(); // another address: not capped by the first
    d.app.submit(&refused, &body).await;
    d.settle(&worker).await;
    let mail = d.effect(&refused, "confirmation_email").await;
    assert_eq!((mail.state.as_str(), mail.attempts), ("FAILED_FINAL", 1));
    assert_eq!(d.attempts(&refused, "confirmation_email").await[0].1.as_deref(), Some("smtp_550"));
}

/// A submission whose stored fields are unreadable (written behind the application's back)
/// is never delivered with empty fields: each of its jobs fails for good, saying why.
async fn fields_that_do_not_parse_fail_the_job_instead_of_sending_it_empty(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Please call me back")).await.status(), 201);
    let k = key.clone();
    d.app
        .query(move |pool| {
            with_conn!(pool, |c| diesel::update(submissions::table.filter(submissions::operation_id.eq(&k)))
                .set(submissions::fields_json.eq(Some("{\"name\": \"Ada")))
                .execute(c)
                .map_err(DbError::from))
        })
        .await;
    let worker = d.worker();
    d.settle(&worker).await;

    let effects = d.effects(Some(&key)).await;
    assert_eq!(effects.len(), 3);
    for e in &effects {
        assert_eq!(e.state, "FAILED_FINAL", "{e:?}");
        assert_eq!(
            d.attempts(&key, &e.kind).await,
            [("permanent".to_string(), Some("unreadable_record".into()))]
        );
    }
    assert!(d.crm.leads().is_empty(), "no empty lead was sent");
    assert!(d.smtp.messages().is_empty(), "no empty email was sent");
}
