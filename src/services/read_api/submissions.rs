//! `GET /api/v1/submissions` (a page, newest first) and `GET /api/v1/submissions/{id}` (one
//! submission with its effects and their attempts, its duplicate pairs and conflicts), both
//! through the admin's `BrowseStore`.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use serde::Serialize;

use super::cursor::{page, Cursor, Page};
use super::views::{ConflictView, EffectView, PairView, SubmissionView};
use super::{fetch, Caller, ReadError, Reader};
use crate::db::admin::browse::{BrowseStore, SubmissionFilter};
use crate::db::DbError;
use crate::domain::{ApiScope, EffectState};
use crate::with_conn;

/// What a page of submissions is narrowed to.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pub form: Option<String>,
    /// Received at or after.
    pub since: Option<NaiveDateTime>,
    /// Received before.
    pub until: Option<NaiveDateTime>,
    /// Has an effect record in this state.
    pub state: Option<EffectState>,
    pub cursor: Option<Cursor>,
    pub limit: usize,
}

/// A submission in a list: its record and the state of each effect.
#[derive(Debug, Serialize)]
pub struct Listed {
    #[serde(flatten)]
    pub submission: SubmissionView,
    pub effects: Vec<EffectBrief>,
}

#[derive(Debug, Serialize)]
pub struct EffectBrief {
    pub kind: String,
    pub state: &'static str,
}

/// One submission's page.
#[derive(Debug, Serialize)]
pub struct Detail {
    #[serde(flatten)]
    pub submission: SubmissionView,
    pub effects: Vec<EffectView>,
    /// Duplicate pairs naming it (as original or as duplicate).
    pub duplicates: Vec<PairView>,
    /// Retries of its operation ID with other content.
    pub conflicts: Vec<ConflictView>,
}

/// A page of the submissions `caller` may read.
pub fn list(reader: &Reader<'_>, caller: &Caller, q: Query) -> Result<Page<Listed>, ReadError> {
    caller.require(ApiScope::ReadSubmissions)?;
    let filter = SubmissionFilter {
        form: caller.narrow(q.form)?,
        from: q.since,
        until: q.until,
        state: q.state,
        ..SubmissionFilter::default()
    };
    let (rows, mut states) = with_conn!(reader.pool, |c| {
        let rows = c.submissions_page(&filter, q.cursor.as_ref().map(Cursor::key), fetch(q.limit))?;
        let ids: Vec<_> = rows.iter().map(|r| r.id.clone()).collect();
        let states = c.effect_states(&ids)?;
        Ok::<_, DbError>((rows, states))
    })?;
    let none = BTreeMap::new();
    Ok(page(
        rows,
        q.limit,
        |r| Cursor::new(r.received_at, &r.id),
        |r| {
            let effects = states
                .remove(&r.id)
                .unwrap_or_default()
                .into_iter()
                .map(|(kind, state)| EffectBrief { kind, state: state.as_str() })
                .collect();
            Listed { submission: SubmissionView::of(r, reader, &none), effects }
        },
    ))
}

/// Submission `id` with everything the admin's page shows of it but its deliveries.
pub fn detail(reader: &Reader<'_>, caller: &Caller, id: &str) -> Result<Detail, ReadError> {
    caller.require(ApiScope::ReadSubmissions)?;
    let found = with_conn!(reader.pool, |c| c.submission_page(id).map_err(DbError::from))?;
    let found = found.ok_or(ReadError::NotFound)?;
    caller.check_form(&found.submission.form)?;
    let purged = found.submission.content_purged_at.is_some();
    Ok(Detail {
        submission: SubmissionView::of(found.submission, reader, &found.scans),
        effects: found.effects.into_iter().map(|(e, attempts)| EffectView::of(e, Some(attempts))).collect(),
        // Retention and erasure delete a tombstone's pairs and conflicts; none is served.
        duplicates: if purged {
            Vec::new()
        } else {
            found.pairs.into_iter().map(PairView::related).collect()
        },
        conflicts: if purged {
            Vec::new()
        } else {
            found.conflicts.into_iter().map(ConflictView::of).collect()
        },
    })
}
