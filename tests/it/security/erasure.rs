//! Issue 21 item 2, "erasure that erases": one person seeded into every place onceform
//! keeps them (form submissions with a journey ID, a conflict, a duplicate pair, the delivery
//! log, inbound events' bodies and a conflict, a quarantined delivery,
//! attempt logs with a provider's answer naming them, `.eml` files of the file mailer, lead
//! files of the file CRM); after `POST /admin/erase` no text column of any table and no file
//! under the app's data directories holds their address, phone or name. What left for a
//! provider (the forward handler's receiver) is listed as such; the files are not.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use diesel::prelude::*;
use onceform::config::Config;
use onceform::db::schema::{deliveries, effect_attempts, side_effects};
use onceform::db::DbError;
use onceform::services::accounts::Role;
use onceform::with_conn;
use serde_json::json;

use crate::lifecycle::{onceform_with, stdout, text_columns_containing, PHONE_FIELD};
use crate::on_both_backends;
use crate::support::hooks::{hook, secret_var, spawn_hook_app_with, HookApp};
use crate::support::receiver::Receiver;
use crate::support::{new_key, Backend};

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const EMAIL: &str = "jane.doe@example.com";
const PHONE: &str = "+41 44 123 45 67";
const PHONE_NORMALISED: &str = "+41441234567";
const NAME: &str = "Jane Doe";
const JOURNEY: &str = "jrn-jane-7731";

on_both_backends!(
    an_erased_person_is_in_no_table_and_no_file_onceform_wrote,
    erasing_by_phone_on_the_command_line_leaves_nothing_of_the_person,
);

fn inquiry(message: &str, email: &str, name: &str) -> serde_json::Value {
    json!({"name": name, "email": email, "phone": PHONE, "company": "Doe & Co", "topic": "Sales",
           "message": message, "journey_id": JOURNEY})
}

/// Every file under `dir` whose bytes hold `needle` (ASCII case-insensitive).
fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for e in entries {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.extend(files_containing(&path, needle));
        } else if String::from_utf8_lossy(&std::fs::read(&path).unwrap())
            .to_ascii_lowercase()
            .contains(&needle.to_ascii_lowercase())
        {
            out.push(path);
        }
    }
    out
}

/// Worker passes until no record is PENDING or SENDING.
async fn settle(app: &HookApp) {
    let worker = app.worker();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        worker.run_once().await;
        let open: i64 = app
            .app
            .query(|pool| {
                with_conn!(pool, |c| side_effects::table
                    .filter(side_effects::state.eq_any(["PENDING", "SENDING"]))
                    .count()
                    .get_result(c)
                    .map_err(DbError::from))
            })
            .await;
        if open == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "effects did not settle");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The app with a webhook source whose events go to an outside receiver (forward), to the
/// file CRM (crm_lead) and to the owners through the file mailer (owner_notification); the
/// form has a phone field; mail and leads are files under `data`. Also the same
/// configuration as TOML, for the command line.
async fn app_writing_files(backend: Backend, data: &Path, receiver: &Receiver) -> (HookApp, String) {
    let var = secret_var("sec_erase", WHSEC);
    let handlers = format!(
        "[[handlers]]\nname = \"out\"\nkind = \"forward\"\nurl = \"{}\"\n\
         [[handlers]]\nname = \"lead\"\nkind = \"crm_lead\"\n\
         [[handlers]]\nname = \"tell\"\nkind = \"owner_notification\"\nnotify = [\"ops@example.com\"]\n",
        receiver.events_url()
    );
    let head = format!("verify = \"standard-webhooks\"\nsecret_env = \"{var}\"\nevent_id = \"json:/id\"\n");
    let (mail, crm) = (data.join("mail"), data.join("crm"));
    let (mail_dir, crm_dir) = (mail.to_string_lossy().into_owned(), crm.to_string_lossy().into_owned());
    let toml = onceform::config::DEFAULT_CONFIG
        .replace(
            "[crm.file]\ndir = \"./data/crm\"",
            &format!("[crm]\nadapter = \"file\"\n\n[crm.file]\ndir = '{crm_dir}'"),
        )
        .replace("[smtp]\n", &format!("[smtp]\nmail_dir = '{mail_dir}'\n"))
        + PHONE_FIELD
        + &format!(
            "\n[hooks.helpdesk]\n{head}{}",
            handlers.replace("[[handlers]]", "[[hooks.helpdesk.handlers]]")
        );
    let app = spawn_hook_app_with(
        backend,
        vec![("helpdesk", hook(&format!("{head}{handlers}")))],
        move |c: &mut Config| {
            let with_phone =
                Config::parse(&format!("{}{PHONE_FIELD}", onceform::config::DEFAULT_CONFIG)).unwrap();
            c.forms = with_phone.forms;
            c.forms.get_mut("contact").unwrap().confirmation_window_minutes = 0;
            c.smtp.url = None;
            c.smtp.mail_dir = mail_dir;
            c.crm.adapter = Some("file".into());
            c.crm.url = None;
            crate::support::set_crm(c, "file", &[("dir", &crm_dir)]);
        },
    )
    .await;
    (app, toml)
}

async fn an_erased_person_is_in_no_table_and_no_file_onceform_wrote(backend: Backend) {
    let data = std::env::temp_dir().join(format!("onceform-erase-{}", uuid::Uuid::new_v4().simple()));
    let receiver = Receiver::start().await;
    let (app, _) = app_writing_files(backend, &data, &receiver).await;

    // Form submissions: two near-identical inquiries (a duplicate pair), a conflicting retry.
    let keys = [new_key(), new_key()];
    for (key, message) in
        keys.iter().zip(["Quote for 40 units of the X200", "Quote for 40 units of X200 please"])
    {
        assert_eq!(app.app.submit(key, &inquiry(message, EMAIL, NAME)).await.status(), 201);
    }
    let changed = inquiry("Changed my mind", EMAIL, NAME);
    assert_eq!(app.app.submit(&keys[0], &changed).await.status(), 409);
    // Someone else, who stays.
    let other = json!({"name": "Lin Chen", "email": "lin@example.net", "topic": "Sales", "message": "Hi"});
    assert_eq!(app.app.submit(&new_key(), &other).await.status(), 201);

    // Inbound: an event naming her (the provider's own spelling of the address), a
    // conflicting redelivery, and a delivery without an event ID (quarantined).
    let event =
        json!({"id": "T-1", "customer": {"email": "Jane.Doe@Example.COM", "phone": PHONE, "name": NAME}})
            .to_string();
    assert_eq!(app.post_signed("helpdesk", WHSEC, "msg_1", &event).await.status(), 200);
    let conflicting =
        json!({"id": "T-1", "customer": {"email": EMAIL, "name": NAME}, "note": "reopened"}).to_string();
    assert_eq!(app.post_signed("helpdesk", WHSEC, "msg_2", &conflicting).await.status(), 200);
    let no_id = json!({"customer": {"email": EMAIL, "phone": PHONE_NORMALISED, "name": NAME}}).to_string();
    assert_eq!(app.post_signed("helpdesk", WHSEC, "msg_3", &no_id).await.status(), 202);
    let lin_event = json!({"id": "T-2", "customer": {"email": "lin@example.net"}}).to_string();
    assert_eq!(app.post_signed("helpdesk", WHSEC, "msg_4", &lin_event).await.status(), 200);
    settle(&app).await;
    assert_eq!(receiver.calls().len(), 2, "both events left for the receiver");

    // An SMTP server that echoes the recipient, and an admin's note: attempt texts naming her.
    app.app
        .query(|pool| {
            with_conn!(pool, |c| {
                let (effect, submission): (String, String) = side_effects::table
                    .filter(side_effects::kind.eq("confirmation_email"))
                    .select((side_effects::id, side_effects::submission_id.assume_not_null()))
                    .first(c)?;
                diesel::insert_into(effect_attempts::table)
                    .values((
                        effect_attempts::id.eq(uuid::Uuid::now_v7().to_string()),
                        effect_attempts::effect_id.eq(&effect),
                        effect_attempts::started_at.eq(chrono::Utc::now().naive_utc()),
                        effect_attempts::duration_ms.eq(3),
                        effect_attempts::outcome.eq("permanent"),
                        effect_attempts::smtp_code.eq(550),
                        effect_attempts::error_class.eq(format!("smtp_550 <{EMAIL}>: mailbox full")),
                        effect_attempts::provider_ref.eq(format!("250 2.0.0 queued for <{EMAIL}>")),
                    ))
                    .execute(c)?;
                diesel::update(side_effects::table.filter(side_effects::id.eq(&effect)))
                    .set(
                        side_effects::last_error
                            .eq(format!("admin: {NAME} asked by phone, {PHONE}, reach {EMAIL}")),
                    )
                    .execute(c)?;
                let logged: i64 = deliveries::table
                    .filter(deliveries::submission_id.eq(&submission))
                    .count()
                    .get_result(c)?;
                assert!(logged > 0, "the delivery log has her submission");
                Ok::<_, DbError>(())
            })
        })
        .await;

    // A worker that died mid-write left a temporary lead file of hers.
    let leads = data.join("crm").join("leads");
    let lead = std::fs::read_dir(&leads)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| std::fs::read_to_string(leads.join(n)).unwrap().contains(EMAIL))
        .unwrap();
    std::fs::write(leads.join(format!(".{lead}.0123abcd.tmp")), format!("{{\"email\": \"{EMAIL}\", \"na"))
        .unwrap();

    // Before: she is everywhere (so the searches below can fail).
    for needle in [EMAIL, NAME, PHONE, JOURNEY] {
        assert!(!text_columns_containing(&app.app, backend, needle).await.is_empty(), "{needle} seeded");
    }
    for needle in [EMAIL, NAME] {
        assert!(!files_containing(&data.join("mail"), needle).is_empty(), "{needle} in an .eml file");
        assert!(!files_containing(&data.join("crm"), needle).is_empty(), "{needle} in a lead file");
    }
    let by_email = text_columns_containing(&app.app, backend, "Jane.Doe@Example.COM").await;
    let mut text = by_email.clone();
    text.extend(text_columns_containing(&app.app, backend, PHONE_NORMALISED).await);
    assert!(!text.is_empty());

    let admin = app.app.sign_in(Role::Admin).await;
    // A fragment names no one (it would be found in everyone's text): refused, nothing erased.
    for (field, fragment) in [("email", "Jane"), ("phone", "12")] {
        let refused =
            app.app.admin_post(Some(&admin), "/admin/erase", Some(&admin.csrf), &[(field, fragment)]).await;
        assert_eq!(refused.status(), 409, "{field} = {fragment}");
    }
    assert_eq!(text_columns_containing(&app.app, backend, "Jane.Doe@Example.COM").await, by_email);
    let done = app
        .app
        .admin_post(Some(&admin), "/admin/erase", Some(&admin.csrf), &[("email", " Jane.Doe@example.com ")])
        .await;
    assert_eq!(done.status(), 200);
    let page = done.text().await.unwrap();
    assert!(page.contains("erased: 2 submission(s)"), "{page}");
    assert!(
        page.contains("erased: the body of 1 inbound event(s), 1 inbound conflict(s), 1 quarantined"),
        "{page}"
    );
    let report = page.split_once("erase-report").expect(&page).1;
    let (removed, left) = report.split_once("left onceform for a provider").expect(&page);
    assert!(
        removed.contains("file(s) onceform wrote itself")
            && removed.contains(".eml")
            && removed.contains(".json"),
        "{page}"
    );
    assert!(
        left.contains("hook:helpdesk:out SENT external_ref=helpdesk:out:T-1:0"),
        "the forward left: {page}"
    );
    for local in
        ["crm_lead", "confirmation_email", "owner_notification", "hook:helpdesk:lead", "hook:helpdesk:tell"]
    {
        assert!(
            !left.contains(&format!("  {local} ")),
            "{local} was a file onceform wrote, not a provider's: {page}"
        );
    }

    // After: nothing of her in any table or any file.
    let lower_event = "jane.doe@example.com";
    for needle in [
        EMAIL,
        lower_event,
        "Jane.Doe@Example.COM",
        NAME,
        PHONE,
        PHONE_NORMALISED,
        JOURNEY,
        "Doe & Co",
        "X200",
    ] {
        let found = text_columns_containing(&app.app, backend, needle).await;
        assert!(found.is_empty(), "`{needle}` is still in {found:?}");
        for dir in [data.join("mail"), data.join("crm")] {
            let files = files_containing(&dir, needle);
            assert!(files.is_empty(), "`{needle}` is still in {files:?}");
        }
    }
    let her_keys = keys.to_vec();
    let logged: i64 = app
        .app
        .query(move |pool| {
            with_conn!(pool, |c| deliveries::table
                .filter(deliveries::operation_id.eq_any(&her_keys))
                .count()
                .get_result(c)
                .map_err(DbError::from))
        })
        .await;
    assert_eq!(logged, 0, "the delivery log's rows of her submissions are gone");
    // Others stay, in the tables and in the files.
    assert!(!text_columns_containing(&app.app, backend, "lin@example.net").await.is_empty());
    assert!(!files_containing(&data.join("mail"), "lin@example.net").is_empty());
    assert!(!files_containing(&data.join("crm"), "lin@example.net").is_empty());
    let _ = std::fs::remove_dir_all(&data);
}

/// `onceform erase --phone`: found by the phone's digest in the form, and by the number as
/// typed in an inbound body; the command line removes the files its configuration names.
async fn erasing_by_phone_on_the_command_line_leaves_nothing_of_the_person(backend: Backend) {
    let data = std::env::temp_dir().join(format!("onceform-erase-{}", uuid::Uuid::new_v4().simple()));
    let receiver = Receiver::start().await;
    let (app, toml) = app_writing_files(backend, &data, &receiver).await;
    let (email, phone, name) = ("max.muster@example.org", "+41 79 555 12 34", "Max Muster");
    let form =
        json!({"name": name, "email": email, "phone": phone, "topic": "Support", "message": "Call me back"});
    assert_eq!(app.app.submit(&new_key(), &form).await.status(), 201);
    let event = json!({"id": "P-1", "caller": {"phone": phone, "name": name, "email": email}}).to_string();
    assert_eq!(app.post_signed("helpdesk", WHSEC, "msg_p1", &event).await.status(), 200);
    settle(&app).await;
    for needle in [email, phone, name] {
        assert!(!text_columns_containing(&app.app, backend, needle).await.is_empty(), "{needle} seeded");
    }
    for needle in [email, name] {
        assert!(!files_containing(&data, needle).is_empty(), "{needle} in a file");
    }

    let out = onceform_with(&app.app, &toml, &["erase", "--phone", "+41 79 555 12 34"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        text.contains("erased: 1 submission(s)") && text.contains("erased: the body of 1 inbound event(s)"),
        "{text}"
    );
    assert!(text.contains("hook:helpdesk:out SENT external_ref=helpdesk:out:P-1:0"), "{text}");
    for needle in [email, phone, "+41795551234", name] {
        let found = text_columns_containing(&app.app, backend, needle).await;
        assert!(found.is_empty(), "`{needle}` is still in {found:?}");
        let files = files_containing(&data, needle);
        assert!(files.is_empty(), "`{needle}` is still in {files:?}");
    }
    let _ = std::fs::remove_dir_all(&data);
}
