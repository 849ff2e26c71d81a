//! Inbound webhooks, issue 13 "what must be shown" 2, 3, 4 and 6: deduplication per
//! (source, event ID), handlers on the workers, conflicts kept, UNKNOWN reconciled by lookup.

use std::time::Duration;

use onceform::web::hooks::verify::standard_webhooks;

use crate::on_both_backends;
use crate::support::hooks::{hook, secret_var, spawn_hook_app, HookApp};
use crate::support::receiver::{Fault, Receiver};
use crate::support::Backend;

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A standard-webhooks source `helpdesk` with `handlers` (TOML of `[[handlers]]` tables).
async fn helpdesk(backend: Backend, handlers: &str) -> HookApp {
    let var = secret_var("sw", WHSEC);
    let cfg = format!("verify = \"standard-webhooks\"\nsecret_env = \"{var}\"\n{handlers}");
    spawn_hook_app(backend, vec![("helpdesk", hook(&cfg))]).await
}

fn forward(name: &str, r: &Receiver) -> String {
    format!(
        "[[handlers]]\nname = \"{name}\"\nkind = \"forward\"\nurl = \"{}\"\nlookup_url = \"{}\"\n",
        r.events_url(),
        r.lookup_url()
    )
}

/// One signed delivery of event `id`; a redelivery carries a new timestamp and signature.
async fn deliver(app: &HookApp, id: &str, body: &str) -> reqwest::Response {
    let key = standard_webhooks::decode_secret(WHSEC).unwrap();
    let ts = chrono::Utc::now().timestamp();
    let headers = vec![
        ("webhook-id", id.to_string()),
        ("webhook-timestamp", ts.to_string()),
        ("webhook-signature", standard_webhooks::sign(&key, id, ts, body.as_bytes())),
    ];
    app.post("helpdesk", &headers, body).await
}

/// Seed 000's sequence: event A four times (two of them at once), event B once.
async fn four_deliveries_of_a_and_one_of_b_make_two_events_and_one_call_each(backend: Backend) {
    let receiver = Receiver::start().await;
    let app = helpdesk(backend, &forward("to-crm", &receiver)).await;
    let (a, b) = (r#"{"ticket":"A","text":"printer on fire"}"#, r#"{"ticket":"B","text":"printer on fire"}"#);

    assert_eq!(deliver(&app, "evt-A", a).await.status(), 200);
    let again = deliver(&app, "evt-A", a).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let (x, y) = tokio::join!(deliver(&app, "evt-A", a), deliver(&app, "evt-A", a));
    assert_eq!((x.status(), y.status()), (reqwest::StatusCode::OK, reqwest::StatusCode::OK));
    assert_eq!(deliver(&app, "evt-B", b).await.status(), 200);

    let inbound = app.inbound().await;
    assert_eq!((inbound.events, inbound.deliveries, inbound.conflicts), (2, 5, 0));
    assert_eq!(app.app.stats().await.submissions, 0, "events are not counted as form submissions");
    let worker = app.worker();
    app.settle(&worker).await;
    // A late redelivery after the handler ran changes nothing either.
    assert_eq!(deliver(&app, "evt-A", a).await.status(), 200);
    app.settle(&worker).await;

    let mut keys: Vec<String> = receiver.calls().into_iter().map(|(k, _)| k).collect();
    keys.sort();
    assert_eq!(keys, ["helpdesk:to-crm:evt-A:0", "helpdesk:to-crm:evt-B:0"]);
    assert_eq!(receiver.calls().iter().find(|(k, _)| k.contains("evt-A")).unwrap().1, a);
    let states: Vec<String> = app.handler_states().await.into_iter().map(|(_, _, s, _)| s).collect();
    assert_eq!(states, ["SENT", "SENT"]);
}

/// Two handlers on one event; the first fails permanently, the second still runs once.
async fn one_handler_failing_for_good_leaves_the_other_to_run_once(backend: Backend) {
    let (broken, good) = (Receiver::start().await, Receiver::start().await);
    broken.push_fault(Fault::Status(400));
    let app = helpdesk(backend, &format!("{}{}", forward("audit", &broken), forward("to-crm", &good))).await;
    assert_eq!(deliver(&app, "evt-7", r#"{"n":7}"#).await.status(), 200);
    assert_eq!(deliver(&app, "evt-7", r#"{"n":7}"#).await.status(), 200);
    let worker = app.worker();
    app.settle(&worker).await;

    let states: Vec<(String, String)> =
        app.handler_states().await.into_iter().map(|(k, _, s, _)| (k, s)).collect();
    assert_eq!(
        states,
        [
            ("hook:helpdesk:audit".to_string(), "FAILED_FINAL".to_string()),
            ("hook:helpdesk:to-crm".to_string(), "SENT".to_string())
        ]
    );
    assert_eq!(broken.calls().len(), 0);
    assert_eq!(good.calls().iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["helpdesk:to-crm:evt-7:0"]);
}

/// Same event ID, changed body: 200, the original untouched, a conflict kept.
async fn a_changed_body_under_a_known_id_is_a_conflict_and_the_original_stays(backend: Backend) {
    let receiver = Receiver::start().await;
    let app = helpdesk(backend, &forward("to-crm", &receiver)).await;
    let original = r#"{"ticket":"C","status":"open"}"#;
    assert_eq!(deliver(&app, "evt-C", original).await.status(), 200);
    let changed = deliver(&app, "evt-C", r#"{"ticket":"C","status":"closed"}"#).await;
    assert_eq!(changed.status(), 200);
    assert!(changed.headers().get("idempotent-replayed").is_none());
    assert_eq!(app.stored_body("helpdesk", "evt-C").await.as_deref(), Some(original));
    let inbound = app.inbound().await;
    assert_eq!((inbound.events, inbound.deliveries, inbound.conflicts), (1, 2, 1));
    app.settle(&app.worker()).await;
    assert_eq!(receiver.calls().len(), 1);
    assert_eq!(receiver.calls()[0].1, original);
}

/// The receiver acts but answers too late: UNKNOWN, found by lookup, SENT; no second call.
async fn a_receiver_that_times_out_after_acting_is_reconciled_without_a_second_call(backend: Backend) {
    let receiver = Receiver::start().await;
    receiver.push_fault(Fault::SlowAfterAct(Duration::from_millis(1500)));
    let app = helpdesk(backend, &forward("to-crm", &receiver)).await;
    assert_eq!(deliver(&app, "evt-U", r#"{"u":1}"#).await.status(), 200);
    let worker = app.worker();
    worker.run_once().await;
    let states: Vec<String> = app.handler_states().await.into_iter().map(|(_, _, s, _)| s).collect();
    assert_eq!(states, ["UNKNOWN"]);
    app.settle(&worker).await;
    let states: Vec<String> = app.handler_states().await.into_iter().map(|(_, _, s, _)| s).collect();
    assert_eq!(states, ["SENT"]);
    assert_eq!(receiver.calls().len(), 1);
    assert!(receiver.lookups() >= 1);
}

/// A body that is not JSON is 400; an unknown source 404; nothing stored.
async fn malformed_bodies_and_unknown_sources_store_nothing(backend: Backend) {
    let app = helpdesk(backend, "").await;
    assert_eq!(deliver(&app, "evt-M", "not json").await.status(), 400);
    let resp = app.post("nosuch", &[], "{}").await;
    assert_eq!(resp.status(), 404);
    assert_eq!(app.inbound().await.events + app.inbound().await.deliveries, 0);
}

/// `crm_lead` picks fields by JSON pointer; `owner_notification` mails the owners; each once.
async fn crm_lead_and_owner_notification_handlers_run_once_each(backend: Backend) {
    let handlers = "[[handlers]]\nname = \"lead\"\nkind = \"crm_lead\"\n\
                    crm_fields = { email = \"/customer/email\", subject = \"/ticket/subject\" }\n\
                    [[handlers]]\nname = \"tell\"\nkind = \"owner_notification\"\nnotify = [\"sales@example.com\"]\n";
    let app = helpdesk(backend, handlers).await;
    let body = r#"{"customer":{"email":"li@example.com"},"ticket":{"subject":"Quote <please>"}}"#;
    assert_eq!(deliver(&app, "evt-L", body).await.status(), 200);
    assert_eq!(deliver(&app, "evt-L", body).await.status(), 200);
    let worker = app.worker();
    app.settle(&worker).await;
    let leads = app.crm.leads();
    assert_eq!(leads.len(), 1);
    assert_eq!(leads[0].0, "helpdesk:lead:evt-L:0");
    let sent = app.crm.state.lock().unwrap().bodies[0].clone();
    assert_eq!(sent["fields"]["email"], "li@example.com");
    assert_eq!(sent["fields"]["subject"], "Quote <please>");
    let mails = app.smtp.messages();
    assert_eq!(mails.len(), 1);
    assert!(mails[0].contains("sales@example.com") && mails[0].contains("evt-L"));
}

/// A body over the source's `max_body_bytes` is 413; nothing stored.
async fn a_body_over_the_limit_is_refused(backend: Backend) {
    let app = helpdesk(backend, "max_body_bytes = 64\n").await;
    let big = format!(r#"{{"text":"{}"}}"#, "x".repeat(100));
    assert_eq!(deliver(&app, "evt-big", &big).await.status(), 413);
    assert_eq!(deliver(&app, "evt-small", r#"{"text":"ok"}"#).await.status(), 200);
    assert_eq!(app.inbound().await.events, 1);
}

on_both_backends!(
    a_body_over_the_limit_is_refused,
    crm_lead_and_owner_notification_handlers_run_once_each,
    four_deliveries_of_a_and_one_of_b_make_two_events_and_one_call_each,
    one_handler_failing_for_good_leaves_the_other_to_run_once,
    a_changed_body_under_a_known_id_is_a_conflict_and_the_original_stays,
    a_receiver_that_times_out_after_acting_is_reconciled_without_a_second_call,
    malformed_bodies_and_unknown_sources_store_nothing,
);
