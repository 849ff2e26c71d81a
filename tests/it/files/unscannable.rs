//! A file clamd is reached for but cannot scan is no "scanner down": EICAR padded past the
//! test daemon's `StreamMaxLength` (clamd knows the padded file's hash: scanned, it would be
//! malware) is never delivered, whatever `when_scanner_down` says; its submission is held
//! and the file marked "could not scan" for the admin. The rescan goes past such a file (or
//! one gone from the store) to the files after it. A file larger than `[server]
//! clamd_max_bytes` is refused on arrival.

use serde_json::json;

use super::attach::{post_form, upload, with_quote};
use super::scanning::scanning;
use crate::on_both_backends;
use crate::support::clamd::{down_addr, eicar, Clamd};
use crate::support::delivery::{spawn_delivery_app, DeliveryApp};
use crate::support::files::{kept_blobs, pdf, remove_stored, sha256, Part};
use crate::support::vendor::submission_id;
use crate::support::{new_key, spawn_app_with, Backend, TestApp};
use onceform::config::{ScanMode, ScannerDown};
use onceform::domain::EffectKind;
use onceform::services::accounts::Role;
use onceform::services::files::{rescan, Files};

on_both_backends!(
    an_over_limit_malware_file_is_never_delivered_by_a_deliver_form,
    an_over_limit_malware_file_is_held_and_named_by_a_hold_form,
    the_rescan_goes_past_files_clamd_cannot_scan,
    a_spam_release_keeps_an_unscannable_file_held,
    a_file_larger_than_clamd_scans_is_refused_on_arrival,
);

/// The test daemon's stream limit.
const STREAM_MAX: &str = "StreamMaxLength 10K";

/// EICAR padded to 20 KB: past `STREAM_MAX`, well within the form's limits.
fn padded_eicar() -> Vec<u8> {
    let mut bytes = eicar();
    bytes.resize(20_000, b' ');
    bytes
}

/// A clamd that scans at most 10 KiB and knows the padded EICAR as malware.
fn small_clamd() -> Clamd {
    Clamd::start_with(STREAM_MAX, &[("Padded-Eicar", &padded_eicar())])
}

/// `quote` scanning with clamd at `addr`, `when_scanner_down = down`, with an owner
/// notification and a CRM lead to deliver.
async fn delivering(backend: Backend, addr: String, down: &'static str) -> DeliveryApp {
    spawn_delivery_app(backend, |c| {
        scanning(addr, down)(c);
        c.forms.get_mut("quote").unwrap().effects.push(EffectKind::CRM_LEAD);
    })
    .await
}

/// Submits `bytes` as the `any` file of a new `quote` submission; its key.
async fn submit_any(app: &TestApp, bytes: &[u8]) -> String {
    let (status, up) = upload(app, "quote", "file.txt", bytes).await;
    assert_eq!(status, 201, "{up}");
    let key = new_key();
    // A sender of its own: no submission is held as another's possible duplicate.
    let email = format!("mei.{}@example.com", &key[5..17]);
    let body = json!({"email": email, "any": up["upload_id"]});
    let (status, body) = super::attach::submit(app, &key, &body).await;
    assert_eq!(status, 201, "{body}");
    key
}

/// ([(effect state, held)], [scan]) of the submission under `key`.
async fn state_of(app: &TestApp, key: &str) -> (Vec<(String, bool)>, Vec<String>) {
    use diesel::prelude::*;
    use onceform::db::schema::{side_effects as e, submission_files as f, submissions as s};
    use onceform::db::DbError;
    use onceform::with_conn;
    let key = key.to_string();
    app.query(move |pool| {
        with_conn!(pool, |c| {
            let id: String = s::table.filter(s::operation_id.eq(&key)).select(s::id).first(c)?;
            let effects = e::table
                .filter(e::submission_id.eq(&id))
                .order(e::kind)
                .select((e::state, e::held))
                .load(c)?;
            let scans = f::table.filter(f::submission_id.eq(&id)).select(f::scan).load(c)?;
            Ok::<_, DbError>((effects, scans))
        })
    })
    .await
}

/// The admin's page of the submission under `key`.
async fn admin_page(app: &TestApp, key: &str) -> String {
    let id = submission_id(app, key).await;
    let admin = app.sign_in(Role::Admin).await;
    app.admin_get(Some(&admin), &format!("/admin/submissions/{id}")).await.text().await.unwrap()
}

/// What both forms must do with the padded EICAR: hold it, name it, deliver nothing.
async fn held_and_named(down: &'static str, backend: Backend) {
    let clamd = small_clamd();
    let d = delivering(backend, clamd.addr(), down).await;
    let key = submit_any(&d.app, &padded_eicar()).await;
    d.settle(&d.worker()).await;
    assert!(d.smtp.messages().is_empty(), "no owner email: {:?}", d.smtp.messages());
    assert!(d.crm.leads().is_empty(), "no CRM lead: {:?}", d.crm.leads());
    let (effects, scans) = state_of(&d.app, &key).await;
    let held = ("PENDING".to_string(), true);
    assert_eq!(effects, [held.clone(), held], "held, whatever when_scanner_down says");
    assert_eq!(scans, ["unscannable"]);
    let page = admin_page(&d.app, &key).await;
    assert!(page.contains("could not scan: held"), "the file is named: {page}");
    assert!(page.contains(r#"id="unscannable""#), "{page}");
}

async fn an_over_limit_malware_file_is_never_delivered_by_a_deliver_form(backend: Backend) {
    held_and_named("deliver", backend).await;
}

async fn an_over_limit_malware_file_is_held_and_named_by_a_hold_form(backend: Backend) {
    held_and_named("hold", backend).await;
}

async fn the_rescan_goes_past_files_clamd_cannot_scan(backend: Backend) {
    let app = spawn_app_with(backend, scanning(down_addr(), "hold")).await;
    // While clamd is down: a file that goes missing from the store, one over clamd's limit,
    // then a clean one, each waiting for the rescan.
    let gone = pdf("gone from the store");
    let keys = [
        submit_any(&app, &gone).await,
        submit_any(&app, &padded_eicar()).await,
        submit_any(&app, &pdf("clean")).await,
    ];
    for key in &keys {
        assert_eq!(state_of(&app, key).await.1, ["pending"]);
    }
    remove_stored(&app.config, &sha256(&gone));
    assert_eq!(kept_blobs(&app.config).len(), 2);

    let clamd = small_clamd();
    let mut server = app.config.server.clone();
    server.clamd = Some(clamd.addr());
    let writes = onceform::db::Writes::shared(&app.pool, &app.config.database).unwrap();
    assert_eq!(
        rescan(&writes, &Files::of(&server, &app.config.database)).await.unwrap(),
        3,
        "no file stops the pass"
    );
    let held = vec![("PENDING".to_string(), true)];
    assert_eq!(state_of(&app, &keys[0]).await, (held.clone(), vec!["unscannable".to_string()]));
    assert_eq!(state_of(&app, &keys[1]).await, (held, vec!["unscannable".to_string()]));
    let released = vec![("PENDING".to_string(), false)];
    assert_eq!(state_of(&app, &keys[2]).await, (released, vec!["clean".to_string()]));

    // The next pass has nothing left to scan: the unscannable files wait for an admin.
    assert_eq!(rescan(&writes, &Files::of(&server, &app.config.database)).await.unwrap(), 0);
}

async fn a_spam_release_keeps_an_unscannable_file_held(backend: Backend) {
    let clamd = small_clamd();
    let app = spawn_app_with(backend, |c| {
        scanning(clamd.addr(), "deliver")(c);
        c.forms.get_mut("quote").unwrap().honeypot = "website".into();
    })
    .await;
    let (_, up) = upload(&app, "quote", "file.txt", &padded_eicar()).await;
    let key = new_key();
    let body = json!({"email": "bot@example.com", "any": up["upload_id"], "website": "x"});
    let (status, body) = super::attach::submit(&app, &key, &body).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(state_of(&app, &key).await, (vec![], vec!["unscannable".to_string()]), "spam: no effects");

    // "Not spam": the effects it gets wait, held, as the file could not be scanned.
    let id = submission_id(&app, &key).await;
    let admin = app.sign_in(Role::Admin).await;
    let path = format!("/admin/submissions/{id}/release");
    let resp = app.admin_post(Some(&admin), &path, Some(&admin.csrf), &[("note", "a person")]).await;
    assert_eq!(resp.status(), 303, "{}", resp.text().await.unwrap());
    assert_eq!(state_of(&app, &key).await.0, [("PENDING".to_string(), true)]);
}

async fn a_file_larger_than_clamd_scans_is_refused_on_arrival(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        with_quote(c);
        let quote = c.forms.get_mut("quote").unwrap();
        (quote.scan, quote.when_scanner_down) = (ScanMode::Clamd, ScannerDown::Deliver);
        c.server.clamd = Some(down_addr());
        c.server.clamd_max_bytes = 10_000;
    })
    .await;
    // Within the field's 100 kB and the form's 1 MB, over the 10 kB clamd scans.
    let mut big = pdf("big");
    big.resize(20_000, b' ');
    let (status, _) = upload(&app, "quote", "big.pdf", &big).await;
    assert_eq!(status, 413, "an upload larger than clamd scans");
    let resp = post_form(
        &app,
        &[
            Part::Text("operation_id", &new_key()),
            Part::Text("email", "mei@example.com"),
            Part::File("drawing", "big.pdf", &big),
        ],
    )
    .await;
    assert_eq!(resp.status(), 422);
    let page = resp.text().await.unwrap();
    assert!(page.contains("10.0 KB"), "names clamd's limit: {page}");
    assert!(kept_blobs(&app.config).is_empty(), "a refused file leaves no blob");

    // A file within it is taken (clamd is down: delivered unscanned, as the form says).
    let (status, _) = upload(&app, "quote", "small.pdf", &pdf("small")).await;
    assert_eq!(status, 201);
}

/// The padded EICAR is malware to a clamd that scans it whole: only the stream limit keeps
/// the tests' daemon from saying so.
#[tokio::test]
async fn the_padded_eicar_is_malware_to_a_clamd_that_scans_it_whole() {
    use onceform::services::scan::{Scanner, ScannerAddr, Verdict};
    let clamd = Clamd::start_with("", &[("Padded-Eicar", &padded_eicar())]);
    let scanner =
        Scanner::new(ScannerAddr::parse(&clamd.addr()).unwrap(), std::time::Duration::from_secs(30));
    let verdict = scanner.scan_file(&clamd.file("padded.txt", &padded_eicar())).await.unwrap();
    assert_eq!(verdict, Verdict::Malware("Padded-Eicar.UNOFFICIAL".into()));
}
