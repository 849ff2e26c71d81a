//! Read API tokens (`api_tokens`: the SHA-256 of each secret, never the secret) and the record
//! of their uses (`api_token_uses`: one row per authenticated request, kept for a bounded time).

use chrono::NaiveDateTime;
use diesel::connection::SimpleConnection;
use diesel::dsl::count_star;
use diesel::prelude::*;

use crate::db::schema::{api_token_uses, api_tokens};
use crate::db::DbConnection;
use crate::domain::Scopes;

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = api_tokens)]
pub struct NewApiToken {
    pub id: String,
    pub name: String,
    /// `domain::digest` (SHA-256, hex) of the secret.
    pub token_hash: String,
    pub scopes: Scopes,
    pub form: Option<String>,
    pub created_by: String,
    pub created_at: NaiveDateTime,
    pub expires_at: Option<NaiveDateTime>,
}

/// A stored token, without its hash.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = api_tokens)]
pub struct ApiTokenRow {
    pub id: String,
    pub name: String,
    pub scopes: Scopes,
    pub form: Option<String>,
    pub created_by: String,
    pub created_at: NaiveDateTime,
    pub expires_at: Option<NaiveDateTime>,
    pub revoked_at: Option<NaiveDateTime>,
    pub last_used_at: Option<NaiveDateTime>,
}

/// One authenticated request: the route template (`/api/v1/submissions/{id}`), never the
/// values in it, its query or the token.
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = api_token_uses)]
pub struct NewTokenUse {
    pub id: String,
    pub token_id: String,
    pub at: NaiveDateTime,
    pub method: String,
    pub route: String,
}

pub trait ApiTokenStore {
    fn insert_api_token(&mut self, token: &NewApiToken) -> QueryResult<()>;
    /// Every token, newest first.
    fn api_tokens(&mut self) -> QueryResult<Vec<ApiTokenRow>>;
    fn api_token(&mut self, id: &str) -> QueryResult<Option<ApiTokenRow>>;
    /// The token whose secret has this hash (found by the unique index: no comparison of
    /// secrets in the program at all).
    fn api_token_by_hash(&mut self, token_hash: &str) -> QueryResult<Option<ApiTokenRow>>;
    /// True when the token was live and is revoked now.
    fn revoke_api_token(&mut self, id: &str, now: NaiveDateTime) -> QueryResult<bool>;
    /// Records one use; moves `last_used_at` to `used.at` when it is older than
    /// `touch_before` (so at most once a minute), and then deletes every use older than
    /// `forget_before`. True when `last_used_at` moved. On PostgreSQL its commit does not wait
    /// for the disk (`synchronous_commit = off`).
    fn record_api_use(
        &mut self,
        used: &NewTokenUse,
        touch_before: NaiveDateTime,
        forget_before: NaiveDateTime,
    ) -> QueryResult<bool>;
    /// (token id, uses recorded at or after `since`), for tokens used since then.
    fn api_use_counts(&mut self, since: NaiveDateTime) -> QueryResult<Vec<(String, i64)>>;
}

impl ApiTokenStore for DbConnection {
    fn insert_api_token(&mut self, token: &NewApiToken) -> QueryResult<()> {
        diesel::insert_into(api_tokens::table).values(token).execute(self).map(|_| ())
    }

    fn api_tokens(&mut self) -> QueryResult<Vec<ApiTokenRow>> {
        api_tokens::table
            .order((api_tokens::created_at.desc(), api_tokens::id.desc()))
            .select(ApiTokenRow::as_select())
            .load(self)
    }

    fn api_token(&mut self, id: &str) -> QueryResult<Option<ApiTokenRow>> {
        api_tokens::table
            .filter(api_tokens::id.eq(id))
            .select(ApiTokenRow::as_select())
            .first(self)
            .optional()
    }

    fn api_token_by_hash(&mut self, token_hash: &str) -> QueryResult<Option<ApiTokenRow>> {
        api_tokens::table
            .filter(api_tokens::token_hash.eq(token_hash))
            .select(ApiTokenRow::as_select())
            .first(self)
            .optional()
    }

    fn revoke_api_token(&mut self, id: &str, now: NaiveDateTime) -> QueryResult<bool> {
        let n = diesel::update(
            api_tokens::table.filter(api_tokens::id.eq(id)).filter(api_tokens::revoked_at.is_null()),
        )
        .set(api_tokens::revoked_at.eq(now))
        .execute(self)?;
        Ok(n == 1)
    }

    fn record_api_use(
        &mut self,
        used: &NewTokenUse,
        touch_before: NaiveDateTime,
        forget_before: NaiveDateTime,
    ) -> QueryResult<bool> {
        if let DbConnection::Pg(pg) = self {
            // A read's record need not wait for the disk (as the request log's rows): a crash
            // of PostgreSQL itself may lose the last uses' rows, never the data they read.
            pg.batch_execute("SET LOCAL synchronous_commit = off")?;
        }
        diesel::insert_into(api_token_uses::table).values(used).execute(self)?;
        let touched = diesel::update(
            api_tokens::table
                .filter(api_tokens::id.eq(&used.token_id))
                .filter(api_tokens::last_used_at.is_null().or(api_tokens::last_used_at.lt(touch_before))),
        )
        .set(api_tokens::last_used_at.eq(used.at))
        .execute(self)?;
        if touched == 1 {
            diesel::delete(api_token_uses::table.filter(api_token_uses::at.lt(forget_before)))
                .execute(self)?;
        }
        Ok(touched == 1)
    }

    fn api_use_counts(&mut self, since: NaiveDateTime) -> QueryResult<Vec<(String, i64)>> {
        api_token_uses::table
            .filter(api_token_uses::at.ge(since))
            .group_by(api_token_uses::token_id)
            .select((api_token_uses::token_id, count_star()))
            .load(self)
    }
}
