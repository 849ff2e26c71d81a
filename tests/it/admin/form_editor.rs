//! Forms created and edited in the admin (`/admin/forms/new`, `/admin/forms/{form}/edit`):
//! a new form accepts submissions at once and a worker delivers its effects; an edit is a
//! new version (audited) under which a retry of an earlier operation still replays and a
//! changed retry is a conflict; a bad edit changes nothing and says why at its line; a form
//! the configuration file defines is read-only; every other process (`serve`, `worker`)
//! puts an edit in force without a restart. A form made in the admin is deleted there
//! (audited, its submissions kept), but not while its submissions have effects to deliver.

use std::time::{Duration, Instant};

use diesel::prelude::*;
use onceform::db::schema::{audit_log, form_versions, side_effects};
use onceform::db::DbError;
use onceform::services::accounts::Role;
use onceform::services::worker::Worker;
use onceform::with_conn;
use serde_json::{json, Value};

use crate::on_both_backends;
use crate::support::admin::{assert_guarded, AdminSession};
use crate::support::delivery::spawn_delivery_app;
use crate::support::smtp::SmtpSink;
use crate::support::worker_process::WorkerProcess;
use crate::support::{new_key, spawn_app, spawn_on, test_config, Backend, TestApp, TestDb};

on_both_backends!(
    a_form_made_in_the_admin_is_in_force_at_once_and_each_edit_is_an_audited_version,
    a_bad_edit_changes_nothing_and_says_why_at_its_line,
    a_form_the_file_defines_is_read_only_in_the_admin,
    another_serve_process_and_a_worker_process_take_an_admin_edit_without_restart,
    a_reload_of_the_file_keeps_the_admin_forms_and_the_file_wins_a_name,
    the_forms_pages_speak_the_admins_language,
    a_form_made_in_the_admin_is_deleted_once_its_effects_are_finished,
);

/// The form an admin makes: an owner notification to sales@example.com.
const QUOTE: &str = r#"# made in the admin
[forms.quote]
title = "Quote <b>now</b>"
effects = ["owner_notification"]
notify = ["sales@example.com"]
honeypot = ""
min_fill_seconds = 0
locale = "auto"
locales = ["en", "zh-TW"]

[[forms.quote.fields]]
name = "email"
type = "email"
required = true

[[forms.quote.fields]]
name = "message"
type = "textarea"

[forms.quote.texts.zh-TW]
title = "報價"
"#;

/// `QUOTE` with one more field, required.
fn with_company() -> String {
    format!("{QUOTE}\n[[forms.quote.fields]]\nname = \"company\"\ntype = \"text\"\nrequired = true\n")
        .replace("[forms.quote.texts.zh-TW]\ntitle = \"報價\"\n", "")
        + "\n[forms.quote.texts.zh-TW]\ntitle = \"報價\"\n"
}

async fn submit(app_url: &str, client: &reqwest::Client, key: &str, body: &Value) -> reqwest::Response {
    client
        .post(format!("{app_url}/api/forms/quote/submissions"))
        .header("Idempotency-Key", key)
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn save(
    app: &TestApp,
    admin: &AdminSession,
    path: &str,
    source: &str,
    base: &str,
) -> reqwest::Response {
    app.admin_post(Some(admin), path, Some(&admin.csrf), &[("source", source), ("base", base)]).await
}

/// `save`, which must be taken (a 303; else the page that says why fails the test); where
/// it leads.
async fn saved(app: &TestApp, admin: &AdminSession, path: &str, source: &str, base: &str) -> String {
    let resp = save(app, admin, path, source, base).await;
    let status = resp.status();
    let location = resp.headers().get("location").map(|l| l.to_str().unwrap().to_string());
    match location {
        Some(location) if status == 303 => location,
        _ => panic!("{path}: {status}\n{}", resp.text().await.unwrap()),
    }
}

/// The version of `form` in force in `app`.
fn version(app: &TestApp, form: &str) -> Option<String> {
    app.forms.now().get(form).and_then(|f| f.version().map(String::from))
}

/// How many versions of `form` are stored, and the audit rows of `action` on it.
async fn stored(app: &TestApp, form: &str, action: &str) -> (i64, i64) {
    let (form, action) = (form.to_string(), action.to_string());
    app.query(move |pool| {
        with_conn!(pool, |c| {
            let versions =
                form_versions::table.filter(form_versions::form.eq(&form)).count().get_result::<i64>(c)?;
            let audited = audit_log::table
                .filter(audit_log::action.eq(&action))
                .filter(audit_log::target_id.eq(&form))
                .count()
                .get_result::<i64>(c)?;
            Ok::<_, DbError>((versions, audited))
        })
    })
    .await
}

/// Delivers every waiting effect with a worker built from the forms in force now.
async fn deliver_with_the_forms_in_force(d: &crate::support::delivery::DeliveryApp) {
    let app = &d.app;
    let registry =
        onceform::app::registry(app.forms.now().config.clone(), crate::support::test_keyring()).unwrap();
    let worker =
        Worker::new(onceform::db::Writes::pooled(app.pool.clone()), registry, app.config.worker.clone());
    d.settle(&worker).await;
}

async fn wait_until(what: &str, limit: Duration, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn a_form_made_in_the_admin_is_in_force_at_once_and_each_edit_is_an_audited_version(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let app = &d.app;
    let (admin, viewer) = (app.sign_in(Role::Admin).await, app.sign_in(Role::Viewer).await);
    assert_eq!(app.client.get(app.url("/f/quote")).send().await.unwrap().status(), 404);

    // The new form's editor; a viewer sees it read-only. Saving is guarded (no session, a
    // viewer, no or a wrong CSRF token: refused, not audited) and audited once.
    let editor = app.admin_get(Some(&admin), "/admin/forms/new").await.text().await.unwrap();
    assert!(editor.contains("<textarea id=\"source\" name=\"source\"") && editor.contains("id=\"save\""));
    let read_only = app.admin_get(Some(&viewer), "/admin/forms/new").await.text().await.unwrap();
    assert!(read_only.contains(" readonly>") && !read_only.contains("id=\"save\""), "{read_only}");
    let ok = assert_guarded(app, &admin, &viewer, "/admin/forms/new", &[("source", QUOTE)]).await;
    assert_eq!(ok.headers()["location"], "/admin/forms?flash=form_created");
    let v1 = version(app, "quote").expect("in force at once");
    assert_eq!(stored(app, "quote", "form.create").await, (1, 1), "one version, one audit row");

    // It accepts a submission over HTTP at once, under its version, and a worker delivers
    // its owner notification with its settings.
    let key = new_key();
    let body = json!({"email": "ada@example.com", "message": "Ten of them"});
    let first = submit(&app.address, &app.client, &key, &body).await;
    assert_eq!(first.status(), 201);
    let first: Value = first.json().await.unwrap();
    assert_eq!(first["version"], v1.as_str(), "{first}");
    deliver_with_the_forms_in_force(&d).await;
    assert_eq!(d.effect(&key, "owner_notification").await.state, "SENT");
    let mail = d.smtp.messages();
    assert!(mail.len() == 1 && mail[0].contains("sales@example.com"), "{mail:?}");

    // The list says where it was defined and who saved it, escaped.
    let list = app.admin_get(Some(&admin), "/admin/forms?flash=form_created").await.text().await.unwrap();
    assert!(list.contains("Form created: it is in force."), "{list}");
    assert!(list.contains("Quote &#60;b&#62;now&#60;/b&#62;") && !list.contains("<b>now"), "{list}");
    assert!(list.contains("Defined in the admin, saved by admin-"), "{list}");
    assert!(list.contains("href=\"/admin/forms/quote/edit\""), "{list}");

    // An edit (a required field more): a new version in force, audited; the editor shows the
    // text as saved, comments and all.
    let editor = app.admin_get(Some(&admin), "/admin/forms/quote/edit").await.text().await.unwrap();
    assert!(editor.contains("# made in the admin") && editor.contains("Quote &#60;b&#62;now"), "{editor}");
    assert!(editor.contains(&format!("name=\"base\" value=\"{v1}\"")), "{editor}");
    let edited = save(app, &admin, "/admin/forms/quote/edit", &with_company(), &v1).await;
    assert_eq!(edited.headers()["location"], "/admin/forms?flash=form_saved");
    let v2 = version(app, "quote").unwrap();
    assert_ne!(v1, v2);
    assert_eq!(stored(app, "quote", "form.edit").await, (2, 1));
    let versions = app.admin_get(Some(&viewer), "/admin/forms/quote/versions").await.text().await.unwrap();
    assert!(versions.contains(&v1) && versions.contains(&v2) && versions.contains("+ "), "{versions}");

    // The earlier operation's retry replays (the live form would now refuse it: no
    // company); a changed retry is a conflict judged against the old version; a new key is
    // judged by the new one.
    let replay = submit(&app.address, &app.client, &key, &body).await;
    assert_eq!(replay.status(), 200);
    assert_eq!(replay.json::<Value>().await.unwrap(), first, "the stored body, its version");
    let changed = json!({"email": "ada@example.com", "message": "Eleven of them"});
    assert_eq!(submit(&app.address, &app.client, &key, &changed).await.status(), 409);
    assert_eq!(submit(&app.address, &app.client, &new_key(), &body).await.status(), 422);
    let with = json!({"email": "ada@example.com", "message": "x", "company": "Engines"});
    let second = submit(&app.address, &app.client, &new_key(), &with).await;
    assert_eq!(second.status(), 201);
    assert_eq!(second.json::<Value>().await.unwrap()["version"], v2.as_str());

    // Saving the same definition again (a comment changed) makes no version and no audit row.
    let before = app.audit_count().await;
    let same =
        save(app, &admin, "/admin/forms/quote/edit", &with_company().replace("# made", "# still made"), &v2)
            .await;
    assert_eq!(same.headers()["location"], "/admin/forms?flash=form_unchanged");
    assert_eq!((version(app, "quote").unwrap(), app.audit_count().await), (v2.clone(), before));
    assert_eq!(stored(app, "quote", "form.edit").await, (2, 1));

    // An editor opened on v1 cannot overwrite v2; a new form cannot take an existing name.
    let stale = save(app, &admin, "/admin/forms/quote/edit", QUOTE, &v1).await;
    assert_eq!(stale.status(), 422);
    assert!(stale.text().await.unwrap().contains("since this editor was opened"));
    let taken = save(app, &admin, "/admin/forms/new", QUOTE, "").await;
    assert_eq!(taken.status(), 422);
    assert!(taken.text().await.unwrap().contains("a form of this name exists"));
    assert_eq!(version(app, "quote").unwrap(), v2);
    let effects: i64 = app
        .query(|pool| with_conn!(pool, |c| side_effects::table.count().get_result(c).map_err(DbError::from)))
        .await;
    assert_eq!(effects, 2, "one notification per accepted submission");
}

async fn a_bad_edit_changes_nothing_and_says_why_at_its_line(backend: Backend) {
    let app = spawn_app(backend).await;
    let admin = app.sign_in(Role::Admin).await;
    saved(&app, &admin, "/admin/forms/new", QUOTE, "").await;
    let v1 = version(&app, "quote").unwrap();
    let (in_force, audited) = (app.forms.now(), app.audit_count().await);

    // An effect kind the server has no settings for, a bad field name, an unknown key, a
    // misnamed form, another form's section: each refused with the rule's words at its line,
    // the text shown again (escaped), nothing stored.
    let cases: [(String, &str); 5] = [
        (
            QUOTE.replace("[\"owner_notification\"]", "[\"owner_notification\", \"slack\"]"),
            "line 4: forms.quote.slack",
        ),
        (
            QUOTE.replace("name = \"message\"", "name = \"Message <x>\""),
            "line 16: forms.quote.fields[1] (Message &#60;x&#62;).name",
        ),
        (
            QUOTE.replace("title = \"Quote", "titel = \"x\"\ntitle = \"Quote"),
            "line 3: forms.quote: unknown field `titel` (did you mean `title`?)",
        ),
        (
            QUOTE.replace("forms.quote", "forms.other"),
            "the text defines the form `other`; this is the form `quote`",
        ),
        (format!("{QUOTE}[server]\nbind = \"0.0.0.0:80\"\n"), "`server`: only one form&#39;s section"),
    ];
    for (text, why) in &cases {
        let refused = save(&app, &admin, "/admin/forms/quote/edit", text, &v1).await;
        assert_eq!(refused.status(), 422, "{why}");
        let html = refused.text().await.unwrap();
        assert!(html.contains("id=\"problems\"") && html.contains(why), "missing {why:?}:\n{html}");
        assert!(html.contains("Quote &#60;b&#62;now") && !html.contains("<b>now"), "the text again, escaped");
    }
    assert!(std::sync::Arc::ptr_eq(&in_force, &app.forms.now()), "nothing changed in force");
    assert_eq!((version(&app, "quote").unwrap(), app.audit_count().await), (v1, audited));
    assert_eq!(stored(&app, "quote", "form.edit").await, (1, 0));

    // A new form's name follows the file's rule.
    let bad_name = QUOTE.replace("forms.quote", "forms.Quote!");
    let refused =
        save(&app, &admin, "/admin/forms/new", &bad_name.replace("[forms.Quote!", "[forms.\"Quote!\""), "")
            .await;
    assert_eq!(refused.status(), 422);
    assert!(refused.text().await.unwrap().contains("a form name uses 1 to 64 of a-z 0-9 _ -"));
}

async fn a_form_the_file_defines_is_read_only_in_the_admin(backend: Backend) {
    let app = spawn_app(backend).await;
    let (admin, viewer) = (app.sign_in(Role::Admin).await, app.sign_in(Role::Viewer).await);
    let v = version(&app, "contact").unwrap();
    let list = app.admin_get(Some(&admin), "/admin/forms").await.text().await.unwrap();
    assert!(
        list.contains("Defined in the configuration file (read-only here).")
            && !list.contains("/admin/forms/contact/edit")
    );

    // Its editor says so and offers nothing to save; a save is refused (409) and changes
    // nothing, and so is a "new" form of its name.
    let page = app.admin_get(Some(&admin), "/admin/forms/contact/edit").await.text().await.unwrap();
    assert!(page.contains("id=\"in-file\"") && !page.contains("<textarea"), "{page}");
    let contact =
        "[forms.contact]\ntitle = \"Mine\"\n[[forms.contact.fields]]\nname = \"email\"\ntype = \"email\"\n";
    let audited = app.audit_count().await;
    assert_eq!(save(&app, &admin, "/admin/forms/contact/edit", contact, "").await.status(), 409);
    assert_eq!(
        app.admin_post(
            Some(&viewer),
            "/admin/forms/contact/edit",
            Some(&viewer.csrf),
            &[("source", contact)]
        )
        .await
        .status(),
        403
    );
    let new = save(&app, &admin, "/admin/forms/new", contact, "").await;
    assert_eq!(new.status(), 422);
    assert!(new.text().await.unwrap().contains("the configuration file defines this form"));
    assert_eq!((version(&app, "contact").unwrap(), app.audit_count().await), (v.clone(), audited));

    // A stored form of the file's name (saved before the file named it) is ignored, and the
    // page says so.
    let (name, source) = ("contact".to_string(), contact.to_string());
    app.query(move |pool| {
        with_conn!(pool, |c| {
            use onceform::db::admin_forms::{AdminFormRow, AdminForms};
            c.put_admin_form(&AdminFormRow {
                name,
                source,
                version: "0123456789abcdef".into(),
                saved_by: "someone@example.com".into(),
                saved_at: chrono::Utc::now().naive_utc(),
            })
            .map_err(DbError::from)
        })
    })
    .await;
    assert!(onceform::services::admin_forms::refresh(&app.forms, &app.pool).unwrap());
    assert_eq!(version(&app, "contact").unwrap(), v, "the file's contact stays in force");
    let list = app.admin_get(Some(&viewer), "/admin/forms").await.text().await.unwrap();
    assert!(list.contains("id=\"ignored\"") && list.contains("the file is authoritative"), "{list}");
}

async fn another_serve_process_and_a_worker_process_take_an_admin_edit_without_restart(backend: Backend) {
    let db = TestDb::new(backend);
    let smtp = SmtpSink::start().await;
    let url = db.url.clone();
    // A worker process on the same database, its file naming only the demo form.
    let crm = crate::support::crm::FakeCrm::start().await;
    let path = crate::delivery::workers::config_file(&db, &crm, &smtp, 30);
    let worker = WorkerProcess::start(&path);
    let mut config = test_config(&url);
    config.smtp.url = Some(smtp.url.clone());
    let a = spawn_on(db, config).await;
    let b = spawn_on(TestDb::external(url.clone()), test_config(&url)).await;
    let admin = a.sign_in(Role::Admin).await;

    assert_eq!(save(&a, &admin, "/admin/forms/new", QUOTE, "").await.status(), 303);
    let v1 = version(&a, "quote").unwrap();
    wait_until("B serves the new form", Duration::from_secs(10), async || {
        version(&b, "quote").as_deref() == Some(v1.as_str())
    })
    .await;
    assert_eq!(b.client.get(b.url("/f/quote")).send().await.unwrap().status(), 200);

    // Accepted by B at once; the worker process, started before the form existed, delivers
    // its notification with its settings.
    let key = new_key();
    let body = json!({"email": "grace@example.com", "message": "from B"});
    assert_eq!(submit(&b.address, &b.client, &key, &body).await.status(), 201);
    wait_until("the worker delivers", Duration::from_secs(20), async || {
        smtp.messages().iter().any(|m| m.contains("sales@example.com"))
    })
    .await;

    // An edit on A: B takes the new version; a retry on B of the earlier operation replays.
    assert_eq!(save(&a, &admin, "/admin/forms/quote/edit", &with_company(), &v1).await.status(), 303);
    let v2 = version(&a, "quote").unwrap();
    wait_until("B takes the edit", Duration::from_secs(10), async || {
        version(&b, "quote").as_deref() == Some(v2.as_str())
    })
    .await;
    assert_eq!(submit(&b.address, &b.client, &key, &body).await.status(), 200);
    let changed = json!({"email": "grace@example.com", "message": "changed"});
    assert_eq!(submit(&b.address, &b.client, &key, &changed).await.status(), 409);
    drop(worker);
}

async fn a_reload_of_the_file_keeps_the_admin_forms_and_the_file_wins_a_name(backend: Backend) {
    use onceform::config::Config;
    let db = TestDb::new(backend);
    let mut config = test_config(&db.url);
    let path = std::env::temp_dir().join(format!("onceform-formedit-{}.toml", uuid::Uuid::new_v4().simple()));
    let contact = &onceform::config::DEFAULT_CONFIG
        [onceform::config::DEFAULT_CONFIG.find("[forms.contact]").unwrap()..];
    std::fs::write(&path, contact).unwrap();
    config.forms = Config::parse(contact).unwrap().forms;
    let source = onceform::services::reload::ConfigSource::File(path.clone());
    let app = crate::support::spawn_from(db, config, source).await;
    let admin = app.sign_in(Role::Admin).await;
    saved(&app, &admin, "/admin/forms/new", QUOTE, "").await;
    let v1 = version(&app, "quote").unwrap();

    // The reload button re-reads the file and merges the stored forms again.
    let reloaded = app.admin_post(Some(&admin), "/admin/forms/reload", Some(&admin.csrf), &[]).await;
    assert_eq!(reloaded.headers()["location"], "/admin/forms?flash=config_reloaded%7E2");
    assert_eq!(version(&app, "quote").as_deref(), Some(v1.as_str()), "the admin's form stays in force");

    // The file now names `quote` too: the file's form is in force, the admin's ignored.
    let file_quote = "[forms.quote]\ntitle = \"From the file\"\n[[forms.quote.fields]]\nname = \"email\"\ntype = \"email\"\n";
    std::fs::write(&path, format!("{contact}\n{file_quote}")).unwrap();
    let reloaded = app.admin_post(Some(&admin), "/admin/forms/reload", Some(&admin.csrf), &[]).await;
    assert_eq!(reloaded.headers()["location"], "/admin/forms?flash=config_reloaded%7E2");
    let quote = app.forms.now().get("quote").cloned().unwrap();
    assert_eq!((quote.title.as_str(), quote.origin.is_file()), ("From the file", true));
    let list = app.admin_get(Some(&admin), "/admin/forms").await.text().await.unwrap();
    assert!(list.contains("id=\"ignored\"") && list.contains("the file is authoritative"), "{list}");
    assert_eq!(save(&app, &admin, "/admin/forms/quote/edit", QUOTE, &v1).await.status(), 409);
    let _ = std::fs::remove_file(&path);
}

async fn the_forms_pages_speak_the_admins_language(backend: Backend) {
    use onceform::base::i18n::Locale;
    let english = [
        "Defined in the configuration file",
        "Reload configuration",
        "New form",
        "Definition (TOML)",
        "Test submission",
        "Send a test submission",
        "Retention:",
    ];
    for (locale, words) in [
        (Locale::ZhTw, ["由設定檔定義", "重新載入設定", "新增表單", "定義（TOML）", "送出測試提交"]),
        (Locale::ZhCn, ["由配置文件定义", "重新加载配置", "新建表单", "定义（TOML）", "发送测试提交"]),
        (
            Locale::Ja,
            ["設定ファイルで定義", "設定を再読み込み", "新しいフォーム", "定義（TOML）", "テスト送信する"],
        ),
    ] {
        let app = crate::support::spawn_app_with(backend, |c| c.admin.locale = locale).await;
        let admin = app.sign_in(Role::Admin).await;
        let mut text = String::new();
        for path in ["/admin/forms", "/admin/forms/new", "/admin/forms/contact/preview"] {
            let resp = app.admin_get(Some(&admin), path).await;
            assert_eq!(resp.status(), 200, "{path}");
            text.push_str(&resp.text().await.unwrap());
        }
        for word in words {
            assert!(text.contains(word), "{locale:?}: missing {word:?}");
        }
        for word in english {
            assert!(!text.contains(word), "{locale:?}: English {word:?} left");
        }
        assert!(!text.contains("admin-form"), "{locale:?}: a key shown as such");
    }
}

async fn a_form_made_in_the_admin_is_deleted_once_its_effects_are_finished(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let app = &d.app;
    let (admin, viewer) = (app.sign_in(Role::Admin).await, app.sign_in(Role::Viewer).await);
    saved(app, &admin, "/admin/forms/new", QUOTE, "").await;
    let v1 = version(app, "quote").unwrap();
    let key = new_key();
    let body = json!({"email": "ada@example.com", "message": "Ten of them"});
    assert_eq!(submit(&app.address, &app.client, &key, &body).await.status(), 201);
    let path = "/admin/forms/quote/delete";
    let editor = app.admin_get(Some(&admin), "/admin/forms/quote/edit").await.text().await.unwrap();
    assert!(
        editor.contains("action=\"/admin/forms/quote/delete\"") && editor.contains("id=\"delete-button\"")
    );
    let viewers = app.admin_get(Some(&viewer), "/admin/forms/quote/edit").await.text().await.unwrap();
    assert!(!viewers.contains("id=\"delete-button\""), "a viewer is offered no delete");

    // Refused, each saying why, with nothing changed: without the confirmation; opened on a
    // version since replaced; while its owner notification waits for the worker.
    let audited = app.audit_count().await;
    let refusals = [
        (vec![("base", v1.as_str())], 422, "Tick the confirmation"),
        (vec![("base", "0123456789abcdef"), ("confirm", "yes")], 409, "since this editor was opened"),
        (
            vec![("base", v1.as_str()), ("confirm", "yes")],
            409,
            "1 effects of its submissions are not finished",
        ),
    ];
    for (form, status, why) in refusals {
        let refused = app.admin_post(Some(&admin), path, Some(&admin.csrf), &form).await;
        assert_eq!(refused.status(), status, "{why}");
        let page = refused.text().await.unwrap();
        assert!(page.contains("id=\"not-deleted\"") && page.contains(why), "{why}:\n{page}");
    }
    assert_eq!((version(app, "quote"), app.audit_count().await), (Some(v1.clone()), audited));

    // Once the worker delivered it, the delete is guarded and audited once; the form is
    // out of force at once, its submission and versions stay.
    deliver_with_the_forms_in_force(&d).await;
    assert_eq!(d.effect(&key, "owner_notification").await.state, "SENT");
    let ok = assert_guarded(app, &admin, &viewer, path, &[("base", &v1), ("confirm", "yes")]).await;
    assert_eq!(ok.headers()["location"], "/admin/forms?flash=form_deleted");
    assert_eq!(version(app, "quote"), None);
    assert_eq!(stored(app, "quote", "form.delete").await, (1, 1), "its version kept, one audit row");
    assert_eq!(app.client.get(app.url("/f/quote")).send().await.unwrap().status(), 404);
    assert_eq!(submit(&app.address, &app.client, &new_key(), &body).await.status(), 404);
    let list = app.admin_get(Some(&admin), "/admin/forms?flash=form_deleted").await.text().await.unwrap();
    assert!(list.contains("Form deleted") && !list.contains("/admin/forms/quote/edit"), "{list}");
    assert_eq!(app.admin_get(Some(&admin), "/admin/forms/quote/edit").await.status(), 404);
    assert_eq!(d.effects(Some(&key)).await.len(), 1, "the submission and its record stay");

    // Deleting it again finds nothing; a form the file defines is not deleted.
    let again =
        app.admin_post(Some(&admin), path, Some(&admin.csrf), &[("base", &v1), ("confirm", "yes")]).await;
    assert_eq!(again.status(), 404);
    let contact = version(app, "contact");
    let file_form = app
        .admin_post(Some(&admin), "/admin/forms/contact/delete", Some(&admin.csrf), &[("confirm", "yes")])
        .await;
    assert_eq!(file_form.status(), 409);
    assert!(file_form.text().await.unwrap().contains("id=\"in-file\""));
    assert!(contact.is_some() && version(app, "contact") == contact, "the file's form stays in force");
}
