//! The confirmation cap's reads and writes inside the accept transaction: one row per
//! (form, recipient digest) holding when that address was last sent a confirmation.

use chrono::NaiveDateTime;
use diesel::backend::Backend;
use diesel::prelude::*;
use diesel::serialize::ToSql;
use diesel::sql_types::{HasSqlType, Text, Timestamp};

use super::prepared::Prepared;
use super::schema::{confirmation_caps, side_effects, submissions};
use super::{changes, DbConnection};
use crate::domain::transitions::Move;

/// Why a capped confirmation was cancelled (`last_error`, shown in the admin).
pub const RECIPIENT_CAP: &str = "recipient_cap";

/// The claim of a recipient's slot: `ON CONFLICT … DO UPDATE … WHERE` changes no row while
/// the slot is taken. Raw SQL that the connection keeps prepared (diesel re-prepares every
/// `DO UPDATE` on each call).
const CLAIM: &str = "INSERT INTO confirmation_caps (form, email_digest, last_at) VALUES ($1, $2, $3) \
     ON CONFLICT (form, email_digest) DO UPDATE SET last_at = excluded.last_at \
     WHERE confirmation_caps.last_at <= $4";

fn claim<'a, DB>(
    form: &'a str,
    email_digest: &'a str,
    now: NaiveDateTime,
    since: NaiveDateTime,
) -> Prepared<'a, DB>
where
    DB: Backend + HasSqlType<Text> + HasSqlType<Timestamp>,
    &'a str: ToSql<Text, DB>,
    NaiveDateTime: ToSql<Timestamp, DB>,
{
    Prepared::new(CLAIM)
        .bind::<Text, _>(form)
        .bind::<Text, _>(email_digest)
        .bind::<Timestamp, _>(now)
        .bind::<Timestamp, _>(since)
}

pub trait RecipientCapStore {
    /// Takes the recipient's slot unless it was taken after `since`: true when this call
    /// took it. One statement on the primary key, so concurrent transactions (any number of
    /// processes on PostgreSQL) serialise on the row and at most one of them wins a window.
    fn claim_confirmation(
        &mut self,
        form: &str,
        email_digest: &str,
        now: NaiveDateTime,
        since: NaiveDateTime,
    ) -> QueryResult<bool>;
    /// Whether the recipient's slot was taken after `since` (a plain read: the claim above
    /// still decides between concurrent transactions).
    fn confirmation_taken(
        &mut self,
        form: &str,
        email_digest: &str,
        since: NaiveDateTime,
    ) -> QueryResult<bool>;
    /// Records a capped confirmation as CANCELLED with reason `recipient_cap`, and the
    /// submission's result body that says so.
    fn cancel_capped(
        &mut self,
        effect_id: &str,
        submission_id: &str,
        response_body: &str,
        now: NaiveDateTime,
    ) -> QueryResult<()>;
}

impl RecipientCapStore for DbConnection {
    fn claim_confirmation(
        &mut self,
        form: &str,
        email_digest: &str,
        now: NaiveDateTime,
        since: NaiveDateTime,
    ) -> QueryResult<bool> {
        let n = match self {
            DbConnection::Sqlite(c) => claim(form, email_digest, now, since).execute(c)?,
            DbConnection::Pg(c) => claim(form, email_digest, now, since).execute(c)?,
        };
        Ok(n == 1)
    }

    fn confirmation_taken(
        &mut self,
        form: &str,
        email_digest: &str,
        since: NaiveDateTime,
    ) -> QueryResult<bool> {
        diesel::select(diesel::dsl::exists(
            confirmation_caps::table
                .filter(confirmation_caps::form.eq(form))
                .filter(confirmation_caps::email_digest.eq(email_digest))
                .filter(confirmation_caps::last_at.gt(since)),
        ))
        .get_result(self)
    }

    fn cancel_capped(
        &mut self,
        effect_id: &str,
        submission_id: &str,
        response_body: &str,
        now: NaiveDateTime,
    ) -> QueryResult<()> {
        let mv = Move::CANCEL_PENDING;
        let moved = diesel::update(
            side_effects::table
                .filter(side_effects::id.eq(effect_id))
                .filter(side_effects::state.eq_any(mv.from())),
        )
        .set((
            side_effects::state.eq(mv.to()),
            side_effects::held.eq(false),
            side_effects::last_error.eq(RECIPIENT_CAP),
            side_effects::updated_at.eq(now),
        ))
        .returning(changes::MOVED)
        .get_results(self)?;
        changes::record_moved(self, &moved, now)?;
        diesel::update(submissions::table.filter(submissions::id.eq(submission_id)))
            .set(submissions::response_body.eq(response_body))
            .execute(self)?;
        Ok(())
    }
}
