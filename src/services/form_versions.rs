//! Keeps every version of every form seen in force (`db::form_versions`): at each start of
//! `serve` and `worker`, and at each reload before its forms are put in force, so that a
//! submission's version is always stored before it is accepted under it (a start or a reload
//! that cannot store them fails).

use crate::config::Config;
use crate::db::form_versions::{FormVersions, NewFormVersion};

pub use crate::db::form_versions::FormVersion;
use crate::db::{DbError, Pool};
use crate::with_conn;

/// Stores the versions of `config`'s forms not stored yet; how many were new.
pub fn record(pool: &Pool, config: &Config) -> Result<usize, DbError> {
    let now = crate::base::clock::now();
    let rows: Vec<NewFormVersion> = config
        .forms
        .iter()
        .filter(|(_, form)| form.definition.is_known())
        .map(|(name, form)| NewFormVersion {
            form: name.clone(),
            version: form.definition.version.to_string(),
            definition: form.definition.text.to_string(),
            first_seen_at: now,
        })
        .collect();
    let added = with_conn!(pool, |c| c.record_form_versions(&rows).map_err(DbError::from))?;
    if added > 0 {
        tracing::info!(added, "new form versions stored");
    }
    Ok(added)
}

/// The stored versions of the form `name`, and the number of its submissions under each
/// (`None`: accepted before versions were kept).
#[allow(clippy::type_complexity)]
pub fn history(pool: &Pool, name: &str) -> Result<(Vec<FormVersion>, Vec<(Option<String>, i64)>), DbError> {
    with_conn!(pool, |c| {
        let versions = c.form_versions(name)?;
        let counts = c.submissions_per_version(name)?;
        Ok((versions, counts))
    })
}
