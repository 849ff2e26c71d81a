//! The lifecycle on `/metrics` and in the admin: purges, the redelivery spread, the windows,
//! the import upload.

use onceform::services::accounts::Role;

use crate::lifecycle::config_with;
use crate::on_both_backends;
use crate::support::admin::AdminSession;
use crate::support::{inquiry, new_key, spawn_on, Backend, TestApp, TestDb};

on_both_backends!(
    metrics_and_the_retention_page_show_purges_spread_and_windows,
    the_import_page_reports_like_the_command,
    the_import_upload_is_guarded_bounded_audited_and_escaped
);

const WINDOWS: &str = "content = \"90d\"\nkeys = \"400d\"\nmax_retry_age = \"30d\"";

async fn metrics_and_the_retention_page_show_purges_spread_and_windows(backend: Backend) {
    let db = TestDb::new(backend);
    let config = config_with(&db.url, WINDOWS);
    let app = spawn_on(db, config).await;
    let key = new_key();
    for _ in 0..3 {
        assert!(app.submit(&key, &inquiry("Spread me")).await.status().is_success());
    }
    assert_eq!(app.submit(&new_key(), &inquiry("Only once")).await.status(), 201);
    let config = app.config.clone();
    let later = onceform::base::clock::now() + chrono::Duration::days(91);
    let report = app
        .query(move |pool| {
            onceform::services::lifecycle::purge::run_pass(
                &onceform::db::Writes::pooled(pool.clone()),
                &config,
                later,
            )
        })
        .await;
    assert_eq!(report.total(), 2, "both submissions are past 90 days then");

    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("onceform_redelivery_spread_seconds_count{form=\"contact\"} 1"), "{metrics}");
    assert!(metrics.contains("onceform_purged_rows_total{form=\"contact\",kind=\"content\"} 2"), "{metrics}");
    assert!(!metrics.contains("onceform_purge_last_run_timestamp_seconds 0\n"), "{metrics}");
    assert!(metrics.contains("onceform_purge_last_run_duration_seconds"));

    let viewer = app.sign_in(Role::Viewer).await;
    let page = app.admin_get(Some(&viewer), "/admin/retention").await.text().await.unwrap();
    for shown in ["<td>90d</td>", "<td>400d</td>", "<td>30d</td>", " s</td>", "2 / 0 / 0"] {
        assert!(page.contains(shown), "{shown}: {page}");
    }
    let dashboard = app.admin_get(Some(&viewer), "/admin").await.text().await.unwrap();
    assert!(dashboard.contains("id=\"spread\"") && dashboard.contains(" s</td><td>90d</td>"), "{dashboard}");
}

/// Uploads `csv` as the import page's file, after `fields` (the CSRF token first, as a
/// browser sends the page's form).
async fn upload(app: &TestApp, who: &AdminSession, fields: &[(&str, &str)], csv: &str) -> reqwest::Response {
    app.admin_upload(Some(who), "/admin/import", fields, ("csv", "history.csv", csv.as_bytes())).await
}

/// The page's text fields for the contact form: the CSRF token first, as a browser sends them.
fn fields<'a>(csrf: &'a str, source: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![("csrf", csrf), ("form", "contact"), ("source", source)]
}

async fn the_import_page_reports_like_the_command(backend: Backend) {
    let db = TestDb::new(backend);
    let config = config_with(&db.url, "");
    let app = spawn_on(db, config).await;
    let admin = app.sign_in(Role::Admin).await;
    let viewer = app.sign_in(Role::Viewer).await;
    let csv = "name,email,topic,message,received_at\nAda,ada@old.example,Sales,Hello from the past,2025-01-02 10:00:00\n\
               Bob,,Sales,No email,2025-01-02\n";
    assert_eq!(upload(&app, &viewer, &fields(&viewer.csrf, "paste"), csv).await.status(), 403);
    let page = upload(&app, &admin, &fields(&admin.csrf, "paste"), csv).await.text().await.unwrap();
    assert!(page.contains("imported 1, already present 0, rejected 1, paired 0"), "{page}");
    assert!(page.contains("line 3: email is required"), "{page}");
    assert_eq!(app.stats().await.submissions, 1);
    assert_eq!(app.stats().await.effects_total(), 0, "no side effects unless asked");
    let csv = "name,email,topic,message,source_id\nCy,cy@old.example,Support,Please call back,crm-77\n";
    let mut with_effects = fields(&admin.csrf, "paste");
    with_effects.push(("with_effects", "yes"));
    let page = upload(&app, &admin, &with_effects, csv).await;
    assert!(page.text().await.unwrap().contains("imported 1, already present 0"));
    assert_eq!(app.stats().await.effects_total(), 3, "with effects: one record per declared kind");
    let page = upload(&app, &admin, &with_effects, csv).await;
    assert!(
        page.text().await.unwrap().contains("imported 0, already present 1"),
        "the source_id is the row's key"
    );
}

async fn the_import_upload_is_guarded_bounded_audited_and_escaped(backend: Backend) {
    let db = TestDb::new(backend);
    let config = config_with(&db.url, "");
    let app = spawn_on(db, config).await;
    let admin = app.sign_in(Role::Admin).await;
    let viewer = app.sign_in(Role::Viewer).await;
    let page = app.admin_get(Some(&admin), "/admin/import").await.text().await.unwrap();
    for shown in ["enctype=\"multipart/form-data\"", "type=\"file\" name=\"csv\" accept=\".csv,text/csv\""] {
        assert!(page.contains(shown), "{shown}: {page}");
    }
    let csv = "name,email,topic,message\nAda,ada@old.example,Sales,An inquiry from the old CRM\n";
    let audited = app.audit_count().await;

    assert_eq!(upload(&app, &viewer, &fields(&viewer.csrf, "oldcrm"), csv).await.status(), 403, "a viewer");
    let no_token = [("form", "contact"), ("source", "oldcrm")];
    assert_eq!(upload(&app, &admin, &no_token, csv).await.status(), 403, "no CSRF token");
    assert_eq!(
        upload(&app, &admin, &fields("not-the-token", "oldcrm"), csv).await.status(),
        403,
        "a wrong token"
    );
    let anonymous =
        app.admin_upload(None, "/admin/import", &fields(&admin.csrf, "oldcrm"), ("csv", "h.csv", b"x")).await;
    assert_eq!(anonymous.status(), 303, "no session: sign in");

    let mut oversize = String::from("name,email,topic,message\n");
    while oversize.len() <= 4 * 1024 * 1024 {
        let n = oversize.len();
        oversize += &format!("Person {n},p{n}@old.example,Sales,A long enough inquiry to fill the file\n");
    }
    let resp = upload(&app, &admin, &fields(&admin.csrf, "oldcrm"), &oversize).await;
    assert_eq!(resp.status(), 413);
    let page = resp.text().await.unwrap();
    assert!(page.contains("larger than 4 MiB: nothing was imported"), "{page}");

    let mut dry_run = fields(&admin.csrf, "oldcrm");
    dry_run.push(("dry_run", "yes"));
    let page = upload(&app, &admin, &dry_run, csv).await.text().await.unwrap();
    assert!(page.contains("dry run: imported 1, already present 0, rejected 0, paired 0"), "{page}");
    assert_eq!(app.stats().await.submissions, 0, "refused uploads and a dry run import nothing");
    assert_eq!(app.audit_count().await, audited + 1, "the dry run is audited, the refusals are not");

    let hostile =
        "name,email,topic,message,received_at\nAda,ada@old.example,Sales,An inquiry from the old CRM,\n\
                   Eve,eve@old.example,Sales,Hello,<script>alert(1)</script>\n";
    let page = upload(&app, &admin, &fields(&admin.csrf, "oldcrm"), hostile).await.text().await.unwrap();
    assert!(page.contains("imported 1, already present 0, rejected 1, paired 0"), "{page}");
    assert!(page.contains("line 3: received_at") && page.contains("alert(1)"), "{page}");
    assert!(!page.contains("<script>alert(1)"), "the report is escaped: {page}");
    assert_eq!(app.stats().await.submissions, 1);
    assert_eq!(app.audit_count().await, audited + 2, "each import is audited");
}
