//! Converting stored digests to the current key: rows of a release before keyed digests
//! (no version prefix: plain SHA-256) and rows keyed with a rotated-out secret. Migration SQL
//! cannot compute an HMAC, so this runs in Rust at start (`serve`, `worker`, `migrate`, …):
//! idempotent, batch by batch, selecting only rows whose fingerprint does not start with the
//! current key's version.
//!
//! A purged row has no content to digest again: it keeps its fingerprint and version (a retry
//! is still compared with its own key), and a plain email or phone digest is dropped.

use std::collections::BTreeMap;

use diesel::prelude::*;

use crate::config::Config;
use crate::db::schema::{conflicts, submissions};
use crate::db::{DbError, Pool, Store};
use crate::domain::keyring::keyring;
use crate::with_conn;

const BATCH: i64 = 500;

/// Rows converted: (submissions, conflicts).
pub fn rekey(pool: &Pool, config: &Config) -> Result<(usize, usize), DbError> {
    let current = format!("{}:%", keyring().version());
    let mut converted = (0, 0);
    loop {
        let n = with_conn!(pool, |c| c.write_tx(|c| {
            let rows: Vec<(String, String, Option<String>)> = submissions::table
                .filter(submissions::fields_json.is_not_null())
                .filter(submissions::fingerprint.not_like(&current))
                .select((submissions::id, submissions::form, submissions::fields_json))
                .limit(BATCH)
                .load(c)?;
            for (id, form, json) in &rows {
                let json = json.as_deref().unwrap_or_default();
                let d = contact_digests(config, form, json);
                diesel::update(submissions::table.find(id))
                    .set((
                        submissions::fingerprint.eq(keyring().digest(json)),
                        submissions::email_digest.eq(d.email),
                        submissions::phone_digest.eq(d.phone),
                        submissions::name_digest.eq(d.name),
                    ))
                    .execute(c)?;
            }
            Ok::<_, DbError>(rows.len())
        }))?;
        converted.0 += n;
        if n < BATCH as usize {
            break;
        }
    }
    loop {
        let n = with_conn!(pool, |c| c.write_tx(|c| {
            let rows: Vec<(String, String, Option<String>)> = conflicts::table
                .filter(conflicts::fields_json.is_not_null())
                .filter(conflicts::fingerprint.not_like(&current))
                .select((conflicts::id, conflicts::submission_id, conflicts::fields_json))
                .limit(BATCH)
                .load(c)?;
            for (id, submission_id, json) in &rows {
                let fp = keyring().digest(json.as_deref().unwrap_or_default());
                let twin = conflicts::table
                    .filter(conflicts::submission_id.eq(submission_id).and(conflicts::fingerprint.eq(&fp)))
                    .select(conflicts::id)
                    .first::<String>(c)
                    .optional()?;
                match twin {
                    // The same content already recorded under the current key: one row is enough.
                    Some(_) => diesel::delete(conflicts::table.find(id)).execute(c)?,
                    None => diesel::update(conflicts::table.find(id))
                        .set(conflicts::fingerprint.eq(fp))
                        .execute(c)?,
                };
            }
            Ok::<_, DbError>(rows.len())
        }))?;
        converted.1 += n;
        if n < BATCH as usize {
            break;
        }
    }
    // Plain digests of purged rows cannot be keyed again and are reversible: drop them.
    with_conn!(pool, |c| diesel::update(
        submissions::table
            .filter(submissions::fields_json.is_null())
            .filter(submissions::fingerprint.not_like("%:%"))
    )
    .set((submissions::email_digest.eq(None::<String>), submissions::phone_digest.eq(None::<String>)))
    .execute(c)
    .map_err(DbError::from))?;
    Ok(converted)
}

/// The keyed digests of the canonical email, phone and name plus company (what the
/// duplicate look-up matches, `duplicates::canonical`).
pub fn contact_digests(
    config: &Config,
    form: &str,
    fields_json: &str,
) -> crate::duplicates::canonical::Digests {
    let values: BTreeMap<String, String> = serde_json::from_str(fields_json).unwrap_or_default();
    let Some(form) = config.form(form) else { return Default::default() };
    crate::duplicates::canonical::Contact::of(form, |n| values.get(n).map(String::as_str)).digests()
}
