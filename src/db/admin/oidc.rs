//! Sign-in with an OpenID provider: the attempts begun and not yet come back (each taken
//! once), and the identity (issuer, subject) each OIDC user row belongs to.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::accounts::User;
use crate::db::schema::{oidc_attempts, oidc_identities, users};
use crate::db::DbConnection;
use crate::domain::Role;

/// A sign-in begun: what the browser's return is checked against.
#[derive(Debug, Clone, Insertable, Queryable, Selectable)]
#[diesel(table_name = oidc_attempts)]
pub struct OidcAttempt {
    pub state_hash: String,
    pub browser_hash: String,
    pub nonce: String,
    pub code_verifier: String,
    pub created_at: NaiveDateTime,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = oidc_identities)]
pub struct NewIdentity {
    pub issuer: String,
    pub subject: String,
    pub user_id: String,
    pub created_at: NaiveDateTime,
    pub last_sign_in_at: NaiveDateTime,
}

pub trait OidcStore {
    fn insert_attempt(&mut self, attempt: &OidcAttempt) -> QueryResult<()>;
    /// Deletes the attempts begun before `before`; how many there were.
    fn sweep_attempts(&mut self, before: NaiveDateTime) -> QueryResult<usize>;
    fn count_attempts(&mut self) -> QueryResult<i64>;
    /// Takes the attempt with this state hash: returns it and deletes it, so that a second
    /// call (a replayed `state`, or the same one on another node) finds nothing. Run it in a
    /// write transaction.
    fn take_attempt(&mut self, state_hash: &str) -> QueryResult<Option<OidcAttempt>>;
    /// The user an identity signs in as.
    fn user_of_identity(&mut self, issuer: &str, subject: &str) -> QueryResult<Option<User>>;
    fn insert_identity(&mut self, identity: &NewIdentity) -> QueryResult<()>;
    fn touch_identity(&mut self, issuer: &str, subject: &str, now: NaiveDateTime) -> QueryResult<()>;
    /// Whether `user_id` is an OIDC user (its sign-out goes on to the provider).
    fn has_identity(&mut self, user_id: &str) -> QueryResult<bool>;
    fn set_role(&mut self, user_id: &str, role: Role) -> QueryResult<usize>;
}

impl OidcStore for DbConnection {
    fn insert_attempt(&mut self, attempt: &OidcAttempt) -> QueryResult<()> {
        diesel::insert_into(oidc_attempts::table).values(attempt).execute(self).map(|_| ())
    }

    fn sweep_attempts(&mut self, before: NaiveDateTime) -> QueryResult<usize> {
        diesel::delete(oidc_attempts::table.filter(oidc_attempts::created_at.lt(before))).execute(self)
    }

    fn count_attempts(&mut self) -> QueryResult<i64> {
        oidc_attempts::table.count().get_result(self)
    }

    fn take_attempt(&mut self, state_hash: &str) -> QueryResult<Option<OidcAttempt>> {
        let found = oidc_attempts::table
            .filter(oidc_attempts::state_hash.eq(state_hash))
            .select(OidcAttempt::as_select())
            .first(self)
            .optional()?;
        let deleted = diesel::delete(oidc_attempts::table.filter(oidc_attempts::state_hash.eq(state_hash)))
            .execute(self)?;
        // Another transaction took it between the read and the delete: not ours.
        Ok(found.filter(|_| deleted == 1))
    }

    fn user_of_identity(&mut self, issuer: &str, subject: &str) -> QueryResult<Option<User>> {
        oidc_identities::table
            .inner_join(users::table)
            .filter(oidc_identities::issuer.eq(issuer))
            .filter(oidc_identities::subject.eq(subject))
            .select(User::as_select())
            .first(self)
            .optional()
    }

    fn insert_identity(&mut self, identity: &NewIdentity) -> QueryResult<()> {
        diesel::insert_into(oidc_identities::table).values(identity).execute(self).map(|_| ())
    }

    fn touch_identity(&mut self, issuer: &str, subject: &str, now: NaiveDateTime) -> QueryResult<()> {
        diesel::update(
            oidc_identities::table
                .filter(oidc_identities::issuer.eq(issuer))
                .filter(oidc_identities::subject.eq(subject)),
        )
        .set(oidc_identities::last_sign_in_at.eq(now))
        .execute(self)
        .map(|_| ())
    }

    fn has_identity(&mut self, user_id: &str) -> QueryResult<bool> {
        diesel::select(diesel::dsl::exists(
            oidc_identities::table.filter(oidc_identities::user_id.eq(user_id)),
        ))
        .get_result(self)
    }

    fn set_role(&mut self, user_id: &str, role: Role) -> QueryResult<usize> {
        diesel::update(users::table.filter(users::id.eq(user_id))).set(users::role.eq(role)).execute(self)
    }
}
