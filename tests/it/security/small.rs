//! Issue 21's smaller findings, one test per attack: an UNKNOWN handler replayed beside
//! itself, path traversal through a CRM lookup reference, a URL whose host the policy and
//! the client read differently, colliding `.eml` names, forged WeCom padding, and a CRLF
//! name folded into the confirmation.

use onceform::services::accounts::Role;

use crate::on_both_backends;
use crate::support::hooks::{hook, secret_var, spawn_hook_app};
use crate::support::receiver::{Fault, Receiver};
use crate::support::Backend;

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

on_both_backends!(
    replaying_an_unknown_inbound_handler_is_refused_while_its_outcome_is_open,
    a_crlf_name_sent_to_a_victim_puts_no_chosen_text_in_the_confirmation,
);

async fn replaying_an_unknown_inbound_handler_is_refused_while_its_outcome_is_open(backend: Backend) {
    let receiver = Receiver::start().await;
    let var = secret_var("sec_replay", WHSEC);
    let cfg = format!(
        "verify = \"standard-webhooks\"\nsecret_env = \"{var}\"\nevent_id = \"json:/event/id\"\n\
         [[handlers]]\nname = \"to-crm\"\nkind = \"forward\"\nurl = \"{}\"\n",
        receiver.events_url()
    );
    let app = spawn_hook_app(backend, vec![("helpdesk", hook(&cfg))]).await;
    // The receiver answers 500: it may have acted, and without a lookup the record stays UNKNOWN.
    receiver.push_fault(Fault::Status(500));
    let body = r#"{"event":{"id":"E-7"},"text":"hello"}"#;
    assert_eq!(app.post_signed("helpdesk", WHSEC, "msg_e7", body).await.status(), 200);
    let worker = app.worker();
    for _ in 0..3 {
        worker.run_once().await;
    }
    let states = app.handler_states().await;
    assert_eq!(states.len(), 1, "{states:?}");
    assert_eq!(states[0].2, "UNKNOWN", "{states:?}");

    let admin = app.app.sign_in(Role::Admin).await;
    let event_row: String = app
        .app
        .query(|pool| {
            use diesel::prelude::*;
            use onceform::db::schema::inbound_events as e;
            onceform::with_conn!(pool, |c| e::table
                .select(e::id)
                .first(c)
                .map_err(onceform::db::DbError::from))
        })
        .await;
    let replay = format!("/admin/inbound/helpdesk/events/{event_row}/replay");
    let resp = app.app.admin_post(Some(&admin), &replay, Some(&admin.csrf), &[("handler", "to-crm")]).await;
    assert_eq!(resp.status(), 409, "an unresolved record is not replayed beside itself");
    for _ in 0..3 {
        worker.run_once().await;
    }
    assert_eq!(app.handler_states().await.len(), 1, "no second batch");
    assert!(receiver.calls().is_empty(), "nothing more reached the receiver");
}

/// `http://crm.evil.example\@127.0.0.1/leads`: the old policy read the host after the last
/// `@` (loopback), the client reads `\` as `/` and sent the lead to `crm.evil.example`.
/// check-config now reads the host the client uses, for the CRM and for forward handlers.
#[test]
fn a_backslash_userinfo_url_that_reaches_a_remote_host_fails_check_config() {
    use onceform::config::Config;
    let evil = r"http://crm.evil.example\@127.0.0.1/leads";
    let mut config = Config::builtin().unwrap();
    config.crm.adapter = Some("generic".into());
    config.crm.url = Some(evil.into());
    let problems = onceform::services::check_config::problems(&config);
    assert!(
        problems.iter().any(|p| p.starts_with("crm.url:") && p.contains("crm.evil.example")),
        "{problems:?}"
    );

    let mut config = Config::builtin().unwrap();
    let source = format!(
        "verify = \"none\"\nevent_id = \"json:/id\"\n[[handlers]]\nname = \"fwd\"\nkind = \"forward\"\n\
         url = '{evil}'\nlookup_url = 'https://{{key}}.evil.example/'\n"
    );
    config.hooks.insert("helpdesk".into(), hook(&source));
    let problems = onceform::services::check_config::problems(&config);
    assert!(problems.iter().any(|p| p.starts_with("hooks.helpdesk.handlers.fwd.url:")), "{problems:?}");
    assert!(
        problems.iter().any(|p| p.starts_with("hooks.helpdesk.handlers.fwd.lookup_url:")),
        "{problems:?}"
    );

    // Loopback as the client reads it, and https anywhere, stay allowed.
    let mut config = Config::builtin().unwrap();
    let fine =
        "verify = \"none\"\nevent_id = \"json:/id\"\n[[handlers]]\nname = \"fwd\"\nkind = \"forward\"\n\
                url = \"http://127.0.0.1:9/x\"\nlookup_url = \"https://hooks.example.com/x/{key}\"\n";
    config.hooks.insert("helpdesk".into(), hook(fine));
    assert!(
        onceform::services::check_config::problems(&config).is_empty(),
        "{:?}",
        onceform::services::check_config::problems(&config)
    );
}

/// Issue 21: a name holding CRLF was folded into the confirmation's greeting ("Hello Eve Bcc:
/// victim@evil.example Subject: injected,"), text a stranger chose, sent to someone else.
async fn a_crlf_name_sent_to_a_victim_puts_no_chosen_text_in_the_confirmation(backend: Backend) {
    use crate::delivery::mail_hardening::parts;
    use crate::support::delivery::spawn_delivery_app;
    use crate::support::new_key;

    // (The form refuses other control characters and invisible ones at the edge.)
    let name = "Eve\r\nBcc: victim@evil.example\r\n\tSubject: injected";
    let inquiry = |to: &str| serde_json::json!({"name": name, "email": to, "company": "X", "topic": "Sales", "message": "hi"});
    for echo in [false, true] {
        let d = spawn_delivery_app(backend, |c| c.forms.get_mut("contact").unwrap().confirmation_echo = echo)
            .await;
        assert_eq!(d.app.submit(&new_key(), &inquiry("victim@example.com")).await.status(), 201);
        d.settle(&d.worker()).await;
        let mail: Vec<String> =
            d.smtp.messages().into_iter().filter(|m| m.contains("\nTo: victim@example.com\r\n")).collect();
        assert_eq!(mail.len(), 1);
        let head = mail[0].split("\r\n\r\n").next().unwrap();
        assert!(!head.contains("Bcc") && !head.contains("injected"), "headers stay clean: {head}");
        let (text, html) = parts(&mail[0]);
        if echo {
            // Opted in: the name, on one line.
            let line = "Hello Eve Bcc: victim@evil.example Subject: injected,";
            assert!(text.starts_with(line), "{text:?}");
            assert!(html.contains(line), "{html}");
        } else {
            assert!(text.starts_with("Hello,\n"), "{text:?}");
            for chosen in ["Eve", "Bcc", "injected"] {
                assert!(!text.contains(chosen) && !html.contains(chosen), "{chosen}: {text}");
            }
        }
    }
}
