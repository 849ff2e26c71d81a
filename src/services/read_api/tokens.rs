//! Read API tokens: made (the secret shown once, only its SHA-256 stored), listed, revoked
//! (each audited), and checked on every request: found by the hash of what the client
//! presents (a unique-index lookup, so no secret is ever compared in the program), refused
//! when unknown, revoked or expired, and each use recorded.
//!
//! The record of uses: one `api_token_uses` row per authenticated request (method and route
//! template, never values, query or token), written in the same small transaction that moves
//! `last_used_at`, at most once a minute. Rows older than `USES_KEPT_DAYS` are deleted on
//! that once-a-minute move, so the table stays bounded by the traffic of that window. They
//! are kept apart from the audit log, which stays the record of changes (token made or
//! revoked, decisions) that admins read: a consumer polling every second would drown it.

use argon2::password_hash::rand_core::{OsRng, RngCore};
use base64::Engine;
use chrono::{Duration, NaiveDateTime};
use uuid::Uuid;

use crate::base::clock::now;
use crate::db::api_tokens::{ApiTokenStore, NewApiToken, NewTokenUse};

pub use crate::db::api_tokens::ApiTokenRow;
use crate::db::{DbError, Pool, Store};
use crate::domain::{digest, ApiScope, Scopes};
use crate::services::audit::{self, Actor};
use crate::with_conn;

/// What every secret starts with (a scanner can spot a leaked one).
pub const PREFIX: &str = "ofk_";
/// Random bytes in a secret (base64url without padding after the prefix).
const SECRET_BYTES: usize = 32;
/// `last_used_at` moves at most this often.
const TOUCH_EVERY_SECONDS: i64 = 60;
/// How long the record of each use is kept.
pub const USES_KEPT_DAYS: i64 = 90;
/// The longest expiry a token may be given.
pub const MAX_EXPIRES_DAYS: i64 = 3650;
const MAX_NAME_CHARS: usize = 100;

/// A token as asked for (command line or admin page), checked by [`create`].
#[derive(Debug, Clone)]
pub struct TokenRequest {
    pub name: String,
    pub scopes: Scopes,
    pub form: Option<String>,
    pub expires_days: Option<i64>,
}

/// A token just made: its secret, shown this once and stored nowhere.
#[derive(Debug)]
pub struct Created {
    pub id: String,
    pub secret: String,
    pub expires_at: Option<NaiveDateTime>,
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("{0}")]
    Invalid(TokenRule),
    #[error("there is no token {0}")]
    NotFound(String),
    #[error("token {0} is revoked already")]
    AlreadyRevoked(String),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for TokenError {
    fn from(e: diesel::result::Error) -> Self {
        TokenError::Db(e.into())
    }
}

/// A fresh secret: the prefix and 32 random bytes from the operating system.
fn new_secret() -> String {
    let mut bytes = [0u8; SECRET_BYTES];
    OsRng.fill_bytes(&mut bytes);
    format!("{PREFIX}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// Whether `text` has the shape of a secret (checked before any database read).
fn well_formed(text: &str) -> bool {
    text.strip_prefix(PREFIX).is_some_and(|rest| {
        rest.len() == 43 && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// Which rule of a token request was broken (the admin page says it in the reader's words).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenRule {
    #[error("give the token a name of 1 to {max} characters (what uses it)")]
    Name { max: usize },
    #[error("there is no form `{0}`")]
    NoForm(String),
    #[error("expiry of {days} days: give 1 to {max}")]
    Expiry { days: i64, max: i64 },
}

impl TokenRequest {
    /// The request's own rules; `is_form` says whether a form of that name is configured.
    fn check(&self, is_form: impl Fn(&str) -> bool) -> Result<(), TokenError> {
        let name = self.name.trim();
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
            return Err(TokenError::Invalid(TokenRule::Name { max: MAX_NAME_CHARS }));
        }
        if let Some(form) = self.form.as_deref().filter(|f| !is_form(f)) {
            return Err(TokenError::Invalid(TokenRule::NoForm(form.to_string())));
        }
        if let Some(days) = self.expires_days.filter(|d| !(1..=MAX_EXPIRES_DAYS).contains(d)) {
            return Err(TokenError::Invalid(TokenRule::Expiry { days, max: MAX_EXPIRES_DAYS }));
        }
        Ok(())
    }
}

/// Makes a token for `actor` (audited in the same transaction); its secret is in the answer
/// and nowhere else.
pub fn create(
    pool: &Pool,
    request: &TokenRequest,
    is_form: impl Fn(&str) -> bool,
    actor: &Actor,
) -> Result<Created, TokenError> {
    request.check(is_form)?;
    let (secret, t) = (new_secret(), now());
    let row = NewApiToken {
        id: Uuid::now_v7().to_string(),
        name: request.name.trim().to_string(),
        token_hash: digest(&secret),
        scopes: request.scopes.clone(),
        form: request.form.clone(),
        created_by: actor.label.clone(),
        created_at: t,
        expires_at: request.expires_days.map(|d| t + Duration::days(d)),
    };
    let note = format!(
        "{}; {}{}",
        row.name,
        row.scopes,
        row.form.as_deref().map(|f| format!("; form {f}")).unwrap_or_default()
    );
    with_conn!(pool, |c| c
        .write_tx(|c| {
            c.insert_api_token(&row)?;
            audit::record(c, actor, "api_token.create", ("api_token", &row.id), Some(&note))
        })
        .map_err(DbError::from))?;
    Ok(Created { id: row.id, secret, expires_at: row.expires_at })
}

/// Every token, newest first, with its uses of the last 24 hours.
pub fn list(pool: &Pool) -> Result<Vec<(ApiTokenRow, i64)>, DbError> {
    let since = now() - Duration::hours(24);
    with_conn!(pool, |c| {
        let counts = c.api_use_counts(since)?;
        let tokens = c.api_tokens()?;
        Ok(tokens
            .into_iter()
            .map(|t| {
                let n = counts.iter().find(|(id, _)| *id == t.id).map_or(0, |(_, n)| *n);
                (t, n)
            })
            .collect())
    })
}

/// Revokes token `id` from now on (audited); its record stays, listed as revoked.
pub fn revoke(pool: &Pool, id: &str, actor: &Actor) -> Result<ApiTokenRow, TokenError> {
    with_conn!(pool, |c| Ok::<_, DbError>(c.write_tx(|c| {
        let token = c.api_token(id)?.ok_or_else(|| TokenError::NotFound(id.to_string()))?;
        if !c.revoke_api_token(id, now())? {
            return Err(TokenError::AlreadyRevoked(id.to_string()));
        }
        audit::record(c, actor, "api_token.revoke", ("api_token", id), Some(&token.name))?;
        Ok(token)
    })))?
}

/// Who is calling the read API: a live token.
#[derive(Debug, Clone)]
pub struct Caller {
    pub token_id: String,
    pub name: String,
    pub scopes: Scopes,
    /// The one form it may read, if it is limited to one.
    pub form: Option<String>,
}

impl Caller {
    /// The audit log's actor for what this token changes.
    pub fn actor(&self) -> Actor {
        Actor { id: format!("token:{}", self.token_id), label: format!("API token {}", self.name) }
    }

    pub fn may(&self, scope: ApiScope) -> bool {
        self.scopes.contains(scope)
    }

    /// Whether it may read `form`'s records.
    pub fn may_read(&self, form: &str) -> bool {
        self.form.as_deref().is_none_or(|f| f == form)
    }
}

/// Why a presented token opens nothing.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("the token is unknown, revoked or expired")]
    Invalid,
    #[error(transparent)]
    Db(#[from] DbError),
}

/// One request's use of a token: its method and route template.
#[derive(Debug, Clone)]
pub struct Use<'a> {
    pub method: &'a str,
    pub route: &'a str,
}

/// The live token `presented` names, its use recorded; `Invalid` for anything else (the
/// reason is logged with the token's ID, never its value).
pub fn authenticate(pool: &Pool, presented: &str, used: &Use<'_>) -> Result<Caller, Refused> {
    if !well_formed(presented) {
        return Err(Refused::Invalid);
    }
    let hash = digest(presented);
    let t = now();
    let token = with_conn!(pool, |c| c.api_token_by_hash(&hash).map_err(DbError::from))?;
    let Some(token) = token else { return Err(Refused::Invalid) };
    if token.revoked_at.is_some() || token.expires_at.is_some_and(|e| e <= t) {
        let why = if token.revoked_at.is_some() { "revoked" } else { "expired" };
        tracing::info!(token = %token.id, why, "read API: refused a token");
        return Err(Refused::Invalid);
    }
    let row = NewTokenUse {
        id: Uuid::now_v7().to_string(),
        token_id: token.id.clone(),
        at: t,
        method: used.method.to_string(),
        route: used.route.to_string(),
    };
    let (touch_before, forget_before) =
        (t - Duration::seconds(TOUCH_EVERY_SECONDS), t - Duration::days(USES_KEPT_DAYS));
    with_conn!(pool, |c| c
        .write_tx(|c| c.record_api_use(&row, touch_before, forget_before))
        .map_err(DbError::from))?;
    Ok(Caller { token_id: token.id, name: token.name, scopes: token.scopes, form: token.form })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_prefixed_random_and_well_formed() {
        let (a, b) = (new_secret(), new_secret());
        assert!(a.starts_with("ofk_") && a.len() == 47, "{a}");
        assert_ne!(a, b);
        assert!(well_formed(&a) && well_formed(&b));
        for bad in
            ["", "ofk_", "ofk_short", &a.replace("ofk_", "xyz_"), &format!("{a}x"), &a.replace('_', "=")]
        {
            assert!(!well_formed(bad), "{bad}");
        }
    }

    #[test]
    fn requests_need_a_name_a_known_form_and_a_sane_expiry() {
        let scopes = Scopes::parse("read:submissions").unwrap();
        let ok = TokenRequest {
            name: "CRM sync".into(),
            scopes,
            form: Some("contact".into()),
            expires_days: Some(30),
        };
        let is_form = |f: &str| f == "contact";
        assert!(ok.check(is_form).is_ok());
        let bad = |change: fn(&mut TokenRequest)| {
            let mut r = ok.clone();
            change(&mut r);
            r.check(is_form).unwrap_err().to_string()
        };
        assert!(bad(|r| r.name = "  ".into()).contains("name"));
        assert!(bad(|r| r.name = "x".repeat(101)).contains("name"));
        assert!(bad(|r| r.form = Some("nope".into())).contains("no form `nope`"));
        assert!(bad(|r| r.expires_days = Some(0)).contains("1 to 3650"));
    }
}
