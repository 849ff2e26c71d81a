//! `GET /api/v1/effects`: the side-effect records of submissions, most recently changed
//! first, optionally in one state (`UNKNOWN`: waiting for a decision), through the admin's
//! `EffectAdminStore`.

use super::cursor::{page, Cursor, Page};
use super::views::EffectView;
use super::{fetch, Caller, ReadError, Reader};
use crate::db::admin::effects::EffectAdminStore;
use crate::db::DbError;
use crate::domain::{ApiScope, EffectState};
use crate::with_conn;

#[derive(Debug, Clone, Default)]
pub struct Query {
    pub state: Option<EffectState>,
    pub form: Option<String>,
    pub cursor: Option<Cursor>,
    pub limit: usize,
}

pub fn list(reader: &Reader<'_>, caller: &Caller, q: Query) -> Result<Page<EffectView>, ReadError> {
    caller.require(ApiScope::ReadEffects)?;
    let form = caller.narrow(q.form)?;
    let after = q.cursor.as_ref().map(Cursor::key);
    let rows = with_conn!(reader.pool, |c| c
        .effects_page(q.state, form.as_deref(), after, fetch(q.limit))
        .map_err(DbError::from))?;
    Ok(page(rows, q.limit, |e| Cursor::new(e.updated_at, &e.id), |e| EffectView::of(e, None)))
}
