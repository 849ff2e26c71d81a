//! `/admin/forms`: the forms in force with their snippet (escaped), and the "Reload
//! configuration" button, which reads the file again as `SIGHUP` does (a broken file changes
//! nothing and is reported on the page and the dashboard).

use std::path::PathBuf;

use onceform::config::Config;
use onceform::services::accounts::Role;
use onceform::services::reload::ConfigSource;

use crate::on_both_backends;
use crate::support::admin::assert_guarded;
use crate::support::{inquiry, new_key, spawn_app, spawn_from, test_config, Backend, TestApp, TestDb};

on_both_backends!(
    the_page_lists_each_form_with_its_snippet_escaped,
    the_reload_button_puts_a_good_file_in_force_and_reports_a_broken_one,
    a_test_submission_is_stored_as_test_with_no_effects_and_no_duplicate,
);

const CONTACT: &str = r#"
[forms.contact]
title = "Contact <script>alert(1)</script>"
effects = []
honeypot = ""
min_fill_seconds = 0
[[forms.contact.fields]]
name = "email"
type = "email"
required = true
[[forms.contact.fields]]
name = "topic"
type = "select"
options = ["Sales", "Support"]
[[forms.contact.fields]]
name = "message"
type = "textarea"
label = "Your <b>message</b>"
[[forms.contact.routes]]
name = "sales"
when = { topic = "Sales" }
"#;

const QUOTE: &str = r#"
[forms.quote]
title = "Quote"
effects = []
honeypot = ""
[[forms.quote.fields]]
name = "email"
type = "email"
required = true
"#;

/// The app with its forms read from a file of their own (`text`), which a reload reads again.
async fn spawn_with_file(backend: Backend, text: &str) -> (TestApp, PathBuf) {
    let db = TestDb::new(backend);
    let mut config = test_config(&db.url);
    let dir = std::env::temp_dir().join(format!("onceform-forms-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("onceform.toml");
    std::fs::write(&path, text).unwrap();
    config.forms = Config::parse(text).unwrap().forms;
    let app = spawn_from(db, config, ConfigSource::File(path.clone())).await;
    (app, path)
}

async fn page(app: &TestApp, session: &crate::support::admin::AdminSession) -> String {
    let resp = app.admin_get(Some(session), "/admin/forms").await;
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}

async fn the_page_lists_each_form_with_its_snippet_escaped(backend: Backend) {
    let (app, _) = spawn_with_file(backend, CONTACT).await;
    assert_eq!(app.admin_get(None, "/admin/forms").await.status(), 303, "no session → sign in");
    let viewer = app.sign_in(Role::Viewer).await;
    let html = page(&app, &viewer).await;
    assert!(html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"), "{html}");
    assert!(!html.contains("<script>alert"), "a title is shown escaped");
    for needle in [
        "<code>email</code>",
        "<td>select</td>",
        "Sales, Support",
        "<td>sales</td>",
        "topic = Sales",
        "content kept, keys kept",
        "Defined in the configuration file",
        "/admin/forms/contact/versions",
    ] {
        assert!(html.contains(needle), "missing {needle:?}:\n{html}");
    }
    let version = app.forms.now().get("contact").unwrap().version().unwrap().to_string();
    assert!(html.contains(&format!("<code class=\"version\">{version}</code>")), "{html}");
    // The snippet, escaped once for the page: a form element posting to this server and the
    // script with the form's messages; a label's markup is escaped inside it too.
    let snippet = format!("&#60;form data-onceform=&#34;{}/f/contact&#34;&#62;", app.address);
    assert!(html.contains(&snippet), "missing {snippet:?}:\n{html}");
    assert!(
        html.contains(&format!("&#60;script src=&#34;{}/embed.js?form=contact&#34; defer&#62;", app.address))
    );
    assert!(html.contains("Your &#38;#60;b&#38;#62;message"), "{html}");
    assert!(html.contains("&#60;select id=&#34;topic&#34; name=&#34;topic&#34;&#62;"), "{html}");
    assert!(!html.contains("Reload configuration"), "a viewer has no reload button");
    let admin = app.sign_in(Role::Admin).await;
    assert!(page(&app, &admin).await.contains("Reload configuration"));
}

async fn the_reload_button_puts_a_good_file_in_force_and_reports_a_broken_one(backend: Backend) {
    let (app, path) = spawn_with_file(backend, CONTACT).await;
    let admin = app.sign_in(Role::Admin).await;
    let viewer = app.sign_in(Role::Viewer).await;
    assert_eq!(app.client.get(app.url("/f/quote")).send().await.unwrap().status(), 404);

    // A good file: the viewer cannot press the button, the admin can (audited once).
    std::fs::write(&path, format!("{CONTACT}{QUOTE}")).unwrap();
    let ok = assert_guarded(&app, &admin, &viewer, "/admin/forms/reload", &[]).await;
    let location = ok.headers()["location"].to_str().unwrap().to_string();
    assert_eq!(location, "/admin/forms?flash=config_reloaded%7E2");
    let html = app.admin_get(Some(&admin), &location).await.text().await.unwrap();
    assert!(html.contains("Configuration reloaded: 2 form(s) in force."), "{html}");
    assert!(html.contains("id=\"form-quote\""), "{html}");
    assert_eq!(app.client.get(app.url("/f/quote")).send().await.unwrap().status(), 200);

    // A broken file: nothing changes; the error is on the page and stays on the dashboard.
    std::fs::write(&path, format!("{CONTACT}[forms.contact.nonsense]\nx = 1\n")).unwrap();
    let before = app.forms.now();
    let refused = app.admin_post(Some(&admin), "/admin/forms/reload", Some(&admin.csrf), &[]).await;
    assert_eq!(refused.status(), 303);
    assert_eq!(refused.headers()["location"], "/admin/forms?flash=config_not_reloaded");
    assert!(std::sync::Arc::ptr_eq(&before, &app.forms.now()), "a broken file changes nothing");
    assert_eq!(app.client.get(app.url("/f/quote")).send().await.unwrap().status(), 200);
    let html =
        app.admin_get(Some(&admin), "/admin/forms?flash=config_not_reloaded").await.text().await.unwrap();
    assert!(html.contains("The configuration was not reloaded"), "{html}");
    assert!(html.contains("id=\"reload-error\"") && html.contains("nonsense"), "{html}");
    let dashboard = app.admin_get(Some(&admin), "/admin").await.text().await.unwrap();
    assert!(dashboard.contains("id=\"reload-error\"") && dashboard.contains("nonsense"), "{dashboard}");
    assert_eq!(app.forms.failures(), 1);
}

/// (id, test) of every submission, oldest first, and the side-effect records of each.
async fn stored(app: &TestApp) -> Vec<(String, bool, i64)> {
    use diesel::prelude::*;
    use onceform::db::schema::{side_effects as e, submissions as s};
    app.query(|pool| {
        onceform::with_conn!(pool, |c| {
            let rows: Vec<(String, bool)> =
                s::table.order((s::received_at, s::id)).select((s::id, s::test)).load(c)?;
            let mut out = Vec::new();
            for (id, test) in rows {
                let n: i64 = e::table.filter(e::submission_id.eq(&id)).count().get_result(c)?;
                out.push((id, test, n));
            }
            Ok::<_, onceform::db::DbError>(out)
        })
    })
    .await
}

async fn a_test_submission_is_stored_as_test_with_no_effects_and_no_duplicate(backend: Backend) {
    let app = spawn_app(backend).await;
    let admin = app.sign_in(Role::Admin).await;
    let viewer = app.sign_in(Role::Viewer).await;
    let preview = app.admin_get(Some(&viewer), "/admin/forms/contact/preview").await;
    assert_eq!(preview.status(), 200);
    let html = preview.text().await.unwrap();
    assert!(html.contains("href=\"/f/contact\"") && !html.contains("id=\"test-form\""), "{html}");
    assert!(app
        .admin_get(Some(&admin), "/admin/forms/contact/preview")
        .await
        .text()
        .await
        .unwrap()
        .contains("id=\"test-form\""));
    assert_eq!(app.admin_get(Some(&admin), "/admin/forms/nope/preview").await.status(), 404);

    // The contact form's fields as an admin types them; a viewer cannot send them.
    let fields = [
        ("name", "Ada Lovelace"),
        ("email", "ada@example.com"),
        ("company", "Analytical Engines"),
        ("topic", "Sales"),
        ("message", "a test from the admin"),
    ];
    let ok = assert_guarded(&app, &admin, &viewer, "/admin/forms/contact/test", &fields).await;
    let location = ok.headers()["location"].to_str().unwrap().to_string();
    assert!(
        location.starts_with("/admin/submissions/") && location.ends_with("?flash=test_submitted"),
        "{location}"
    );
    let detail = app.admin_get(Some(&admin), &location).await.text().await.unwrap();
    assert!(detail.contains("id=\"test\"") && detail.contains("Test submission stored"), "{detail}");
    let rows = stored(&app).await;
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].1, rows[0].2), (true, 0), "marked test, with no side-effect record");
    assert!(location.contains(&rows[0].0));

    // The same person then submits for real: a submission with its effects, and no pair with
    // the test (the test is neither screened nor found).
    assert_eq!(app.submit(&new_key(), &inquiry("a test from the admin")).await.status(), 201);
    let rows = stored(&app).await;
    assert_eq!(rows.len(), 2);
    assert!(!rows[1].1 && rows[1].2 > 0, "a visitor's submission takes its effects: {rows:?}");
    assert_eq!(app.screened_pairs().await, Vec::new(), "a test is never a duplicate's original");
    let list = app.admin_get(Some(&admin), "/admin/submissions").await.text().await.unwrap();
    assert_eq!(list.matches("<span class=\"badge test\">test</span>").count(), 1, "{list}");

    // Invalid fields: nothing stored, the problems shown beside the form.
    let bad = app
        .admin_post(
            Some(&admin),
            "/admin/forms/contact/test",
            Some(&admin.csrf),
            &[("email", "not an email")],
        )
        .await;
    assert_eq!(bad.status(), 422);
    let html = bad.text().await.unwrap();
    assert!(html.contains("id=\"test-problems\""), "{html}");
    assert_eq!(stored(&app).await.len(), 2);
}
