//! Planner statistics for a young PostgreSQL database.
//!
//! The accept statement is prepared once per connection, and after five executions
//! PostgreSQL keeps a generic plan for it. Planned on tables that were never analysed, every
//! index of `submissions` costs the same, and the key and duplicate look-ups may take an
//! index by `form` alone: a scan of the whole form on every accept, until autovacuum's first
//! ANALYZE (a minute or more later) makes the connections plan again. So the accept service
//! calls `analyze_if_young` after its first `ANALYZE_AFTER` acceptances: when `submissions`
//! has no statistics worth the name, it analyses the tables the accept statement touches, and
//! every connection's cached plans are made anew from them. Plans made from 500 rows are
//! still those of a small table (the shared statement's key check hashed the whole of
//! `submissions`, fine at 500 rows, a scan of 100,000 a minute later), so it looks again
//! after ten and a hundred times as many, analysing while the statistics describe less than
//! a quarter of the rows it accepted itself.

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::Float;
use diesel::PgConnection;

/// Acceptances of one process before it looks at the statistics, and then again at
/// `ANALYZE_AFTER * 10` and `ANALYZE_AFTER * 100`.
pub const ANALYZE_AFTER: usize = 500;

/// Whether the `n`th acceptance of a process looks at the statistics.
pub fn looks_at(n: usize) -> bool {
    [1, 10, 100].iter().any(|k| n == ANALYZE_AFTER * k)
}

/// Below this many rows as last analysed, `submissions` is young.
const YOUNG_ROWS: f32 = 100.0;

#[derive(QueryableByName)]
struct Rows {
    #[diesel(sql_type = Float)]
    reltuples: f32,
}

/// Analyses the accept statement's tables when `submissions` is young, or its statistics
/// count fewer than a quarter of the `accepted` acceptances this process made; whether it did.
pub fn analyze_if_young(c: &mut PgConnection, accepted: usize) -> QueryResult<bool> {
    let rows: Rows = diesel::sql_query("SELECT reltuples FROM pg_class WHERE oid = 'submissions'::regclass")
        .get_result(c)?;
    // -1: never analysed or vacuumed.
    if rows.reltuples >= YOUNG_ROWS.max(accepted as f32 / 4.0) {
        return Ok(false);
    }
    c.batch_execute("ANALYZE submissions, side_effects, deliveries, confirmation_caps, duplicate_pairs")?;
    Ok(true)
}
