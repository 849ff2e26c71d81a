//! The admin user an OIDC identity signs in as: found by (issuer, subject), made on its first
//! sign-in (its email the one the provider gives, a password nobody knows), its role set
//! from each sign-in's claim; then a session, as a local sign-in makes, and an audit row.
//! An email a local account holds already is never taken over.

use uuid::Uuid;

use super::{new_session, normalise_email, random_token, DUMMY_HASH};
use crate::base::clock::now;
use crate::db::admin::accounts::{AccountStore, AuditEntry, NewUser};
use crate::db::admin::oidc::{NewIdentity, OidcStore};
use crate::db::{DbError, Pool, Store};
use crate::domain::Role;
use crate::services::oidc::Identity;
use crate::with_conn;

pub use crate::db::admin::oidc::OidcAttempt;

/// An attempt is good for this long (the cookie and the stored row alike).
pub const ATTEMPT_SECONDS: i64 = 600;
/// Attempts begun and not come back, at most (a flood of starts cannot fill the table).
const MAX_PENDING: i64 = 10_000;

/// Stores a sign-in attempt begun, after sweeping those past `ATTEMPT_SECONDS`; false (and
/// nothing stored) while `MAX_PENDING` are pending.
pub fn store_attempt(pool: &Pool, row: &OidcAttempt) -> Result<bool, DbError> {
    with_conn!(pool, |c| c.write_tx(|c| {
        c.sweep_attempts(row.created_at - chrono::Duration::seconds(ATTEMPT_SECONDS))?;
        if c.count_attempts()? >= MAX_PENDING {
            return Ok(false);
        }
        c.insert_attempt(row)?;
        Ok::<_, DbError>(true)
    }))
}

/// Takes the attempt whose `state` digests to `state_hash`: once, so a replayed `state` finds
/// nothing.
pub fn take_attempt(pool: &Pool, state_hash: &str) -> Result<Option<OidcAttempt>, DbError> {
    with_conn!(pool, |c| c.write_tx(|c| c.take_attempt(state_hash).map_err(DbError::from)))
}

/// What a verified identity with a role comes to.
#[derive(Debug)]
pub enum OidcSignedIn {
    /// A new session: the cookie's token.
    Session(String),
    /// Its user was disabled by an admin.
    Disabled,
    /// Another account (local, or another identity's) has this email.
    EmailTaken(String),
}

pub fn sign_in(pool: &Pool, identity: &Identity, role: Role) -> Result<OidcSignedIn, DbError> {
    let email = normalise_email(&identity.display);
    with_conn!(pool, |c| c.write_tx(|c| {
        let t = now();
        let user = match c.user_of_identity(&identity.issuer, &identity.subject)? {
            Some(user) => user,
            None => {
                if c.user_by_email(&email)?.is_some() {
                    return Ok(OidcSignedIn::EmailTaken(email.clone()));
                }
                let id = Uuid::now_v7().to_string();
                c.insert_user(&NewUser {
                    id: id.clone(),
                    email: email.clone(),
                    password_hash: DUMMY_HASH.to_string(),
                    role,
                    created_at: t,
                    must_change_password: false,
                })?;
                c.insert_identity(&NewIdentity {
                    issuer: identity.issuer.clone(),
                    subject: identity.subject.clone(),
                    user_id: id.clone(),
                    created_at: t,
                    last_sign_in_at: t,
                })?;
                match c.user_of_identity(&identity.issuer, &identity.subject)? {
                    Some(user) => user,
                    None => return Err(DbError::Unavailable("the new OIDC user is not readable".into())),
                }
            }
        };
        if user.disabled_at.is_some() {
            return Ok(OidcSignedIn::Disabled);
        }
        if user.role != role {
            c.set_role(&user.id, role)?;
        }
        c.touch_identity(&identity.issuer, &identity.subject, t)?;
        let token = random_token();
        c.insert_session(&new_session(&token, &user.id))?;
        c.insert_audit(&AuditEntry {
            id: Uuid::now_v7().to_string(),
            user_id: user.id.clone(),
            user_email: user.email.clone(),
            action: "oidc.sign_in".into(),
            target_type: "user".into(),
            target_id: user.id.clone(),
            note: Some(format!("role {} from the role claim", role.as_str())),
            at: t,
        })?;
        Ok(OidcSignedIn::Session(token))
    }))
}
