//! Admin accounts: creating them, the first-run bootstrap, signing in (counted by
//! [`throttle`]) and sessions (only a hash of the cookie's token is stored). The password
//! and email rules are in [`credentials`].

pub mod changes;
mod credentials;
pub mod oidc_users;
pub mod sessions;
pub mod throttle;

pub use credentials::{
    check_password, hash_password, normalise_email, random_token, verify_password, DUMMY_HASH,
};
pub use throttle::LoginThrottle;

pub use crate::domain::Role;

use std::io::Write;
use std::path::Path;

use uuid::Uuid;

use crate::base::clock::now;
use crate::db::admin::accounts::{AccountStore, NewSession, NewUser, User};
use crate::db::{DbError, Pool, Store};
use crate::domain::digest;
use crate::with_conn;

/// A session ends this long after sign-in, however busy.
pub const SESSION_HOURS: i64 = 12;
/// … and this long after its last request (sliding).
pub const SESSION_IDLE_MINUTES: i64 = 30;

pub fn create_user(pool: &Pool, email: &str, password: &str, role: Role) -> anyhow::Result<()> {
    create_user_with(pool, email, password, role, false)
}

fn create_user_with(
    pool: &Pool,
    email: &str,
    password: &str,
    role: Role,
    must_change_password: bool,
) -> anyhow::Result<()> {
    let email = normalise_email(email);
    if !validator::ValidateEmail::validate_email(&email) {
        anyhow::bail!("`{email}` is not an email address");
    }
    check_password(password)?;
    let user = NewUser {
        id: Uuid::now_v7().to_string(),
        email: email.clone(),
        password_hash: hash_password(password)?,
        role,
        created_at: now(),
        must_change_password,
    };
    with_conn!(pool, |c| c.insert_user(&user).map_err(DbError::from)).map_err(|e| match e {
        DbError::Query(diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::UniqueViolation,
            _,
        )) => {
            anyhow::anyhow!("a user with the email {email} exists already")
        }
        other => anyhow::anyhow!(other),
    })
}

/// On a first start with no account, creates `admin@localhost` with a generated password
/// that must be changed at its first sign-in, writes the password to `password_file`
/// (readable by the owner only) and returns that path. The password itself is never printed.
pub fn bootstrap(pool: &Pool, password_file: &std::path::Path) -> anyhow::Result<Option<std::path::PathBuf>> {
    if with_conn!(pool, |c| c.count_users().map_err(DbError::from))? > 0 {
        return Ok(None);
    }
    let password = random_token()[..24].to_string();
    match create_user_with(pool, "admin@localhost", &password, Role::Admin, true) {
        Ok(()) => {}
        // Another process created it at the same moment.
        Err(e) if e.to_string().contains("exists already") => return Ok(None),
        Err(e) => return Err(e),
    }
    write_owner_only(password_file, &format!("admin@localhost\n{password}\n"))?;
    Ok(Some(password_file.to_path_buf()))
}

/// Checks a login (one verification, counted by `throttle`); on success returns (session
/// token for the cookie, user). A disabled user never signs in.
pub fn login(
    pool: &Pool,
    throttle: &LoginThrottle,
    email: &str,
    password: &str,
) -> Result<Option<(String, User)>, DbError> {
    let email = normalise_email(email);
    let user = with_conn!(pool, |c| c.user_by_email(&email).map_err(DbError::from))?;
    // Verify against a fixed hash when the user is unknown, so timing does not tell.
    let hash = user.as_ref().map(|u| u.password_hash.clone()).unwrap_or_else(|| DUMMY_HASH.to_string());
    if !throttle.verify(password, &hash) {
        return Ok(None);
    }
    let Some(user) = user.filter(|u| u.disabled_at.is_none()) else { return Ok(None) };
    let token = start_session(pool, &user.id)?;
    Ok(Some((token, user)))
}

/// A new session for `user_id`; returns the cookie's token.
pub fn start_session(pool: &Pool, user_id: &str) -> Result<String, DbError> {
    let token = random_token();
    let session = new_session(&token, user_id);
    with_conn!(pool, |c| c.write_tx(|c| c.insert_session(&session).map_err(DbError::from)))?;
    Ok(token)
}

pub fn new_session(token: &str, user_id: &str) -> NewSession {
    let t = now();
    NewSession {
        token_hash: digest(token),
        user_id: user_id.to_string(),
        csrf_token: random_token(),
        created_at: t,
        expires_at: t + chrono::Duration::hours(SESSION_HOURS),
        last_seen_at: Some(t),
    }
}

/// Writes `text` to a new file at `path` readable and writable by its owner only (0600).
pub fn write_owner_only(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::base::private_files::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    }
    // Written under a fresh name, then renamed over `path`: a file left from before (or
    // planted with wider permissions) is replaced, never reused, and two processes starting
    // at once cannot trip over each other.
    let temp = path.with_extension(format!("tmp-{}", Uuid::new_v4().simple()));
    let fail = |e: std::io::Error| anyhow::anyhow!("cannot write {}: {e}", path.display());
    let mut file =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp).map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)?;
    std::fs::rename(&temp, path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        fail(e)
    })
}
