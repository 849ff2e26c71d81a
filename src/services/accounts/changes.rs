//! Changes to an account: setting a password and disabling a user (each ends every session of
//! that user in the same transaction, with its audit row), and the sweep of expired
//! sessions.

use std::time::Duration;

use chrono::NaiveDateTime;
use uuid::Uuid;

use super::{check_password, hash_password, normalise_email, SESSION_IDLE_MINUTES};
use crate::base::clock::now;
use crate::db::admin::accounts::{AccountStore, AuditEntry, User};
use crate::db::admin::sessions::SessionStore;
use crate::db::{DbError, Pool, Store};
use crate::with_conn;

/// How often `serve` deletes expired and idle sessions.
pub const SWEEP_EVERY: Duration = Duration::from_secs(10 * 60);

/// Who changes an account, for the audit log.
#[derive(Debug, Clone)]
pub enum Actor {
    /// `onceform admin …` on the server.
    CommandLine,
    /// A signed-in admin (id, email).
    Admin { id: String, email: String },
}

/// Which user: by email (command line) or by id (admin pages).
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    Email(&'a str),
    Id(&'a str),
}

#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error("there is no user {0}")]
    NoSuchUser(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for ChangeError {
    fn from(e: diesel::result::Error) -> Self {
        ChangeError::Db(DbError::from(e))
    }
}

/// What a change did: to whom, and how many sessions it ended.
#[derive(Debug, Clone)]
pub struct Changed {
    pub email: String,
    pub sessions_ended: usize,
}

/// Sets `target`'s password (it need not be changed again) and ends all their sessions.
pub fn set_password(
    pool: &Pool,
    target: Target,
    password: &str,
    actor: &Actor,
) -> Result<Changed, ChangeError> {
    check_password(password).map_err(|e| ChangeError::Invalid(e.to_string()))?;
    let hash = hash_password(password).map_err(|e| ChangeError::Invalid(e.to_string()))?;
    change(pool, target, actor, "set_password", move |c, user| {
        c.set_password_hash(&user.id, &hash, false).map(|_| ())
    })
}

/// Disables `target` (no sign-in from now on) and ends all their sessions.
pub fn disable_user(pool: &Pool, target: Target, actor: &Actor) -> Result<Changed, ChangeError> {
    change(pool, target, actor, "disable_user", |c, user| c.disable_user(&user.id, now()).map(|_| ()))
}

/// Finds the user, applies `apply`, ends their sessions and writes the audit row, in one
/// transaction.
fn change<F>(
    pool: &Pool,
    target: Target,
    actor: &Actor,
    action: &str,
    apply: F,
) -> Result<Changed, ChangeError>
where
    F: FnOnce(&mut dyn ChangeConn, &User) -> diesel::QueryResult<()>,
{
    let named = match target {
        Target::Email(e) => normalise_email(e),
        Target::Id(id) => id.to_string(),
    };
    let done = with_conn!(pool, |c| Ok::<_, DbError>(c.write_tx(|c| {
        let user = match target {
            Target::Email(e) => c.user_by_email(&normalise_email(e))?,
            Target::Id(id) => c.user_by_id(id)?,
        };
        let user = user.ok_or_else(|| ChangeError::NoSuchUser(named.clone()))?;
        apply(c, &user)?;
        let sessions_ended = c.end_sessions_of(&user.id)?;
        let (actor_id, actor_email) = match actor {
            Actor::CommandLine => ("cli".to_string(), "command line".to_string()),
            Actor::Admin { id, email } => (id.clone(), email.clone()),
        };
        c.insert_audit(&AuditEntry {
            id: Uuid::now_v7().to_string(),
            user_id: actor_id,
            user_email: actor_email,
            action: action.into(),
            target_type: "user".into(),
            target_id: user.id.clone(),
            note: Some(format!("{}; {sessions_ended} session(s) ended", user.email)),
            at: now(),
        })?;
        Ok(Changed { email: user.email, sessions_ended })
    })));
    done?
}

/// What [`change`] needs of a connection, as one object-safe trait for both backends.
pub trait ChangeConn: SessionStore + AccountStore {}
impl<T: SessionStore + AccountStore> ChangeConn for T {}

/// The oldest last use a live session may have.
pub fn idle_since(now: NaiveDateTime) -> NaiveDateTime {
    now - chrono::Duration::minutes(SESSION_IDLE_MINUTES)
}

/// Deletes sessions past their absolute or idle expiry; how many.
pub fn sweep(pool: &Pool) -> Result<usize, DbError> {
    let t = now();
    with_conn!(pool, |c| c.write_tx(|c| c.sweep_sessions(t, idle_since(t)).map_err(DbError::from)))
}

/// Sweeps every [`SWEEP_EVERY`] until the task is dropped.
pub async fn sweep_periodically(pool: Pool) {
    let mut every = tokio::time::interval(SWEEP_EVERY);
    loop {
        every.tick().await;
        let pool = pool.clone();
        match tokio::task::spawn_blocking(move || sweep(&pool)).await {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => tracing::info!(sessions = n, "expired admin sessions swept"),
            Ok(Err(error)) => tracing::warn!(%error, "session sweep failed"),
            Err(_) => {}
        }
    }
}
