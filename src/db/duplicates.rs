//! What the duplicate detector reads and writes inside the accept transaction.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::schema::{duplicate_pairs, submissions};

/// An earlier submission that shares an email, a phone or (keyless) the whole content.
#[derive(Debug, Clone, Queryable)]
pub struct Candidate {
    pub id: String,
    pub fingerprint: String,
    pub fields_json: Option<String>,
    pub email_digest: Option<String>,
    pub phone_digest: Option<String>,
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
    pub status: String,
    pub created_at: NaiveDateTime,
}

/// What to look for: each present key is one indexed lookup.
#[derive(Debug, Clone, Copy)]
pub struct Lookup<'a> {
    pub form: &'a str,
    pub exclude_id: &'a str,
    pub since: NaiveDateTime,
    pub until: NaiveDateTime,
    pub email_digest: Option<&'a str>,
    pub phone_digest: Option<&'a str>,
    /// The fingerprint, when the new submission is keyless.
    pub keyless_fingerprint: Option<&'a str>,
}

/// Candidates compared per lookup at most.
const PER_KEY: i64 = 20;

pub trait DuplicateStore {
    fn duplicate_candidates(&mut self, lookup: &Lookup<'_>) -> QueryResult<Vec<Candidate>>;
    /// Stores a pair unless it exists (a pair decided "not a duplicate" is never stored again).
    fn insert_pair(&mut self, pair: &NewPair) -> QueryResult<()>;
}

macro_rules! candidates {
    ($c:expr, $l:expr, $filter:expr) => {
        submissions::table
            .filter(submissions::form.eq($l.form))
            .filter(submissions::id.ne($l.exclude_id))
            .filter(submissions::received_at.ge($l.since))
            .filter(submissions::received_at.le($l.until))
            .filter(submissions::spam.eq(false))
            .filter($filter)
            .order(submissions::received_at.desc())
            .limit(PER_KEY)
            .select((
                submissions::id,
                submissions::fingerprint,
                submissions::fields_json,
                submissions::email_digest,
                submissions::phone_digest,
            ))
            .load::<Candidate>($c)
    };
}

macro_rules! impl_duplicates {
    ($conn:ty) => {
        impl DuplicateStore for $conn {
            fn duplicate_candidates(&mut self, l: &Lookup<'_>) -> QueryResult<Vec<Candidate>> {
                let mut found = Vec::new();
                if let Some(d) = l.email_digest {
                    found.extend(candidates!(self, l, submissions::email_digest.eq(d))?);
                }
                if let Some(d) = l.phone_digest {
                    found.extend(candidates!(self, l, submissions::phone_digest.eq(d))?);
                }
                if let Some(f) = l.keyless_fingerprint {
                    found.extend(candidates!(
                        self,
                        l,
                        submissions::keyless.eq(true).and(submissions::fingerprint.eq(f))
                    )?);
                }
                found.sort_by(|a, b| a.id.cmp(&b.id));
                found.dedup_by(|a, b| a.id == b.id);
                Ok(found)
            }

            fn insert_pair(&mut self, pair: &NewPair) -> QueryResult<()> {
                diesel::insert_into(duplicate_pairs::table)
                    .values(pair)
                    .on_conflict((duplicate_pairs::original_id, duplicate_pairs::duplicate_id))
                    .do_nothing()
                    .execute(self)
                    .map(|_| ())
            }
        }
    };
}

impl_duplicates!(diesel::SqliteConnection);
impl_duplicates!(diesel::PgConnection);
