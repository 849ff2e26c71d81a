//! What the duplicate detector reads and writes: on the accept path one indexed look-up
//! and one pair row naming the candidates found; off it, the screening of those rows.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::prepared::{sqlite_time, Prepared};
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
    /// While screened: the candidates besides `original_id`, joined by `CANDIDATE_SEPARATOR`.
    pub candidates: Option<String>,
}

/// Joins the candidate IDs of a pair being screened (UUIDs: never part of one).
pub const CANDIDATE_SEPARATOR: &str = ",";

/// What the screener stores of the candidate it keeps: the pair, now naming that candidate
/// as its original, with its score, readable reasons (JSON) and status.
#[derive(Debug, Clone, Copy)]
pub struct Kept<'a> {
    pub original_id: &'a str,
    pub score: f64,
    pub reasons: &'a str,
    pub status: PairStatus,
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

/// A candidate waiting for its score, with both submissions: one per candidate of a pair row.
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
    /// The candidates of the pair rows still being screened of the submissions named by the
    /// `limit` oldest such rows (all of one submission together).
    fn unscreened(&mut self, limit: i64) -> QueryResult<Vec<Unscreened>>;
    /// Stores what the screening kept of a pair row (`open` for review, `same_sender` listed
    /// apart), or removes the row when `kept` is `None`; false when another screener got
    /// there first.
    fn finish_screening(&mut self, pair_id: &str, kept: Option<Kept<'_>>) -> QueryResult<bool>;
    /// The first submission of the cluster `id` repeats (open or confirmed, scoring at least
    /// `min_score`), if it repeats one.
    fn cluster_root(&mut self, id: &str, min_score: f64) -> QueryResult<Option<String>>;
    /// Whether a pair of `original` and `id` is stored (decided or not).
    fn pair_exists(&mut self, original: &str, id: &str) -> QueryResult<bool>;
}

/// How many submissions sharing one key within the window make that key a flood (a bot
/// sending one address, or one name and company, with fresh operation IDs): past it the key
/// links nothing more. The first `FLOOD` are linked and screened as usual (at most
/// `FLOOD - 1` pair rows per key and window, one cluster for review); the flood's later
/// submissions cost the accept path one bounded index look-up each and no pair row, and the
/// screener nothing. Each of a submission's other keys still links it.
pub const FLOOD: i64 = 16;

/// One arm of the candidate look-up: a key's most recent matches (SQLite's text), none when
/// the key has `FLOOD` matches; its values in placeholders `$first`, `$first + 1`, … (forms,
/// key, since, until, excluded id; the guard repeats them, SQLite binds a name once).
fn sqlite_arm(column: &str, index: Option<&str>, forms: usize, first: usize) -> String {
    let indexed = index.map(|i| format!("INDEXED BY {i} ")).unwrap_or_default();
    let keyless = if column == "fingerprint" { "AND keyless = 1 " } else { "" };
    let p = |i: usize| format!("${}", first + i);
    let marks: Vec<String> = (0..forms).map(p).collect();
    let (key, since, until, exclude) = (p(forms), p(forms + 1), p(forms + 2), p(forms + 3));
    let matching = format!(
        "FROM submissions {indexed}WHERE form IN ({}) AND {column} = {key} {keyless}\
         AND received_at >= {since} AND received_at <= {until} AND id <> {exclude} AND spam = 0 \
         AND test = 0",
        marks.join(", ")
    );
    format!(
        "SELECT * FROM (SELECT id, received_at {matching} ORDER BY received_at DESC LIMIT {CANDIDATES}) \
         WHERE (SELECT count(*) FROM (SELECT 1 {matching} LIMIT {FLOOD})) < {FLOOD}"
    )
}

/// The candidate look-up (PostgreSQL): each key's most recent matches in each form of the
/// group through the key's own index (form, key, `received_at`: with the form and the key
/// fixed, already in time order, so LIMIT stops early), then the `CANDIDATES` most recent of
/// them; none of a key with `FLOOD` matches in the group's window. `forms`: one placeholder
/// per form (`form = ANY(array)` would lose that order, and a generic plan then took any
/// index of the form). The others: since, until, excluded id, email, phone, name digests and
/// fingerprint. Only the keys `keys` has are looked up (an arm per absent key would still
/// scan its index). `earlier`: a FROM item of the submissions the same statement writes
/// before this one (`claim_many_pg`), which its snapshot does not show: they match, count
/// towards `FLOOD` and are linked as stored ones are, as if each had been written in turn.
pub fn candidates_sql(forms: &[String], keys: LinkKeys<'_>, p: [&str; 7], earlier: Option<&str>) -> String {
    let [since, until, exclude, email, phone, name, content] = p;
    let fresh =
        format!("received_at >= {since} AND received_at <= {until} AND id <> {exclude} AND spam = false");
    let window = format!("{fresh} AND test = false");
    let group = forms.join(", ");
    let written = |condition: &str| {
        earlier.map(|rows| {
            format!("SELECT id, received_at FROM {rows} WHERE form IN ({group}) AND {condition} AND {fresh}")
        })
    };
    // A key with `FLOOD` matches in the group's window links nothing more (see `FLOOD`).
    let guard = |condition: &str| {
        let earlier =
            written(condition).map(|w| format!(" + (SELECT count(*) FROM ({w}) w)")).unwrap_or_default();
        format!(
            "(SELECT count(*) FROM (SELECT 1 FROM submissions WHERE form IN ({group}) \
             AND {condition} AND {window} LIMIT {FLOOD}) f){earlier} < {FLOOD}"
        )
    };
    let arm = |form: &str, condition: &str| {
        format!(
            "(SELECT id, received_at FROM submissions WHERE form = {form} AND {condition} AND {window} \
             AND {} ORDER BY received_at DESC LIMIT {CANDIDATES})",
            guard(condition)
        )
    };
    let conditions: Vec<String> = [
        (keys.email.is_some(), format!("email_digest = {email}")),
        (keys.phone.is_some(), format!("phone_digest = {phone}")),
        (keys.name.is_some(), format!("name_digest = {name}")),
        (keys.content.is_some(), format!("keyless AND fingerprint = {content}")),
    ]
    .into_iter()
    .filter_map(|(present, c)| present.then_some(c))
    .collect();
    let stored = forms.iter().flat_map(|f| conditions.iter().map(move |c| arm(f, c)));
    let in_statement =
        conditions.iter().filter_map(|c| written(c).map(|w| format!("({w} AND {})", guard(c))));
    let arms: Vec<String> = stored.chain(in_statement).collect();
    format!(
        "SELECT id, max(received_at) AS received_at FROM ({}) u GROUP BY id \
         ORDER BY max(received_at) DESC LIMIT {CANDIDATES}",
        arms.join(" UNION ALL ")
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
                // Each value is sent once per use (four times a key): the times formatted once.
                let (since, until) = (sqlite_time(l.since), sqlite_time(l.until));
                let mut q = Prepared::<diesel::sqlite::Sqlite>::new(sql);
                for (_, value, _) in &columns {
                    for form in l.forms {
                        q = q.bind::<Text, _>(form.as_str());
                    }
                    q = q
                        .bind::<Text, _>(*value)
                        .bind::<Text, _>(since.as_str())
                        .bind::<Text, _>(until.as_str())
                        .bind::<Text, _>(l.exclude_id);
                }
                q.load(c)?
            }
            DbConnection::Pg(c) => {
                use super::prepared::placeholders;
                let sql = candidates_sql(
                    &placeholders(8, l.forms.len()),
                    l.keys,
                    ["$1", "$2", "$3", "$4", "$5", "$6", "$7"],
                    None,
                );
                let mut q = Prepared::new(sql)
                    .bind::<Timestamp, _>(l.since)
                    .bind::<Timestamp, _>(l.until)
                    .bind::<Text, _>(l.exclude_id)
                    .bind::<Nullable<Text>, _>(l.keys.email)
                    .bind::<Nullable<Text>, _>(l.keys.phone)
                    .bind::<Nullable<Text>, _>(l.keys.name)
                    .bind::<Nullable<Text>, _>(l.keys.content);
                for form in l.forms {
                    q = q.bind::<Text, _>(form.as_str());
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
        let rows: Vec<(String, String, String, String, Option<String>)> = duplicate_pairs::table
            .filter(duplicate_pairs::status.eq(SCREENING))
            .filter(duplicate_pairs::duplicate_id.eq_any(&new))
            .order((duplicate_pairs::duplicate_id, duplicate_pairs::created_at))
            .select((
                duplicate_pairs::id,
                duplicate_pairs::form,
                duplicate_pairs::original_id,
                duplicate_pairs::duplicate_id,
                duplicate_pairs::candidates,
            ))
            .load(self)?;
        // Each row's candidates: its original, then the others it lists.
        let pairs: Vec<(&String, &String, &str, &String)> = rows
            .iter()
            .flat_map(|(id, form, original, duplicate, others)| {
                let others = others.as_deref().into_iter().flat_map(|o| o.split(CANDIDATE_SEPARATOR));
                std::iter::once(original.as_str()).chain(others).map(move |o| (id, form, o, duplicate))
            })
            .collect();
        let ids: Vec<&str> = pairs.iter().flat_map(|p| [p.2, p.3.as_str()]).collect();
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
        let by_id: std::collections::HashMap<&str, &Candidate> =
            found.iter().map(|c| (c.id.as_str(), c)).collect();
        let get = |id: &str| by_id.get(id).map(|c| (*c).clone());
        Ok(pairs
            .into_iter()
            .filter_map(|(pair_id, form, o, d)| {
                Some(Unscreened {
                    pair_id: pair_id.clone(),
                    form: form.clone(),
                    original: get(o)?,
                    duplicate: get(d)?,
                })
            })
            .collect())
    }

    fn finish_screening(&mut self, pair_id: &str, kept: Option<Kept<'_>>) -> QueryResult<bool> {
        let pair = duplicate_pairs::table
            .filter(duplicate_pairs::id.eq(pair_id))
            .filter(duplicate_pairs::status.eq(SCREENING));
        let n = match kept {
            Some(k) => diesel::update(pair)
                .set((
                    duplicate_pairs::original_id.eq(k.original_id),
                    duplicate_pairs::score.eq(k.score),
                    duplicate_pairs::reasons.eq(k.reasons),
                    duplicate_pairs::status.eq(k.status),
                    duplicate_pairs::candidates.eq(None::<String>),
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

    fn pair_exists(&mut self, original: &str, id: &str) -> QueryResult<bool> {
        duplicate_pairs::table
            .filter(duplicate_pairs::original_id.eq(original))
            .filter(duplicate_pairs::duplicate_id.eq(id))
            .count()
            .get_result::<i64>(self)
            .map(|n| n > 0)
    }
}
