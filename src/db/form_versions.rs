//! `form_versions`: every version of every form seen in force, with its definition
//! (`config::definition`). Rows are only ever added (insert-or-ignore), at each start and
//! reload; a retry of a submission accepted under an older version is judged under the
//! definition read back from here.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::schema::{form_versions, submissions};
use super::DbConnection;

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = form_versions)]
pub struct NewFormVersion {
    pub form: String,
    pub version: String,
    pub definition: String,
    pub first_seen_at: NaiveDateTime,
}

/// One stored version of a form.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = form_versions)]
pub struct FormVersion {
    pub version: String,
    pub definition: String,
    pub first_seen_at: NaiveDateTime,
}

pub trait FormVersions {
    /// Stores the versions not stored yet (a stored one keeps its `first_seen_at`); how many
    /// were new.
    fn record_form_versions(&mut self, rows: &[NewFormVersion]) -> QueryResult<usize>;
    /// The definition of `form` at `version`, if it was ever seen.
    fn form_definition(&mut self, form: &str, version: &str) -> QueryResult<Option<String>>;
    /// Every version of `form`, the first seen first.
    fn form_versions(&mut self, form: &str) -> QueryResult<Vec<FormVersion>>;
    /// How many submissions of `form` were accepted under each version (`None`: unknown).
    fn submissions_per_version(&mut self, form: &str) -> QueryResult<Vec<(Option<String>, i64)>>;
}

impl FormVersions for DbConnection {
    fn record_form_versions(&mut self, rows: &[NewFormVersion]) -> QueryResult<usize> {
        let mut added = 0;
        for row in rows {
            added += self.execute_native(
                diesel::insert_into(form_versions::table)
                    .values(row)
                    .on_conflict((form_versions::form, form_versions::version))
                    .do_nothing(),
            )?;
        }
        Ok(added)
    }

    fn form_definition(&mut self, form: &str, version: &str) -> QueryResult<Option<String>> {
        form_versions::table
            .filter(form_versions::form.eq(form))
            .filter(form_versions::version.eq(version))
            .select(form_versions::definition)
            .first(self)
            .optional()
    }

    fn form_versions(&mut self, form: &str) -> QueryResult<Vec<FormVersion>> {
        form_versions::table
            .filter(form_versions::form.eq(form))
            .order((form_versions::first_seen_at, form_versions::version))
            .select(FormVersion::as_select())
            .load(self)
    }

    fn submissions_per_version(&mut self, form: &str) -> QueryResult<Vec<(Option<String>, i64)>> {
        submissions::table
            .filter(submissions::form.eq(form))
            .group_by(submissions::form_version)
            .select((submissions::form_version, diesel::dsl::count_star()))
            .load(self)
    }
}
