//! The PostgreSQL accept in one statement, one round trip: the claim of (form, operation
//! ID), the submission, its side-effect records, the duplicate link, the delivery row and the
//! change feed's `accepted` row,
//! as data-modifying CTEs that all depend on the claim (`ON CONFLICT DO NOTHING` leaves `s`
//! empty, and then nothing else is written). Kept prepared on the connection (`Prepared`):
//! PostgreSQL neither parses nor plans it again, which was most of its CPU per accept. Its
//! generic plan is only as good as the statistics it was made from; `young_pg` sees that a
//! fresh database has some. Behind a transaction-pooling pooler
//! (`database.prepared_statements = false`) it is sent unnamed.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Integer, Nullable, Text, Timestamp};
use diesel::PgConnection;

use super::duplicates::{candidates_sql, LinkKeys, CANDIDATE_SEPARATOR};
use super::models::{NewDelivery, NewEffect, NewSubmission, Submission, SubmissionFile};
use super::prepared::{placeholders, Prepared};
use crate::domain::{EffectKind, EffectState, PairStatus, SpamReason};

/// Everything one acceptance writes.
pub struct Claim<'a> {
    pub submission: &'a NewSubmission,
    pub effects: &'a [NewEffect],
    /// The blobs its file fields name.
    pub files: &'a [SubmissionFile],
    /// Every effect is held until its files are scanned.
    pub scan_hold: bool,
    /// The delivery row of this request (`created` or `spam`).
    pub delivery: &'a NewDelivery,
    /// The duplicate look-up: the keys, the forms screened together and the window.
    pub link: Option<Link<'a>>,
    /// The id of the pair row naming the candidates found, if any.
    pub pair_id: &'a str,
    /// Whether a linked submission's effects are held for the screening.
    pub hold_linked: bool,
    /// The confirmation cap, when it applies: the start of the window, and the result body
    /// stored when the slot is taken (see `accept::recipient_cap`).
    pub cap: Option<(NaiveDateTime, &'a str)>,
}

/// The duplicate look-up of one acceptance.
#[derive(Debug, Clone, Copy)]
pub struct Link<'a> {
    pub keys: LinkKeys<'a>,
    pub forms: &'a [String],
    pub since: NaiveDateTime,
    pub until: NaiveDateTime,
}

/// The placeholder of the change feed's `seq` of the `accepted` row.
const CHANGE_SEQ: &str = "$37";
/// The placeholder of the duplicate look-up's first form.
const FIRST_FORM: usize = 38;

/// What the statement did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claimed {
    /// This call created the submission.
    pub created: bool,
    /// It was linked to an earlier submission (a pair to screen).
    pub linked: bool,
    /// The confirmation was cancelled by the recipient cap (the capped body was stored).
    pub capped: bool,
}

#[derive(QueryableByName)]
struct Row {
    #[diesel(sql_type = BigInt)]
    created: i64,
    #[diesel(sql_type = Bool)]
    linked: bool,
    #[diesel(sql_type = Bool)]
    capped: bool,
}

/// The submission's columns, in the order of the binds of `claim` ($12 on, see
/// `bind_submission`) and of `claim_many_pg`'s rows. A new column is one name here, one `$n`
/// in `INSERT_SUBMISSION` and one `.bind` in each.
macro_rules! submission_columns {
    () => {
        "id, form, operation_id, fingerprint, fields_json, response_body, channel, keyless, spam, \
         email_digest, phone_digest, received_at, operation_expires_at, spam_reason, journey_id, \
         name_digest, locale, route, form_version"
    };
}
pub(super) use submission_columns;

/// The submission's INSERT: its columns and their binds, which come last.
const INSERT_SUBMISSION: &str = concat!(
    "INSERT INTO submissions (",
    submission_columns!(),
    ") SELECT $12, $13, $14, $15, $16, CASE WHEN (SELECT capped FROM k) THEN $29 ELSE $17 END, $18, $19, $20, \
     $21, $22, $23, $24, $25, $26, $30, $31, $35, $36 \
     ON CONFLICT (form, operation_id) DO NOTHING \
     RETURNING id, form, operation_id, received_at"
);

/// The confirmation cap ($27: it applies; $28: the window's start; $13, $14, $21, $23: the
/// form, key, recipient digest and time): takes the recipient's slot unless it was taken
/// within the window, and only for a key not stored yet (a replay never touches it).
/// A slot seen taken is not locked (a flood to one address does not queue on its row);
/// accepts that saw it free wait on the row, and the upsert's `WHERE` on its latest version
/// lets at most one of them take a window. `k.capped`: this submission's confirmation is cancelled.
const CAP: &str = "c AS (INSERT INTO confirmation_caps (form, email_digest, last_at) \
       SELECT $13, $21, $23 WHERE $27 AND $21::text IS NOT NULL \
       AND NOT EXISTS (SELECT 1 FROM submissions WHERE form = $13 AND operation_id = $14) \
       AND NOT EXISTS (SELECT 1 FROM confirmation_caps WHERE form = $13 AND email_digest = $21 \
       AND last_at > $28) \
       ON CONFLICT (form, email_digest) DO UPDATE SET last_at = EXCLUDED.last_at \
       WHERE confirmation_caps.last_at <= $28 RETURNING 1), \
     k AS (SELECT ($27 AND $21::text IS NOT NULL AND NOT EXISTS (SELECT 1 FROM c)) AS capped)";

/// Which accept statement a shape's text is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Statement {
    /// `claim`'s, for one acceptance.
    One,
    /// `claim_many_pg`'s, for rows that share no duplicate key.
    Many,
    /// `claim_many_pg`'s, for rows some of which do: each sees those before it.
    ManyInTurn,
}

/// The statement for `link`'s shape, made once per shape: which keys it looks up and over
/// how many forms (or no look-up), and whether the submission names files. Formatting its
/// 3–4 KB for every accept was most of the allocator's time under `claim`
/// (docs/benchmarks/history.md, eighth session). The shapes are few (the key sets times the
/// form groups' sizes, for each `Statement`); past `SHAPES` a statement is made but not kept.
/// `make` writes it: `make_statement`, or one of `claim_many_pg`'s for any number of
/// acceptances (`kind`, which the shape tells apart).
pub(super) fn statement(
    link: Option<Link<'_>>,
    files: bool,
    kind: Statement,
    make: fn(Option<Link<'_>>, bool) -> String,
) -> Arc<str> {
    const SHAPES: usize = 256;
    /// Which keys (email, phone, name, content) over how many forms (`None`: no look-up),
    /// whether there are files, and which statement.
    type Shape = (Option<([bool; 4], usize)>, bool, Statement);
    static MADE: LazyLock<Mutex<HashMap<Shape, Arc<str>>>> = LazyLock::new(Default::default);
    let lookup = link.map(|l| {
        let k = l.keys;
        ([k.email.is_some(), k.phone.is_some(), k.name.is_some(), k.content.is_some()], l.forms.len())
    });
    let shape: Shape = (lookup, files, kind);
    let mut made = MADE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(sql) = made.get(&shape) {
        return sql.clone();
    }
    let sql: Arc<str> = make(link, files).into();
    if made.len() < SHAPES {
        made.insert(shape, sql.clone());
    }
    sql
}

/// The statement with the duplicate look-up by `link`'s keys over its forms (from `FIRST_FORM` on),
/// or without it (spam, no key); with the rows of the files ($33, $34) only when there are
/// some (`submission_files` is not even opened for the others).
fn make_statement(link: Option<Link<'_>>, files: bool) -> String {
    let lookup = match link {
        None => "SELECT NULL::text AS id, NULL::timestamp AS received_at WHERE false".to_string(),
        // The submission's own digests ($21, $22, $30) and fingerprint ($15) are the keys;
        // it is not visible to the look-up (the same snapshot), and `FROM s` makes it empty
        // when the claim failed.
        Some(l) => format!(
            "SELECT c.id, c.received_at FROM s, ({}) c",
            candidates_sql(
                &placeholders(FIRST_FORM, l.forms.len()),
                l.keys,
                ["$2", "$1", "$12", "$21", "$22", "$30", "$15"],
                None
            )
        ),
    };
    let (screening, cancelled, pending) =
        (PairStatus::Screening.as_str(), EffectState::Cancelled.as_str(), EffectState::Pending.as_str());
    let confirmation = EffectKind::CONFIRMATION_EMAIL;
    let confirmation = confirmation.as_str();
    let sep = CANDIDATE_SEPARATOR;
    let change = super::changes::pg_accepted_cte(CHANGE_SEQ, "s");
    let files = if files {
        "sf AS (INSERT INTO submission_files (submission_id, sha256, scan) \
         SELECT s.id, x.sha256, x.scan FROM s, unnest($33::text[], $34::text[]) AS x(sha256, scan)), "
    } else {
        ""
    };
    format!(
        "WITH {CAP}, \
         s AS ({INSERT_SUBMISSION}), \
         f AS ({lookup}), \
         p AS (INSERT INTO duplicate_pairs (id, form, original_id, duplicate_id, score, reasons, status, \
               created_at, candidates) \
               SELECT $3, s.form, (array_agg(f.id ORDER BY f.received_at DESC))[1], s.id, 0, '[]', \
               '{screening}', s.received_at, \
               NULLIF(array_to_string((array_agg(f.id ORDER BY f.received_at DESC))[2:], '{sep}'), '') \
               FROM s, f GROUP BY s.id, s.form, s.received_at), \
         e AS (INSERT INTO side_effects (id, submission_id, kind, batch, effect_key, state, held, \
               last_error, next_attempt_at, created_at, updated_at) \
               SELECT x.id, s.id, x.kind, 0, x.effect_key, \
               CASE WHEN x.kind = '{confirmation}' AND (SELECT capped FROM k) THEN '{cancelled}' ELSE '{pending}' END, \
               ($4 AND EXISTS (SELECT 1 FROM f) OR $32) AND NOT (x.kind = '{confirmation}' AND (SELECT capped FROM k)), \
               CASE WHEN x.kind = '{confirmation}' AND (SELECT capped FROM k) THEN 'recipient_cap' END, \
               s.received_at, s.received_at, s.received_at \
               FROM s, unnest($5::text[], $6::text[], $7::text[]) AS x(id, kind, effect_key)), \
         {files}{change}, \
         d AS (INSERT INTO deliveries (id, form, operation_id, submission_id, channel, outcome, \
               http_status, received_at) \
               SELECT $8, s.form, s.operation_id, s.id, $11, $9, $10, s.received_at FROM s) \
         SELECT (SELECT count(*) FROM s) AS created, EXISTS (SELECT 1 FROM f) AS linked, \
         (SELECT capped FROM k) AS capped"
    )
}

/// Runs the acceptance as one statement (autocommit: one durable commit).
pub fn claim(c: &mut PgConnection, claim: &Claim<'_>) -> QueryResult<Claimed> {
    let link = claim.link;
    let since = link.map_or(claim.submission.received_at, |l| l.since);
    let until = link.map_or(claim.submission.received_at, |l| l.until);
    let effects = claim.effects;
    let forms: Vec<&str> = link.map_or(Vec::new(), |l| l.forms.iter().map(String::as_str).collect());
    let query = Prepared::new(statement(link, !claim.files.is_empty(), Statement::One, make_statement))
        .bind::<Timestamp, _>(until)
        .bind::<Timestamp, _>(since)
        .bind::<Text, _>(claim.pair_id)
        .bind::<Bool, _>(claim.hold_linked)
        .bind::<Array<Text>, _>(effects.iter().map(|e| e.id.as_str()).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(effects.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(effects.iter().map(|e| e.effect_key.as_str()).collect::<Vec<_>>())
        .bind::<Text, _>(&claim.delivery.id)
        .bind::<Text, _>(&claim.delivery.outcome)
        .bind::<Integer, _>(claim.delivery.http_status)
        .bind::<Text, _>(&claim.delivery.channel);
    let s = claim.submission;
    // bind_submission: $12 … $26, in INSERT_SUBMISSION's column order.
    let query = query
        .bind::<Text, _>(&s.id)
        .bind::<Text, _>(&s.form)
        .bind::<Text, _>(&s.operation_id)
        .bind::<Text, _>(&s.fingerprint)
        .bind::<Nullable<Text>, _>(s.fields_json.as_deref())
        .bind::<Text, _>(&s.response_body)
        .bind::<Text, _>(&s.channel)
        .bind::<Bool, _>(s.keyless)
        .bind::<Bool, _>(s.spam)
        .bind::<Nullable<Text>, _>(s.email_digest.as_deref())
        .bind::<Nullable<Text>, _>(s.phone_digest.as_deref())
        .bind::<Timestamp, _>(s.received_at)
        .bind::<Timestamp, _>(s.operation_expires_at)
        .bind::<Nullable<Text>, _>(s.spam_reason.map(SpamReason::as_str))
        .bind::<Nullable<Text>, _>(s.journey_id.as_deref());
    // The cap: $27 … $29.
    let (window_start, capped_body) = claim.cap.unwrap_or((s.received_at, ""));
    let query = query
        .bind::<Bool, _>(claim.cap.is_some())
        .bind::<Timestamp, _>(window_start)
        .bind::<Text, _>(capped_body);
    // The duplicate look-up's name digest: $30, the visitor's locale: $31, the scan hold:
    // $32, the files: $33 and $34, the route: $35, the form's version: $36, the feed's `seq`
    // ($37, `CHANGE_SEQ`), then the look-up's forms from `FIRST_FORM` on.
    let files = claim.files;
    let mut query = query
        .bind::<Nullable<Text>, _>(s.name_digest.as_deref())
        .bind::<Nullable<Text>, _>(s.locale.as_deref())
        .bind::<Bool, _>(claim.scan_hold)
        .bind::<Array<Text>, _>(files.iter().map(|f| f.sha256.as_str()).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(files.iter().map(|f| f.scan.as_str()).collect::<Vec<_>>())
        .bind::<Nullable<Text>, _>(s.route.as_deref())
        .bind::<Nullable<Text>, _>(s.form_version.as_deref())
        .bind::<BigInt, _>(super::changes::pg_seqs(1));
    for form in forms {
        query = query.bind::<Text, _>(form);
    }
    let row: Row = query.get_result(c)?;
    Ok(Claimed { created: row.created == 1, linked: row.linked, capped: row.capped })
}

/// The submission holding (form, operation ID), read after a claim found it taken.
pub fn holder(c: &mut PgConnection, form: &str, operation_id: &str) -> QueryResult<Option<Submission>> {
    Ok(holders(c, form, &[operation_id])?.pop())
}

/// The submissions of `form` holding any of `operation_ids`, in one statement (a batch of
/// `db::Lookups`).
pub fn holders(c: &mut PgConnection, form: &str, operation_ids: &[&str]) -> QueryResult<Vec<Submission>> {
    Prepared::new(
        "SELECT id, form, operation_id, fingerprint, response_body, spam, received_at, operation_expires_at, \
         content_purged_at, form_version \
         FROM submissions WHERE form = $1 AND operation_id = ANY($2)",
    )
    .bind::<Text, _>(form)
    .bind::<Array<Text>, _>(operation_ids)
    .load(c)
}
