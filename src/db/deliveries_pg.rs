//! Batches of delivery rows on PostgreSQL as one `INSERT … SELECT FROM unnest(arrays)`: the
//! same short statement for any batch size, where a multi-row `VALUES` of 2,000 rows is
//! 16,000 parameters for PostgreSQL to parse and plan on every batch. Kept prepared on the
//! connection (`Prepared`).

use diesel::prelude::*;
use diesel::sql_types::{Array, Integer, Nullable, Text, Timestamp};
use diesel::PgConnection;

use super::models::NewDelivery;
use super::prepared::Prepared;

pub fn insert(c: &mut PgConnection, rows: &[NewDelivery]) -> QueryResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let column = |f: fn(&NewDelivery) -> Option<&str>| rows.iter().map(f).collect::<Vec<_>>();
    Prepared::new(
        "INSERT INTO deliveries (id, form, operation_id, submission_id, channel, outcome, http_status, \
         received_at) \
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], \
         $7::integer[], $8::timestamp[])",
    )
    .bind::<Array<Text>, _>(rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>())
    .bind::<Array<Nullable<Text>>, _>(column(|r| r.form.as_deref()))
    .bind::<Array<Nullable<Text>>, _>(column(|r| r.operation_id.as_deref()))
    .bind::<Array<Nullable<Text>>, _>(column(|r| r.submission_id.as_deref()))
    .bind::<Array<Text>, _>(rows.iter().map(|r| r.channel.as_str()).collect::<Vec<_>>())
    .bind::<Array<Text>, _>(rows.iter().map(|r| r.outcome.as_str()).collect::<Vec<_>>())
    .bind::<Array<Integer>, _>(rows.iter().map(|r| r.http_status).collect::<Vec<_>>())
    .bind::<Array<Timestamp>, _>(rows.iter().map(|r| r.received_at).collect::<Vec<_>>())
    .execute(c)
    .map(|_| ())
}
