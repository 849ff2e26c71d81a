//! Reading: `GET /api/v1/submissions` paged through N stored submissions (issue 42's row);
//! see `feed.rs`.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use onceform::db::{DbError, Pool};
use onceform::with_conn;
use serde_json::Value;

use crate::common::{quantile_ms, Db};

/// Rows per second a walk must reach, and the slowest page's p99 (issue 42).
const RATE_TARGET: f64 = 5000.0;
const P99_TARGET_MS: f64 = 50.0;

pub fn run(rows: usize) {
    let db = Db::new("postgres");
    let (path, config) = db.config("[worker]\nenabled = false");
    let server = crate::serve(&path);
    let pool = Pool::connect(&config.database).unwrap();
    let filling = Instant::now();
    fill(&pool, rows);
    let filled = filling.elapsed().as_secs_f64();
    let token = crate::token(&path, "read:submissions");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    println!("\n{rows} submissions (3 effect records each) inserted by SQL in {filled:.1} s\n");
    println!("| rows stored | limit | pages | rows/s | p50 ms per page | p99 ms per page | max ms | target | met |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for limit in [Some(500), None] {
        let walk = rt.block_on(walk(&server.address(), &token, limit));
        assert_eq!(walk.ids.len(), rows, "every submission once (limit {limit:?})");
        assert_eq!(walk.rows, rows, "no submission twice (limit {limit:?})");
        let rate = walk.rows as f64 / walk.seconds;
        let mut ms = walk.page_us.clone();
        ms.sort_unstable();
        let p99 = quantile_ms(&ms, 0.99);
        let met = rate >= RATE_TARGET && p99 < P99_TARGET_MS;
        println!(
            "| {rows} | {} | {} | {rate:.0} | {:.2} | {p99:.2} | {:.2} | ≥ {RATE_TARGET:.0} rows/s, p99 < {P99_TARGET_MS:.0} ms | {} |",
            limit.map_or("default (50)".to_string(), |l| l.to_string()),
            ms.len(),
            quantile_ms(&ms, 0.5),
            quantile_ms(&ms, 1.0),
            if met { "yes" } else { "**no**" }
        );
    }
    println!();
    plans(&pool, rows);
}

/// The page query near the end of the walk (the cursor at the `rows - 600`th newest row),
/// `EXPLAIN ANALYZE`d with the keyset predicate as it was (the `OR` alone) and as it is (with
/// `received_at <=` the cursor's time, which the index on (received_at, id) starts from).
fn plans(pool: &Pool, rows: usize) {
    #[derive(diesel::QueryableByName)]
    struct Line {
        #[diesel(sql_type = diesel::sql_types::Text)]
        #[diesel(column_name = "QUERY PLAN")]
        line: String,
    }
    #[derive(diesel::QueryableByName)]
    struct Key {
        #[diesel(sql_type = diesel::sql_types::Text)]
        at: String,
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
    }
    let depth = rows.saturating_sub(600);
    let key: Key = with_conn!(pool, |c| diesel::RunQueryDsl::get_result(
        diesel::sql_query(format!(
            "SELECT received_at::text AS at, id FROM submissions ORDER BY received_at DESC, id DESC \
             OFFSET {depth} LIMIT 1"
        )),
        c
    )
    .map_err(DbError::from))
    .unwrap();
    let (at, id) = (format!("'{}'::timestamp", key.at), format!("'{}'", key.id));
    for (label, extra) in [
        ("before: the OR alone", String::new()),
        ("after: with received_at <=", format!("received_at <= {at} AND ")),
    ] {
        let sql = format!(
            "EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM submissions \
             WHERE {extra}(received_at < {at} OR (received_at = {at} AND id < {id})) \
             ORDER BY received_at DESC, id DESC LIMIT 501"
        );
        let lines: Vec<Line> = with_conn!(pool, |c| diesel::RunQueryDsl::load(diesel::sql_query(sql), c)
            .map_err(DbError::from))
        .unwrap();
        println!("Page query at the {depth}th row, keyset predicate {label}:\n");
        for l in lines {
            println!("    {}", l.line);
        }
        println!();
    }
}

struct Walk {
    ids: HashSet<String>,
    rows: usize,
    seconds: f64,
    /// Each page's time, in microseconds.
    page_us: Vec<u64>,
}

/// Pages through every submission, newest first, following `next_cursor`.
async fn walk(addr: &str, token: &str, limit: Option<usize>) -> Walk {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let mut walk = Walk { ids: HashSet::new(), rows: 0, seconds: 0.0, page_us: Vec::new() };
    let mut cursor: Option<String> = None;
    let started = Instant::now();
    loop {
        let mut query: Vec<(&str, String)> = Vec::new();
        if let Some(l) = limit {
            query.push(("limit", l.to_string()));
        }
        if let Some(c) = &cursor {
            query.push(("cursor", c.clone()));
        }
        let at = Instant::now();
        let resp = client
            .get(format!("{addr}/api/v1/submissions"))
            .query(&query)
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let page: Value = resp.json().await.unwrap();
        walk.page_us.push(at.elapsed().as_micros() as u64);
        let items = page["items"].as_array().unwrap();
        walk.rows += items.len();
        walk.ids.extend(items.iter().map(|s| s["id"].as_str().unwrap().to_string()));
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    walk.seconds = started.elapsed().as_secs_f64();
    walk
}

/// Bulk-inserts `n` delivered submissions (3 SENT effect records each) by SQL: fields like a
/// contact inquiry's, a form version, 10 ms apart with every two sharing their time (ties the
/// cursor's ID must break).
fn fill(pool: &Pool, n: usize) {
    let at = "(now() AT TIME ZONE 'UTC')";
    let sql = format!(
        "INSERT INTO submissions (id, form, operation_id, fingerprint, fields_json, response_body, channel,
             keyless, spam, received_at, operation_expires_at, form_version)
         SELECT gen_random_uuid()::text, 'contact', 'read-' || i, md5(i::text),
             '{{\"name\":\"Reader ' || i || '\",\"email\":\"reader-' || i || '@example.com\",\"topic\":\"Sales\",\
\"message\":\"Inquiry ' || i || ', stored to be read back\"}}', '{{}}',
             'api', false, false, {at} - (i / 2) * interval '10 milliseconds', {at} + interval '395 days',
             '0123456789abcdef'
         FROM generate_series(1, {n}) AS i;
         INSERT INTO side_effects (id, submission_id, kind, batch, effect_key, state, attempts, next_attempt_at,
             created_at, updated_at, held)
         SELECT s.id || ':' || k, s.id, k, 0, s.id || ':' || k || ':0', 'SENT', 1, now(), now(), now(), false
         FROM submissions s CROSS JOIN (VALUES ('crm_lead'), ('confirmation_email'), ('owner_notification')) AS kinds(k)
         WHERE s.operation_id LIKE 'read-%';
         ANALYZE;"
    );
    with_conn!(pool, |c| c.batch_execute(&sql).map_err(DbError::from)).unwrap();
}
