//! `[forms.F.crm] on_duplicate = "note"`: an admin's "duplicate of" decision reaches the CRM
//! exactly once: a lead still waiting is never created, a lead already created gets one note
//! linking it to the original's lead (HubSpot: a note; Salesforce: a Task), through undo and
//! redo, a timeout, and an adapter that cannot add notes.

use std::time::Duration;

use diesel::prelude::*;
use onceform::config::{Config, OnDuplicate};
use onceform::db::schema::{duplicate_pairs, side_effects};
use onceform::db::DbError;
use onceform::services::accounts::Role;
use onceform::with_conn;

use crate::on_both_backends;
use crate::support::admin::AdminSession;
use crate::support::chat::env_var;
use crate::support::crm::Fault;
use crate::support::delivery::{spawn_delivery_app, DeliveryApp};
use crate::support::hubspot::FakeHubspot;
use crate::support::pipedrive::{FakePipedrive, MESSAGE_KEY, REFERENCE_KEY};
use crate::support::salesforce::FakeSalesforce;
use crate::support::vendor::{crm_only, inquiry_from, lead_ref, submission_id, wire_vendor};
use crate::support::zoho::{FakeZoho, CLIENT_ID, CLIENT_SECRET, REFRESH_TOKEN};
use crate::support::{new_key, set_crm, Backend};

on_both_backends!(
    a_sent_lead_decided_a_duplicate_gets_one_note_linking_the_two_leads,
    undo_then_redo_never_makes_a_second_note,
    a_lead_still_pending_is_cancelled_never_created_and_gets_no_note,
    an_unknown_lead_found_absent_is_never_created_and_its_note_ends_failed,
    an_unknown_lead_found_created_gets_its_note,
    a_timeout_creating_the_note_is_unknown_then_found_by_its_key,
    without_on_duplicate_a_decision_adds_no_note,
    a_salesforce_lead_gets_one_task_even_after_a_timeout,
    a_pipedrive_lead_gets_one_note_even_after_a_timeout,
    a_zoho_lead_gets_one_note_even_after_a_timeout,
    an_adapter_without_notes_ends_the_note_failed_saying_why,
);

const HUBSPOT_FIELDS: &[(&str, &str)] =
    &[("name", "firstname"), ("email", "email"), ("company", "company"), ("message", "message")];
const SALESFORCE_FIELDS: &[(&str, &str)] =
    &[("name", "LastName"), ("email", "Email"), ("company", "Company"), ("message", "Description")];

const ZOHO_FIELDS: &[(&str, &str)] =
    &[("name", "Last_Name"), ("email", "Email"), ("company", "Company"), ("message", "Description")];

fn notes_on(c: &mut Config) {
    c.forms.get_mut("contact").unwrap().crm.on_duplicate = OnDuplicate::Note;
}

async fn hubspot_app(backend: Backend, note: bool) -> (DeliveryApp, FakeHubspot) {
    let hubspot = FakeHubspot::start().await;
    let url = hubspot.url.clone();
    let d = spawn_delivery_app(backend, |c| {
        wire_vendor(c, "hubspot", &url, HUBSPOT_FIELDS);
        crm_only(c);
        if note {
            notes_on(c);
        }
    })
    .await;
    (d, hubspot)
}

/// Two inquiries from two addresses (HubSpot refuses a second contact with one email).
async fn two_inquiries(d: &DeliveryApp) -> (String, String) {
    let (original, duplicate) = (new_key(), new_key());
    assert_eq!(d.app.submit(&original, &inquiry_from("ada@example.com", "Need a quote")).await.status(), 201);
    assert_eq!(
        d.app.submit(&duplicate, &inquiry_from("ada.l@example.com", "Need a quote!")).await.status(),
        201
    );
    (original, duplicate)
}

/// An open pair (original, duplicate), as the screening writes it; its ID.
async fn make_pair(d: &DeliveryApp, original_key: &str, duplicate_key: &str) -> String {
    let (original, duplicate) =
        (submission_id(&d.app, original_key).await, submission_id(&d.app, duplicate_key).await);
    d.app
        .query(move |pool| {
            with_conn!(pool, |c| {
                let p = duplicate_pairs::table;
                c.execute_native(
                    diesel::insert_into(p)
                        .values((
                            duplicate_pairs::id.eq(uuid::Uuid::now_v7().to_string()),
                            duplicate_pairs::form.eq("contact"),
                            duplicate_pairs::original_id.eq(&original),
                            duplicate_pairs::duplicate_id.eq(&duplicate),
                            duplicate_pairs::score.eq(0.93),
                            duplicate_pairs::reasons.eq(r#"["similar message"]"#),
                            duplicate_pairs::status.eq("open"),
                            duplicate_pairs::created_at.eq(onceform::base::clock::now()),
                        ))
                        .on_conflict((duplicate_pairs::original_id, duplicate_pairs::duplicate_id))
                        .do_update()
                        .set(duplicate_pairs::status.eq("open")),
                )?;
                p.filter(duplicate_pairs::original_id.eq(&original))
                    .filter(duplicate_pairs::duplicate_id.eq(&duplicate))
                    .select(duplicate_pairs::id)
                    .first::<String>(c)
                    .map_err(DbError::from)
            })
        })
        .await
}

/// The admin's button on the pair: `duplicate` or `undo`.
async fn act(d: &DeliveryApp, admin: &AdminSession, pair: &str, action: &str) {
    let path = format!("/admin/duplicates/{pair}/{action}");
    let resp = d.app.admin_post(Some(admin), &path, Some(&admin.csrf), &[("note", "same person")]).await;
    assert_eq!(resp.status(), 303, "{action}: {}", resp.text().await.unwrap());
}

/// The states of the submission's note records.
async fn note_states(d: &DeliveryApp, key: &str) -> Vec<String> {
    d.effects(Some(key)).await.into_iter().filter(|e| e.kind == "crm_note").map(|e| e.state).collect()
}

/// Both leads created, a pair of them open, an admin signed in.
async fn both_sent(d: &DeliveryApp) -> (String, String, String, AdminSession) {
    let (original, duplicate) = two_inquiries(d).await;
    d.settle(&d.worker()).await;
    assert_eq!(d.effect(&original, "crm_lead").await.state, "SENT");
    assert_eq!(d.effect(&duplicate, "crm_lead").await.state, "SENT");
    let pair = make_pair(d, &original, &duplicate).await;
    (original, duplicate, pair, d.app.sign_in(Role::Admin).await)
}

async fn a_sent_lead_decided_a_duplicate_gets_one_note_linking_the_two_leads(backend: Backend) {
    let (d, hubspot) = hubspot_app(backend, true).await;
    let (original, duplicate, pair, admin) = both_sent(&d).await;
    act(&d, &admin, &pair, "duplicate").await;
    assert_eq!(note_states(&d, &duplicate).await, ["PENDING"], "added by the decision");
    assert_eq!(note_states(&d, &original).await, Vec::<String>::new());
    d.settle(&d.worker()).await;

    let contact = |key: String| {
        let hubspot = hubspot.clone();
        let d = &d;
        async move {
            let reference = lead_ref(&d.app, &key).await;
            hubspot.contacts().into_iter().find(|c| c.properties["onceform_ref"] == reference).unwrap().id
        }
    };
    let (dup_contact, orig_contact) = (contact(duplicate.clone()).await, contact(original.clone()).await);
    let notes = hubspot.notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(
        notes[0].contacts,
        [dup_contact, orig_contact],
        "on the duplicate's contact, naming the original's"
    );
    let original_id = submission_id(&d.app, &original).await;
    assert!(notes[0].body.contains(&format!("{original_id}:crm_lead:0")), "{}", notes[0].body);
    let note = d.effect(&duplicate, "crm_note").await;
    assert_eq!((note.state.as_str(), note.provider_ref.as_deref()), ("SENT", Some(notes[0].id.as_str())));
    assert_eq!((hubspot.note_creates(), hubspot.upserts(), hubspot.refused()), (1, 2, Vec::<String>::new()));

    // The admin shows it with the duplicate's other effects.
    let path = format!("/admin/submissions/{}", submission_id(&d.app, &duplicate).await);
    let page = d.app.admin_get(Some(&admin), &path).await.text().await.unwrap();
    assert!(page.contains("crm_note"), "the note record is listed");
}

async fn undo_then_redo_never_makes_a_second_note(backend: Backend) {
    let (d, hubspot) = hubspot_app(backend, true).await;
    let (_original, duplicate, pair, admin) = both_sent(&d).await;

    // Undone before it went out: cancelled; decided again: the same record waits again.
    act(&d, &admin, &pair, "duplicate").await;
    act(&d, &admin, &pair, "undo").await;
    assert_eq!(note_states(&d, &duplicate).await, ["CANCELLED"]);
    d.settle(&d.worker()).await;
    assert_eq!(hubspot.note_creates(), 0, "a cancelled note is not sent");
    act(&d, &admin, &pair, "duplicate").await;
    assert_eq!(note_states(&d, &duplicate).await, ["PENDING"], "the same record, given back");
    d.settle(&d.worker()).await;
    assert_eq!(note_states(&d, &duplicate).await, ["SENT"]);

    // Sent, then undone and decided again: the note stays, and no second one is made.
    act(&d, &admin, &pair, "undo").await;
    assert_eq!(note_states(&d, &duplicate).await, ["SENT"], "a sent note stays");
    act(&d, &admin, &pair, "duplicate").await;
    d.settle(&d.worker()).await;
    assert_eq!(note_states(&d, &duplicate).await, ["SENT"], "one record per pair");
    assert_eq!((hubspot.notes().len(), hubspot.note_creates()), (1, 1));
    assert_eq!(d.effect(&duplicate, "crm_lead").await.state, "SENT", "the lead itself untouched");
}

async fn a_lead_still_pending_is_cancelled_never_created_and_gets_no_note(backend: Backend) {
    let (d, hubspot) = hubspot_app(backend, true).await;
    let original = new_key();
    d.app.submit(&original, &inquiry_from("ada@example.com", "Need a quote")).await;
    d.settle(&d.worker()).await;
    let duplicate = new_key();
    d.app.submit(&duplicate, &inquiry_from("ada.l@example.com", "Need a quote!")).await;
    let pair = make_pair(&d, &original, &duplicate).await;
    let admin = d.app.sign_in(Role::Admin).await;

    act(&d, &admin, &pair, "duplicate").await;
    d.settle(&d.worker()).await;
    assert_eq!(d.effect(&duplicate, "crm_lead").await.state, "CANCELLED");
    assert_eq!(note_states(&d, &duplicate).await, Vec::<String>::new(), "no lead, no note");
    assert_eq!((hubspot.contacts().len(), hubspot.upserts(), hubspot.note_creates()), (1, 1, 0));
}

/// Puts the lead of the submission under `key` in `state`, due now (as a worker that died
/// mid-call leaves it once its lease runs out: UNKNOWN, whether or not the CRM took it).
async fn set_lead_state(d: &DeliveryApp, key: &str, state: &str) {
    let (id, state) = (submission_id(&d.app, key).await, state.to_string());
    d.app
        .query(move |pool| {
            with_conn!(pool, |c| diesel::update(side_effects::table)
                .filter(side_effects::submission_id.eq(&id))
                .filter(side_effects::kind.eq("crm_lead"))
                .set((
                    side_effects::state.eq(&state),
                    side_effects::next_attempt_at.eq(onceform::base::clock::now()),
                ))
                .execute(c)
                .map_err(DbError::from))
        })
        .await;
}

async fn an_unknown_lead_found_absent_is_never_created_and_its_note_ends_failed(backend: Backend) {
    let (d, hubspot) = hubspot_app(backend, true).await;
    let original = new_key();
    d.app.submit(&original, &inquiry_from("ada@example.com", "Need a quote")).await;
    d.settle(&d.worker()).await;
    let duplicate = new_key();
    d.app.submit(&duplicate, &inquiry_from("ada.l@example.com", "Need a quote!")).await;
    // The worker died before HubSpot took the upsert: UNKNOWN, and HubSpot has no contact.
    set_lead_state(&d, &duplicate, "UNKNOWN").await;
    let pair = make_pair(&d, &original, &duplicate).await;
    let admin = d.app.sign_in(Role::Admin).await;
    act(&d, &admin, &pair, "duplicate").await;
    assert_eq!(note_states(&d, &duplicate).await, ["PENDING"], "the lead may exist: its note waits for it");
    d.settle(&d.worker()).await;

    assert_eq!(d.effect(&duplicate, "crm_lead").await.state, "FAILED_FINAL");
    let lead_attempts = d.attempts(&duplicate, "crm_lead").await;
    assert_eq!(lead_attempts.last().unwrap().1.as_deref(), Some("decided_duplicate"), "{lead_attempts:?}");
    assert_eq!((hubspot.contacts().len(), hubspot.upserts()), (1, 1), "never created after the decision");
    assert_eq!(note_states(&d, &duplicate).await, ["FAILED_FINAL"]);
    let note_attempts = d.attempts(&duplicate, "crm_note").await;
    assert!(
        note_attempts.iter().all(|(_, class)| class.as_deref() == Some("note_lead_absent")),
        "{note_attempts:?}"
    );
    assert_eq!(hubspot.note_creates(), 0);
}

async fn an_unknown_lead_found_created_gets_its_note(backend: Backend) {
    let (d, hubspot) = hubspot_app(backend, true).await;
    let (_original, duplicate, pair, admin) = both_sent(&d).await;
    // The worker died after HubSpot took the upsert.
    set_lead_state(&d, &duplicate, "UNKNOWN").await;
    act(&d, &admin, &pair, "duplicate").await;
    d.settle(&d.worker()).await;
    assert_eq!(d.effect(&duplicate, "crm_lead").await.state, "SENT", "found by its reference");
    assert_eq!(note_states(&d, &duplicate).await, ["SENT"]);
    assert_eq!((hubspot.upserts(), hubspot.notes().len()), (2, 1));
}

async fn a_timeout_creating_the_note_is_unknown_then_found_by_its_key(backend: Backend) {
    let (d, hubspot) = hubspot_app(backend, true).await;
    let (_original, duplicate, pair, admin) = both_sent(&d).await;
    hubspot.push_note_fault(Fault::SlowAfterCreate(Duration::from_millis(1500)));
    act(&d, &admin, &pair, "duplicate").await;
    let worker = d.worker();
    worker.run_once().await;
    assert_eq!(note_states(&d, &duplicate).await, ["UNKNOWN"], "HubSpot may have it: never resent blindly");
    d.settle(&worker).await;

    assert_eq!(note_states(&d, &duplicate).await, ["SENT"]);
    let outcomes: Vec<String> =
        d.attempts(&duplicate, "crm_note").await.into_iter().map(|(o, _)| o).collect();
    assert!(outcomes.contains(&"lookup_found".to_string()), "{outcomes:?}");
    assert_eq!((hubspot.notes().len(), hubspot.note_creates()), (1, 1), "found, not made again");
}

async fn without_on_duplicate_a_decision_adds_no_note(backend: Backend) {
    let (d, hubspot) = hubspot_app(backend, false).await;
    let (_original, duplicate, pair, admin) = both_sent(&d).await;
    act(&d, &admin, &pair, "duplicate").await;
    d.settle(&d.worker()).await;
    assert_eq!(note_states(&d, &duplicate).await, Vec::<String>::new());
    assert_eq!((hubspot.notes().len(), hubspot.note_creates()), (0, 0));
}

async fn a_salesforce_lead_gets_one_task_even_after_a_timeout(backend: Backend) {
    let salesforce = FakeSalesforce::start().await;
    let url = salesforce.url.clone();
    let d = spawn_delivery_app(backend, |c| {
        wire_vendor(c, "salesforce", &url, SALESFORCE_FIELDS);
        crm_only(c);
        c.forms.get_mut("contact").unwrap().crm_defaults.insert("Company".into(), "Private person".into());
        notes_on(c);
    })
    .await;
    let (original, duplicate, pair, admin) = both_sent(&d).await;
    salesforce.push_task_fault(Fault::SlowAfterCreate(Duration::from_millis(1500)));
    act(&d, &admin, &pair, "duplicate").await;
    let worker = d.worker();
    worker.run_once().await;
    assert_eq!(note_states(&d, &duplicate).await, ["UNKNOWN"]);
    d.settle(&worker).await;
    act(&d, &admin, &pair, "undo").await;
    act(&d, &admin, &pair, "duplicate").await;
    d.settle(&worker).await;

    assert_eq!(note_states(&d, &duplicate).await, ["SENT"]);
    let tasks = salesforce.tasks();
    assert_eq!((tasks.len(), salesforce.task_creates()), (1, 1), "{tasks:?}");
    let lead_id = |key: String| {
        let (salesforce, d) = (salesforce.clone(), &d);
        async move {
            let reference = lead_ref(&d.app, &key).await;
            salesforce.leads().into_iter().find(|l| l.fields["Onceform_Ref__c"] == reference).unwrap().id
        }
    };
    assert_eq!(tasks[0].who_id, lead_id(duplicate.clone()).await, "on the duplicate's Lead");
    assert!(tasks[0].description.contains(&lead_id(original.clone()).await), "naming the original's Lead");
    assert_eq!(tasks[0].status, "Completed");
    assert_eq!(salesforce.refused(), Vec::<String>::new());
}

async fn a_pipedrive_lead_gets_one_note_even_after_a_timeout(backend: Backend) {
    let pipedrive = FakePipedrive::start().await;
    let url = pipedrive.url.clone();
    let fields = [("name", "name"), ("email", "email"), ("topic", "title"), ("message", MESSAGE_KEY)];
    let d = spawn_delivery_app(backend, |c| {
        wire_vendor(c, "pipedrive", &url, &fields);
        set_crm(c, "pipedrive", &[("reference_field", REFERENCE_KEY)]);
        crm_only(c);
        notes_on(c);
    })
    .await;
    let (original, duplicate, pair, admin) = both_sent(&d).await;
    pipedrive.push_note_fault(Fault::SlowAfterCreate(Duration::from_millis(1500)));
    act(&d, &admin, &pair, "duplicate").await;
    let worker = d.worker();
    worker.run_once().await;
    assert_eq!(note_states(&d, &duplicate).await, ["UNKNOWN"]);
    d.settle(&worker).await;
    act(&d, &admin, &pair, "undo").await;
    act(&d, &admin, &pair, "duplicate").await;
    d.settle(&worker).await;

    assert_eq!(note_states(&d, &duplicate).await, ["SENT"]);
    let notes = pipedrive.notes();
    assert_eq!((notes.len(), pipedrive.note_creates()), (1, 1), "{notes:?}");
    let lead_id = |key: String| {
        let (pipedrive, d) = (pipedrive.clone(), &d);
        async move {
            let reference = lead_ref(&d.app, &key).await;
            pipedrive.leads().into_iter().find(|l| l.custom[REFERENCE_KEY] == reference).unwrap().id
        }
    };
    assert_eq!(notes[0].lead_id, lead_id(duplicate.clone()).await, "on the duplicate's lead");
    assert!(notes[0].content.contains(&lead_id(original.clone()).await), "naming the original's lead");
    assert_eq!(pipedrive.refused(), Vec::<String>::new());
}

async fn a_zoho_lead_gets_one_note_even_after_a_timeout(backend: Backend) {
    let zoho = FakeZoho::start().await;
    let table = [
        ("accounts_url", zoho.url.clone()),
        ("client_id", CLIENT_ID.to_string()),
        ("client_secret_env", env_var(CLIENT_SECRET)),
        ("refresh_token_env", env_var(REFRESH_TOKEN)),
    ];
    let d = spawn_delivery_app(backend, |c| {
        wire_vendor(c, "zoho", &zoho.url, ZOHO_FIELDS);
        c.crm.url = None;
        let table: Vec<(&str, &str)> = table.iter().map(|(k, v)| (*k, v.as_str())).collect();
        set_crm(c, "zoho", &table);
        crm_only(c);
        notes_on(c);
    })
    .await;
    let (original, duplicate, pair, admin) = both_sent(&d).await;
    zoho.push_note_fault(Fault::SlowAfterCreate(Duration::from_millis(1500)));
    act(&d, &admin, &pair, "duplicate").await;
    let worker = d.worker();
    worker.run_once().await;
    assert_eq!(note_states(&d, &duplicate).await, ["UNKNOWN"]);
    d.settle(&worker).await;
    act(&d, &admin, &pair, "undo").await;
    act(&d, &admin, &pair, "duplicate").await;
    d.settle(&worker).await;

    assert_eq!(note_states(&d, &duplicate).await, ["SENT"]);
    let notes = zoho.notes();
    assert_eq!((notes.len(), zoho.note_creates()), (1, 1), "{notes:?}");
    let lead_id = |key: String| {
        let (zoho, d) = (zoho.clone(), &d);
        async move {
            let reference = lead_ref(&d.app, &key).await;
            zoho.leads().into_iter().find(|l| l.fields["Onceform_Ref"] == reference).unwrap().id
        }
    };
    assert_eq!(notes[0].parent_id, lead_id(duplicate.clone()).await, "on the duplicate's Lead");
    assert!(notes[0].content.contains(&lead_id(original.clone()).await), "naming the original's Lead");
    assert_eq!(zoho.refused(), Vec::<String>::new());
}

async fn an_adapter_without_notes_ends_the_note_failed_saying_why(backend: Backend) {
    let d = spawn_delivery_app(backend, |c| {
        crm_only(c);
        notes_on(c);
    })
    .await;
    let (_original, duplicate, pair, admin) = both_sent(&d).await;
    act(&d, &admin, &pair, "duplicate").await;
    d.settle(&d.worker()).await;
    assert_eq!(note_states(&d, &duplicate).await, ["FAILED_FINAL"]);
    let attempts = d.attempts(&duplicate, "crm_note").await;
    assert_eq!(attempts, [("permanent".to_string(), Some("crm_notes_unsupported".to_string()))]);
}
