//! Signature verification per provider. Every comparison of a signature is constant-time;
//! a failure names its reason for the log and metrics, never the secret.

pub mod github;
pub mod standard_webhooks;
pub mod stripe;
pub mod wecom;

use actix_web::http::header::HeaderMap;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::config::{HookConfig, VerifyKind};

/// Why a delivery was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    /// Missing, wrong or stale signature (401).
    Unauthorized(&'static str),
    /// Signed, but not something we can read (400).
    Malformed(&'static str),
}

/// The secrets of one source, read from the environment once at start.
#[derive(Clone, Default)]
pub struct Secrets {
    /// Signing keys (several while a secret is being rotated).
    pub keys: Vec<Vec<u8>>,
    /// WeCom only.
    pub wecom: Option<wecom::WecomKeys>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secrets(***)")
    }
}

impl Secrets {
    /// Reads the variables `config` names; an error names the variable, never its value.
    pub fn load(config: &HookConfig, env: impl Fn(&str) -> Option<String>) -> Result<Secrets, String> {
        let var = |name: &Option<String>| -> Result<String, String> {
            let name = name.as_deref().ok_or("no variable named")?;
            env(name).filter(|v| !v.trim().is_empty()).ok_or_else(|| format!("{name} is not set"))
        };
        Ok(match config.verify {
            VerifyKind::None => Secrets::default(),
            VerifyKind::StandardWebhooks => {
                let raw = var(&config.secret_env)?;
                let keys = raw
                    .split_whitespace()
                    .map(standard_webhooks::decode_secret)
                    .collect::<Result<Vec<_>, _>>()?;
                Secrets { keys, wecom: None }
            }
            VerifyKind::Stripe => {
                let raw = var(&config.secret_env)?;
                Secrets { keys: raw.split_whitespace().map(|s| s.as_bytes().to_vec()).collect(), wecom: None }
            }
            // A GitHub secret may hold spaces: one secret per line.
            VerifyKind::Github => {
                let raw = var(&config.secret_env)?;
                let keys =
                    raw.lines().map(str::trim).filter(|s| !s.is_empty()).map(|s| s.as_bytes().to_vec());
                Secrets { keys: keys.collect(), wecom: None }
            }
            VerifyKind::Wecom => {
                let token = var(&config.token_env)?;
                let aes = var(&config.aes_key_env)?;
                let corp_id = config.corp_id.clone().ok_or("corp_id is not set")?;
                Secrets { keys: Vec::new(), wecom: Some(wecom::WecomKeys::new(&token, &aes, &corp_id)?) }
            }
        })
    }
}

/// HMAC-SHA256 of the parts, concatenated.
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
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
