//! Signature verification per provider. Every comparison of a signature is constant-time;
//! a failure names its reason for the log and metrics, never the secret. A secret is read
//! once, at start, and must be what its provider documents: an HMAC key of at least
//! `MIN_KEY_BYTES` (WeCom's token and key have WeCom's own formats); `check-config` asks
//! the same of it (`VerifierRules::secret_problems`, through `load_problems`).
//!
//! Adding a provider: a file here with a unit struct implementing `VerifierRules` (its name,
//! the settings it needs, what its signature covers, its redelivery span; see
//! `config::hooks`) and `Verifier` (reading its secrets into `Keys`, which open a delivery),
//! then one line in `VERIFIERS`, and its section in docs/webhooks/. `github.rs` is a small
//! example.

pub mod github;
mod none;
pub mod standard_webhooks;
pub mod stripe;
pub mod wecom;

use actix_web::http::header::HeaderMap;
use hmac::{Hmac, Mac};
use serde::de::{self, Deserializer};
use serde::Deserialize;
use sha2::Sha256;
use subtle::ConstantTimeEq;

pub use self::wecom::CallbackQuery;
use super::config::{HookConfig, VerifierRules, Verify};
pub use crate::config::kind_settings::check_table;
use crate::config::kind_settings::unknown_name;
pub use crate::services::effects::webhook::MIN_KEY_BYTES;

/// Every verifier, one line each: a new provider is a file beside this one and its line here.
static VERIFIERS: &[&dyn Verifier] =
    &[&standard_webhooks::StandardWebhooks, &github::Github, &stripe::Stripe, &wecom::Wecom, &none::Unsigned];

/// Why a delivery was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    /// Missing, wrong or stale signature (401).
    Unauthorized(&'static str),
    /// Signed, but not something we can read (400).
    Malformed(&'static str),
}

/// What a verified body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFormat {
    Json,
    /// WeCom's decrypted message.
    Xml,
}

/// One POSTed delivery, as its verifier sees it.
pub struct Delivery<'a> {
    pub headers: &'a HeaderMap,
    pub query: &'a CallbackQuery,
    pub raw: &'a [u8],
    /// Unix seconds.
    pub now: i64,
    /// How far a signed timestamp may be from `now`.
    pub tolerance: u64,
}

/// A provider's way of verifying deliveries (`config::hooks::VerifierRules` says what the
/// configuration knows of it).
pub trait Verifier: VerifierRules {
    /// Reads the secrets `hook` names from `env`; an error names the variable, never its value.
    fn load(&self, hook: &HookConfig, env: &dyn Fn(&str) -> Option<String>) -> Result<Box<dyn Keys>, String>;

    /// What its verified bodies are.
    fn body_format(&self) -> BodyFormat {
        BodyFormat::Json
    }

    /// The event ID the provider's own message names, when no `event_id` spec found one.
    fn own_event_id(&self, _body: &str) -> Option<String> {
        None
    }

    /// The provider expects an empty `text/plain` answer rather than JSON (WeCom).
    fn answers_empty(&self) -> bool {
        false
    }
}

/// A source's secrets, read once at start, and how they open a delivery. No `Debug`.
pub trait Keys: Send + Sync {
    /// The verified body (WeCom: decrypted).
    fn open(&self, delivery: &Delivery<'_>) -> Result<Vec<u8>, VerifyError>;

    /// The provider's URL check by `GET` (WeCom's `echostr`); `None`: it has none (405).
    fn url_check(
        &self,
        _query: &CallbackQuery,
        _now: i64,
        _tolerance: u64,
    ) -> Option<Result<Vec<u8>, VerifyError>> {
        None
    }
}

/// The registered verifier named `name`.
pub fn find(name: &str) -> Option<&'static dyn Verifier> {
    VERIFIERS.iter().copied().find(|v| v.name() == name)
}

impl<'de> Deserialize<'de> for Verify {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        match find(&name) {
            Some(v) => Ok(Verify(v)),
            None => {
                Err(de::Error::custom(unknown_name("verifier", &name, VERIFIERS.iter().map(|v| v.name()))))
            }
        }
    }
}

/// `secret_env` of `[hooks.NAME]`: the own key of the verifiers that sign with one secret
/// (several in it during a rotation).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretSettings {
    #[serde(default)]
    pub secret_env: Option<String>,
}

/// The value of the variable `name` names, set and not blank.
pub fn var(env: &dyn Fn(&str) -> Option<String>, name: &Option<String>) -> Result<String, String> {
    let name = name.as_deref().ok_or("no variable named")?;
    env(name).filter(|v| !v.trim().is_empty()).ok_or_else(|| format!("{name} is not set"))
}

/// The name of the variable `name` names (for messages; `var` has checked it is named).
pub fn var_name(name: &Option<String>) -> &str {
    name.as_deref().unwrap_or("secret_env")
}

/// `VerifierRules::secret_problems` of a verifier: what `load` finds wrong, prefixed by `at`.
pub fn load_problems(
    verifier: &dyn Verifier,
    at: &str,
    hook: &HookConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<String> {
    verifier.load(hook, env).err().map(|e| format!("{at}: {e}")).into_iter().collect()
}

/// check-config: a verifier that signs with one secret needs `secret_env`.
pub fn needs_secret_env(at: &str, hook: &HookConfig) -> Vec<String> {
    match hook.own::<SecretSettings>().map(|s| s.secret_env) {
        Ok(Some(_)) => Vec::new(),
        _ => vec![format!("{at}.secret_env: names the variable holding the secret")],
    }
}

/// Signing keys (several while a secret is being rotated), for the HMAC verifiers.
pub struct Secrets<F> {
    pub keys: Vec<Vec<u8>>,
    pub verify: F,
}

impl<F> Keys for Secrets<F>
where
    F: Fn(&[Vec<u8>], &Delivery<'_>) -> Result<(), VerifyError> + Send + Sync,
{
    fn open(&self, d: &Delivery<'_>) -> Result<Vec<u8>, VerifyError> {
        (self.verify)(&self.keys, d).map(|()| d.raw.to_vec())
    }
}

/// HMAC-SHA256 of the parts, concatenated; empty (matching nothing) for a key shorter than
/// `MIN_KEY_BYTES`, which `load` never lets through.
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    if key.len() < MIN_KEY_BYTES {
        return Vec::new();
    }
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else { return Vec::new() };
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().to_vec()
}

/// Constant-time equality; an empty candidate never matches.
pub fn same(expected: &[u8], candidate: &[u8]) -> bool {
    !candidate.is_empty() && expected.len() == candidate.len() && bool::from(expected.ct_eq(candidate))
}

pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim).filter(|v| !v.is_empty())
}

/// A signed timestamp within `tolerance` seconds of `now`.
pub fn fresh(ts: &str, now: i64, tolerance: u64) -> Result<(), VerifyError> {
    let ts: i64 = ts.trim().parse().map_err(|_| VerifyError::Unauthorized("bad_timestamp"))?;
    if now.abs_diff(ts) > tolerance {
        return Err(VerifyError::Unauthorized("stale_timestamp"));
    }
    Ok(())
}

pub fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
