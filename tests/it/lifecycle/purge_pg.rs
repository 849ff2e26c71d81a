//! Two `purge` processes at once on PostgreSQL purge each row once, while accepts go on.

use std::process::Command;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use onceform::db::schema::submissions;
use onceform::db::DbError;
use onceform::with_conn;

use crate::lifecycle::{config_text, config_with};
use crate::support::{inquiry, new_key, spawn_on, Backend, TestApp, TestDb, TEST_SECRET};

const WINDOWS: &str = "content = \"1h\"";

/// How long accepts take during a purge is measured by the benchmark (`--purge N`), not here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_purge_processes_at_once_purge_each_row_once() {
    purge_concurrently(10_000).await;
}

/// `rows` stored inquiries received two hours ago, their fingerprints keyed with the current
/// secret as every row is once `serve` has started (else each `purge` process would first
/// convert them, and the two would wait on each other's rows).
async fn seed(app: &TestApp, rows: usize) {
    let version = crate::support::test_keyring().version().to_string();
    app.query(move |pool| {
        with_conn!(pool, |c| {
            c.batch_execute(&format!(
                "INSERT INTO submissions (id, form, operation_id, fingerprint, fields_json, response_body, \
                 channel, keyless, spam, received_at, operation_expires_at) \
                 SELECT 'seed-' || g, 'contact', 'seed-operation-' || g, '{version}:' || md5(g::text), \
                 '{{\"message\":\"seeded inquiry ' || g || '\"}}', '{{}}', 'api', false, false, \
                 (now() AT TIME ZONE 'UTC') - interval '2 hours', (now() AT TIME ZONE 'UTC') + interval '1 day' \
                 FROM generate_series(1, {rows}) g; ANALYZE submissions"
            ))?;
            Ok::<_, DbError>(())
        })
    })
    .await;
}

/// Two `onceform purge` processes at once over `rows` due rows while accepts go on.
async fn purge_concurrently(rows: usize) {
    let db = TestDb::new(Backend::Postgres);
    let config = config_with(&db.url, WINDOWS);
    let app = spawn_on(db, config).await;
    seed(&app, rows).await;
    let dir = std::env::temp_dir().join(format!("onceform-purge-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("onceform.toml"), config_text(WINDOWS)).unwrap();
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_onceform"))
            .args(["purge", "--config", "onceform.toml"])
            .env("ONCEFORM_DATABASE_URL", app.config.database.url.to_string())
            .env("ONCEFORM_SECRET", TEST_SECRET)
            .env("RUST_LOG", "off")
            .current_dir(&dir)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn(), spawn());
    while a.try_wait().unwrap().is_none() || b.try_wait().unwrap().is_none() {
        assert_eq!(app.submit(&new_key(), &inquiry("During the purge")).await.status(), 201);
    }
    let purged: i64 = [a, b]
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success());
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let line = text.lines().find(|l| l.starts_with("contact: ")).unwrap_or_default().to_string();
            line.trim_start_matches("contact: ").split(' ').next().unwrap().parse::<i64>().unwrap()
        })
        .sum();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(purged, rows as i64, "each row purged once, by one of the two");
    let left: i64 = app
        .query(|pool| {
            with_conn!(pool, |c| submissions::table
                .filter(submissions::id.like("seed-%"))
                .filter(submissions::content_purged_at.is_null())
                .count()
                .get_result(c)
                .map_err(DbError::from))
        })
        .await;
    assert_eq!(left, 0, "no row left behind");
}
