//! `onceform duplicates rescreen [--form F] [--since DATE]`: screens stored submissions
//! again with the current rules (after an upgrade, or after a form's settings changed).
//! In `received_at` order, batch by batch: each submission's match digests are made again
//! from its stored fields (current key, current canonical forms), its undecided pairs go
//! back to screening with the candidates the look-up finds now (earlier submissions in the
//! window), and the screener judges them. A submission with a pair an admin decided
//! (duplicate or not) is left as it is: every decision is kept.

use chrono::{Duration, NaiveDateTime};

use super::canonical::Contact;
use super::{link_keys, parse, pending_pair, screened_forms};
use crate::config::Config;
use crate::db::admin::effects::EffectAdminStore;
use crate::db::duplicates::{DuplicateStore, Lookup};
use crate::db::models::NewSubmission;
use crate::db::rescreen::{RescreenPage, RescreenStore};
use crate::db::{DbError, Pool, Store};
use crate::domain::keyring::Keyring;
use crate::domain::{Channel, PairStatus, SubmissionId};
use crate::with_conn;

/// `YYYY-MM-DD` (UTC midnight) or RFC 3339.
pub fn parse_since(v: &str) -> Result<NaiveDateTime, String> {
    chrono::DateTime::parse_from_rfc3339(v)
        .map(|t| t.naive_utc())
        .or_else(|_| {
            chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d").map(|d| d.and_time(chrono::NaiveTime::MIN))
        })
        .map_err(|_| format!("--since `{v}` is not a date (YYYY-MM-DD or RFC 3339)"))
}

/// Submissions per transaction.
const BATCH: i64 = 200;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RescreenReport {
    /// Submissions screened again.
    pub screened: usize,
    /// Left alone: an admin decided one of their pairs.
    pub decided: usize,
    /// Pairs open for review and listed apart (same sender, new request) afterwards, over
    /// the submissions screened.
    pub open: usize,
    pub same_sender: usize,
}

impl std::fmt::Display for RescreenReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rescreened {} submission(s); {} left as decided; {} pair(s) open for review, {} same sender, new request",
            self.screened, self.decided, self.open, self.same_sender
        )
    }
}

type Row = crate::db::rescreen::RescreenRow;

/// Screens again the stored submissions of `form` (else every configured form) received
/// at or after `since`, their match digests made with `keyring`.
pub fn rescreen(
    config: &Config,
    pool: &Pool,
    keyring: &Keyring,
    form: Option<&str>,
    since: Option<NaiveDateTime>,
) -> anyhow::Result<RescreenReport> {
    let forms: Vec<String> = match form {
        Some(f) if config.form(f).is_none() => anyhow::bail!("no form `{f}` in the configuration"),
        Some(f) => vec![f.to_string()],
        None => config.forms.keys().cloned().collect(),
    };
    let mut report = RescreenReport::default();
    let mut after: Option<(NaiveDateTime, String)> = None;
    let mut ids = Vec::new();
    loop {
        let page = RescreenPage { forms: &forms, since, after: after.as_ref(), limit: BATCH };
        let batch: Vec<Row> = with_conn!(pool, |c| c.rescreen_page(&page).map_err(DbError::from))?;
        let Some(last) = batch.last() else { break };
        after = Some((last.3, last.0.clone()));
        let (screened, decided) =
            with_conn!(pool, |c| c.write_tx(|c| again(c, config, keyring, &batch)).map_err(DbError::from))?;
        report.screened += screened.len();
        report.decided += decided;
        ids.extend(screened);
        while super::screen::screen_pending(config, pool)? > 0 {}
    }
    for chunk in ids.chunks(500) {
        let counts = with_conn!(pool, |c| c.pair_statuses_of(chunk).map_err(DbError::from))?;
        report.open += counts.iter().filter(|s| **s == PairStatus::Open).count();
        report.same_sender += counts.iter().filter(|s| **s == PairStatus::SameSender).count();
    }
    Ok(report)
}

/// One batch: fresh digests, undecided pairs back to screening, fresh candidates.
fn again(
    c: &mut crate::db::DbConnection,
    config: &Config,
    keyring: &Keyring,
    batch: &[Row],
) -> diesel::QueryResult<(Vec<String>, usize)> {
    let (mut screened, mut decided) = (Vec::new(), 0);
    for (id, form_name, fields_json, received_at, fingerprint, keyless) in batch {
        let Some(form) = config.form(form_name) else { continue };
        let is_decided = c.has_decided_pair(id)?;
        let fields = parse(fields_json.as_deref());
        let digests = Contact::of(form, |n| fields.get(n).map(String::as_str)).digests(keyring);
        c.set_contact_digests(
            id,
            digests.email.as_deref(),
            digests.phone.as_deref(),
            digests.name.as_deref(),
        )?;
        if is_decided {
            decided += 1;
            continue;
        }
        c.drop_undecided_pairs_of(id)?;
        let probe = NewSubmission {
            id: SubmissionId::from(id.clone()),
            form: form_name.clone(),
            operation_id: String::new(),
            fingerprint: fingerprint.clone(),
            fields_json: None,
            response_body: String::new(),
            channel: Channel::Import,
            keyless: *keyless,
            spam: false,
            spam_reason: None,
            email_digest: digests.email.clone(),
            phone_digest: digests.phone.clone(),
            name_digest: digests.name.clone(),
            received_at: *received_at,
            operation_expires_at: *received_at,
            journey_id: None,
            locale: None,
            route: None,
            form_version: None,
            test: false,
        };
        screened.push(id.clone());
        let Some(keys) = link_keys(&probe) else {
            c.release_held_of(id, crate::base::clock::now())?; // nothing to wait for any more
            continue;
        };
        let forms = screened_forms(form_name, form);
        let window = Duration::hours(i64::from(form.duplicates.window_hours));
        // Earlier submissions only: each pair is found once, from its later side.
        let lookup =
            Lookup { forms: &forms, exclude_id: id, since: *received_at - window, until: *received_at, keys };
        let candidates = c.candidates(&lookup)?;
        if candidates.is_empty() {
            c.release_held_of(id, crate::base::clock::now())?; // no pair any more: nothing held for one
        }
        let mut undecided = Vec::new();
        for original in candidates {
            if !c.pair_exists(&original, id)? {
                undecided.push(original);
            }
        }
        if let Some(pair) = pending_pair(form_name, &undecided, id.clone(), *received_at) {
            c.insert_pair(&pair)?;
        }
    }
    Ok((screened, decided))
}
