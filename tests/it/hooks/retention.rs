//! Retention of inbound events: after `content` an event is a tombstone (no body left
//! anywhere, the quarantine's deliveries gone) that still answers a redelivery as a replay;
//! after `keys` the tombstone goes too.

use std::time::Duration;

use crate::lifecycle::{onceform_with, stdout, text_columns_containing};
use crate::on_both_backends;
use crate::support::hooks::{hook, secret_var, spawn_hook_app, HookApp};
use crate::support::receiver::Receiver;
use crate::support::Backend;

on_both_backends!(an_event_is_purged_to_a_tombstone_that_still_replays_then_deleted);

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// The source's settings as `[hooks.helpdesk]` keys, then its tables (`{at}` = where they sit).
fn source(var: &str, receiver: &Receiver, at: &str) -> String {
    format!(
        "verify = \"standard-webhooks\"\nsecret_env = \"{var}\"\nevent_id = \"json:/id\"\n\
         [[{at}handlers]]\nname = \"to-crm\"\nkind = \"forward\"\nurl = \"{}\"\n\
         [{at}retention]\ncontent = \"2s\"\nkeys = \"6s\"\n",
        receiver.events_url()
    )
}

async fn purge(app: &HookApp, config: &str) -> String {
    let out = onceform_with(&app.app, config, &["purge"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    stdout(&out)
}

async fn an_event_is_purged_to_a_tombstone_that_still_replays_then_deleted(backend: Backend) {
    let receiver = Receiver::start().await;
    let var = secret_var("retention", WHSEC);
    let app = spawn_hook_app(backend, vec![("helpdesk", hook(&source(&var, &receiver, "")))]).await;
    let config = format!(
        "{}\n[hooks.helpdesk]\n{}",
        onceform::config::DEFAULT_CONFIG,
        source(&var, &receiver, "hooks.helpdesk.")
    );
    let event = r#"{"id":"evt-R1","customer":{"email":"ada.l@example.org"},"text":"zebra crossing 5521"}"#;
    let changed = r#"{"id":"evt-R1","customer":{"email":"ada.l@example.org"},"text":"okapi sighting 9934"}"#;
    let no_id = r#"{"customer":{"email":"alan.t@example.org"},"text":"narwhal tusk 7710"}"#;
    assert_eq!(app.post_signed("helpdesk", WHSEC, "msg-1", event).await.status(), 200);
    let conflict = app.post_signed("helpdesk", WHSEC, "msg-2", changed).await;
    assert_eq!(conflict.status(), 200);
    assert!(!conflict.headers().contains_key("idempotent-replayed"), "a changed body is a conflict");
    assert_eq!(app.post_signed("helpdesk", WHSEC, "msg-3", no_id).await.status(), 202);
    let worker = app.worker();
    app.settle(&worker).await;
    assert_eq!(receiver.calls().len(), 1);
    let before = app.inbound().await;
    assert_eq!((before.events, before.conflicts, before.quarantined), (1, 1, 1));
    for needle in ["zebra crossing", "okapi sighting", "narwhal tusk"] {
        let found = text_columns_containing(&app.app, backend, needle).await;
        assert!(!found.is_empty(), "the search sees `{needle}` while it is kept");
    }

    tokio::time::sleep(Duration::from_millis(2200)).await;
    let out = purge(&app, &config).await;
    assert!(out.contains("hook:helpdesk: 1 content purged"), "{out}");
    assert!(out.contains("hook:helpdesk: 1 quarantined deliveries deleted"), "{out}");
    for needle in
        ["zebra crossing", "okapi sighting", "narwhal tusk", "ada.l@example.org", "alan.t@example.org"]
    {
        let found = text_columns_containing(&app.app, backend, needle).await;
        assert!(found.is_empty(), "`{needle}` is still in {found:?}");
    }
    let tombstone = app.inbound().await;
    assert_eq!((tombstone.events, tombstone.conflicts, tombstone.quarantined), (1, 1, 0));
    assert_eq!(app.stored_body("helpdesk", "evt-R1").await, None);

    // The sender redelivers after the purge: a replay, and nothing runs again.
    let again = app.post_signed("helpdesk", WHSEC, "msg-1", event).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let late_change = app.post_signed("helpdesk", WHSEC, "msg-4", changed).await;
    assert_eq!(late_change.status(), 200);
    app.settle(&worker).await;
    assert_eq!(receiver.calls().len(), 1, "no second call at the receiver");
    let states: Vec<String> = app.handler_states().await.into_iter().map(|(_, _, s, _)| s).collect();
    assert_eq!(states, ["SENT"], "the effect record stays");
    let found = text_columns_containing(&app.app, backend, "okapi sighting").await;
    assert!(found.is_empty(), "a tombstone's conflict keeps no content: {found:?}");
    let metrics = app.app.client.get(app.app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    for line in [
        "onceform_hook_purged_rows_total{source=\"helpdesk\",kind=\"content\"} 1",
        "onceform_hook_purged_rows_total{source=\"helpdesk\",kind=\"quarantine\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }

    tokio::time::sleep(Duration::from_millis(4200)).await;
    let out = purge(&app, &config).await;
    assert!(out.contains("hook:helpdesk: 1 tombstones deleted"), "{out}");
    let gone = app.inbound().await;
    assert_eq!((gone.events, gone.conflicts, gone.quarantined), (0, 0, 0));
    assert!(app.handler_states().await.is_empty(), "the effect records go with the tombstone");
    let found = text_columns_containing(&app.app, backend, "evt-R1").await;
    assert!(found.is_empty(), "no row names the event any more: {found:?}");
}
