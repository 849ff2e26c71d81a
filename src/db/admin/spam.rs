//! Submissions set aside as spam, and their release as real inquiries.

use diesel::prelude::*;

use crate::db::schema::submissions;
use crate::db::DbConnection;
use crate::domain::SpamReason;

/// What a release needs of a submission.
#[derive(Debug, Clone, Queryable)]
pub struct SpamCandidate {
    pub form: String,
    pub spam: bool,
    pub fields_json: Option<String>,
    pub spam_reason: Option<SpamReason>,
    /// Its locale tag (`locale = "auto"` forms), which a route may match.
    pub locale: Option<String>,
}

impl SpamCandidate {
    /// A file of it is malware.
    pub fn is_malware(&self) -> bool {
        self.spam_reason == Some(SpamReason::Malware)
    }
}

pub trait SpamStore {
    /// The submission `id`'s form, spam flag, fields and spam reason.
    fn spam_candidate(&mut self, id: &str) -> QueryResult<Option<SpamCandidate>>;
    /// Clears `id`'s spam flag and reason and sets the route it takes as a real inquiry;
    /// false when it was not (or no longer) spam, or when a file of it is malware (checked on
    /// the row the update takes, so a rescan that finds malware meanwhile is never undone).
    fn release_spam(&mut self, id: &str, route: Option<&str>) -> QueryResult<bool>;
}

impl SpamStore for DbConnection {
    fn spam_candidate(&mut self, id: &str) -> QueryResult<Option<SpamCandidate>> {
        submissions::table
            .filter(submissions::id.eq(id))
            .select((
                submissions::form,
                submissions::spam,
                submissions::fields_json,
                submissions::spam_reason,
                submissions::locale,
            ))
            .first(self)
            .optional()
    }

    fn release_spam(&mut self, id: &str, route: Option<&str>) -> QueryResult<bool> {
        diesel::update(submissions::table)
            .filter(submissions::id.eq(id).and(submissions::spam.eq(true)))
            .filter(submissions::spam_reason.is_null().or(submissions::spam_reason.ne(SpamReason::Malware)))
            .set((
                submissions::spam.eq(false),
                submissions::spam_reason.eq(None::<SpamReason>),
                submissions::route.eq(route),
            ))
            .execute(self)
            .map(|n| n > 0)
    }
}
