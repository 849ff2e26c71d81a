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
    pub form: String,
    pub received_at: NaiveDateTime,
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

/// How many earlier submissions one new submission is compared with at most: its most
/// recent matches in the window (the same sender's other requests among them, so that the
/// screener can tell which one it repeats).
pub const CANDIDATES: i64 = 6;

/// What a new submission is looked up by: the keyed digests of its canonical email, phone
/// and name plus company; without any of them (keyless), its whole content.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkKeys<'a> {
    pub email: Option<&'a str>,
    pub phone: Option<&'a str>,
    pub name: Option<&'a str>,
    pub content: Option<&'a str>,
}

impl<'a> LinkKeys<'a> {
    /// Each key's `submissions` column, value, and the index serving it in `received_at` order.
    pub fn columns(self) -> Vec<(&'static str, &'a str, Option<&'static str>)> {
        [
            (self.email, "email_digest", Some("submissions_email_digest")),
            (self.phone, "phone_digest", Some("submissions_phone_digest")),
            (self.name, "name_digest", Some("submissions_name_digest")),
            (self.content, "fingerprint", None),
        ]
        .into_iter()
        .filter_map(|(v, column, index)| v.map(|v| (column, v, index)))
        .collect()
    }
}

#[derive(QueryableByName)]
struct Found {
    #[diesel(sql_type = diesel::sql_types::Text)]
    id: String,
}

/// The look-up: up to `CANDIDATES` most recent submissions of `forms` (the form's group)
/// between `since` and `until` (not spam) sharing a key.
#[derive(Debug, Clone, Copy)]
pub struct Lookup<'a> {
    pub forms: &'a [String],
    pub exclude_id: &'a str,
    pub since: NaiveDateTime,
    pub until: NaiveDateTime,
    pub keys: LinkKeys<'a>,
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
    /// The candidates: one bounded look-up, each key served by its own index.
    fn candidates(&mut self, lookup: &Lookup<'_>) -> QueryResult<Vec<String>>;
    /// Stores a pair unless it exists (a pair decided "not a duplicate" is never stored again).
    fn insert_pair(&mut self, pair: &NewPair) -> QueryResult<()>;
    /// The pairs still being screened of the submissions named by the `limit` oldest such
    /// pairs (all the candidates of one submission together).
    fn unscreened(&mut self, limit: i64) -> QueryResult<Vec<Unscreened>>;
    /// Stores a pair's score and status (`open` for review, `same_sender` listed apart), or
    /// removes it when `scored` is `None`; false when another screener got there first.
    fn finish_screening(
        &mut self,
        pair_id: &str,
        scored: Option<(f64, &str, PairStatus)>,
    ) -> QueryResult<bool>;
    /// The first submission of the cluster `id` repeats (open or confirmed, scoring at least
    /// `min_score`), if it repeats one.
    fn cluster_root(&mut self, id: &str, min_score: f64) -> QueryResult<Option<String>>;
    /// Points a pair being screened at another original (its cluster's first).
    fn relink(&mut self, pair_id: &str, original_id: &str) -> QueryResult<()>;
}

/// One arm of the candidate look-up: a key's most recent matches (SQLite's text), its
/// values in placeholders `$first`, `$first + 1`, … (forms, key, since, until, excluded id).
fn sqlite_arm(column: &str, index: Option<&str>, forms: usize, first: usize) -> String {
    let indexed = index.map(|i| format!("INDEXED BY {i} ")).unwrap_or_default();
    let keyless = if column == "fingerprint" { "AND keyless = 1 " } else { "" };
    let p = |i: usize| format!("${}", first + i);
    let marks: Vec<String> = (0..forms).map(p).collect();
    let (key, since, until, exclude) = (p(forms), p(forms + 1), p(forms + 2), p(forms + 3));
    format!(
        "SELECT * FROM (SELECT id, received_at FROM submissions {indexed}WHERE form IN ({}) \
         AND {column} = {key} {keyless}AND received_at >= {since} AND received_at <= {until} \
         AND id <> {exclude} AND spam = 0 ORDER BY received_at DESC LIMIT {CANDIDATES})",
        marks.join(", ")
    )
}

impl DuplicateStore for DbConnection {
    fn candidates(&mut self, l: &Lookup<'_>) -> QueryResult<Vec<String>> {
        use diesel::sql_types::{Nullable, Text, Timestamp};
        let columns = l.keys.columns();
        if columns.is_empty() || l.forms.is_empty() {
            return Ok(Vec::new());
        }
        // Each arm names its key's own index: SQLite (3.53), with no statistics, would
        // otherwise walk the (form, received_at) index through the whole window.
        let per_arm = l.forms.len() + 4;
        let arms: Vec<String> = (columns.iter().enumerate())
            .map(|(n, (c, _, i))| sqlite_arm(c, *i, l.forms.len(), 1 + n * per_arm))
            .collect();
        let sql = format!(
            "SELECT id FROM ({}) GROUP BY id ORDER BY max(received_at) DESC LIMIT {CANDIDATES}",
            arms.join(" UNION ALL ")
        );
        let found: Vec<Found> = match self {
            DbConnection::Sqlite(c) => {
                let mut q = super::prepared::Prepared::<diesel::sqlite::Sqlite>::new(sql);
                for (_, value, _) in &columns {
                    for form in l.forms {
                        q = q.bind::<Text, _>(form.clone());
                    }
                    q = q
                        .bind::<Text, _>(value.to_string())
                        .bind::<Timestamp, _>(l.since)
                        .bind::<Timestamp, _>(l.until)
                        .bind::<Text, _>(l.exclude_id.to_string());
                }
                q.load(c)?
            }
            DbConnection::Pg(c) => {
                use super::claim_pg::{candidates_sql, placeholders};
                let sql = candidates_sql(
                    &placeholders(8, l.forms.len()),
                    l.keys,
                    ["$1", "$2", "$3", "$4", "$5", "$6", "$7"],
                );
                let mut q = super::prepared::Prepared::new(sql)
                    .bind::<Timestamp, _>(l.since)
                    .bind::<Timestamp, _>(l.until)
                    .bind::<Text, _>(l.exclude_id.to_string())
                    .bind::<Nullable<Text>, _>(l.keys.email.map(String::from))
                    .bind::<Nullable<Text>, _>(l.keys.phone.map(String::from))
                    .bind::<Nullable<Text>, _>(l.keys.name.map(String::from))
                    .bind::<Nullable<Text>, _>(l.keys.content.map(String::from));
                for form in l.forms {
                    q = q.bind::<Text, _>(form.clone());
                }
                q.load(c)?
            }
        };
        Ok(found.into_iter().map(|f| f.id).collect())
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
        let new: Vec<String> = duplicate_pairs::table
            .filter(duplicate_pairs::status.eq(SCREENING))
            .order(duplicate_pairs::created_at)
            .limit(limit)
            .select(duplicate_pairs::duplicate_id)
            .load(self)?;
        let pairs: Vec<(String, String, String, String)> = duplicate_pairs::table
            .filter(duplicate_pairs::status.eq(SCREENING))
            .filter(duplicate_pairs::duplicate_id.eq_any(&new))
            .order((duplicate_pairs::duplicate_id, duplicate_pairs::created_at))
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
                submissions::form,
                submissions::received_at,
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

    fn finish_screening(
        &mut self,
        pair_id: &str,
        scored: Option<(f64, &str, PairStatus)>,
    ) -> QueryResult<bool> {
        let pair = duplicate_pairs::table
            .filter(duplicate_pairs::id.eq(pair_id))
            .filter(duplicate_pairs::status.eq(SCREENING));
        let n = match scored {
            Some((score, reasons, status)) => diesel::update(pair)
                .set((
                    duplicate_pairs::score.eq(score),
                    duplicate_pairs::reasons.eq(reasons),
                    duplicate_pairs::status.eq(status),
                ))
                .execute(self)?,
            None => diesel::delete(pair).execute(self)?,
        };
        Ok(n == 1)
    }

    fn cluster_root(&mut self, id: &str, min_score: f64) -> QueryResult<Option<String>> {
        duplicate_pairs::table
            .filter(duplicate_pairs::duplicate_id.eq(id))
            .filter(duplicate_pairs::score.ge(min_score))
            .filter(duplicate_pairs::status.eq_any([PairStatus::Open, PairStatus::Duplicate]))
            .select(duplicate_pairs::original_id)
            .first(self)
            .optional()
    }

    fn relink(&mut self, pair_id: &str, original_id: &str) -> QueryResult<()> {
        let duplicate: String =
            duplicate_pairs::table.find(pair_id).select(duplicate_pairs::duplicate_id).first(self)?;
        let taken: i64 = duplicate_pairs::table
            .filter(duplicate_pairs::original_id.eq(original_id))
            .filter(duplicate_pairs::duplicate_id.eq(&duplicate))
            .count()
            .get_result(self)?;
        if taken > 0 {
            return Ok(()); // decided before: that decision stands, this pair stays as found
        }
        diesel::update(duplicate_pairs::table.filter(duplicate_pairs::id.eq(pair_id)))
            .set(duplicate_pairs::original_id.eq(original_id))
            .execute(self)
            .map(|_| ())
    }
}
