//! Admin accounts: argon2id password hashes, sessions (only a hash of the cookie's token is
//! stored), login throttling, and the first-run bootstrap.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use uuid::Uuid;

use crate::db::admin::accounts::{AccountStore, NewSession, NewUser, User};
use crate::db::{DbError, Pool, Store};
use crate::deliveries::now;
use crate::domain::digest;
use crate::with_conn;

pub const SESSION_HOURS: i64 = 12;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Reads and acts.
    Admin,
    /// Reads only.
    Viewer,
}

impl Role {
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "admin" => Some(Role::Admin),
            "viewer" => Some(Role::Viewer),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Viewer => "viewer",
        }
    }
}

pub fn hash_password(password: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("cannot hash the password: {e}"))
}

pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
}

/// A random token: two v4 UUIDs, 244 random bits, as hex.
pub fn random_token() -> String {
    format!("{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple())
}

pub fn create_user(pool: &Pool, email: &str, password: &str, role: Role) -> anyhow::Result<()> {
    let email = email.trim().to_lowercase();
    if !validator::ValidateEmail::validate_email(&email) {
        anyhow::bail!("`{email}` is not an email address");
    }
    if password.chars().count() < 12 {
        anyhow::bail!("the password needs at least 12 characters");
    }
    let user = NewUser {
        id: Uuid::now_v7().to_string(),
        email: email.clone(),
        password_hash: hash_password(password)?,
        role: role.as_str().into(),
        created_at: now(),
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

/// On a first start with no account, creates `admin@localhost` and returns its generated password.
pub fn bootstrap(pool: &Pool) -> anyhow::Result<Option<String>> {
    if with_conn!(pool, |c| c.count_users().map_err(DbError::from))? > 0 {
        return Ok(None);
    }
    let password = random_token()[..24].to_string();
    match create_user(pool, "admin@localhost", &password, Role::Admin) {
        Ok(()) => Ok(Some(password)),
        // Another process created it at the same moment.
        Err(e) if e.to_string().contains("exists already") => Ok(None),
        Err(e) => Err(e),
    }
}

/// Checks a login; on success returns (session token for the cookie, user).
pub fn login(pool: &Pool, email: &str, password: &str) -> Result<Option<(String, User)>, DbError> {
    let email = email.trim().to_lowercase();
    let user = with_conn!(pool, |c| c.user_by_email(&email).map_err(DbError::from))?;
    // Verify against a fixed hash when the user is unknown, so timing does not tell.
    let hash = user.as_ref().map(|u| u.password_hash.clone()).unwrap_or_else(|| DUMMY_HASH.to_string());
    if !verify_password(password, &hash) {
        return Ok(None);
    }
    let Some(user) = user else { return Ok(None) };
    let token = random_token();
    let t = now();
    let session = NewSession {
        token_hash: digest(&token),
        user_id: user.id.clone(),
        csrf_token: random_token(),
        created_at: t,
        expires_at: t + chrono::Duration::hours(SESSION_HOURS),
    };
    with_conn!(pool, |c| c.write_tx(|c| c.insert_session(&session).map_err(DbError::from)))?;
    Ok(Some((token, user)))
}

/// argon2id of a random string nobody knows.
const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Q2p0w1y8uKzT3n2c9m7kq8b0yX4VQ1c2H6xq9Zr1T0E";

/// Failed logins per client and per email: after `LIMIT` within `WINDOW`, wait.
#[derive(Default)]
pub struct LoginThrottle {
    failures: Mutex<HashMap<String, Vec<Instant>>>,
}

const LIMIT: usize = 5;
const WINDOW: Duration = Duration::from_secs(15 * 60);

impl LoginThrottle {
    fn keys(ip: Option<IpAddr>, email: &str) -> [String; 2] {
        [
            format!("ip:{}", ip.map(|i| i.to_string()).unwrap_or_default()),
            format!("email:{}", digest(&email.to_lowercase())),
        ]
    }

    /// `Err(seconds)` while either the client or the email is over the limit.
    pub fn check(&self, ip: Option<IpAddr>, email: &str) -> Result<(), u64> {
        let Ok(mut map) = self.failures.lock() else { return Ok(()) };
        let now = Instant::now();
        let mut wait = 0;
        for key in Self::keys(ip, email) {
            let list = map.entry(key).or_default();
            list.retain(|t| now.duration_since(*t) < WINDOW);
            if list.len() >= LIMIT {
                wait = wait.max((WINDOW - now.duration_since(list[0])).as_secs().max(1));
            }
        }
        if wait > 0 {
            Err(wait)
        } else {
            Ok(())
        }
    }

    pub fn failed(&self, ip: Option<IpAddr>, email: &str) {
        if let Ok(mut map) = self.failures.lock() {
            for key in Self::keys(ip, email) {
                map.entry(key).or_default().push(Instant::now());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_verify_only_themselves() {
        let h = hash_password("correct horse battery").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse battery", &h));
        assert!(!verify_password("wrong", &h));
        assert!(!verify_password("anything", DUMMY_HASH));
    }

    #[test]
    fn throttles_after_five_failures() {
        let t = LoginThrottle::default();
        let ip = Some([10, 0, 0, 1].into());
        for _ in 0..5 {
            assert!(t.check(ip, "a@b.c").is_ok());
            t.failed(ip, "a@b.c");
        }
        assert!(t.check(ip, "a@b.c").is_err());
        assert!(t.check(Some([10, 0, 0, 2].into()), "A@b.c").is_err(), "per email too");
        assert!(t.check(Some([10, 0, 0, 2].into()), "x@b.c").is_ok());
    }
}
