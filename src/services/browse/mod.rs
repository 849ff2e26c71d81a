//! What the admin reads of the stored submissions: the dashboard's figures, the filtered list
//! and its CSV export, a content search, one submission's page. An export and a search take
//! data out of the admin, so each writes its audit row (`read_audit`) in the same call.

mod csv;
mod read_audit;
mod view;

pub use crate::db::admin::browse::{
    Dashboard, DayCount, EffectStates, RelatedPair, SubmissionFilter, SubmissionPage, SubmissionRow,
};
pub use csv::Columns;
pub use view::{PairView, SubmissionView};

use chrono::NaiveDateTime;

use crate::db::admin::browse::BrowseStore;
use crate::db::{DbError, Pool};
use crate::services::audit::Actor;
use crate::with_conn;

/// The dashboard's figures at `at`.
pub fn dashboard(pool: &Pool, at: NaiveDateTime) -> Result<Dashboard, DbError> {
    with_conn!(pool, |c| c.dashboard(at).map_err(DbError::from))
}

/// One page of the submissions `filter` selects, newest first, with their effects' states
/// and the number selected in all.
pub fn list(
    pool: &Pool,
    filter: &SubmissionFilter,
    limit: i64,
    offset: i64,
) -> Result<(Vec<SubmissionRow>, EffectStates, i64), DbError> {
    with_conn!(pool, |c| {
        let (rows, total) = c.list_submissions(filter, limit, offset)?;
        let states = c.effect_states(&rows.iter().map(|r| r.id.clone()).collect::<Vec<_>>())?;
        Ok((rows, states, total))
    })
}

/// The CSV export of what `filter` selects (`filters`: its query string, for the audit row),
/// audited as `actor`'s.
pub fn export(
    pool: &Pool,
    actor: &Actor,
    filter: &SubmissionFilter,
    filters: &str,
    columns: &Columns,
) -> Result<String, DbError> {
    with_conn!(pool, |c| {
        let body = csv::document(c, filter, columns)?;
        read_audit::export(c, actor, filters, &body)?;
        Ok(body)
    })
}

/// At most `limit` submissions whose content holds `term`, with their effects' states,
/// audited as `actor`'s search.
pub fn search(
    pool: &Pool,
    actor: &Actor,
    term: &str,
    limit: i64,
) -> Result<(Vec<SubmissionRow>, EffectStates), DbError> {
    with_conn!(pool, |c| {
        let rows = c.search_submissions(term, limit)?;
        read_audit::search(c, actor, term, rows.len())?;
        let states = c.effect_states(&rows.iter().map(|r| r.id.clone()).collect::<Vec<_>>())?;
        Ok((rows, states))
    })
}

/// One submission's page: the row, its effects, pairs, conflicts and files' scans.
pub fn submission(pool: &Pool, id: &str) -> Result<Option<SubmissionPage>, DbError> {
    with_conn!(pool, |c| c.submission_page(id).map_err(DbError::from))
}
