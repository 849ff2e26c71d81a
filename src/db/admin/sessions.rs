//! Session lifecycle and account changes: the live session (absolute and idle expiry, no
//! disabled user), sliding it, ending every session of a user, the sweep, the users list.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::accounts::User;
use crate::db::schema::{sessions, users};
use crate::db::DbConnection;
use crate::domain::Role;

/// A live session: its CSRF token, when it was last used, and its user.
#[derive(Debug, Clone)]
pub struct LiveSession {
    pub csrf: String,
    pub last_seen_at: Option<NaiveDateTime>,
    pub user: User,
}

/// One row of the users page.
#[derive(Debug, Clone, Queryable)]
pub struct UserRow {
    pub id: String,
    pub email: String,
    pub role: Role,
    pub created_at: NaiveDateTime,
    pub disabled_at: Option<NaiveDateTime>,
}

pub trait SessionStore {
    /// The session with this token hash if it has not expired (`now`), was used after
    /// `idle_since`, and its user is not disabled.
    fn live_session(
        &mut self,
        token_hash: &str,
        now: NaiveDateTime,
        idle_since: NaiveDateTime,
    ) -> QueryResult<Option<LiveSession>>;
    /// Slides the idle timeout.
    fn touch_session(&mut self, token_hash: &str, now: NaiveDateTime) -> QueryResult<()>;
    /// Ends every session of `user_id`; how many there were.
    fn end_sessions_of(&mut self, user_id: &str) -> QueryResult<usize>;
    fn set_password_hash(&mut self, user_id: &str, hash: &str, must_change: bool) -> QueryResult<usize>;
    /// The admin pages' language `user_id` chose (`None`: the configuration's).
    fn set_user_locale(&mut self, user_id: &str, locale: Option<&str>) -> QueryResult<usize>;
    fn disable_user(&mut self, user_id: &str, now: NaiveDateTime) -> QueryResult<usize>;
    /// Deletes sessions past their absolute expiry or idle since `idle_since`.
    fn sweep_sessions(&mut self, now: NaiveDateTime, idle_since: NaiveDateTime) -> QueryResult<usize>;
    fn user_by_id(&mut self, id: &str) -> QueryResult<Option<User>>;
    fn list_users(&mut self) -> QueryResult<Vec<UserRow>>;
}

impl SessionStore for DbConnection {
    fn live_session(
        &mut self,
        token_hash: &str,
        now: NaiveDateTime,
        idle_since: NaiveDateTime,
    ) -> QueryResult<Option<LiveSession>> {
        sessions::table
            .inner_join(users::table)
            .filter(sessions::token_hash.eq(token_hash))
            .filter(sessions::expires_at.gt(now))
            .filter(sessions::last_seen_at.gt(idle_since))
            .filter(users::disabled_at.is_null())
            .select((sessions::csrf_token, sessions::last_seen_at, User::as_select()))
            .first::<(String, Option<NaiveDateTime>, User)>(self)
            .optional()
            .map(|row| row.map(|(csrf, last_seen_at, user)| LiveSession { csrf, last_seen_at, user }))
    }

    fn touch_session(&mut self, token_hash: &str, now: NaiveDateTime) -> QueryResult<()> {
        diesel::update(sessions::table.filter(sessions::token_hash.eq(token_hash)))
            .set(sessions::last_seen_at.eq(now))
            .execute(self)
            .map(|_| ())
    }

    fn end_sessions_of(&mut self, user_id: &str) -> QueryResult<usize> {
        diesel::delete(sessions::table.filter(sessions::user_id.eq(user_id))).execute(self)
    }

    fn set_password_hash(&mut self, user_id: &str, hash: &str, must_change: bool) -> QueryResult<usize> {
        diesel::update(users::table.filter(users::id.eq(user_id)))
            .set((users::password_hash.eq(hash), users::must_change_password.eq(must_change)))
            .execute(self)
    }

    fn set_user_locale(&mut self, user_id: &str, locale: Option<&str>) -> QueryResult<usize> {
        diesel::update(users::table.filter(users::id.eq(user_id))).set(users::locale.eq(locale)).execute(self)
    }

    fn disable_user(&mut self, user_id: &str, now: NaiveDateTime) -> QueryResult<usize> {
        diesel::update(users::table.filter(users::id.eq(user_id)).filter(users::disabled_at.is_null()))
            .set(users::disabled_at.eq(now))
            .execute(self)
    }

    fn sweep_sessions(&mut self, now: NaiveDateTime, idle_since: NaiveDateTime) -> QueryResult<usize> {
        diesel::delete(
            sessions::table.filter(
                sessions::expires_at
                    .le(now)
                    .or(sessions::last_seen_at.le(idle_since))
                    .or(sessions::last_seen_at.is_null()),
            ),
        )
        .execute(self)
    }

    fn user_by_id(&mut self, id: &str) -> QueryResult<Option<User>> {
        users::table.filter(users::id.eq(id)).select(User::as_select()).first(self).optional()
    }

    fn list_users(&mut self) -> QueryResult<Vec<UserRow>> {
        users::table
            .order(users::email)
            .select((users::id, users::email, users::role, users::created_at, users::disabled_at))
            .load(self)
    }
}
