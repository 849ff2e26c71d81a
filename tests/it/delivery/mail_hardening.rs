//! Emails that cannot be hijacked: visitor text is data in one pass, the HTML part is
//! escaped, a confirmation carries no message text, and one address gets at most one
//! confirmation per window and form (the rest CANCELLED, reason `recipient_cap`).

use onceform::services::accounts::Role;
use serde_json::{json, Value};

use crate::on_both_backends;
use crate::support::delivery::{spawn_delivery_app, DeliveryApp};
use crate::support::{new_key, Backend};

on_both_backends!(
    hostile_text_in_every_field_is_never_a_template,
    a_second_confirmation_to_one_address_within_the_hour_is_cancelled,
    parallel_submissions_to_one_address_get_one_confirmation,
    spam_gets_no_confirmation_and_takes_no_slot,
    confirmation_echo_lists_the_fields_escaped,
);

/// Template syntax and markup a visitor might type.
const HOSTILE: &str = "{{ fields_text }} {% if true %}IF-RAN{% endif %} <script>alert(1)</script>";

fn hostile_inquiry(email: &str) -> Value {
    json!({
        "name": format!("NAME-MARK {HOSTILE}"),
        "email": email,
        "company": format!("COMPANY-MARK {HOSTILE}"),
        "topic": "Sales",
        "message": format!("MESSAGE-MARK {HOSTILE}\nbuy now at https://spam.example/"),
    })
}

/// (text, html) of a raw message: its two parts, transfer encoding undone.
pub(crate) fn parts(raw: &str) -> (String, String) {
    let raw = raw.replace("\r\n", "\n");
    let boundary = raw.split("boundary=\"").nth(1).and_then(|r| r.split('"').next()).expect("multipart");
    let (mut text, mut html) = (String::new(), String::new());
    for part in raw.split(&format!("--{boundary}")).skip(1) {
        let Some((head, body)) = part.split_once("\n\n") else { continue };
        let decoded = if head.contains("Content-Transfer-Encoding: base64") {
            use base64::Engine;
            let joined: String = body.split_whitespace().collect();
            String::from_utf8(base64::engine::general_purpose::STANDARD.decode(joined).unwrap()).unwrap()
        } else if head.contains("Content-Transfer-Encoding: quoted-printable") {
            quoted_printable(body)
        } else {
            body.to_string()
        };
        if head.contains("text/plain") {
            text = decoded;
        } else if head.contains("text/html") {
            html = decoded;
        }
    }
    (text, html)
}

fn quoted_printable(body: &str) -> String {
    let joined = body.replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&joined[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

fn mail_to(d: &DeliveryApp, to: &str) -> Vec<String> {
    d.smtp.messages().into_iter().filter(|m| m.contains(&format!("\nTo: {to}\r\n"))).collect()
}

async fn hostile_text_in_every_field_is_never_a_template(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let key = new_key();
    // The email field holds template syntax too (`{`, `}` and `%` are legal in an address);
    // the select field can only hold one of its options.
    let address = "{{fields_text}}{%if%}@example.com";
    assert_eq!(d.app.submit(&key, &hostile_inquiry(address)).await.status(), 201);
    d.settle(&d.worker()).await;

    let confirmations = mail_to(&d, address);
    assert_eq!(confirmations.len(), 1);
    let (text, html) = parts(&confirmations[0]);
    assert!(text.starts_with("Hello,"), "no name without confirmation_echo: {text}");
    for leaked in ["NAME-MARK", "MESSAGE-MARK", "COMPANY-MARK", "spam.example", "Your name:"] {
        assert!(!text.contains(leaked) && !html.contains(leaked), "{leaked} in the confirmation: {text}");
    }
    assert!(!text.contains("IF-RAN") && !html.contains("IF-RAN"), "nothing the visitor typed: {text}");

    let owner = mail_to(&d, "sales@example.com");
    assert_eq!(owner.len(), 1);
    let (text, html) = parts(&owner[0]);
    for mark in ["NAME-MARK", "COMPANY-MARK", "MESSAGE-MARK"] {
        assert_eq!(text.matches(mark).count(), 1, "{mark} once, not re-expanded: {text}");
        assert_eq!(html.matches(mark).count(), 1, "{mark} once: {html}");
    }
    assert_eq!(text.matches("<script>alert(1)</script>").count(), 3, "{text}");
    assert!(!html.contains("<script>"), "{html}");
    assert_eq!(html.matches("&#60;script&#62;alert(1)&#60;/script&#62;").count(), 3, "{html}");
    assert!(html.contains("<br>buy now at https://spam.example/"), "{html}");
}

async fn a_second_confirmation_to_one_address_within_the_hour_is_cancelled(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let (first, second, other) = (new_key(), new_key(), new_key());
    assert_eq!(d.app.submit(&first, &hostile_inquiry("ada@example.com")).await.status(), 201);
    let resp = d.app.submit(&second, &hostile_inquiry(" ADA@Example.com")).await;
    assert_eq!(resp.status(), 201);
    let body: Value = resp.json().await.unwrap();
    let states: Vec<(&str, &str)> = body["effects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["kind"].as_str().unwrap(), e["state"].as_str().unwrap()))
        .collect();
    assert!(states.contains(&("confirmation_email", "CANCELLED")), "{body}");
    let replay = d.app.submit(&second, &hostile_inquiry(" ADA@Example.com")).await;
    assert_eq!(replay.status(), 200);
    assert_eq!(replay.json::<Value>().await.unwrap(), body, "a replay answers the same body");
    assert_eq!(d.app.submit(&other, &hostile_inquiry("grace@example.com")).await.status(), 201);
    d.settle(&d.worker()).await;

    assert_eq!(d.effect(&first, "confirmation_email").await.state, "SENT");
    assert_eq!(d.effect(&second, "confirmation_email").await.state, "CANCELLED");
    assert_eq!(d.effect(&second, "owner_notification").await.state, "SENT", "only the confirmation");
    assert_eq!(d.effect(&other, "confirmation_email").await.state, "SENT", "another address");
    assert_eq!(mail_to(&d, "ada@example.com").len(), 1, "one confirmation to ada");
    assert_eq!(mail_to(&d, "grace@example.com").len(), 1);
    assert_eq!(mail_to(&d, "sales@example.com").len(), 3, "the owner hears of all three");

    let admin = d.app.sign_in(Role::Viewer).await;
    let page = d.app.admin_get(Some(&admin), "/admin/effects?state=CANCELLED").await;
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(page.contains("confirmation_email") && page.contains("recipient_cap"), "{page}");
}

async fn parallel_submissions_to_one_address_get_one_confirmation(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let keys: Vec<String> = (0..8).map(|_| new_key()).collect();
    let body = hostile_inquiry("ada@example.com");
    let sends = keys.iter().map(|k| d.app.submit(k, &body));
    for resp in futures_util::future::join_all(sends).await {
        assert_eq!(resp.status(), 201);
    }
    let mut states = Vec::new();
    for k in &keys {
        states.push(d.effect(k, "confirmation_email").await.state);
    }
    assert_eq!(states.iter().filter(|s| *s == "PENDING").count(), 1, "{states:?}");
    assert_eq!(states.iter().filter(|s| *s == "CANCELLED").count(), 7, "{states:?}");
    d.settle(&d.worker()).await;
    assert_eq!(mail_to(&d, "ada@example.com").len(), 1);
}

async fn spam_gets_no_confirmation_and_takes_no_slot(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let (spam, genuine) = (new_key(), new_key());
    let mut body = hostile_inquiry("ada@example.com");
    body["website"] = json!("https://spam.example/");
    assert_eq!(d.app.submit(&spam, &body).await.status(), 201, "spam is answered like any acceptance");
    d.settle(&d.worker()).await;
    assert!(d.effects(Some(&spam)).await.is_empty(), "no effect record for spam");
    assert!(d.smtp.messages().is_empty(), "no email at all");

    assert_eq!(d.app.submit(&genuine, &hostile_inquiry("ada@example.com")).await.status(), 201);
    d.settle(&d.worker()).await;
    assert_eq!(d.effect(&genuine, "confirmation_email").await.state, "SENT");
    assert_eq!(mail_to(&d, "ada@example.com").len(), 1);
}

async fn confirmation_echo_lists_the_fields_escaped(backend: Backend) {
    let d = spawn_delivery_app(backend, |c| {
        let form = c.forms.get_mut("contact").unwrap();
        form.confirmation_echo = true;
        form.email.signature = Some("The {{ reference }} <team>".into());
    })
    .await;
    assert_eq!(d.app.submit(&new_key(), &hostile_inquiry("ada@example.com")).await.status(), 201);
    d.settle(&d.worker()).await;
    let confirmations = mail_to(&d, "ada@example.com");
    assert_eq!(confirmations.len(), 1);
    let (text, html) = parts(&confirmations[0]);
    assert_eq!(text.matches("MESSAGE-MARK").count(), 1, "{text}");
    assert!(text.contains(&format!("Hello NAME-MARK {HOSTILE},")), "the name, literally: {text}");
    assert!(html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"), "{html}");
    assert!(html.contains("{{ fields_text }}"), "a placeholder stays literal: {html}");
    assert!(text.contains("The {{ reference }} <team>"), "operator text is data too: {text}");
    assert!(html.contains("The {{ reference }} &#60;team&#62;"), "{html}");
    assert!(!html.contains("<script>"), "{html}");
}
