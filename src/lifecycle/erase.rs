//! Erasure of one person: every submission found by their keyed email or phone digest becomes
//! a tombstone now (as retention would make it), conflicts holding their address lose their
//! content, and the report lists the external references of the leads and emails that already
//! left, for erasure there. The confirmation cap's slots of their address are deleted. The
//! audit row names the person by digest only.

use diesel::prelude::*;
use uuid::Uuid;

use super::purge::{tombstone, TotalStore};
use crate::clock::now;
use crate::db::admin::accounts::{AccountStore, AuditEntry};
use crate::db::admin::browse::like_pattern;
use crate::db::schema::{confirmation_caps, conflicts, duplicate_pairs, side_effects, submissions};
use crate::db::{DbError, Pool, Store};
use crate::domain::keyring::keyring;
use crate::domain::FieldType;
use crate::domain::{normalise_value, EffectState};
use crate::with_conn;

/// Whom to erase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Person {
    Email(String),
    Phone(String),
}

/// Who asked (the audit row): an admin, or the command line.
pub struct Actor {
    pub id: String,
    pub email: String,
}

impl Actor {
    pub fn cli() -> Actor {
        Actor { id: "cli".into(), email: "onceform erase (command line)".into() }
    }
}

/// A side effect that may have left: erase it at the provider by this reference.
#[derive(Debug, Clone, PartialEq, Eq, Queryable)]
pub struct LeftReference {
    pub kind: String,
    pub effect_key: String,
    pub provider_ref: Option<String>,
    pub state: EffectState,
}

#[derive(Debug, Clone, Default)]
pub struct ErasureReport {
    /// The person's keyed digest (what the audit row names).
    pub digest: String,
    pub submissions: usize,
    pub conflicts: usize,
    pub pairs: usize,
    pub references: Vec<LeftReference>,
    pub dry_run: bool,
}

impl Person {
    /// As typed, normalised as stored (what digests made before canonical matching hold).
    fn normalised(&self) -> String {
        match self {
            Person::Email(e) => normalise_value(FieldType::Email, e),
            Person::Phone(p) => normalise_value(FieldType::Phone, p),
        }
    }

    /// The canonical form digested since canonical matching (`duplicates::canonical`);
    /// a phone in national format is matched as typed, so give it with its country code.
    fn canonical(&self) -> Option<String> {
        use crate::duplicates::canonical;
        match self {
            Person::Email(e) => {
                canonical::email(e, &crate::config::DuplicateConfig::default().dotless_domains)
            }
            Person::Phone(p) => canonical::phone(p, None).map(|p| p.e164),
        }
    }
}

/// Finds the person's records and, unless `dry_run`, erases their content now.
pub fn erase(pool: &Pool, person: &Person, dry_run: bool, actor: &Actor) -> Result<ErasureReport, DbError> {
    let value = person.normalised();
    let digest = keyring().digest(&person.canonical().unwrap_or_else(|| value.clone()));
    let digests = vec![digest.clone(), keyring().digest(&value)];
    let pattern = like_pattern(&value);
    let now = now();
    with_conn!(pool, |c| c.write_tx(|c| {
        let (email, phone) = match person {
            Person::Email(_) => (Some(&digests), None),
            Person::Phone(_) => (None, Some(&digests)),
        };
        let none = Vec::new();
        let ids: Vec<(String, String)> = submissions::table
            .filter(
                submissions::email_digest
                    .eq_any(email.unwrap_or(&none))
                    .or(submissions::phone_digest.eq_any(phone.unwrap_or(&none))),
            )
            .select((submissions::id, submissions::form))
            .load(c)?;
        let id_list: Vec<String> = ids.iter().map(|(id, _)| id.clone()).collect();
        let conflict_ids: Vec<String> = conflicts::table
            .filter(conflicts::fields_json.is_not_null())
            .filter(
                conflicts::submission_id
                    .eq_any(&id_list)
                    .or(conflicts::fields_json.like(&pattern).escape('\\')),
            )
            .select(conflicts::id)
            .load(c)?;
        let pairs: i64 = duplicate_pairs::table
            .filter(
                duplicate_pairs::original_id
                    .eq_any(&id_list)
                    .or(duplicate_pairs::duplicate_id.eq_any(&id_list)),
            )
            .count()
            .get_result(c)?;
        let references: Vec<LeftReference> = side_effects::table
            .filter(side_effects::submission_id.eq_any(&id_list))
            .filter(side_effects::state.eq_any([
                EffectState::Sent,
                EffectState::Unknown,
                EffectState::Sending,
            ]))
            .order((side_effects::kind, side_effects::effect_key))
            .select((
                side_effects::kind,
                side_effects::effect_key,
                side_effects::provider_ref,
                side_effects::state,
            ))
            .load(c)?;
        let report = ErasureReport {
            digest: digest.clone(),
            submissions: id_list.len(),
            conflicts: conflict_ids.len(),
            pairs: pairs as usize,
            references,
            dry_run,
        };
        if dry_run {
            return Ok::<_, DbError>(report);
        }
        tombstone(c, &id_list, now)?;
        diesel::update(conflicts::table.filter(conflicts::id.eq_any(&conflict_ids)))
            .set(conflicts::fields_json.eq(None::<String>))
            .execute(c)?;
        if let Some(email) = &email {
            // The confirmation cap's slots of their address go too (a digest and a time).
            diesel::delete(confirmation_caps::table.filter(confirmation_caps::email_digest.eq_any(*email)))
                .execute(c)?;
        }
        for (form, _) in &ids {
            c.add_total(form, "erasure", 1)?;
        }
        c.insert_audit(&AuditEntry {
            id: Uuid::now_v7().to_string(),
            user_id: actor.id.clone(),
            user_email: actor.email.clone(),
            action: "erase".into(),
            target_type: "person".into(),
            target_id: digest.clone(),
            note: Some(format!(
                "{} submission(s), {} conflict(s), {} duplicate pair(s); {} reference(s) had left",
                report.submissions,
                report.conflicts,
                report.pairs,
                report.references.len()
            )),
            at: now,
        })?;
        Ok(report)
    }))
}

impl ErasureReport {
    /// The report as `onceform erase` prints it.
    pub fn lines(&self) -> Vec<String> {
        let verb = if self.dry_run { "would erase" } else { "erased" };
        let mut out = vec![format!(
            "{verb}: {} submission(s) (tombstones kept), {} conflict(s), {} duplicate pair(s) now name only tombstones",
            self.submissions, self.conflicts, self.pairs
        )];
        if self.references.is_empty() {
            out.push("no lead or email had left onceform".into());
        } else {
            out.push("already left (erase these at the provider):".into());
            for r in &self.references {
                out.push(format!(
                    "  {} {} external_ref={} provider_ref={}",
                    r.kind,
                    r.state,
                    r.effect_key,
                    r.provider_ref.as_deref().unwrap_or("-")
                ));
            }
        }
        out.push(format!("person digest: {}", self.digest));
        out
    }
}
