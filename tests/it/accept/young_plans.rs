//! PostgreSQL: the accept statement is kept prepared, and PostgreSQL keeps a generic plan for
//! it after five executions. On a fresh database that plan would be made from no statistics
//! at all, where every index of `submissions` looks alike (the key look-up then took an index
//! by form and scanned the whole form). The acceptor analyses a young database after its
//! first `ANALYZE_AFTER` acceptances; from then on the look-ups use the key index and the
//! email index.

use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Float, Text};
use onceform::config::Config;
use onceform::db::young_pg::{self, ANALYZE_AFTER};
use onceform::db::{establish_pg, Pool};
use onceform::domain::{normalise, OperationId};
use onceform::services::accept::{Acceptor, Intake, Outcome};
use onceform::services::request_log::Channel;

use crate::support::{test_config, Backend, TestDb};

fn intake(config: &Config, n: usize) -> Intake {
    let form = onceform::config::Form::new("contact", config.form("contact").unwrap().clone());
    let raw = [
        ("name", "Ada".to_string()),
        ("email", format!("visitor{n}@example.com")),
        ("topic", "Sales".to_string()),
        ("message", format!("Inquiry {n}")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let fields = normalise(&*form, &raw).unwrap();
    let operation_id = Some(OperationId::parse(&format!("young-plans-{n:08}")).unwrap());
    Intake {
        form,
        operation_id,
        channel: Channel::Api,
        fields,
        scans: Default::default(),
        received: None,
        test: false,
    }
}

#[derive(QueryableByName)]
struct Scans {
    #[diesel(sql_type = Text)]
    index: String,
    #[diesel(sql_type = BigInt)]
    scans: i64,
}

fn scans(c: &mut PgConnection, index: &str) -> i64 {
    diesel::sql_query("SELECT pg_stat_clear_snapshot()").execute(c).unwrap();
    let all: Vec<Scans> = diesel::sql_query(
        "SELECT indexrelname::text AS index, idx_scan AS scans FROM pg_stat_user_indexes \
         WHERE relname = 'submissions'",
    )
    .load(c)
    .unwrap();
    all.iter().find(|s| s.index == index).map(|s| s.scans).unwrap()
}

#[derive(QueryableByName)]
struct Rows {
    #[diesel(sql_type = Float)]
    reltuples: f32,
}

fn analysed_rows(c: &mut PgConnection) -> f32 {
    diesel::sql_query("SELECT reltuples FROM pg_class WHERE oid = 'submissions'::regclass")
        .get_result::<Rows>(c)
        .unwrap()
        .reltuples
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(30), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Backends flush their statistics when they exit (an idle one may hold them 10 s): accept
/// on a pool of its own, then wait for its connections to end.
fn accept_all(config: &Config, c: &mut PgConnection, numbers: std::ops::Range<usize>) {
    {
        let acceptor = Acceptor::start(
            Arc::new(config.clone()),
            Pool::connect(&config.database).unwrap(),
            crate::support::test_keyring(),
        )
        .unwrap();
        for n in numbers {
            assert!(matches!(acceptor.accept(intake(config, n)).unwrap(), Outcome::Created(_)));
        }
    }
    wait_for("the pool's connections to end", || {
        let others: i64 = diesel::sql_query(
            "SELECT count(*) AS scans, '' AS index FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .get_result::<Scans>(c)
        .unwrap()
        .scans;
        others == 0
    });
}

/// A fresh database, its first `ANALYZE_AFTER` acceptances, and the ANALYZE they lead to.
fn young_database() -> (TestDb, Config, PgConnection) {
    let db = TestDb::new(Backend::Postgres);
    let config = test_config(&db.url);
    drop(Pool::connect(&config.database).unwrap()); // migrates
    let mut c = establish_pg(&config.database.url.to_string()).unwrap();
    assert!(analysed_rows(&mut c) < 0.0, "a fresh database has never been analysed");
    accept_all(&config, &mut c, 0..ANALYZE_AFTER);
    wait_for("the young database's ANALYZE", || analysed_rows(&mut c) >= 100.0);
    (db, config, c)
}

#[test]
fn on_a_fresh_database_accepts_look_keys_and_emails_up_by_their_own_indexes() {
    let (_db, config, mut c) = young_database();

    let indexes = ["submissions_form_operation_key", "submissions_email_digest"];
    // Changed with issue 22: the look-up is by email, phone and name plus company, each key
    // only when the submission has it (these have an email only).
    let by_form = [
        "submissions_form_received",
        "submissions_phone_digest",
        "submissions_name_digest",
        "submissions_content_kept",
    ];
    let before: Vec<i64> = indexes.iter().chain(&by_form).map(|i| scans(&mut c, i)).collect();
    let more = 50;
    accept_all(&config, &mut c, ANALYZE_AFTER..ANALYZE_AFTER + more);
    for (i, b) in indexes.iter().zip(&before) {
        assert!(scans(&mut c, i) - b >= more as i64, "{i} was not used by every accept");
    }
    for (i, b) in by_form.iter().zip(&before[indexes.len()..]) {
        assert_eq!(scans(&mut c, i) - b, 0, "{i} was scanned: a look-up by form alone");
    }
}

#[test]
fn statistics_of_a_quarter_of_what_the_process_accepted_are_gathered_again() {
    assert!(young_pg::looks_at(ANALYZE_AFTER) && young_pg::looks_at(ANALYZE_AFTER * 10));
    assert!(!young_pg::looks_at(ANALYZE_AFTER + 1) && !young_pg::looks_at(ANALYZE_AFTER * 1000));
    let (_db, config, mut c) = young_database();
    let first = analysed_rows(&mut c);
    assert!(!young_pg::analyze_if_young(&mut c, ANALYZE_AFTER * 2).unwrap(), "{first} rows: fresh enough");
    accept_all(&config, &mut c, ANALYZE_AFTER..ANALYZE_AFTER * 3);
    // Statistics of at most 1,500 rows (the first 500, unless autovacuum came by) against
    // 50,000 accepted.
    assert!(young_pg::analyze_if_young(&mut c, ANALYZE_AFTER * 100).unwrap());
    let again = analysed_rows(&mut c);
    assert!(again >= (ANALYZE_AFTER * 3) as f32 * 0.9, "{again} rows analysed, {first} before");
}
