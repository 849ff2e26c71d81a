//! The migration `record_owner` on a database made by the previous release: every
//! side-effect record and attempt survives, a submission's records stay its own, an inbound
//! event's records move from its anchor row in `submissions` (form `hook:SOURCE`) to the
//! event, and the anchor rows go. The previous release's database is made by applying the
//! migrations before it to a fresh database and writing rows as that release wrote them.

use std::path::Path;

use diesel::connection::SimpleConnection;
use diesel::migration::MigrationSource;
use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;
use diesel_migrations::{FileBasedMigrations, MigrationHarness};
use onceform::db::schema::{effect_attempts, side_effects, submissions};
use onceform::db::{DbError, Pool, Queue};
use onceform::domain::RecordKind;
use onceform::services::effects::Job;
use onceform::with_conn;

use crate::support::{test_config, Backend, TestDb};

/// The first migration of the release that gives records their owner.
const RECORD_OWNER: &str = "20261202000020";

/// Applies every migration before `RECORD_OWNER`, in order.
fn migrate_to_previous_release<C>(conn: &mut C)
where
    C: Connection + MigrationHarness<C::Backend>,
    FileBasedMigrations: MigrationSource<C::Backend>,
{
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let source = FileBasedMigrations::from_path(dir).unwrap();
    let mut migrations = MigrationSource::<C::Backend>::migrations(&source).unwrap();
    migrations.sort_by_key(|m| m.name().version().to_string());
    // Creates diesel's table of applied migrations, as the first `migrate` does.
    assert!(conn.applied_migrations().unwrap().is_empty());
    let mut applied = 0;
    for m in migrations.iter().filter(|m| m.name().version().to_string().as_str() < RECORD_OWNER) {
        conn.run_migration(m).unwrap();
        applied += 1;
    }
    assert!(applied >= 11, "the previous release's migrations: {applied}");
}

/// Rows as the previous release wrote them: a form submission with effects in several
/// states (one with an attempt), two inbound events with their anchor rows (one purged)
/// and their handlers' records, an attempt, a delivery row of an event.
const PREVIOUS_RELEASE_ROWS: &str = "
INSERT INTO submissions (id, form, operation_id, fingerprint, fields_json, response_body, channel,
    keyless, spam, received_at, operation_expires_at)
VALUES ('s-1', 'contact', 'op-1', 'fp', '{\"name\":\"Ada\",\"email\":\"ada@example.com\"}', '{}', 'api',
    FALSE, FALSE, '2026-12-01 10:00:00', '2026-12-31 10:00:00');
INSERT INTO inbound_events (id, source, event_id, content_hash, body, content_type, deliveries,
    first_received_at, last_received_at)
VALUES ('ev-1', 'helpdesk', 'T-1', 'h1', '{\"ticket\":1}', 'application/json', 2,
    '2026-12-01 11:00:00', '2026-12-01 11:05:00'),
       ('ev-2', 'helpdesk', 'T-2', 'h2', NULL, 'application/json', 1,
    '2026-11-01 11:00:00', '2026-11-01 11:00:00');
INSERT INTO submissions (id, form, operation_id, fingerprint, fields_json, response_body, channel,
    keyless, spam, received_at, operation_expires_at, content_purged_at)
VALUES ('ev-1', 'hook:helpdesk', 'T-1', 'h1', '{\"body\":\"{\\\"ticket\\\":1}\"}', '{}', 'hook', FALSE, FALSE,
    '2026-12-01 11:00:00', '2126-12-01 11:00:00', NULL),
       ('ev-2', 'hook:helpdesk', 'T-2', 'h2', NULL, '{}', 'hook', FALSE, FALSE,
    '2026-11-01 11:00:00', '2126-11-01 11:00:00', '2026-11-20 00:00:00');
INSERT INTO side_effects (id, submission_id, kind, batch, effect_key, state, attempts, next_attempt_at,
    provider_ref, last_error, created_at, updated_at, held)
VALUES
 ('e-lead', 's-1', 'crm_lead', 0, 's-1:crm_lead:0', 'SENT', 1, '2026-12-01 10:00:00', 'lead-9', NULL,
    '2026-12-01 10:00:00', '2026-12-01 10:00:01', FALSE),
 ('e-mail', 's-1', 'confirmation_email', 0, 's-1:confirmation_email:0', 'PENDING', 0, '2026-12-01 10:00:00',
    NULL, NULL, '2026-12-01 10:00:00', '2026-12-01 10:00:00', TRUE),
 ('e-note', 's-1', 'owner_notification', 0, 's-1:owner_notification:0', 'FAILED_FINAL', 3,
    '2026-12-01 10:00:00', NULL, 'http_400', '2026-12-01 10:00:00', '2026-12-01 10:10:00', FALSE),
 ('h-fwd', 'ev-1', 'hook:helpdesk:fwd', 0, 'helpdesk:fwd:T-1:0', 'SENT', 1, '2026-12-01 11:00:00',
    'helpdesk:fwd:T-1:0', NULL, '2026-12-01 11:00:00', '2026-12-01 11:00:01', FALSE),
 ('h-tell', 'ev-1', 'hook:helpdesk:tell', 0, 'helpdesk:tell:T-1:0', 'UNKNOWN', 1, '2026-12-01 11:00:00',
    NULL, 'timeout', '2026-12-01 11:00:00', '2026-12-01 11:00:01', FALSE),
 ('h-old', 'ev-2', 'hook:helpdesk:fwd', 0, 'helpdesk:fwd:T-2:0', 'CANCELLED', 0, '2026-11-01 11:00:00',
    NULL, 'content purged before delivery', '2026-11-01 11:00:00', '2026-11-20 00:00:00', FALSE);
INSERT INTO effect_attempts (id, effect_id, started_at, duration_ms, outcome, http_status, provider_ref, detail)
VALUES ('a-lead', 'e-lead', '2026-12-01 10:00:00', 12, 'sent', 201, 'lead-9', NULL),
       ('a-fwd', 'h-fwd', '2026-12-01 11:00:00', 7, 'sent', 200, 'helpdesk:fwd:T-1:0', NULL),
       ('a-tell', 'h-tell', '2026-12-01 11:00:00', 3000, 'ambiguous', NULL, NULL, 'no answer');
INSERT INTO inbound_deliveries (id, source, event_row_id, outcome, http_status, received_at)
VALUES ('d-1', 'helpdesk', 'ev-1', 'created', 200, '2026-12-01 11:00:00');
";

#[test]
fn sqlite_records_survive_the_owner_migration() {
    let db = TestDb::new(Backend::Sqlite);
    let path = db.url.trim_start_matches("sqlite://").to_string();
    let mut conn = SqliteConnection::establish(&path).unwrap();
    conn.batch_execute("PRAGMA foreign_keys = ON").unwrap();
    migrate_to_previous_release(&mut conn);
    conn.batch_execute(PREVIOUS_RELEASE_ROWS).unwrap();
    drop(conn);
    records_survive(&db);
}

#[test]
fn postgres_records_survive_the_owner_migration() {
    let db = TestDb::new(Backend::Postgres);
    let mut conn = onceform::db::establish_pg(&db.url).unwrap();
    migrate_to_previous_release(&mut conn);
    conn.batch_execute(PREVIOUS_RELEASE_ROWS).unwrap();
    drop(conn);
    records_survive(&db);
}

type Owned = (String, Option<String>, Option<String>, String, String, i32, Option<String>);
type Rows = (Vec<Owned>, Vec<(String, String)>, Vec<(String, String)>);

/// Applies the rest (as `serve` does at start) and checks what became of the rows.
fn records_survive(db: &TestDb) {
    let pool = Pool::connect(&test_config(&db.url).database).unwrap();
    let (effects, attempts, forms): Rows = with_conn!(&pool, |c| (|| {
        let effects = side_effects::table
            .order(side_effects::id)
            .select((
                side_effects::id,
                side_effects::submission_id,
                side_effects::inbound_event_id,
                side_effects::kind,
                side_effects::state,
                side_effects::attempts,
                side_effects::provider_ref,
            ))
            .load(c)?;
        let attempts = effect_attempts::table
            .order(effect_attempts::id)
            .select((effect_attempts::id, effect_attempts::effect_id))
            .load(c)?;
        let forms =
            submissions::table.order(submissions::id).select((submissions::id, submissions::form)).load(c)?;
        Ok::<_, DbError>((effects, attempts, forms))
    })())
    .unwrap();
    let s = |v: &str| Some(v.to_string());
    let row =
        |id: &str,
         sub: Option<String>,
         ev: Option<String>,
         kind: &str,
         state: &str,
         n: i32,
         r: Option<String>| { (id.to_string(), sub, ev, kind.to_string(), state.to_string(), n, r) };
    assert_eq!(
        effects,
        [
            row("e-lead", s("s-1"), None, "crm_lead", "SENT", 1, s("lead-9")),
            row("e-mail", s("s-1"), None, "confirmation_email", "PENDING", 0, None),
            row("e-note", s("s-1"), None, "owner_notification", "FAILED_FINAL", 3, None),
            row("h-fwd", None, s("ev-1"), "hook:helpdesk:fwd", "SENT", 1, s("helpdesk:fwd:T-1:0")),
            row("h-old", None, s("ev-2"), "hook:helpdesk:fwd", "CANCELLED", 0, None),
            row("h-tell", None, s("ev-1"), "hook:helpdesk:tell", "UNKNOWN", 1, None),
        ]
    );
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(attempts, [pair("a-fwd", "h-fwd"), pair("a-lead", "e-lead"), pair("a-tell", "h-tell")]);
    assert_eq!(forms, [pair("s-1", "contact")], "the anchor rows are gone");

    // The held flag and the constraints came through the rebuilds (`record_owner`'s, and
    // `event_records_index`'s, whose partial index keeps an event's records unique).
    let (held, both_null, twice, unique) = with_conn!(&pool, |c| (|| {
        let held: bool = side_effects::table.find("e-mail").select(side_effects::held).first(c)?;
        let insert =
            |c: &mut onceform::db::DbConnection, id: &str, key: &str, sub: Option<&str>, ev: Option<&str>| {
                diesel::insert_into(side_effects::table)
                    .values((
                        side_effects::id.eq(id),
                        side_effects::submission_id.eq(sub),
                        side_effects::inbound_event_id.eq(ev),
                        side_effects::kind.eq("crm_lead"),
                        side_effects::effect_key.eq(key),
                        side_effects::state.eq("PENDING"),
                        side_effects::next_attempt_at.eq(onceform::base::clock::now()),
                        side_effects::created_at.eq(onceform::base::clock::now()),
                        side_effects::updated_at.eq(onceform::base::clock::now()),
                    ))
                    .execute(c)
            };
        let both_null = insert(c, "x-1", "x-1", None, None).is_err();
        let twice = insert(c, "x-2", "x-2", Some("s-1"), Some("ev-1")).is_err();
        let first = insert(c, "x-3", "x-3", None, Some("ev-1")).is_ok();
        let again = insert(c, "x-4", "x-4", None, Some("ev-1")).is_err();
        Ok::<_, DbError>((held, both_null, twice, first && again))
    })())
    .unwrap();
    assert!(held, "a held record stays held");
    assert!(both_null, "a record with no owner is refused");
    assert!(twice, "a record with two owners is refused");
    assert!(unique, "an event has one record per (handler, batch)");

    // The worker reads a migrated event's record with its event's fields.
    let tell = RecordKind::hook("helpdesk", "tell");
    let now = onceform::base::clock::now();
    let rows = with_conn!(&pool, |c| c
        .take_unknown_due(std::slice::from_ref(&tell), now, now, 10)
        .map_err(DbError::from))
    .unwrap();
    assert_eq!(rows.len(), 1);
    let job = Job::from_row(rows.into_iter().next().unwrap()).unwrap();
    assert_eq!(job.kind, tell);
    assert_eq!(job.submission_id.as_str(), "ev-1");
    let event = job.event.expect("an event's record reads its event");
    assert_eq!(event.body.as_deref(), Some("{\"ticket\":1}"));
    assert_eq!(event.event_id, "T-1");
    assert!(job.fields.is_empty(), "an event's content is the event, not form fields");
}
