//! Converting stored digests to the current key: rows of a release before keyed digests
//! (no version prefix: plain SHA-256) and rows keyed with a rotated-out secret. Migration SQL
//! cannot compute an HMAC, so this runs in Rust at start (`serve`, `worker`, `migrate`, …):
//! idempotent, batch by batch, selecting only rows whose fingerprint does not start with the
//! current key's version.
//!
//! A purged row has no content to digest again: it keeps its fingerprint and version (a retry
//! is still compared with its own key), and a plain email or phone digest is dropped.

use crate::config::Config;
use crate::db::rekey::{RekeyStore, Rekeyed};
use crate::db::{DbError, Pool, Store};
use crate::domain::keyring::Keyring;
use crate::with_conn;

const BATCH: i64 = 500;

/// Rows converted to `keyring`'s current key: (submissions, conflicts).
pub fn rekey(pool: &Pool, config: &Config, keyring: &Keyring) -> Result<(usize, usize), DbError> {
    let current = format!("{}:%", keyring.version());
    let mut converted = (0, 0);
    loop {
        let n = with_conn!(pool, |c| c.write_tx(|c| {
            let rows = c.stale_submissions(&current, BATCH)?;
            for (id, form, json) in &rows {
                let json = json.as_deref().unwrap_or_default();
                let d = contact_digests(config, keyring, form, json);
                let fingerprint = keyring.digest(&content_json(config, form, json));
                let (email, phone, name) = (d.email.as_deref(), d.phone.as_deref(), d.name.as_deref());
                c.set_submission_digests(id, &Rekeyed { fingerprint: &fingerprint, email, phone, name })?;
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
            let rows = c.stale_conflicts(&current, BATCH)?;
            for (id, submission_id, form, json) in &rows {
                let json = content_json(config, form, json.as_deref().unwrap_or_default());
                c.rekey_conflict(id, submission_id, &keyring.digest(&json))?;
            }
            Ok::<_, DbError>(rows.len())
        }))?;
        converted.1 += n;
        if n < BATCH as usize {
            break;
        }
    }
    // Plain digests of purged rows cannot be keyed again and are reversible: drop them.
    with_conn!(pool, |c| c.drop_plain_digests_of_purged().map_err(DbError::from))?;
    Ok(converted)
}

/// What a stored row's fingerprint digests (`domain::stored_content_json`); the stored text
/// as it is when its form is gone or it is no fields object.
fn content_json(config: &Config, form: &str, fields_json: &str) -> String {
    config
        .form(form)
        .and_then(|f| crate::domain::stored_content_json(f, fields_json))
        .unwrap_or_else(|| fields_json.to_string())
}

/// The keyed digests of the canonical email, phone and name plus company (what the
/// duplicate look-up matches, `duplicates::canonical`).
pub fn contact_digests(
    config: &Config,
    keyring: &Keyring,
    form: &str,
    fields_json: &str,
) -> crate::services::duplicates::canonical::Digests {
    let values = crate::domain::stored_fields::shown(Some(fields_json));
    let Some(form) = config.form(form) else { return Default::default() };
    crate::services::duplicates::canonical::Contact::of(form, |n| values.get(n).map(String::as_str))
        .digests(keyring)
}
