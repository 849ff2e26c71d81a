//! Retries across form versions. A submission stores the version of its form it was accepted
//! under (`config::definition`); a retry of its key that arrives after the form changed is
//! judged under that version, not the live one: its fields as received are normalised again
//! under the stored definition (`form_versions`, parsed once per (form, version) and kept in
//! a bounded map), and that content is compared with the stored one. The same content
//! replays (even if the new version added a required field, dropped one or normalises
//! differently); other content is a conflict, recorded with its content under that version.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use super::plan::{Content, Plan};
use super::{receipt, AsReceived, Outcome, Receipt};
use crate::config::{Form, FormConfig};
use crate::db::form_versions::FormVersions;
use crate::db::models::{NewConflict, Submission};
use crate::db::{DbError, Pool, Store, Writes};
use crate::domain::keyring::Keyring;
use crate::domain::{normalise_with, ConflictStatus, OperationId};
use crate::services::request_log::{self, Channel, DeliveryOutcome};
use crate::with_conn;

/// Whether a stored submission accepted under `stored` is judged by the live form, whose
/// version is `live`: the same version, or either unknown (a submission accepted before
/// versions were kept is judged as it always was).
pub fn same_version(live: Option<&str>, stored: Option<&str>) -> bool {
    match (live, stored) {
        (Some(live), Some(stored)) => live == stored,
        _ => true,
    }
}

/// What a retry is compared with the holder of its key by, when the holder was accepted
/// under another version of the form than the plan's: its content under that version
/// (`None`: not valid under it, so not the same). `None` when the live form judges it (the
/// same version, an unknown one, a definition no longer stored, or no fields as received).
pub(super) fn judged_under<C: FormVersions>(
    c: &mut C,
    plan: &Plan,
    holder: &Submission,
) -> Result<Option<Option<Content>>, DbError> {
    let (Some(received), Some(version)) = (plan.received.as_ref(), holder.form_version.as_deref()) else {
        return Ok(None);
    };
    if same_version(plan.submission.form_version.as_deref(), Some(version)) {
        return Ok(None);
    }
    let Some(form) = definition(c, &holder.form, version)? else { return Ok(None) };
    Ok(Some(content_under(&form, received, plan.keyring())))
}

/// The content of `received` under `form` (`None`: not valid under it).
pub(super) fn content_under(form: &FormConfig, received: &AsReceived, keyring: &Keyring) -> Option<Content> {
    normalise_with(form, &received.raw, &received.files).ok().map(|fields| Content::of(keyring, &fields))
}

/// The settings of `form` at `version`, read back from `form_versions` (kept in memory: a
/// version's definition never changes). `None`: that version is not stored (or does not
/// parse any more), and the live form judges.
pub(super) fn definition<C: FormVersions>(
    c: &mut C,
    form: &str,
    version: &str,
) -> Result<Option<Arc<FormConfig>>, DbError> {
    /// Definitions kept; past this the map is emptied (they are read again when needed).
    const KEPT: usize = 256;
    /// (form, version) → its settings.
    type Parsed = HashMap<(String, String), Arc<FormConfig>>;
    static PARSED: LazyLock<Mutex<Parsed>> = LazyLock::new(Default::default);
    let key = (form.to_string(), version.to_string());
    if let Some(found) = PARSED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&key) {
        return Ok(Some(found.clone()));
    }
    let Some(text) = c.form_definition(form, version)? else {
        tracing::warn!(form, version, "a submission's form version is not stored: judged by the live form");
        return Ok(None);
    };
    let parsed = match FormConfig::from_definition(&text) {
        Ok(parsed) => Arc::new(parsed),
        Err(error) => {
            tracing::warn!(form, version, %error, "a stored form version does not parse: judged by the live form");
            return Ok(None);
        }
    };
    let mut kept = PARSED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if kept.len() >= KEPT {
        kept.clear();
    }
    kept.insert(key, parsed.clone());
    Ok(Some(parsed))
}

/// What a refused request became, judged under its key's version.
pub(super) enum Judged {
    /// The stored content: a replay of this receipt.
    Same(Receipt),
    /// A conflict (recorded with its delivery row).
    Other(Outcome),
}

/// A keyed request the live form refuses (`Acceptor::judge_refused`): when its key's
/// submission was accepted under another version of the form, it is judged under that
/// version: the same content, or a conflict (recorded here, with its content under that
/// version, or as it came when it is not valid there either). `None`: no such submission,
/// and the request is refused as invalid.
pub(super) async fn judge_refused(
    pool: &Pool,
    writes: &Writes,
    keyring: &Arc<Keyring>,
    form: &Form,
    operation_id: &OperationId,
    received: AsReceived,
    channel: Channel,
) -> Result<Option<Judged>, DbError> {
    let Some(live) = form.version().map(String::from) else { return Ok(None) };
    let (pool, ring) = (pool.clone(), keyring.clone());
    let (name, key) = (form.name().to_string(), operation_id.as_str().to_string());
    let judged = blocking(move || {
        with_conn!(&pool, |c| {
            let Some(holder) = c.find_submission(&name, &key)? else { return Ok(None) };
            let Some(version) = holder.form_version.clone().filter(|v| *v != live) else { return Ok(None) };
            let Some(definition) = definition(c, &name, &version)? else { return Ok(None) };
            let content = content_under(&definition, &received, &ring);
            Ok::<_, DbError>(Some((holder, content, received)))
        })
    });
    let Some((holder, content, received)) = judged.await? else { return Ok(None) };
    if content.as_ref().is_some_and(|content| content.same_as(keyring, &holder)) {
        return Ok(Some(Judged::Same(receipt(holder))));
    }
    let content = content.unwrap_or_else(|| {
        let json = serde_json::to_string(&received.raw).unwrap_or_default();
        Content { fingerprint: keyring.digest(&json), compared: None, json }
    });
    let now = crate::base::clock::now();
    let conflict = NewConflict {
        id: uuid::Uuid::now_v7().to_string(),
        submission_id: holder.id.clone(),
        fingerprint: content.fingerprint,
        // A tombstone's conflicts keep no content either.
        fields_json: holder.content_purged_at.is_none().then_some(content.json),
        status: ConflictStatus::Open,
        attempts: 1,
        first_seen_at: now,
        last_seen_at: now,
    };
    let delivery = request_log::row(
        form.name(),
        operation_id.as_str(),
        Some(&holder.id),
        channel,
        DeliveryOutcome::Conflict,
        now,
    );
    let writes = writes.clone();
    blocking(move || {
        writes.run(move |c| {
            c.record_conflict(&conflict)?;
            c.insert_deliveries(&[delivery]).map_err(DbError::from)
        })
    })
    .await?;
    Ok(Some(Judged::Other(Outcome::Conflict { submission_id: holder.id, operation_id: holder.operation_id })))
}

/// `f` on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, DbError> + Send + 'static,
) -> Result<T, DbError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|_| Err(DbError::Unavailable("blocking pool".into())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_version_is_judged_by_the_live_form() {
        assert!(same_version(Some("a"), Some("a")));
        assert!(!same_version(Some("a"), Some("b")));
        assert!(same_version(Some("a"), None) && same_version(None, Some("b")));
    }

    #[test]
    fn a_definition_parses_back_into_the_form_it_was() {
        let config = crate::config::Config::builtin().unwrap();
        let contact = &config.forms["contact"];
        let back = FormConfig::from_definition(&contact.definition.text).unwrap();
        assert_eq!(back.definition, contact.definition);
        let names =
            |f: &FormConfig| f.fields.iter().map(|f| (f.name.clone(), f.required)).collect::<Vec<_>>();
        assert_eq!(names(&back), names(contact));
        assert_eq!(
            (back.honeypot.as_str(), back.undeclared_fields),
            (contact.honeypot.as_str(), contact.undeclared_fields)
        );
    }
}
