//! Historic import: repeats of stored inquiries and repeats inside the file land in the
//! duplicate review; bad rows are reported by line; a re-run imports nothing; a dry run
//! writes nothing.

use chrono::{Duration, Utc};
use serde_json::json;

use crate::lifecycle::{onceform, stdout};
use crate::on_both_backends;
use crate::support::{new_key, spawn_app, Backend};

on_both_backends!(an_import_pairs_repeats_reports_bad_lines_and_runs_once);

fn message(i: usize) -> String {
    format!("Need a quote for machine model {i} delivered to plant {}", i * 7)
}

async fn an_import_pairs_repeats_reports_bad_lines_and_runs_once(backend: Backend) {
    let app = spawn_app(backend).await;
    for i in 0..50 {
        let body = json!({"name": format!("Stored {i}"), "email": format!("stored{i}@old.example"),
                          "topic": "Sales", "message": message(1000 + i)});
        assert_eq!(app.submit(&new_key(), &body).await.status(), 201);
    }
    let when = (Utc::now() - Duration::hours(2)).format("%Y-%m-%dT%H:%M:%SZ").to_string();
    // The same person again an hour later (an identical row at the same time is the same record).
    let later = (Utc::now() - Duration::hours(1)).format("%Y-%m-%d %H:%M:%S").to_string();
    let mut csv = String::from("name,email,topic,message,received_at\n");
    for i in 0..920 {
        csv += &format!("\"Person {i}\",person{i}@file.example,Sales,\"{}\",{when}\n", message(i));
    }
    for i in 0..50 {
        csv += &format!("\"Stored {i}\",stored{i}@old.example,Sales,\"{}\",{when}\n", message(1000 + i));
    }
    for i in 0..30 {
        csv += &format!("\"Person {i}\",person{i}@file.example,Sales,\"{}\",{later}\n", message(i));
    }
    csv += "Bad Date,bad@file.example,Sales,Hello,31/12/2025\n";
    csv += "No Email,,Sales,Hello,\n";
    let dir = std::env::temp_dir().join(format!("onceform-import-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("history.csv");
    std::fs::write(&file, csv).unwrap();
    let file = file.to_str().unwrap();
    let import = |extra: &[&str]| {
        let mut args = vec!["import", "--form", "contact", file, "--source", "oldcrm"];
        args.extend_from_slice(extra);
        let out = onceform(&app, "", &args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        stdout(&out)
    };

    let dry = import(&["--dry-run"]);
    assert!(dry.starts_with("dry run: imported 1000, already present 0, rejected 2, paired 80"), "{dry}");
    assert_eq!(app.stats().await.submissions, 50, "a dry run writes nothing");

    let first = import(&[]);
    assert!(first.starts_with("imported 1000, already present 0, rejected 2, paired 80"), "{first}");
    assert!(first.contains("line 1002: received_at `31/12/2025` is not a past date"), "{first}");
    assert!(first.contains("line 1003: email is required"), "{first}");
    let stats = app.stats().await;
    assert_eq!(stats.submissions, 1050);
    assert_eq!(stats.effects_total(), 150, "no side effects for imported rows");
    let open_pairs: i64 = app
        .query(|pool| {
            use diesel::prelude::*;
            use onceform::db::schema::duplicate_pairs as p;
            onceform::with_conn!(pool, |c| p::table
                .filter(p::status.eq("open"))
                .count()
                .get_result(c)
                .map_err(onceform::db::DbError::from))
        })
        .await;
    assert_eq!(open_pairs, 80, "50 repeats of stored inquiries and 30 inside the file, in the review");

    let again = import(&[]);
    assert!(again.starts_with("imported 0, already present 1000, rejected 2, paired 0"), "{again}");
    assert_eq!(app.stats().await.submissions, 1050);
    let _ = std::fs::remove_dir_all(dir);
}
