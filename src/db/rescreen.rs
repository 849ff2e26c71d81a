//! The queries of `onceform duplicates rescreen` (`duplicates::rescreen`) and of the pairs an
//! import left.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::schema::{duplicate_pairs, submissions};
use super::DbConnection;
use crate::domain::PairStatus;

/// A submission to screen again: id, form, fields, received_at, fingerprint, keyless.
pub type RescreenRow = (String, String, Option<String>, NaiveDateTime, String, bool);

/// Which submissions a rescreen pass reads, in (received_at, id) order.
pub struct RescreenPage<'a> {
    pub forms: &'a [String],
    pub since: Option<NaiveDateTime>,
    /// Past this (received_at, id): the previous page's last row.
    pub after: Option<&'a (NaiveDateTime, String)>,
    pub limit: i64,
}

pub trait RescreenStore {
    /// The page's kept (not spam, not purged) submissions.
    fn rescreen_page(&mut self, page: &RescreenPage<'_>) -> QueryResult<Vec<RescreenRow>>;
    /// The statuses of the pairs whose later side is one of `ids`.
    fn pair_statuses_of(&mut self, ids: &[String]) -> QueryResult<Vec<PairStatus>>;
    /// Some pair of `id`'s was decided by an admin (duplicate or not).
    fn has_decided_pair(&mut self, id: &str) -> QueryResult<bool>;
    fn set_contact_digests(
        &mut self,
        id: &str,
        email: Option<&str>,
        phone: Option<&str>,
        name: Option<&str>,
    ) -> QueryResult<()>;
    /// Drops `id`'s pairs nobody decided (open, same sender).
    fn drop_undecided_pairs_of(&mut self, id: &str) -> QueryResult<usize>;
    /// Which of `ids` are the later side of a pair.
    fn paired_among(&mut self, ids: &[String]) -> QueryResult<Vec<String>>;
}

impl RescreenStore for DbConnection {
    fn rescreen_page(&mut self, page: &RescreenPage<'_>) -> QueryResult<Vec<RescreenRow>> {
        let mut q = submissions::table
            .filter(submissions::form.eq_any(page.forms))
            .filter(submissions::spam.eq(false))
            .filter(submissions::test.eq(false))
            .filter(submissions::content_purged_at.is_null())
            .order((submissions::received_at, submissions::id))
            .limit(page.limit)
            .select((
                submissions::id,
                submissions::form,
                submissions::fields_json,
                submissions::received_at,
                submissions::fingerprint,
                submissions::keyless,
            ))
            .into_boxed();
        if let Some(since) = page.since {
            q = q.filter(submissions::received_at.ge(since));
        }
        if let Some((t, id)) = page.after {
            q = q.filter(
                submissions::received_at
                    .gt(*t)
                    .or(submissions::received_at.eq(*t).and(submissions::id.gt(id))),
            );
        }
        q.load(self)
    }

    fn pair_statuses_of(&mut self, ids: &[String]) -> QueryResult<Vec<PairStatus>> {
        duplicate_pairs::table
            .filter(duplicate_pairs::duplicate_id.eq_any(ids))
            .select(duplicate_pairs::status)
            .load(self)
    }

    fn has_decided_pair(&mut self, id: &str) -> QueryResult<bool> {
        duplicate_pairs::table
            .filter(duplicate_pairs::duplicate_id.eq(id))
            .filter(duplicate_pairs::status.eq_any([PairStatus::Duplicate, PairStatus::NotDuplicate]))
            .count()
            .get_result::<i64>(self)
            .map(|n| n > 0)
    }

    fn set_contact_digests(
        &mut self,
        id: &str,
        email: Option<&str>,
        phone: Option<&str>,
        name: Option<&str>,
    ) -> QueryResult<()> {
        diesel::update(submissions::table.filter(submissions::id.eq(id)))
            .set((
                submissions::email_digest.eq(email),
                submissions::phone_digest.eq(phone),
                submissions::name_digest.eq(name),
            ))
            .execute(self)
            .map(|_| ())
    }

    fn drop_undecided_pairs_of(&mut self, id: &str) -> QueryResult<usize> {
        diesel::delete(
            duplicate_pairs::table
                .filter(duplicate_pairs::duplicate_id.eq(id))
                .filter(duplicate_pairs::status.eq_any([PairStatus::Open, PairStatus::SameSender])),
        )
        .execute(self)
    }

    fn paired_among(&mut self, ids: &[String]) -> QueryResult<Vec<String>> {
        duplicate_pairs::table
            .filter(duplicate_pairs::duplicate_id.eq_any(ids))
            .select(duplicate_pairs::duplicate_id)
            .distinct()
            .load(self)
    }
}
