//! The queries of re-keying stored digests (`lifecycle::rekey`): rows whose fingerprint is
//! not keyed with the current version, and their new digests.

use diesel::prelude::*;

use super::schema::{conflicts, submissions};
use super::DbConnection;

/// A submission to digest again: its id, its form and its fields.
pub type StaleRow = (String, String, Option<String>);

/// A conflict to digest again: its id, its original submission, that submission's form and
/// the conflict's fields.
pub type StaleConflict = (String, String, String, Option<String>);

/// A submission's digests under the current key.
pub struct Rekeyed<'a> {
    pub fingerprint: &'a str,
    pub email: Option<&'a str>,
    pub phone: Option<&'a str>,
    pub name: Option<&'a str>,
}

pub trait RekeyStore {
    /// Up to `limit` submissions with content whose fingerprint is not `LIKE current`.
    fn stale_submissions(&mut self, current: &str, limit: i64) -> QueryResult<Vec<StaleRow>>;
    fn set_submission_digests(&mut self, id: &str, d: &Rekeyed<'_>) -> QueryResult<()>;
    /// Up to `limit` conflicts with content whose fingerprint is not `LIKE current`.
    fn stale_conflicts(&mut self, current: &str, limit: i64) -> QueryResult<Vec<StaleConflict>>;
    /// Gives conflict `id` the fingerprint `fp`, or deletes it when its submission already
    /// has a conflict with that fingerprint (one row per content is enough).
    fn rekey_conflict(&mut self, id: &str, submission_id: &str, fp: &str) -> QueryResult<()>;
    /// Drops the plain (unkeyed, reversible) email and phone digests of purged submissions.
    fn drop_plain_digests_of_purged(&mut self) -> QueryResult<usize>;
}

impl RekeyStore for DbConnection {
    fn stale_submissions(&mut self, current: &str, limit: i64) -> QueryResult<Vec<StaleRow>> {
        submissions::table
            .filter(submissions::fields_json.is_not_null())
            .filter(submissions::fingerprint.not_like(current))
            .select((submissions::id, submissions::form, submissions::fields_json))
            .limit(limit)
            .load(self)
    }

    fn set_submission_digests(&mut self, id: &str, d: &Rekeyed<'_>) -> QueryResult<()> {
        diesel::update(submissions::table.find(id))
            .set((
                submissions::fingerprint.eq(d.fingerprint),
                submissions::email_digest.eq(d.email),
                submissions::phone_digest.eq(d.phone),
                submissions::name_digest.eq(d.name),
            ))
            .execute(self)
            .map(|_| ())
    }

    fn stale_conflicts(&mut self, current: &str, limit: i64) -> QueryResult<Vec<StaleConflict>> {
        conflicts::table
            .inner_join(submissions::table)
            .filter(conflicts::fields_json.is_not_null())
            .filter(conflicts::fingerprint.not_like(current))
            .select((conflicts::id, conflicts::submission_id, submissions::form, conflicts::fields_json))
            .limit(limit)
            .load(self)
    }

    fn rekey_conflict(&mut self, id: &str, submission_id: &str, fp: &str) -> QueryResult<()> {
        let twin = conflicts::table
            .filter(conflicts::submission_id.eq(submission_id).and(conflicts::fingerprint.eq(fp)))
            .select(conflicts::id)
            .first::<String>(self)
            .optional()?;
        match twin {
            Some(_) => diesel::delete(conflicts::table.find(id)).execute(self)?,
            None => {
                diesel::update(conflicts::table.find(id)).set(conflicts::fingerprint.eq(fp)).execute(self)?
            }
        };
        Ok(())
    }

    fn drop_plain_digests_of_purged(&mut self) -> QueryResult<usize> {
        diesel::update(
            submissions::table
                .filter(submissions::fields_json.is_null())
                .filter(submissions::fingerprint.not_like("%:%")),
        )
        .set((submissions::email_digest.eq(None::<String>), submissions::phone_digest.eq(None::<String>)))
        .execute(self)
    }
}
