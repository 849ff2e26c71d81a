//! What the duplicate detector reads and writes: on the accept path one indexed look-up
//! (the cluster's first submission) and one pair row; off it, the screening of those pairs.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::schema::{duplicate_pairs, submissions};
use super::DbConnection;
use crate::domain::PairStatus;

pub const SCREENING: PairStatus = PairStatus::Screening;

/// What a screened pair needs of each of its submissions.
#[derive(Debug, Clone, Queryable)]
pub struct Candidate {
    pub id: String,
    pub fingerprint: String,
    pub fields_json: Option<String>,
    pub email_digest: Option<String>,
    pub phone_digest: Option<String>,
    pub keyless: bool,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = duplicate_pairs)]
pub struct NewPair {
    pub id: String,
    pub form: String,
    pub original_id: String,
    pub duplicate_id: String,
    pub score: f64,
    pub reasons: String,
    pub status: PairStatus,
    pub created_at: NaiveDateTime,
}

/// The one key a new submission is linked by: its email, else its phone, else (keyless)
/// its whole content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKey<'a> {
    Email(&'a str),
    Phone(&'a str),
    Content(&'a str),
}

impl<'a> LinkKey<'a> {
    /// The `submissions` column compared, and the value.
    pub fn column_and_value(self) -> (&'static str, &'a str) {
        match self {
            LinkKey::Email(d) => ("email_digest", d),
            LinkKey::Phone(d) => ("phone_digest", d),
            LinkKey::Content(f) => ("fingerprint", f),
        }
    }

    /// The index that serves the look-up by this key in `received_at` order.
    fn index(self) -> Option<&'static str> {
        match self {
            LinkKey::Email(_) => Some("submissions_email_digest"),
            LinkKey::Phone(_) => Some("submissions_phone_digest"),
            LinkKey::Content(_) => None,
        }
    }
}

#[derive(QueryableByName)]
struct Found {
    #[diesel(sql_type = diesel::sql_types::Text)]
    id: String,
}

/// The look-up: the earliest submission of `form` since `since` (not spam) with the same key.
#[derive(Debug, Clone, Copy)]
pub struct Lookup<'a> {
    pub form: &'a str,
    pub exclude_id: &'a str,
    pub since: NaiveDateTime,
    pub until: NaiveDateTime,
    pub key: LinkKey<'a>,
}

/// A pair waiting for its score, with both submissions.
#[derive(Debug, Clone)]
pub struct Unscreened {
    pub pair_id: String,
    pub form: String,
    pub original: Candidate,
    pub duplicate: Candidate,
}

pub trait DuplicateStore {
    /// The cluster's first submission: one indexed look-up.
    fn cluster_first(&mut self, lookup: &Lookup<'_>) -> QueryResult<Option<String>>;
    /// Stores a pair unless it exists (a pair decided "not a duplicate" is never stored again).
    fn insert_pair(&mut self, pair: &NewPair) -> QueryResult<()>;
    /// Up to `limit` pairs still being screened, oldest first.
    fn unscreened(&mut self, limit: i64) -> QueryResult<Vec<Unscreened>>;
    /// Stores a pair's score (it becomes `open`), or removes it when `scored` is `None`
    /// (too unlike to review); false when another screener got there first.
    fn finish_screening(&mut self, pair_id: &str, scored: Option<(f64, &str)>) -> QueryResult<bool>;
}

impl DuplicateStore for DbConnection {
    fn cluster_first(&mut self, l: &Lookup<'_>) -> QueryResult<Option<String>> {
        // SQLite (3.53), with no statistics, serves `ORDER BY received_at LIMIT 1` from the
        // (form, received_at) index and walks the whole window row by row; INDEXED BY names
        // the key's own index, where the first row found is the answer.
        if let (DbConnection::Sqlite(c), Some(index)) = (&mut *self, l.key.index()) {
            let (column, value) = l.key.column_and_value();
            return diesel::sql_query(format!(
                "SELECT id FROM submissions INDEXED BY {index} WHERE form = ? AND {column} = ? \
                 AND received_at >= ? AND received_at <= ? AND id <> ? AND spam = 0 \
                 ORDER BY received_at LIMIT 1"
            ))
            .bind::<diesel::sql_types::Text, _>(l.form)
            .bind::<diesel::sql_types::Text, _>(value)
            .bind::<diesel::sql_types::Timestamp, _>(l.since)
            .bind::<diesel::sql_types::Timestamp, _>(l.until)
            .bind::<diesel::sql_types::Text, _>(l.exclude_id)
            .get_result::<Found>(c)
            .optional()
            .map(|found| found.map(|f| f.id));
        }
        let in_window = submissions::table
            .filter(submissions::form.eq(l.form))
            .filter(submissions::received_at.ge(l.since))
            .filter(submissions::received_at.le(l.until))
            .filter(submissions::id.ne(l.exclude_id))
            .filter(submissions::spam.eq(false))
            .order(submissions::received_at.asc())
            .select(submissions::id);
        match l.key {
            LinkKey::Email(d) => in_window.filter(submissions::email_digest.eq(d)).first(self),
            LinkKey::Phone(d) => in_window.filter(submissions::phone_digest.eq(d)).first(self),
            LinkKey::Content(f) => in_window
                .filter(submissions::keyless.eq(true).and(submissions::fingerprint.eq(f)))
                .first(self),
        }
        .optional()
    }

    fn insert_pair(&mut self, pair: &NewPair) -> QueryResult<()> {
        self.execute_native(
            diesel::insert_into(duplicate_pairs::table)
                .values(pair)
                .on_conflict((duplicate_pairs::original_id, duplicate_pairs::duplicate_id))
                .do_nothing(),
        )
        .map(|_| ())
    }

    fn unscreened(&mut self, limit: i64) -> QueryResult<Vec<Unscreened>> {
        let pairs: Vec<(String, String, String, String)> = duplicate_pairs::table
            .filter(duplicate_pairs::status.eq(SCREENING))
            .order(duplicate_pairs::created_at)
            .limit(limit)
            .select((
                duplicate_pairs::id,
                duplicate_pairs::form,
                duplicate_pairs::original_id,
                duplicate_pairs::duplicate_id,
            ))
            .load(self)?;
        let ids: Vec<&String> = pairs.iter().flat_map(|p| [&p.2, &p.3]).collect();
        let found: Vec<Candidate> = submissions::table
            .filter(submissions::id.eq_any(ids))
            .select((
                submissions::id,
                submissions::fingerprint,
                submissions::fields_json,
                submissions::email_digest,
                submissions::phone_digest,
                submissions::keyless,
            ))
            .load(self)?;
        let get = |id: &str| found.iter().find(|c| c.id == id).cloned();
        Ok(pairs
            .into_iter()
            .filter_map(|(pair_id, form, o, d)| {
                Some(Unscreened { pair_id, form, original: get(&o)?, duplicate: get(&d)? })
            })
            .collect())
    }

    fn finish_screening(&mut self, pair_id: &str, scored: Option<(f64, &str)>) -> QueryResult<bool> {
        let pair = duplicate_pairs::table
            .filter(duplicate_pairs::id.eq(pair_id))
            .filter(duplicate_pairs::status.eq(SCREENING));
        let n = match scored {
            Some((score, reasons)) => diesel::update(pair)
                .set((
                    duplicate_pairs::score.eq(score),
                    duplicate_pairs::reasons.eq(reasons),
                    duplicate_pairs::status.eq(PairStatus::Open),
                ))
                .execute(self)?,
            None => diesel::delete(pair).execute(self)?,
        };
        Ok(n == 1)
    }
}
