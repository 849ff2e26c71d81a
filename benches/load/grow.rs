//! Latency growth: accept and replay with 10 k and with many more submissions stored.

use diesel::connection::SimpleConnection;
use onceform::db::{DbError, Pool, Store};
use onceform::with_conn;

use crate::common::Db;
use crate::traffic::{self, Scenario};
use crate::Options;

/// On a fresh database of `backend`, bulk-inserts synthetic, already delivered submissions
/// (3 SENT effects each) up to 10 k and then `opts.grow`, and measures accept and replay at
/// 16 clients after each; returns table rows and the query plans at the largest size.
pub fn measure(rt: &tokio::runtime::Runtime, backend: &str, opts: &Options) -> (Vec<String>, String) {
    let db = Db::new(backend);
    let (path, config) = db.config("[worker]\nenabled = false");
    let pool = Pool::connect(&config.database).unwrap();
    let server = crate::serve(&path);
    let mut rows = Vec::new();
    for target in [10_000usize, opts.grow] {
        let stored = with_conn!(&pool, |c| c.stats().map_err(DbError::from)).unwrap().submissions as usize;
        if target > stored {
            fill(&db, &pool, target - stored, 0);
        }
        let stored = with_conn!(&pool, |c| c.stats().map_err(DbError::from)).unwrap().submissions;
        let addrs = [server.address()];
        let accept = rt.block_on(traffic::run(&addrs, Scenario::Accept, 16, opts.seconds.min(3)));
        let replay = rt.block_on(traffic::run(&addrs, Scenario::Replay, 16, opts.seconds.min(3)));
        assert_eq!(accept.five_xx + replay.five_xx, 0, "5xx during the growth runs");
        rows.push(format!(
            "| {backend} | {stored} | {:.2} | {:.2} | {:.2} | {:.2} |",
            accept.p50_ms, accept.p99_ms, replay.p50_ms, replay.p99_ms
        ));
    }
    (rows, crate::plans::explain(&pool))
}

/// Bulk-inserts `n` delivered submissions (3 SENT effects each) received `hours_ago`, in
/// one statement per table.
pub fn fill(db: &Db, pool: &Pool, n: usize, hours_ago: u32) {
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let sql = if db.is_pg() {
        let at = format!("(now() AT TIME ZONE 'UTC') - interval '{hours_ago} hours'");
        format!(
            "INSERT INTO submissions (id, form, operation_id, fingerprint, fields_json, response_body, channel,
                 keyless, spam, received_at, operation_expires_at)
             SELECT 'g{tag}-' || i, 'contact', 'grown-{tag}-' || i, md5(i::text), '{{\"message\":\"grown\"}}', '{{}}',
                 'api', false, false, {at}, {at} + interval '395 days' FROM generate_series(1, {n}) AS i;
             INSERT INTO side_effects (id, submission_id, kind, batch, effect_key, state, attempts, next_attempt_at,
                 created_at, updated_at, held)
             SELECT s.id || ':' || k, s.id, k, 0, s.id || ':' || k || ':0', 'SENT', 1, now(), now(), now(), false
             FROM submissions s CROSS JOIN (VALUES ('crm_lead'), ('confirmation_email'), ('owner_notification')) AS kinds(k)
             WHERE s.id LIKE 'g{tag}-%';
             ANALYZE;"
        )
    } else {
        let at = format!("datetime('now', '-{hours_ago} hours')");
        format!(
            "BEGIN;
             INSERT INTO submissions (id, form, operation_id, fingerprint, fields_json, response_body, channel,
                 keyless, spam, received_at, operation_expires_at)
             WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {n})
             SELECT 'g{tag}-' || i, 'contact', 'grown-{tag}-' || i, hex(randomblob(16)), '{{\"message\":\"grown\"}}',
                 '{{}}', 'api', 0, 0, {at}, datetime({at}, '+395 days') FROM c;
             INSERT INTO side_effects (id, submission_id, kind, batch, effect_key, state, attempts, next_attempt_at,
                 created_at, updated_at, held)
             SELECT s.id || ':' || k.k, s.id, k.k, 0, s.id || ':' || k.k || ':0', 'SENT', 1, datetime('now'),
                 datetime('now'), datetime('now'), 0
             FROM submissions s, (SELECT 'crm_lead' AS k UNION ALL SELECT 'confirmation_email'
                 UNION ALL SELECT 'owner_notification') k
             WHERE s.id LIKE 'g{tag}-%';
             COMMIT;
             ANALYZE;"
        )
    };
    with_conn!(pool, |c| c.batch_execute(&sql).map_err(DbError::from)).unwrap();
}
