//! Forms defined in the admin (`/admin/forms`), stored in the database (`db::admin_forms`)
//! beside the configuration file's: the forms in force are the file's plus the stored
//! ones, merged at every start and every reload (`SIGHUP`, `onceform reload`, the reload
//! button) and whenever the stored ones change (`follow`: each `serve` and `worker` process
//! polls the table's names and versions every `POLL`). The file is authoritative: a stored
//! form whose name the file defines is left out, and so is one that no longer passes the
//! rules (each is named in `AdminMerge::ignored`, which the admin shows).
//!
//! An admin's edit (`save`) is one form's `[forms.NAME]` section in the file's syntax,
//! checked by the `check-config` rules against the whole configuration in force; a good
//! one is stored as a new version (`form_versions`) with its audit row in one transaction
//! and put in force in this process at once.

use std::sync::Arc;
use std::time::Duration;

use crate::config::admin_forms::{at_line, parse_section};
use crate::config::{AdminMerge, Config, FormConfig, FormOrigin, LiveForms, Secrets};
use crate::db::admin_forms::{AdminFormRow, AdminForms};
use crate::db::form_versions::{FormVersions, NewFormVersion};
use crate::db::{DbError, Pool, Store};
use crate::services::audit::Actor;
use crate::with_conn;

/// How often a process looks for forms another process saved.
pub const POLL: Duration = Duration::from_secs(2);

/// `config` with the stored forms `rows` merged in (any admin form it held before is
/// dropped first, so merging again is the same as merging once); the secrets their effects
/// name are looked for in `secrets`.
pub fn merge(mut config: Config, rows: &[AdminFormRow], secrets: &Secrets) -> Config {
    config.forms.retain(|_, f| f.origin.is_file());
    let mut merged = AdminMerge {
        stamp: rows.iter().map(|r| (r.name.clone(), r.version.clone())).collect(),
        ..AdminMerge::default()
    };
    for row in rows {
        match check(&config, Some(&row.name), &row.source, &|k| secrets.var(k)) {
            Ok(mut form) => {
                form.origin = FormOrigin::Admin { saved_by: row.saved_by.clone(), saved_at: row.saved_at };
                config.forms.insert(row.name.clone(), form);
                config.link_duplicate_groups();
            }
            Err(problems) => {
                tracing::warn!(form = %row.name, "an admin-defined form is not in force: {}", problems.join("; "));
                merged.ignored.insert(row.name.clone(), problems.join("; "));
            }
        }
    }
    config.admin_forms = merged;
    config
}

/// Checks one form's section `text` against `config` (the forms in force) by every rule of
/// `check-config` and the secrets its effects name (read from `env`); the form, or every
/// problem (each at its line where it has one). `editing`: the form's name must be this.
pub fn check(
    config: &Config,
    editing: Option<&str>,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<FormConfig, Vec<String>> {
    let (name, form) = parse_section(text)?;
    if let Some(expected) = editing.filter(|e| *e != name) {
        return Err(vec![format!("the text defines the form `{name}`; this is the form `{expected}`")]);
    }
    if config.forms.get(&name).is_some_and(|f| f.origin.is_file()) {
        return Err(vec![format!("forms.{name}: the configuration file defines this form")]);
    }
    let before = super::check_config::problems(config);
    let mut candidate = config.clone();
    candidate.forms.insert(name.clone(), form.clone());
    candidate.link_duplicate_groups();
    let mut problems: Vec<String> =
        super::check_config::problems(&candidate).into_iter().filter(|p| !before.contains(p)).collect();
    problems.extend(super::effects::secret_problems(&format!("forms.{name}"), &form, env));
    match problems.is_empty() {
        true => Ok(form),
        false => Err(problems.iter().map(|p| at_line(text, &name, p)).collect()),
    }
}

/// `config` with the stored forms merged in, every form's version stored (before any
/// submission is accepted under it).
pub fn merge_stored(pool: &Pool, config: Config, secrets: &Secrets) -> Result<Config, DbError> {
    let rows = with_conn!(pool, |c| c.admin_forms().map_err(DbError::from))?;
    let config = merge(config, &rows, secrets);
    super::form_versions::record(pool, &config)?;
    Ok(config)
}

/// Whether the stored forms differ from those `config` merged.
pub fn changed(pool: &Pool, config: &Config) -> Result<bool, DbError> {
    let stamp = with_conn!(pool, |c| c.admin_form_versions().map_err(DbError::from))?;
    Ok(stamp != config.admin_forms.stamp)
}

/// Merges the stored forms into the forms in force if they changed since the last merge;
/// whether they did.
pub fn refresh(live: &LiveForms, pool: &Pool) -> Result<bool, DbError> {
    let _one_at_a_time = live.updating();
    let now = live.now();
    if !changed(pool, &now.config)? {
        return Ok(false);
    }
    let config = merge_stored(pool, (*now.config).clone(), &live.secrets())?;
    tracing::info!(
        forms = config.forms.len(),
        "admin-defined forms changed: the forms in force are merged again"
    );
    live.put_merged(config);
    Ok(true)
}

/// Follows the stored forms for as long as the runtime runs: every `POLL`, merges them
/// again if another process (or this one) changed them (`serve`).
pub async fn follow(live: Arc<LiveForms>, pool: Pool) {
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let (live, pool) = (live.clone(), pool.clone());
        if let Ok(Err(error)) = tokio::task::spawn_blocking(move || refresh(&live, &pool)).await {
            tracing::warn!(%error, "admin-defined forms not read: the forms in force are unchanged");
        }
    }
}

/// What a save did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// A new form, in force at this version.
    Created(String),
    /// A new version of the form, in force.
    Changed(String),
    /// The definition is the one stored: nothing was written.
    Unchanged,
}

/// Why a save changed nothing.
#[derive(Debug)]
pub enum SaveError {
    /// The configuration file defines the form: it cannot be edited here.
    FileForm,
    /// What is wrong with the text (each at its line where it has one).
    Invalid(Vec<String>),
    Db(DbError),
}

impl From<DbError> for SaveError {
    fn from(e: DbError) -> SaveError {
        SaveError::Db(e)
    }
}

/// Saves `text` (one form's section) for `actor`: `editing` names the stored form it
/// changes (`None`: a new form), `base` the version the editor showed (a version saved
/// since is a conflict). Checked as `check` does, stored with its version and audit row in
/// one transaction, and put in force in this process.
pub fn save(
    live: &LiveForms,
    pool: &Pool,
    actor: &Actor,
    editing: Option<&str>,
    base: Option<&str>,
    text: &str,
) -> Result<Saved, SaveError> {
    let _one_at_a_time = live.updating();
    let now = live.now();
    if editing.is_some_and(|name| now.get(name).is_some_and(|f| f.origin.is_file())) {
        return Err(SaveError::FileForm);
    }
    let secrets = live.secrets();
    let form = check(&now.config, editing, text, &|k| secrets.var(k)).map_err(SaveError::Invalid)?;
    let name = match parse_section(text) {
        Ok((name, _)) => name,
        Err(problems) => return Err(SaveError::Invalid(problems)),
    };
    let version = form.definition.version.to_string();
    let row = AdminFormRow {
        name: name.clone(),
        source: text.replace("\r\n", "\n"),
        version: version.clone(),
        saved_by: actor.label.clone(),
        saved_at: crate::base::clock::now(),
    };
    let written = with_conn!(pool, |c| {
        c.write_tx(|c| {
        let stored = c.admin_form(&name)?;
        match (&stored, editing, base) {
            (Some(_), None, _) => {
                return Ok(Err(vec![format!("forms.{name}: a form of this name exists: edit it instead")]));
            }
            (None, Some(_), _) => return Ok(Err(vec![format!("forms.{name}: no such form is stored")])),
            (Some(s), Some(_), Some(base)) if s.version != base => {
                return Ok(Err(vec![format!(
                    "forms.{name}: {} saved version {} since this editor was opened; reload it and edit again",
                    s.saved_by, s.version
                )]));
            }
            (Some(s), _, _) if s.version == version => return Ok(Ok(Saved::Unchanged)),
            _ => {}
        }
        c.put_admin_form(&row)?;
        c.record_form_versions(&[NewFormVersion {
            form: name.clone(),
            version: version.clone(),
            definition: form.definition.text.to_string(),
            first_seen_at: row.saved_at,
        }])?;
        let (action, saved) = match stored {
            None => ("form.create", Saved::Created(version.clone())),
            Some(_) => ("form.edit", Saved::Changed(version.clone())),
        };
        super::audit::record(c, actor, action, ("form", &name), Some(&format!("version {version}")))?;
        Ok::<_, DbError>(Ok(saved))
    })
    })?;
    let saved = written.map_err(SaveError::Invalid)?;
    if saved != Saved::Unchanged {
        let config = merge_stored(pool, (*now.config).clone(), &secrets)?;
        live.put_merged(config);
    }
    Ok(saved)
}

/// Why a delete changed nothing.
#[derive(Debug)]
pub enum DeleteError {
    /// The configuration file defines the form: it cannot be deleted here.
    FileForm,
    /// No form of this name is stored.
    NotFound,
    /// The form was saved since the editor was opened: (who saved it, its version).
    Stale(String, String),
    /// This many effect records of its submissions are not finished: deleting the form now
    /// would leave them without its settings.
    Unfinished(i64),
    Db(DbError),
}

impl From<DbError> for DeleteError {
    fn from(e: DbError) -> DeleteError {
        DeleteError::Db(e)
    }
}

/// Deletes the stored form `name` for `actor`, as opened in the editor at version `base`:
/// its row and an audit row in one transaction, then out of force in this process (every
/// other one drops it at its next poll). Its submissions and versions stay; a form whose
/// submissions still have effects to deliver is not deleted.
pub fn delete(
    live: &LiveForms,
    pool: &Pool,
    actor: &Actor,
    name: &str,
    base: &str,
) -> Result<(), DeleteError> {
    let _one_at_a_time = live.updating();
    let now = live.now();
    if now.get(name).is_some_and(|f| f.origin.is_file()) {
        return Err(DeleteError::FileForm);
    }
    let refused = with_conn!(pool, |c| {
        c.write_tx(|c| {
            let Some(stored) = c.admin_form(name)? else {
                return Ok(Some(DeleteError::NotFound));
            };
            if stored.version != base {
                return Ok(Some(DeleteError::Stale(stored.saved_by, stored.version)));
            }
            match c.unfinished_effects_of(name)? {
                0 => {}
                unfinished => return Ok(Some(DeleteError::Unfinished(unfinished))),
            }
            c.delete_admin_form(name)?;
            let detail = format!("version {}", stored.version);
            super::audit::record(c, actor, "form.delete", ("form", name), Some(&detail))?;
            Ok::<_, DbError>(None)
        })
    })?;
    if let Some(refused) = refused {
        return Err(refused);
    }
    live.put_merged(merge_stored(pool, (*now.config).clone(), &live.secrets())?);
    Ok(())
}

/// The form `name` as stored in the admin, if it is one.
pub fn stored(pool: &Pool, name: &str) -> Result<Option<AdminFormRow>, DbError> {
    with_conn!(pool, |c| c.admin_form(name).map_err(DbError::from))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, source: &str) -> AdminFormRow {
        let (_, form) = parse_section(source).unwrap();
        AdminFormRow {
            name: name.into(),
            source: source.into(),
            version: form.definition.version.to_string(),
            saved_by: "admin@example.com".into(),
            saved_at: chrono::NaiveDateTime::default(),
        }
    }

    const QUOTE: &str =
        "[forms.quote]\ntitle = \"Quote\"\n[[forms.quote.fields]]\nname = \"email\"\ntype = \"email\"\n";

    #[test]
    fn the_file_wins_a_bad_stored_form_is_left_out_and_merging_twice_is_merging_once() {
        let file = Config::builtin().unwrap();
        let contact =
            "[forms.contact]\ntitle = \"Mine\"\n[[forms.contact.fields]]\nname = \"x\"\ntype = \"text\"\n";
        let bad = "[forms.bad]\ntitle = \"Bad\"\neffects = [\"slack\"]\n[[forms.bad.fields]]\nname = \"x\"\ntype = \"text\"\n";
        let rows = [row("bad", bad), row("contact", contact), row("quote", QUOTE)];
        let merged = merge(file.clone(), &rows, &Secrets::default());
        assert_eq!(merged.forms["contact"].title, file.forms["contact"].title, "the file's contact");
        assert!(merged.forms["contact"].origin.is_file());
        assert!(!merged.forms["quote"].origin.is_file());
        assert!(!merged.forms.contains_key("bad"));
        assert!(merged.admin_forms.ignored["contact"].contains("the configuration file defines"));
        assert!(
            merged.admin_forms.ignored["bad"].contains("line 3: forms.bad.slack"),
            "{:?}",
            merged.admin_forms.ignored
        );
        assert_eq!(merged.admin_forms.stamp.len(), 3);
        let again = merge(merged.clone(), &rows[2..], &Secrets::default());
        assert!(again.forms.contains_key("quote") && again.admin_forms.ignored.is_empty());
        let without = merge(again, &[], &Secrets::default());
        assert!(!without.forms.contains_key("quote"), "a form no longer stored is dropped");
    }
}
