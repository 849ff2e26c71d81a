//! Submissions set aside as spam, and their release as real inquiries.

use diesel::prelude::*;

use crate::db::schema::submissions;
use crate::db::DbConnection;

/// What a release needs of a submission.
#[derive(Debug, Clone, Queryable)]
pub struct SpamCandidate {
    pub form: String,
    pub spam: bool,
    pub fields_json: Option<String>,
}

pub trait SpamStore {
    /// The submission `id`'s form, spam flag and fields.
    fn spam_candidate(&mut self, id: &str) -> QueryResult<Option<SpamCandidate>>;
    /// Clears `id`'s spam flag and reason; false when it was not (or no longer) spam.
    fn release_spam(&mut self, id: &str) -> QueryResult<bool>;
}

impl SpamStore for DbConnection {
    fn spam_candidate(&mut self, id: &str) -> QueryResult<Option<SpamCandidate>> {
        submissions::table
            .filter(submissions::id.eq(id))
            .select((submissions::form, submissions::spam, submissions::fields_json))
            .first(self)
            .optional()
    }

    fn release_spam(&mut self, id: &str) -> QueryResult<bool> {
        diesel::update(submissions::table)
            .filter(submissions::id.eq(id).and(submissions::spam.eq(true)))
            .set((submissions::spam.eq(false), submissions::spam_reason.eq(None::<String>)))
            .execute(self)
            .map(|n| n > 0)
    }
}
