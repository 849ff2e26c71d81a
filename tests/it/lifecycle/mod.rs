//! What the lifecycle tests share: a config with retention windows and a phone field, the
//! `onceform` binary run against the test's database, and a search of every text column.

pub mod caps;
pub mod changes;
pub mod digests;
pub mod erase;
pub mod feed_processes;
pub mod import;
pub mod journey;
pub mod pages;
pub mod purge_pg;
pub mod purged_effects;
pub mod retention;

use std::process::{Command, Output};

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use onceform::config::Config;
use onceform::db::DbError;
use onceform::with_conn;

use crate::support::{test_config, Backend, TestApp, TEST_SECRET};

/// The demo form plus a phone field and `[forms.contact.retention]` from `retention` (TOML).
pub const PHONE_FIELD: &str = "\n[[forms.contact.fields]]\nname = \"phone\"\ntype = \"phone\"\n";

pub fn config_text(retention: &str) -> String {
    format!("{}{PHONE_FIELD}\n[forms.contact.retention]\n{retention}\n", onceform::config::DEFAULT_CONFIG)
}

/// `config_text(retention)` as the test app runs it.
pub fn config_with(db_url: &str, retention: &str) -> Config {
    let base = test_config(db_url);
    let mut config = Config::parse(&config_text(retention)).unwrap();
    config.database = base.database;
    config.server = base.server;
    config
}

/// Runs `onceform ARGS` with the test's secret on `app`'s database and retention windows.
pub fn onceform(app: &TestApp, retention: &str, args: &[&str]) -> Output {
    onceform_with(app, &config_text(retention), args)
}

/// Runs `onceform ARGS` with the test's secret on `app`'s database and `config` (TOML).
pub fn onceform_with(app: &TestApp, config: &str, args: &[&str]) -> Output {
    let dir = std::env::temp_dir().join(format!("onceform-lc-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("onceform.toml");
    std::fs::write(&path, config).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_onceform"))
        .args(args)
        .arg("--config")
        .arg(&path)
        .env("ONCEFORM_DATABASE_URL", app.config.database.url.to_string())
        .env("ONCEFORM_SECRET", TEST_SECRET)
        .env("RUST_LOG", "off")
        .current_dir(&dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    out
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[derive(QueryableByName)]
struct Column {
    #[diesel(sql_type = Text)]
    t: String,
    #[diesel(sql_type = Text)]
    c: String,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Every (table, text column) of the database holding `needle` anywhere in its value.
pub async fn text_columns_containing(app: &TestApp, backend: Backend, needle: &str) -> Vec<String> {
    let needle = needle.replace('\'', "''");
    let columns_sql = match backend {
        Backend::Sqlite => {
            "SELECT m.name AS t, p.name AS c FROM sqlite_master m JOIN pragma_table_info(m.name) p \
             WHERE m.type = 'table' AND upper(p.type) IN ('TEXT', 'VARCHAR')"
        }
        Backend::Postgres => {
            "SELECT table_name::text AS t, column_name::text AS c FROM information_schema.columns \
             WHERE table_schema = 'public' AND data_type IN ('text', 'character varying')"
        }
    };
    app.query(move |pool| {
        with_conn!(pool, |conn| {
            let columns: Vec<Column> = diesel::sql_query(columns_sql).load(conn)?;
            assert!(columns.len() > 20, "the schema's text columns are found");
            let mut found = Vec::new();
            for col in columns {
                let sql = format!(
                    "SELECT COUNT(*) AS n FROM \"{}\" WHERE CAST(\"{}\" AS TEXT) LIKE '%{needle}%'",
                    col.t, col.c
                );
                let count: Count = diesel::sql_query(sql).get_result(conn)?;
                if count.n > 0 {
                    found.push(format!("{}.{}", col.t, col.c));
                }
            }
            Ok::<_, DbError>(found)
        })
    })
    .await
}
