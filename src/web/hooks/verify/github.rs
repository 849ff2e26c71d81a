//! GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the body with the secret.
//! GitHub signs no timestamp; the event ID is `X-GitHub-Delivery`.

use actix_web::http::header::HeaderMap;

use super::{
    check_table, header, hex, hex_decode, hmac_sha256, load_problems, needs_secret_env, same, var, var_name,
    Keys, SecretSettings, Secrets, Verifier, VerifyError, MIN_KEY_BYTES,
};
use crate::config::hooks::{EventIdSpec, HookConfig, VerifierRules};

pub struct Github;

impl VerifierRules for Github {
    fn name(&self) -> &'static str {
        "github"
    }

    fn check_settings(&self, own: &toml::Value) -> Result<(), String> {
        check_table::<SecretSettings>(own)
    }

    fn problems(&self, at: &str, hook: &HookConfig) -> Vec<String> {
        needs_secret_env(at, hook)
    }

    fn secret_problems(
        &self,
        at: &str,
        hook: &HookConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        load_problems(self, &format!("{at}.secret_env"), hook, env)
    }

    fn default_event_id(&self) -> Option<EventIdSpec> {
        Some(EventIdSpec::Header("x-github-delivery".into()))
    }

    fn redelivery_span(&self) -> Option<(chrono::Duration, &'static str)> {
        Some((chrono::Duration::days(3), "GitHub redelivers deliveries of the past 3 days on request"))
    }
}

impl Verifier for Github {
    /// A GitHub secret may hold spaces: one secret per line. GitHub takes any text as a
    /// secret; each must be at least `MIN_KEY_BYTES` long.
    fn load(&self, hook: &HookConfig, env: &dyn Fn(&str) -> Option<String>) -> Result<Box<dyn Keys>, String> {
        let own: SecretSettings = hook.own()?;
        let raw = var(env, &own.secret_env)?;
        let keys: Vec<Vec<u8>> =
            raw.lines().map(str::trim).filter(|s| !s.is_empty()).map(|s| s.as_bytes().to_vec()).collect();
        if keys.iter().any(|k| k.len() < MIN_KEY_BYTES) {
            return Err(format!(
                "{}: a secret is shorter than {MIN_KEY_BYTES} bytes (use a long random one)",
                var_name(&own.secret_env)
            ));
        }
        Ok(Box::new(Secrets {
            keys,
            verify: |keys: &[Vec<u8>], d: &super::Delivery<'_>| verify(keys, d.headers, d.raw),
        }))
    }
}

pub fn verify(keys: &[Vec<u8>], headers: &HeaderMap, body: &[u8]) -> Result<(), VerifyError> {
    let sig = header(headers, "x-hub-signature-256").ok_or(VerifyError::Unauthorized("missing_headers"))?;
    let candidate = sig.strip_prefix("sha256=").and_then(hex_decode).unwrap_or_default();
    if keys.iter().any(|k| same(&hmac_sha256(k, &[body]), &candidate)) {
        Ok(())
    } else {
        Err(VerifyError::Unauthorized("signature_mismatch"))
    }
}

pub fn sign(key: &[u8], body: &[u8]) -> String {
    format!("sha256={}", hex(&hmac_sha256(key, &[body])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    #[test]
    fn githubs_documented_example_verifies() {
        // docs.github.com "Validating webhook deliveries": secret and payload below.
        let mut h = HeaderMap::new();
        let sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        h.insert("x-hub-signature-256".parse().unwrap(), HeaderValue::from_static(sig));
        let key = b"It's a Secret to Everybody".to_vec();
        assert_eq!(sign(&key, b"Hello, World!"), sig);
        assert_eq!(verify(std::slice::from_ref(&key), &h, b"Hello, World!"), Ok(()));
        assert!(verify(std::slice::from_ref(&key), &h, b"Hello, World?").is_err());
        assert!(verify(&[b"wrong".to_vec()], &h, b"Hello, World!").is_err());
        h.insert("x-hub-signature-256".parse().unwrap(), HeaderValue::from_static("sha256="));
        assert!(verify(&[key], &h, b"Hello, World!").is_err());
    }
}
