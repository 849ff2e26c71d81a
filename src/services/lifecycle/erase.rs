//! Erasure of one person, found by their keyed email or phone digest and, where onceform
//! keeps text with no digest beside it, by their normalised address or number in that text:
//!
//! - their submissions become tombstones now (as retention would make them), without their
//!   journey ID; conflicts of them, or holding their address, lose their content;
//! - inbound webhook events whose body holds it lose the body, with their conflicts;
//!   quarantined deliveries holding it lose theirs (an open one is discarded);
//! - the delivery log's rows of their submissions go; attempt logs and records of their
//!   effects that hold it (a provider's answer, an admin's note) become `[erased]`;
//! - the files onceform itself wrote for their effects go: the file mailer's `.eml` files and
//!   the file CRM's lead files (`Files`);
//! - the confirmation cap's slots of their address go.
//!
//! The report separates what onceform removed from what left for a provider (SMTP, a CRM
//! API, a forward or Slack target) and must be erased there. The audit row names the person
//! by digest only. The running server's replay memory is cleared by the admin action
//! (`admin::data_lifecycle`); the command line cannot reach it (docs/lifecycle.md).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use uuid::Uuid;

use crate::base::clock::now;
use crate::base::i18n::{Arg, Locale};
use crate::config::Config;
use crate::db::admin::accounts::{AccountStore, AuditEntry};
use crate::db::admin::browse::like_pattern;
use crate::db::erasure::{self, ErasedEffect, Found};
use crate::db::files::FileRefs;
use crate::db::purge::{tombstone, ConsentFields, TotalStore};
use crate::db::{DbError, Pool, Store};
use crate::domain::keyring::Keyring;
use crate::domain::FieldType;
use crate::domain::{is_email, is_phone_number, normalise_value, phone_digits, EffectState, RecordKind};
use crate::services::effects::crm::lead_file_name;
use crate::services::effects::mail::{eml_name, legacy_eml_name};
use crate::with_conn;

/// Whom to erase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Person {
    Email(String),
    Phone(String),
}

/// Why an erasure names no one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotAPerson {
    #[error("give either an email address or a phone number")]
    GiveOne,
    #[error("not an email address")]
    NotAnEmail,
    #[error("not a phone number (7 to 15 digits)")]
    NotAPhone,
}

impl Person {
    /// The person named by `email` or `phone` (a blank one is not given): exactly one, a
    /// valid address or number. What is given is also searched for in stored text, so a
    /// fragment ("a", "12") would find, and erase, everyone's rows holding it.
    pub fn named(email: Option<&str>, phone: Option<&str>) -> Result<Person, NotAPerson> {
        fn given(v: Option<&str>) -> Option<&str> {
            v.map(str::trim).filter(|v| !v.is_empty())
        }
        match (given(email), given(phone)) {
            (Some(e), None) if is_email(e) => Ok(Person::Email(e.into())),
            (Some(_), None) => Err(NotAPerson::NotAnEmail),
            (None, Some(p)) if is_phone_number(p) => Ok(Person::Phone(p.into())),
            (None, Some(_)) => Err(NotAPerson::NotAPhone),
            _ => Err(NotAPerson::GiveOne),
        }
    }
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
pub type LeftReference = ErasedEffect;

/// Where onceform itself writes what an effect sends, from the configuration: the file
/// mailer's directory (no `smtp.url`) and the file CRM's `DIR/leads` (adapter `file`).
#[derive(Debug, Clone, Default)]
pub struct Files {
    pub mail_dir: Option<PathBuf>,
    pub leads_dir: Option<PathBuf>,
    /// The record kind of each hook handler, and its handler kind's name.
    hook_kinds: Vec<(RecordKind, &'static str)>,
    /// The attached files' store.
    blobs: Option<crate::services::files::Files>,
}

/// What an effect kind writes, when it writes here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Local {
    Mail,
    Lead,
}

impl Files {
    pub fn of(config: &Config) -> Files {
        let hook_kinds = config
            .hooks
            .iter()
            .flat_map(|(source, h)| {
                h.handlers.iter().map(move |x| (RecordKind::hook(source, &x.name), x.kind.as_str()))
            })
            .collect();
        Files {
            mail_dir: config.smtp.url.is_none().then(|| PathBuf::from(&config.smtp.mail_dir)),
            leads_dir: crate::services::effects::crm::leads_dir(&config.crm),
            hook_kinds,
            blobs: Some(crate::services::files::Files::stored(&config.server, &config.database)),
        }
    }

    /// Where a record of `kind` went: a file here, or `None` (it left, or never sends).
    fn local(&self, kind: &RecordKind) -> Option<Local> {
        // A hook handler writes what the form kind of its name writes.
        let kind = match kind {
            RecordKind::Form(k) => Some(k.as_str()),
            RecordKind::Hook(_) => self.hook_kinds.iter().find(|(k, _)| k == kind).map(|(_, h)| *h),
        }?;
        let sends = match kind {
            "confirmation_email" | "owner_notification" => Some(Local::Mail),
            "crm_lead" => Some(Local::Lead),
            _ => None,
        };
        match sends {
            Some(Local::Mail) if self.mail_dir.is_some() => Some(Local::Mail),
            Some(Local::Lead) if self.leads_dir.is_some() => Some(Local::Lead),
            _ => None,
        }
    }

    /// The files these (kind, key)s may have written: the file itself, and the temporary
    /// files a crash left (`.NAME.*.tmp`); each directory is listed once.
    fn paths(&self, written: &[(Local, &str)]) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for (local, dir) in [(Local::Mail, &self.mail_dir), (Local::Lead, &self.leads_dir)] {
            let Some(dir) = dir else { continue };
            let names: BTreeSet<String> = written
                .iter()
                .filter(|(l, _)| *l == local)
                .flat_map(|(_, key)| match local {
                    Local::Mail => vec![eml_name(key), legacy_eml_name(key)],
                    Local::Lead => vec![lead_file_name(key)],
                })
                .collect();
            if names.is_empty() {
                continue;
            }
            out.extend(names.iter().map(|n| dir.join(n)).filter(|p| p.exists()));
            out.extend(temporaries(dir, &names));
        }
        out
    }
}

/// `.NAME.{uuid}.tmp` files in `dir` of one of `names` (a write that never reached its rename).
fn temporaries(dir: &Path, names: &BTreeSet<String>) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| {
            let stem = f.strip_prefix('.').and_then(|f| f.strip_suffix(".tmp"));
            stem.and_then(|s| s.rsplit_once('.')).is_some_and(|(name, _)| names.contains(name))
        })
        .map(|f| dir.join(f))
        .collect()
}

#[derive(Debug, Clone, Default)]
pub struct ErasureReport {
    /// The person's keyed digest (what the audit row names).
    pub digest: String,
    pub submissions: usize,
    pub conflicts: usize,
    pub pairs: usize,
    /// Inbound events (with their conflicts) whose body held the person.
    pub events: usize,
    pub inbound_conflicts: usize,
    pub quarantined: usize,
    pub deliveries: usize,
    /// Texts in attempt logs and records that became `[erased]`.
    pub redacted: usize,
    /// Files onceform wrote itself that were removed (or would be, in a dry run).
    pub files: Vec<PathBuf>,
    /// Files that could not be removed (with the reason).
    pub file_errors: Vec<String>,
    /// Attached files (blobs) deleted with the submissions that named them.
    pub attachments: usize,
    /// What left onceform for a provider: erase these there.
    pub references: Vec<LeftReference>,
    /// (form, operation ID) of every erased submission, and (source scope, event ID) of every
    /// erased event.
    pub keys: Vec<(String, String)>,
    pub dry_run: bool,
}

impl Person {
    /// Normalised as a release before canonical matching stored it (what its digests hold).
    fn normalised(&self) -> String {
        match self {
            Person::Email(e) => normalise_value(FieldType::Email, e),
            Person::Phone(p) => phone_digits(p),
        }
    }

    /// What their text is searched by: the normalised value, and a phone also as given.
    fn patterns(&self) -> Vec<String> {
        let mut out = vec![like_pattern(&self.normalised())];
        if let Person::Phone(p) = self {
            out.push(like_pattern(p.trim()));
        }
        out.dedup();
        out
    }

    /// The canonical form digested since canonical matching (`duplicates::canonical`);
    /// a phone in national format is matched as typed, so give it with its country code.
    fn canonical(&self) -> Option<String> {
        use crate::services::duplicates::canonical;
        match self {
            Person::Email(e) => {
                canonical::email(e, &crate::config::DuplicateConfig::default().dotless_domains)
            }
            Person::Phone(p) => canonical::phone(p, None).map(|p| p.e164),
        }
    }
}

/// Finds the person's records and, unless `dry_run`, erases their content now (keeping the
/// answers to `consent` fields), then the files onceform wrote for them. `keyring` digests
/// the person as the stored rows were.
pub fn erase(
    pool: &Pool,
    keyring: &Keyring,
    files: &Files,
    consent: &ConsentFields,
    person: &Person,
    dry_run: bool,
    actor: &Actor,
) -> Result<ErasureReport, DbError> {
    // The digest of the canonical form the duplicate detector matches on, and of the
    // normalised form stored before it.
    let value = person.normalised();
    let digest = keyring.digest(&person.canonical().unwrap_or_else(|| value.clone()));
    let digests = vec![digest.clone(), keyring.digest(&value)];
    let patterns = person.patterns();
    let now = now();
    let (email, phone): (&[String], &[String]) = match person {
        Person::Email(_) => (&digests, &[]),
        Person::Phone(_) => (&[], &digests),
    };
    // The scans of text without a digest run before the write transaction, which then takes
    // only the rows found (on SQLite no writer waits for the scans). A row written between
    // the two is not seen: docs/lifecycle.md.
    let scanned = with_conn!(pool, |c| {
        Ok::<_, DbError>((
            erasure::events_holding(c, &patterns)?,
            match person {
                // A phone is stored as typed: found in any typing by its digits.
                Person::Phone(_) => union(
                    erasure::conflicts_holding(c, &patterns)?,
                    &erasure::conflicts_holding_phone(c, &value)?,
                ),
                Person::Email(_) => erasure::conflicts_holding(c, &patterns)?,
            },
            erasure::inbound_conflicts_holding(c, &patterns)?,
            erasure::quarantine_holding(c, &patterns)?,
        ))
    })?;
    let (events, held_conflicts, held_inbound_conflicts, quarantined) = scanned;
    let quarantined = union(quarantined, &[]);
    let (mut report, effects, blobs) = with_conn!(pool, |c| c.write_tx(|c| {
        let found = erasure::submissions_of(c, email, phone)?;
        let ids: Vec<String> = found.iter().map(|(id, _, _)| id.clone()).collect();
        let event_ids: Vec<String> = events.iter().map(|(id, _, _)| id.clone()).collect();
        let all: Vec<String> = ids.iter().chain(&event_ids).cloned().collect();
        let conflict_ids = union(erasure::conflicts_of(c, &ids)?, &held_conflicts);
        let inbound_conflicts = union(erasure::inbound_conflicts_of(c, &event_ids)?, &held_inbound_conflicts);
        let pairs = erasure::pairs_of(c, &ids)?;
        let effects = erasure::effects_of(c, &all)?;
        let mut report = ErasureReport {
            digest: digest.clone(),
            submissions: ids.len(),
            conflicts: conflict_ids.len(),
            pairs: pairs as usize,
            events: event_ids.len(),
            inbound_conflicts: inbound_conflicts.len(),
            quarantined: quarantined.len(),
            keys: found.iter().chain(&events).map(|(_, f, o)| (f.clone(), o.clone())).collect(),
            dry_run,
            ..ErasureReport::default()
        };
        if dry_run {
            return Ok::<_, DbError>((report, effects, Vec::new()));
        }
        let blobs = tombstone(c, &all, consent, now)?.blobs;
        c.forget_uploads_of(&blobs)?;
        erasure::forget_journeys(c, &ids)?;
        erasure::forget_conflicts(c, &conflict_ids, &inbound_conflicts)?;
        erasure::forget_quarantined(c, &quarantined, &actor.email, now)?;
        let both: Vec<Found> = found.iter().chain(&events).cloned().collect();
        report.deliveries = erasure::delete_deliveries(c, &both)?;
        report.redacted = erasure::redact_attempts(c, &all, &patterns)?;
        if !email.is_empty() {
            erasure::forget_caps(c, email)?;
        }
        for (_, form, _) in &found {
            c.add_total(form, "erasure", 1)?;
        }
        c.insert_audit(&AuditEntry {
            id: Uuid::now_v7().to_string(),
            user_id: actor.id.clone(),
            user_email: actor.email.clone(),
            action: "erase".into(),
            target_type: "person".into(),
            target_id: digest.clone(),
            note: Some(report.summary()),
            at: now,
        })?;
        Ok((report, effects, blobs))
    }))?;
    if let Some(store) = &files.blobs {
        // At once: an erasure does not wait for a sweep (a blob another submission still
        // names stays, being no longer this person's alone).
        report.attachments = crate::services::files::release(pool, store, blobs, std::time::Duration::ZERO)?;
    }
    let mut written = Vec::new();
    for effect in &effects {
        match files.local(&effect.kind) {
            Some(local) => written.push((local, effect.effect_key.as_str())),
            None if matches!(
                effect.state,
                EffectState::Sent | EffectState::Unknown | EffectState::Sending
            ) =>
            {
                report.references.push(effect.clone())
            }
            None => {}
        }
    }
    for path in files.paths(&written) {
        if !dry_run {
            if let Err(e) = std::fs::remove_file(&path) {
                report.file_errors.push(format!("{}: {e}", path.display()));
                continue;
            }
        }
        report.files.push(path);
    }
    Ok(report)
}

/// `a` and `b` without repeats.
fn union(mut a: Vec<String>, b: &[String]) -> Vec<String> {
    a.extend_from_slice(b);
    a.sort();
    a.dedup();
    a
}

impl ErasureReport {
    /// One line for the audit row (counts only).
    fn summary(&self) -> String {
        format!(
            "{} submission(s), {} conflict(s), {} duplicate pair(s), {} inbound event(s), {} quarantined; {} reference(s) had left",
            self.submissions,
            self.conflicts,
            self.pairs,
            self.events,
            self.quarantined,
            self.references.len()
        )
    }

    /// The report as `onceform erase` prints it.
    pub fn lines(&self) -> Vec<String> {
        self.lines_in(Locale::En)
    }

    /// The report in `locale` (the admin's erasure page; in `en` as the command prints it).
    /// Paths and references stay as they are: what to look for on disk and at a provider.
    pub fn lines_in(&self, locale: Locale) -> Vec<String> {
        let n = |v: usize| Arg::Num(i64::try_from(v).unwrap_or(i64::MAX));
        let dry = |key: &str| if self.dry_run { format!("{key}-dry-run") } else { key.to_string() };
        let mut out = vec![
            locale.format(
                &dry("admin-erase-report-submissions"),
                &[
                    ("submissions", n(self.submissions)),
                    ("conflicts", n(self.conflicts)),
                    ("pairs", n(self.pairs)),
                ],
            ),
            locale.format(
                &dry("admin-erase-report-events"),
                &[
                    ("events", n(self.events)),
                    ("conflicts", n(self.inbound_conflicts)),
                    ("quarantined", n(self.quarantined)),
                ],
            ),
        ];
        if !self.dry_run {
            out.push(locale.format(
                "admin-erase-report-removed",
                &[
                    ("deliveries", n(self.deliveries)),
                    ("redacted", n(self.redacted)),
                    ("attachments", n(self.attachments)),
                ],
            ));
        }
        match self.files.is_empty() {
            true => out.push(locale.text("admin-erase-report-no-file")),
            false => {
                out.push(locale.format(&dry("admin-erase-report-files"), &[("n", n(self.files.len()))]));
                out.extend(self.files.iter().map(|p| format!("  {}", p.display())));
            }
        }
        for e in &self.file_errors {
            out.push(locale.format("admin-erase-report-not-removed", &[("value", Arg::Str(e))]));
        }
        if self.references.is_empty() {
            out.push(locale.text("admin-erase-report-nothing-left"));
        } else {
            out.push(locale.text("admin-erase-report-left"));
            for r in &self.references {
                // The command names the state as stored; a translated page in its words.
                let state = match locale {
                    Locale::En => r.state.to_string(),
                    _ => locale.text(&format!("admin-effect-{}", r.state)),
                };
                out.push(format!(
                    "  {} {state} external_ref={} provider_ref={}",
                    r.kind,
                    r.effect_key,
                    r.provider_ref.as_deref().unwrap_or("-")
                ));
            }
        }
        out.push(locale.format("admin-erase-report-digest", &[("value", Arg::Str(&self.digest))]));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_erasure_names_one_valid_address_or_number() {
        assert_eq!(
            Person::named(Some(" ada@example.com "), None),
            Ok(Person::Email("ada@example.com".into()))
        );
        assert_eq!(Person::named(Some(""), Some("0912-345-678")), Ok(Person::Phone("0912-345-678".into())));
        assert_eq!(Person::named(Some("ada"), None), Err(NotAPerson::NotAnEmail));
        assert_eq!(Person::named(None, Some("12")), Err(NotAPerson::NotAPhone));
        assert_eq!(Person::named(Some("ada@example.com"), Some("0912345678")), Err(NotAPerson::GiveOne));
        assert_eq!(Person::named(Some(" "), None), Err(NotAPerson::GiveOne));
    }
}
