//! `GET /api/v1/duplicates`: suspected duplicate pairs in one status (`open` unless asked),
//! newest first, through the admin's `ReviewStore`. Decisions are
//! `services::duplicates::decide`'s, the admin's own rules and audit.

use super::cursor::{page, Cursor, Page};
use super::views::PairView;
use super::{fetch, Caller, ReadError, Reader};
use crate::db::admin::review::ReviewStore;
use crate::db::DbError;
use crate::domain::{ApiScope, PairStatus};
use crate::with_conn;

#[derive(Debug, Clone)]
pub struct Query {
    pub status: PairStatus,
    pub form: Option<String>,
    pub cursor: Option<Cursor>,
    pub limit: usize,
}

pub fn list(reader: &Reader<'_>, caller: &Caller, q: Query) -> Result<Page<PairView>, ReadError> {
    // Pairs are part of what a submission's page shows: read with `read:submissions`.
    caller.require(ApiScope::ReadSubmissions)?;
    let form = caller.narrow(q.form)?;
    let after = q.cursor.as_ref().map(Cursor::key);
    let rows = with_conn!(reader.pool, |c| c
        .pairs_page(q.status, form.as_deref(), after, fetch(q.limit))
        .map_err(DbError::from))?;
    Ok(page(rows, q.limit, |p| Cursor::new(p.created_at, &p.id), PairView::of))
}
