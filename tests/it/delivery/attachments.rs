//! Attached files delivered: the owner notification carries them (byte for byte) up to
//! `[smtp] attach_max_bytes` and links the rest, the confirmation never carries one, and
//! the CRM adapters send each file their vendor's way exactly once, a lost answer and a
//! reconciliation included.

use mail_parser::{MessageParser, MimeHeaders};
use onceform::config::Config;
use onceform::domain::{FieldConfig, FieldType};
use sha2::{Digest, Sha256};

use crate::on_both_backends;
use crate::support::crm::Fault;
use crate::support::delivery::{spawn_delivery_app, DeliveryApp};
use crate::support::hubspot::FakeHubspot;
use crate::support::salesforce::FakeSalesforce;
use crate::support::vendor::{force_lead_state, lead_ref, submission_id, wire_vendor};
use crate::support::{new_key, Backend};

on_both_backends!(
    the_owner_email_carries_the_files_and_the_confirmation_only_names_them,
    files_over_the_limit_are_linked_and_a_purged_one_is_said_gone,
    hubspot_gets_each_file_once_and_one_note_on_the_contact,
    salesforce_gets_one_content_version_per_file_on_the_lead,
);

/// A small real PDF (one empty page).
const PDF: &[u8] = b"%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n2 0 obj <</Type /Pages /Kids [3 0 R] /Count 1>> endobj\n3 0 obj <</Type /Page /Parent 2 0 R /MediaBox [0 0 200 200]>> endobj\ntrailer <</Root 1 0 R>>\n%%EOF\n";

/// A 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00,
    0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00,
    0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x60, 0x00, 0x02, 0x00, 0x00, 0x05, 0x00,
    0x01, 0xE9, 0xFA, 0xDC, 0xD8, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

const PDF_NAME: &str = "Spec sheet.pdf";
const PNG_NAME: &str = "photo.png";

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The contact form with a `drawing` file field (PDF or PNG, up to three), its files in a
/// folder of this test's, echoing the confirmation, no minimum fill time.
fn with_files(c: &mut Config) {
    c.server.files_dir = std::env::temp_dir()
        .join(format!("onceform-files-{}", uuid::Uuid::new_v4().simple()))
        .to_string_lossy()
        .into_owned();
    let form = c.forms.get_mut("contact").unwrap();
    form.fields.push(FieldConfig {
        name: "drawing".into(),
        kind: FieldType::File,
        accept: vec!["application/pdf".into(), "image/png".into()],
        max_files: Some(3),
        ..FieldConfig::default()
    });
    form.confirmation_echo = true;
    form.min_fill_seconds = 0;
}

/// `POST /f/contact` as multipart/form-data, built by hand: the inquiry and both files.
async fn post_with_files(d: &DeliveryApp, key: &str) {
    let boundary = "onceformTestBoundary7MA4YWxk";
    let mut body = Vec::new();
    let text = [
        ("operation_id", key),
        ("name", "Ada Lovelace"),
        ("email", "ada@example.com"),
        ("company", "Analytical Engines"),
        ("topic", "Sales"),
        ("message", "Drawings attached"),
    ];
    for (k, v) in text {
        body.extend(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n").bytes(),
        );
    }
    for (name, kind, bytes) in [(PDF_NAME, "application/pdf", PDF), (PNG_NAME, "image/png", PNG)] {
        body.extend(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"drawing\"; filename=\"{name}\"\r\nContent-Type: {kind}\r\n\r\n"
            )
            .bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend(b"\r\n");
    }
    body.extend(format!("--{boundary}--\r\n").bytes());
    let resp = d
        .app
        .client
        .post(d.app.url("/f/contact"))
        .header("Content-Type", format!("multipart/form-data; boundary={boundary}"))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 303, "{}", resp.text().await.unwrap());
}

/// The message sent to `to`, raw.
fn message_to(d: &DeliveryApp, to: &str) -> String {
    let messages = d.smtp.messages();
    let found = messages.iter().filter(|m| m.contains(&format!("\nTo: {to}"))).collect::<Vec<_>>();
    assert_eq!(found.len(), 1, "one message to {to}: {messages:?}");
    found[0].clone()
}

async fn the_owner_email_carries_the_files_and_the_confirmation_only_names_them(backend: Backend) {
    let d = spawn_delivery_app(backend, |c| {
        with_files(c);
        c.forms.get_mut("contact").unwrap().crm_fields.insert("drawing".into(), "attachments".into());
    })
    .await;
    let key = new_key();
    post_with_files(&d, &key).await;
    d.settle(&d.worker()).await;

    let raw = message_to(&d, "sales@example.com");
    let owner = MessageParser::default().parse(raw.as_bytes()).unwrap();
    let mut attached: Vec<(String, String, Vec<u8>)> = owner
        .attachments()
        .map(|a| {
            let kind =
                a.content_type().map(|t| format!("{}/{}", t.ctype(), t.subtype().unwrap_or(""))).unwrap();
            (a.attachment_name().unwrap().to_string(), kind, a.contents().to_vec())
        })
        .collect();
    attached.sort();
    assert_eq!(
        attached,
        [
            (PDF_NAME.to_string(), "application/pdf".to_string(), PDF.to_vec()),
            (PNG_NAME.to_string(), "image/png".to_string(), PNG.to_vec()),
        ],
        "both files, byte for byte"
    );
    let text = owner.body_text(0).unwrap();
    assert!(text.contains(&format!("{PDF_NAME} (application/pdf, {} B) — attached", PDF.len())), "{text}");
    assert!(text.contains(&format!("{PNG_NAME} (image/png, {} B) — attached", PNG.len())), "{text}");
    for digest in [sha(PDF), sha(PNG)] {
        assert!(!raw.contains(&digest), "no stored reference in the owner's email");
    }

    let raw = message_to(&d, "ada@example.com");
    let confirmation = MessageParser::default().parse(raw.as_bytes()).unwrap();
    assert_eq!(confirmation.attachment_count(), 0, "the confirmation carries no file");
    let text = confirmation.body_text(0).unwrap();
    assert!(text.contains(PDF_NAME) && text.contains(PNG_NAME), "the echo names the files: {text}");
    for leak in [sha(PDF), sha(PNG), "application/pdf".into(), "Spec%20sheet".into()] {
        assert!(!raw.contains(&leak), "the confirmation shows no stored reference ({leak}): {raw}");
    }

    // The generic CRM gets the list of files (no bytes) and their names in the field.
    let lead = d.crm.state.lock().unwrap().bodies.last().cloned().unwrap();
    let files = lead["files"].as_array().unwrap_or_else(|| panic!("{lead}"));
    assert_eq!(files.len(), 2, "{lead}");
    assert!(files.iter().any(|f| f["name"] == PDF_NAME && f["sha256"] == sha(PDF) && f["size"] == PDF.len()));
    let shown = lead["fields"]["attachments"].as_str().unwrap_or_else(|| panic!("{lead}"));
    assert!(shown.contains(PDF_NAME) && !shown.contains(&sha(PDF)), "{shown}");
}

async fn files_over_the_limit_are_linked_and_a_purged_one_is_said_gone(backend: Backend) {
    let d = spawn_delivery_app(backend, |c| {
        with_files(c);
        c.smtp.attach_max_bytes = 100; // the PNG fits, the PDF does not
        c.forms.get_mut("contact").unwrap().effects.retain(|k| k.as_str() == "owner_notification");
    })
    .await;
    let key = new_key();
    post_with_files(&d, &key).await;
    let id = submission_id(&d.app, &key).await;
    d.settle(&d.worker()).await;
    let raw = message_to(&d, "sales@example.com");
    let owner = MessageParser::default().parse(raw.as_bytes()).unwrap();
    let names: Vec<&str> = owner.attachments().filter_map(|a| a.attachment_name()).collect();
    assert_eq!(names, [PNG_NAME], "only what fits within the limit");
    let text = owner.body_text(0).unwrap();
    let link = format!("/admin/submissions/{id}/files/{}", sha(PDF));
    assert!(
        text.contains(&format!("{PDF_NAME} (application/pdf, {} B) — download: {link}", PDF.len())),
        "{text}"
    );

    // Purged before the message went: the email says so, and it is no error.
    let d = spawn_delivery_app(backend, |c| {
        with_files(c);
        c.forms.get_mut("contact").unwrap().effects.retain(|k| k.as_str() == "owner_notification");
    })
    .await;
    let key = new_key();
    post_with_files(&d, &key).await;
    crate::support::files::remove_stored(&d.app.config, &sha(PDF));
    d.settle(&d.worker()).await;
    assert_eq!(d.effect(&key, "owner_notification").await.state, "SENT");
    let raw = message_to(&d, "sales@example.com");
    let owner = MessageParser::default().parse(raw.as_bytes()).unwrap();
    let names: Vec<&str> = owner.attachments().filter_map(|a| a.attachment_name()).collect();
    assert_eq!(names, [PNG_NAME]);
    let text = owner.body_text(0).unwrap();
    assert!(
        text.contains(&format!("{PDF_NAME} (application/pdf, {} B) — no longer stored", PDF.len())),
        "{text}"
    );
}

/// Only the CRM lead, wired to a vendor fake, with the file field.
fn crm_with_files(c: &mut Config, adapter: &str, url: &str, fields: &[(&str, &str)]) {
    with_files(c);
    wire_vendor(c, adapter, url, fields);
    c.forms.get_mut("contact").unwrap().effects.retain(|k| k.as_str() == "crm_lead");
}

async fn hubspot_gets_each_file_once_and_one_note_on_the_contact(backend: Backend) {
    let hubspot = FakeHubspot::start().await;
    let url = hubspot.url.clone();
    let fields = [("name", "firstname"), ("email", "email"), ("company", "company"), ("message", "message")];
    let d = spawn_delivery_app(backend, |c| crm_with_files(c, "hubspot", &url, &fields)).await;
    // HubSpot stores the first file, and its answer is lost.
    hubspot.push_upload_fault(Fault::DropAfterCreate);
    let key = new_key();
    post_with_files(&d, &key).await;
    let worker = d.worker();
    d.settle(&worker).await;

    let lead = d.effect(&key, "crm_lead").await;
    assert_eq!(lead.state, "SENT", "{:?}", d.attempts(&key, "crm_lead").await);
    assert_eq!(
        d.attempts(&key, "crm_lead").await[0],
        ("ambiguous".into(), Some("connection_dropped".into()))
    );
    let check = |uploads: usize| {
        assert!(hubspot.refused().is_empty(), "{:?}", hubspot.refused());
        let files = hubspot.files();
        assert_eq!(files.len(), 2, "each file once: {files:?}");
        assert_eq!(hubspot.uploads(), uploads);
        for (name, bytes) in [(PDF_NAME, PDF), (PNG_NAME, PNG)] {
            let f = files.iter().find(|f| f.bytes == bytes).unwrap_or_else(|| panic!("{name} not stored"));
            assert_eq!(f.access, "PRIVATE");
            assert!(f.path.contains(&sha(bytes)[..16]), "{f:?}");
        }
        let contact = hubspot.contacts()[0].id.clone();
        let notes = hubspot.notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(notes[0].contacts, [contact]);
        let mut ids = notes[0].attachment_ids.clone();
        ids.sort();
        let mut want: Vec<String> = files.iter().map(|f| f.id.clone()).collect();
        want.sort();
        assert_eq!(ids, want, "the note attaches both files");
        assert!(notes[0].body.contains(PDF_NAME) && !notes[0].body.contains(&sha(PDF)));
    };
    check(2);

    // The worker died after sending: the lead is reconciled by its contact, files and note.
    force_lead_state(&d.app, "UNKNOWN").await;
    d.settle(&worker).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "SENT");
    check(2);
    // Sent again (an admin's "mark not sent"): every step finds itself.
    force_lead_state(&d.app, "PENDING").await;
    d.settle(&worker).await;
    check(2);
    assert!(lead_ref(&d.app, &key).await.contains(":crm_lead:"));
}

async fn salesforce_gets_one_content_version_per_file_on_the_lead(backend: Backend) {
    let salesforce = FakeSalesforce::start().await;
    let url = salesforce.url.clone();
    let fields =
        [("name", "LastName"), ("email", "Email"), ("company", "Company"), ("message", "Description")];
    let d = spawn_delivery_app(backend, |c| crm_with_files(c, "salesforce", &url, &fields)).await;
    // Salesforce creates the second version, and its answer is lost.
    salesforce.push_version_fault(Fault::Status(503));
    salesforce.push_version_fault(Fault::DropAfterCreate);
    let key = new_key();
    post_with_files(&d, &key).await;
    let worker = d.worker();
    d.settle(&worker).await;

    assert_eq!(d.effect(&key, "crm_lead").await.state, "SENT", "{:?}", d.attempts(&key, "crm_lead").await);
    let check = || {
        assert!(salesforce.refused().is_empty(), "{:?}", salesforce.refused());
        let leads = salesforce.leads();
        assert_eq!(leads.len(), 1);
        let versions = salesforce.versions();
        assert_eq!(versions.len(), 2, "one ContentVersion per file: {versions:?}");
        for (name, bytes) in [(PDF_NAME, PDF), (PNG_NAME, PNG)] {
            let v = versions.iter().find(|v| v.path_on_client == name).unwrap();
            assert_eq!(v.bytes, bytes, "{name} byte for byte");
            assert_eq!(v.first_publish_location, leads[0].id, "linked to the Lead");
            assert!(v.description.ends_with(&format!(":file:{}", sha(bytes))), "{v:?}");
        }
        assert!(!leads[0].fields.values().any(|v| v.contains(&sha(PDF))));
    };
    check();
    assert_eq!(salesforce.version_creates(), 3, "a 503, a lost answer, then the one left");

    force_lead_state(&d.app, "UNKNOWN").await;
    d.settle(&worker).await;
    assert_eq!(d.effect(&key, "crm_lead").await.state, "SENT");
    force_lead_state(&d.app, "PENDING").await;
    d.settle(&worker).await;
    check();
    assert_eq!(salesforce.version_creates(), 3, "nothing created again");
}
