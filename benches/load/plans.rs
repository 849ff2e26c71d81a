//! The query plans of the accept path's reads and of the workers' claim, as the database
//! chooses them with many submissions stored (PostgreSQL `EXPLAIN`, SQLite
//! `EXPLAIN QUERY PLAN`). The SQL mirrors what diesel sends from `src/db`.

use diesel::prelude::*;
use diesel::sql_types::Text;
use onceform::db::Pool;

const QUERIES: [(&str, &str); 3] = [
    (
        "key lookup (replay, conflict)",
        "SELECT * FROM submissions WHERE form = 'contact' AND operation_id = 'k'",
    ),
    (
        "duplicate look-up by email digest",
        "SELECT id, fingerprint, fields_json, email_digest, phone_digest FROM submissions \
         WHERE form = 'contact' AND id <> 'x' AND received_at >= '2026-01-01 00:00:00' AND spam = false \
         AND email_digest = 'd' ORDER BY received_at DESC LIMIT 20",
    ),
    (
        "due effects (worker claim)",
        "SELECT id FROM side_effects WHERE state = 'PENDING' AND held = false \
         AND next_attempt_at <= '2030-01-01 00:00:00' ORDER BY next_attempt_at LIMIT 32",
    ),
];

#[derive(QueryableByName)]
struct PgLine {
    #[diesel(sql_type = Text, column_name = "QUERY PLAN")]
    line: String,
}

#[derive(QueryableByName)]
struct SqliteLine {
    #[diesel(sql_type = Text)]
    detail: String,
}

/// One block of text per query: its name, then the plan indented.
pub fn explain(pool: &Pool) -> String {
    let mut out = String::new();
    for (what, sql) in QUERIES {
        let lines: Vec<String> = match pool {
            Pool::Sqlite(p) => diesel::sql_query(format!("EXPLAIN QUERY PLAN {sql}"))
                .load::<SqliteLine>(&mut p.get().unwrap())
                .unwrap()
                .into_iter()
                .map(|l| l.detail)
                .collect(),
            Pool::Pg(p, _) => diesel::sql_query(format!("EXPLAIN {sql}"))
                .load::<PgLine>(&mut p.get().unwrap())
                .unwrap()
                .into_iter()
                .map(|l| l.line)
                .collect(),
        };
        out.push_str(&format!("{what}:\n    {}\n", lines.join("\n    ")));
    }
    out
}
