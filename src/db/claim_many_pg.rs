//! PostgreSQL: several acceptances in one statement, one round trip and one commit
//! (`services::accept::pg_batch` gathers them under load). Each row does what `claim_pg`'s
//! statement does for one: the claim of (form, operation ID), the confirmation cap, the
//! submission, the duplicate look-up and its pair row, the side-effect records, the files, the
//! change feed's `accepted` row and the delivery row, all from the claim of that row (a row
//! whose key is taken writes nothing).
//!
//! The rows travel as arrays (`unnest … WITH ORDINALITY`), so the text depends only on the
//! shape (`claim_pg::statement`), never on how many rows there are, and stays prepared.
//! The rows are written under one snapshot, which does not show them to each other, so the
//! statement itself lets each see those before it, as if they ran in turn: the first row of an
//! address takes its confirmation slot and caps the later ones (`CAP`), and the duplicate
//! look-up finds, counts and links the earlier rows (`candidates_sql`'s `earlier`). The caller
//! makes sure that the rows of one call share their form and look-up shape, and that no two
//! share an operation ID. The keys and recipients are inserted in their order, so that two
//! such statements never wait on each other's rows in a circle.

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Integer, Nullable, Text, Timestamp};
use diesel::PgConnection;

use super::claim_pg::{statement, submission_columns, Claim, Claimed, Link, Statement};
use super::duplicates::{candidates_sql, CANDIDATE_SEPARATOR};
use super::prepared::{placeholders, Prepared};
use crate::domain::{EffectKind, EffectState, PairStatus, SpamReason};

/// The placeholder of the look-up's first form: after the rows' 32 arrays, the effects' 4 and
/// the files' 3.
const FIRST_FORM: usize = 40;

/// The rows' columns as `unnest` gives them (`$1` … `$32`, in this order), then their ordinal.
const ROWS: &str = "x AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], \
     $5::text[], $6::text[], $7::text[], $8::bool[], $9::bool[], $10::text[], $11::text[], \
     $12::timestamp[], $13::timestamp[], $14::text[], $15::text[], $16::text[], $17::text[], \
     $18::text[], $19::text[], $20::text[], $21::bool[], $22::timestamp[], $23::timestamp[], \
     $24::timestamp[], $25::text[], $26::bool[], $27::bool[], $28::text[], $29::text[], \
     $30::int[], $31::text[], $32::bigint[]) WITH ORDINALITY AS x(id, form, operation_id, \
     fingerprint, fields_json, response_body, channel, keyless, spam, email_digest, phone_digest, \
     received_at, operation_expires_at, spam_reason, journey_id, name_digest, locale, route, \
     form_version, capped_body, cap, cap_since, since, until, pair_id, hold_linked, scan_hold, \
     delivery_id, delivery_outcome, http_status, delivery_channel, seq, i))";

/// `claim_pg::CAP` for each row, as if they ran in turn: `$20`–`$22` are the row's
/// `capped_body`, `cap` and `cap_since`. `t`: of the rows that would take their address's
/// slot, the first of each address; the slot it takes caps the later ones (`pg_batch` lets
/// two rows of one address share a statement only within one window of each other).
const CAP: &str = "t AS (SELECT DISTINCT ON (x.form, x.email_digest) x.i, x.form, x.email_digest, \
       x.received_at, x.cap_since FROM x WHERE x.cap AND x.email_digest IS NOT NULL \
       AND NOT EXISTS (SELECT 1 FROM submissions WHERE form = x.form AND operation_id = x.operation_id) \
       AND NOT EXISTS (SELECT 1 FROM confirmation_caps WHERE form = x.form \
       AND email_digest = x.email_digest AND last_at > x.cap_since) \
       ORDER BY x.form, x.email_digest, x.i), \
     c AS (INSERT INTO confirmation_caps (form, email_digest, last_at) \
       SELECT t.form, t.email_digest, t.received_at FROM t ORDER BY t.email_digest \
       ON CONFLICT (form, email_digest) DO UPDATE SET last_at = EXCLUDED.last_at \
       WHERE confirmation_caps.last_at <= (SELECT t.cap_since FROM t WHERE t.form = EXCLUDED.form \
       AND t.email_digest = EXCLUDED.email_digest) RETURNING form, email_digest), \
     k AS (SELECT x.i, (x.cap AND x.email_digest IS NOT NULL AND NOT EXISTS (SELECT 1 FROM c JOIN t \
       ON t.form = c.form AND t.email_digest = c.email_digest WHERE t.i = x.i)) AS capped FROM x)";

/// The statement for rows of `link`'s shape (or none), with the files' CTE when `files`;
/// when `in_turn` (some rows share a duplicate key), the look-up also finds the rows before
/// each in the statement, which costs every row's look-up a scan of them.
fn make_statement(link: Option<Link<'_>>, files: bool, in_turn: bool) -> String {
    // `n`: a row whose submission this statement created.
    let lookup = match link {
        None => "SELECT NULL::bigint AS i, NULL::text AS id, NULL::timestamp AS received_at WHERE false"
            .to_string(),
        Some(l) => format!(
            "SELECT n.i, c.id, c.received_at FROM sx n, LATERAL ({}) c",
            candidates_sql(
                &placeholders(FIRST_FORM, l.forms.len()),
                l.keys,
                [
                    "n.since",
                    "n.until",
                    "n.id",
                    "n.email_digest",
                    "n.phone_digest",
                    "n.name_digest",
                    "n.fingerprint"
                ],
                in_turn.then_some("(SELECT * FROM sx WHERE sx.i < n.i) b")
            )
        ),
    };
    let columns: Vec<String> = submission_columns!()
        .split(',')
        .map(|c| match c.trim() {
            "response_body" => "CASE WHEN k.capped THEN x.capped_body ELSE x.response_body END".to_string(),
            c => format!("x.{c}"),
        })
        .collect();
    let (screening, cancelled, pending) =
        (PairStatus::Screening.as_str(), EffectState::Cancelled.as_str(), EffectState::Pending.as_str());
    let confirmation = EffectKind::CONFIRMATION_EMAIL;
    let confirmation = confirmation.as_str();
    let sep = CANDIDATE_SEPARATOR;
    let change = super::changes::pg_accepted_cte("s.seq", "sx s");
    let files = if files {
        "sf AS (INSERT INTO submission_files (submission_id, sha256, scan) \
         SELECT n.id, y.sha256, y.scan FROM sx n \
         JOIN unnest($37::bigint[], $38::text[], $39::text[]) AS y(i, sha256, scan) ON y.i = n.i), "
    } else {
        ""
    };
    format!(
        "WITH {ROWS}, {CAP}, \
         s AS (INSERT INTO submissions ({}) SELECT {} FROM x JOIN k ON k.i = x.i ORDER BY x.form, x.operation_id \
               ON CONFLICT (form, operation_id) DO NOTHING RETURNING id), \
         sx AS (SELECT x.* FROM x JOIN s ON s.id = x.id), \
         f AS ({lookup}), \
         p AS (INSERT INTO duplicate_pairs (id, form, original_id, duplicate_id, score, reasons, status, \
               created_at, candidates) \
               SELECT n.pair_id, n.form, (array_agg(f.id ORDER BY f.received_at DESC))[1], n.id, 0, '[]', \
               '{screening}', n.received_at, \
               NULLIF(array_to_string((array_agg(f.id ORDER BY f.received_at DESC))[2:], '{sep}'), '') \
               FROM sx n JOIN f ON f.i = n.i GROUP BY n.i, n.pair_id, n.form, n.id, n.received_at), \
         e AS (INSERT INTO side_effects (id, submission_id, kind, batch, effect_key, state, held, \
               last_error, next_attempt_at, created_at, updated_at) \
               SELECT y.id, n.id, y.kind, 0, y.effect_key, \
               CASE WHEN y.kind = '{confirmation}' AND k.capped THEN '{cancelled}' ELSE '{pending}' END, \
               (n.hold_linked AND EXISTS (SELECT 1 FROM f WHERE f.i = n.i) OR n.scan_hold) \
               AND NOT (y.kind = '{confirmation}' AND k.capped), \
               CASE WHEN y.kind = '{confirmation}' AND k.capped THEN 'recipient_cap' END, \
               n.received_at, n.received_at, n.received_at \
               FROM sx n JOIN k ON k.i = n.i \
               JOIN unnest($33::bigint[], $34::text[], $35::text[], $36::text[]) AS y(i, id, kind, effect_key) \
               ON y.i = n.i), \
         {files}{change}, \
         d AS (INSERT INTO deliveries (id, form, operation_id, submission_id, channel, outcome, \
               http_status, received_at) \
               SELECT n.delivery_id, n.form, n.operation_id, n.id, n.delivery_channel, n.delivery_outcome, \
               n.http_status, n.received_at FROM sx n) \
         SELECT x.i, EXISTS (SELECT 1 FROM s WHERE s.id = x.id) AS created, \
         EXISTS (SELECT 1 FROM f WHERE f.i = x.i) AS linked, k.capped \
         FROM x JOIN k ON k.i = x.i ORDER BY x.i",
        submission_columns!(),
        columns.join(", "),
    )
}

#[derive(QueryableByName)]
struct Row {
    #[diesel(sql_type = BigInt)]
    i: i64,
    #[diesel(sql_type = Bool)]
    created: bool,
    #[diesel(sql_type = Bool)]
    linked: bool,
    #[diesel(sql_type = Bool)]
    capped: bool,
}

/// Whether two of `claims` share a duplicate key (email, phone, name, or the content of
/// keyless posts): then each row's look-up must see the rows before it.
fn in_turn(claims: &[Claim<'_>]) -> bool {
    let mut seen = std::collections::HashSet::new();
    let mut keys = claims.iter().filter_map(|c| c.link).flat_map(|l| {
        let k = l.keys;
        [(0, k.email), (1, k.phone), (2, k.name), (3, k.content)]
            .into_iter()
            .filter_map(|(n, v)| Some((n, v?)))
    });
    keys.any(|key| !seen.insert(key))
}

/// Runs `claims` as one statement (autocommit: one durable commit): what each did, in order.
/// They share the form and the look-up's shape and forms (see the module's doc).
pub fn claim_many<'a>(c: &mut PgConnection, claims: &[Claim<'a>]) -> QueryResult<Vec<Claimed>> {
    let Some(first) = claims.first() else { return Ok(Vec::new()) };
    let files = claims.iter().any(|c| !c.files.is_empty());
    let subs: Vec<_> = claims.iter().map(|c| c.submission).collect();
    let text = |f: for<'c> fn(&'c Claim<'a>) -> &'c str| claims.iter().map(f).collect::<Vec<&str>>();
    let opt =
        |f: for<'c> fn(&'c Claim<'a>) -> Option<&'c str>| claims.iter().map(f).collect::<Vec<Option<&str>>>();
    let sql = match in_turn(claims) {
        false => statement(first.link, files, Statement::Many, |l, f| make_statement(l, f, false)),
        true => statement(first.link, files, Statement::ManyInTurn, |l, f| make_statement(l, f, true)),
    };
    let query = Prepared::new(sql)
        .bind::<Array<Text>, _>(text(|c| c.submission.id.as_str()))
        .bind::<Array<Text>, _>(text(|c| &c.submission.form))
        .bind::<Array<Text>, _>(text(|c| &c.submission.operation_id))
        .bind::<Array<Text>, _>(text(|c| &c.submission.fingerprint))
        .bind::<Array<Nullable<Text>>, _>(opt(|c| c.submission.fields_json.as_deref()))
        .bind::<Array<Text>, _>(text(|c| &c.submission.response_body))
        .bind::<Array<Text>, _>(text(|c| c.submission.channel.as_str()))
        .bind::<Array<Bool>, _>(subs.iter().map(|s| s.keyless).collect::<Vec<_>>())
        .bind::<Array<Bool>, _>(subs.iter().map(|s| s.spam).collect::<Vec<_>>())
        .bind::<Array<Nullable<Text>>, _>(opt(|c| c.submission.email_digest.as_deref()))
        .bind::<Array<Nullable<Text>>, _>(opt(|c| c.submission.phone_digest.as_deref()))
        .bind::<Array<Timestamp>, _>(subs.iter().map(|s| s.received_at).collect::<Vec<_>>())
        .bind::<Array<Timestamp>, _>(subs.iter().map(|s| s.operation_expires_at).collect::<Vec<_>>())
        .bind::<Array<Nullable<Text>>, _>(opt(|c| c.submission.spam_reason.map(SpamReason::as_str)))
        .bind::<Array<Nullable<Text>>, _>(opt(|c| c.submission.journey_id.as_deref()))
        .bind::<Array<Nullable<Text>>, _>(opt(|c| c.submission.name_digest.as_deref()))
        .bind::<Array<Nullable<Text>>, _>(opt(|c| c.submission.locale.as_deref()))
        .bind::<Array<Nullable<Text>>, _>(opt(|c| c.submission.route.as_deref()))
        .bind::<Array<Nullable<Text>>, _>(opt(|c| c.submission.form_version.as_deref()));
    // The cap ($20–$22), the look-up's window and the pair's id ($23–$25), the holds ($26,
    // $27), the delivery row ($28–$31), the feed's `seq` ($32).
    let window = |c: &Claim<'_>| {
        c.link.map_or((c.submission.received_at, c.submission.received_at), |l| (l.since, l.until))
    };
    let first_seq = super::changes::pg_seqs(claims.len());
    let query = query
        .bind::<Array<Text>, _>(text(|c| c.cap.map_or("", |(_, body)| body)))
        .bind::<Array<Bool>, _>(claims.iter().map(|c| c.cap.is_some()).collect::<Vec<_>>())
        .bind::<Array<Timestamp>, _>(
            claims
                .iter()
                .map(|c| c.cap.map_or(c.submission.received_at, |(since, _)| since))
                .collect::<Vec<_>>(),
        )
        .bind::<Array<Timestamp>, _>(claims.iter().map(|c| window(c).0).collect::<Vec<_>>())
        .bind::<Array<Timestamp>, _>(claims.iter().map(|c| window(c).1).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(text(|c| c.pair_id))
        .bind::<Array<Bool>, _>(claims.iter().map(|c| c.hold_linked).collect::<Vec<_>>())
        .bind::<Array<Bool>, _>(claims.iter().map(|c| c.scan_hold).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(text(|c| &c.delivery.id))
        .bind::<Array<Text>, _>(text(|c| c.delivery.outcome.as_str()))
        .bind::<Array<Integer>, _>(claims.iter().map(|c| c.delivery.http_status).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(text(|c| c.delivery.channel.as_str()))
        .bind::<Array<BigInt>, _>((0..claims.len() as i64).map(|n| first_seq + n).collect::<Vec<_>>());
    // The effects ($33–$36) and the files ($37–$39), each with its row's ordinal.
    let effects: Vec<(i64, _)> =
        (1..).zip(claims).flat_map(|(i, c)| c.effects.iter().map(move |e| (i, e))).collect();
    let blobs: Vec<(i64, _)> =
        (1..).zip(claims).flat_map(|(i, c)| c.files.iter().map(move |f| (i, f))).collect();
    let mut query = query
        .bind::<Array<BigInt>, _>(effects.iter().map(|(i, _)| *i).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(effects.iter().map(|(_, e)| e.id.as_str()).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(effects.iter().map(|(_, e)| e.kind.as_str()).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(effects.iter().map(|(_, e)| e.effect_key.as_str()).collect::<Vec<_>>())
        .bind::<Array<BigInt>, _>(blobs.iter().map(|(i, _)| *i).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(blobs.iter().map(|(_, f)| f.sha256.as_str()).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(blobs.iter().map(|(_, f)| f.scan.as_str()).collect::<Vec<_>>());
    for form in first.link.map_or(&[][..], |l| l.forms) {
        query = query.bind::<Text, _>(form.as_str());
    }
    let rows: Vec<Row> = query.load(c)?;
    if rows.len() != claims.len() || rows.iter().zip(1..).any(|(r, i)| r.i != i) {
        return Err(diesel::result::Error::DeserializationError("the rows came back out of order".into()));
    }
    Ok(rows.into_iter().map(|r| Claimed { created: r.created, linked: r.linked, capped: r.capped }).collect())
}
