//! Users, sessions and the audit log.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::db::schema::{audit_log, sessions, users};
use crate::db::DbConnection;
use crate::domain::Role;

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = users)]
pub struct NewUser {
    pub id: String,
    pub email: String,
    pub password_hash: String,
    pub role: Role,
    pub created_at: NaiveDateTime,
    /// The generated first-start password: the first sign-in must replace it.
    pub must_change_password: bool,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = users)]
pub struct User {
    pub id: String,
    pub email: String,
    pub password_hash: String,
    pub role: Role,
    pub disabled_at: Option<NaiveDateTime>,
    pub must_change_password: bool,
    /// The admin pages' language this user chose (a tag); `None`: the configuration's.
    pub locale: Option<String>,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = sessions)]
pub struct NewSession {
    pub token_hash: String,
    pub user_id: String,
    pub csrf_token: String,
    pub created_at: NaiveDateTime,
    pub expires_at: NaiveDateTime,
    pub last_seen_at: Option<NaiveDateTime>,
}

#[derive(Debug, Clone, Insertable, Queryable, Selectable)]
#[diesel(table_name = audit_log)]
pub struct AuditEntry {
    pub id: String,
    pub user_id: String,
    pub user_email: String,
    pub action: String,
    pub target_type: String,
    pub target_id: String,
    pub note: Option<String>,
    pub at: NaiveDateTime,
}

pub trait AccountStore {
    fn insert_user(&mut self, user: &NewUser) -> QueryResult<()>;
    fn count_users(&mut self) -> QueryResult<i64>;
    fn user_by_email(&mut self, email: &str) -> QueryResult<Option<User>>;
    fn insert_session(&mut self, session: &NewSession) -> QueryResult<()>;
    /// The live session with this token hash, its CSRF token and its user.
    fn session(&mut self, token_hash: &str, now: NaiveDateTime) -> QueryResult<Option<(String, User)>>;
    fn delete_session(&mut self, token_hash: &str) -> QueryResult<()>;
    fn insert_audit(&mut self, entry: &AuditEntry) -> QueryResult<()>;
    fn audit_entries(&mut self, limit: i64, offset: i64) -> QueryResult<Vec<AuditEntry>>;
}

impl AccountStore for DbConnection {
    fn insert_user(&mut self, user: &NewUser) -> QueryResult<()> {
        diesel::insert_into(users::table).values(user).execute(self).map(|_| ())
    }

    fn count_users(&mut self) -> QueryResult<i64> {
        users::table.count().get_result(self)
    }

    fn user_by_email(&mut self, email: &str) -> QueryResult<Option<User>> {
        users::table.filter(users::email.eq(email)).select(User::as_select()).first(self).optional()
    }

    fn insert_session(&mut self, session: &NewSession) -> QueryResult<()> {
        diesel::insert_into(sessions::table).values(session).execute(self).map(|_| ())
    }

    fn session(&mut self, token_hash: &str, now: NaiveDateTime) -> QueryResult<Option<(String, User)>> {
        sessions::table
            .inner_join(users::table)
            .filter(sessions::token_hash.eq(token_hash))
            .filter(sessions::expires_at.gt(now))
            .select((sessions::csrf_token, User::as_select()))
            .first(self)
            .optional()
    }

    fn delete_session(&mut self, token_hash: &str) -> QueryResult<()> {
        diesel::delete(sessions::table.filter(sessions::token_hash.eq(token_hash))).execute(self).map(|_| ())
    }

    fn insert_audit(&mut self, entry: &AuditEntry) -> QueryResult<()> {
        diesel::insert_into(audit_log::table).values(entry).execute(self).map(|_| ())
    }

    fn audit_entries(&mut self, limit: i64, offset: i64) -> QueryResult<Vec<AuditEntry>> {
        audit_log::table
            .order((audit_log::at.desc(), audit_log::id.desc()))
            .limit(limit)
            .offset(offset)
            .select(AuditEntry::as_select())
            .load(self)
    }
}
