//! The lifecycle on `/metrics` and in the admin: purges, the redelivery spread, the windows,
//! the import upload.

use onceform::admin::accounts::Role;

use crate::lifecycle::config_with;
use crate::on_both_backends;
use crate::support::{inquiry, new_key, spawn_on, Backend, TestDb};

on_both_backends!(
    metrics_and_the_retention_page_show_purges_spread_and_windows,
    the_import_page_reports_like_the_command
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
    let later = onceform::clock::now() + chrono::Duration::days(91);
    let report = app.query(move |pool| onceform::lifecycle::purge::run_pass(pool, &config, later)).await;
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

async fn the_import_page_reports_like_the_command(backend: Backend) {
    let db = TestDb::new(backend);
    let config = config_with(&db.url, "");
    let app = spawn_on(db, config).await;
    let admin = app.sign_in(Role::Admin).await;
    let viewer = app.sign_in(Role::Viewer).await;
    let csv = "name,email,topic,message,received_at\nAda,ada@old.example,Sales,Hello from the past,2025-01-02 10:00:00\n\
               Bob,,Sales,No email,2025-01-02\n";
    let form = [("form", "contact"), ("source", "paste"), ("csv", csv)];
    assert_eq!(app.admin_post(Some(&viewer), "/admin/import", Some(&viewer.csrf), &form).await.status(), 403);
    let page =
        app.admin_post(Some(&admin), "/admin/import", Some(&admin.csrf), &form).await.text().await.unwrap();
    assert!(page.contains("imported 1, already present 0, rejected 1, paired 0"), "{page}");
    assert!(page.contains("line 3: email is required"), "{page}");
    assert_eq!(app.stats().await.submissions, 1);
    assert_eq!(app.stats().await.effects_total(), 0, "no side effects unless asked");
    let csv = "name,email,topic,message,source_id\nCy,cy@old.example,Support,Please call back,crm-77\n";
    let with_effects = [("form", "contact"), ("source", "paste"), ("csv", csv), ("with_effects", "yes")];
    let page = app.admin_post(Some(&admin), "/admin/import", Some(&admin.csrf), &with_effects).await;
    assert!(page.text().await.unwrap().contains("imported 1, already present 0"));
    assert_eq!(app.stats().await.effects_total(), 3, "with effects: one record per declared kind");
    let page = app.admin_post(Some(&admin), "/admin/import", Some(&admin.csrf), &with_effects).await;
    assert!(
        page.text().await.unwrap().contains("imported 0, already present 1"),
        "the source_id is the row's key"
    );
}
