//! Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=…]`, HMAC-SHA256 over `t.body` with the
//! endpoint secret (`whsec_…`, used as is); timestamps outside the tolerance are refused.

use actix_web::http::header::HeaderMap;

use super::{
    check_table, fresh, header, hex, hex_decode, hmac_sha256, load_problems, needs_secret_env, same, var,
    var_name, Delivery, Keys, SecretSettings, Secrets, Verifier, VerifyError, MIN_KEY_BYTES,
};
use crate::config::hooks::{EventIdSpec, HookConfig, VerifierRules};

pub struct Stripe;

impl VerifierRules for Stripe {
    fn name(&self) -> &'static str {
        "stripe"
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
        Some(EventIdSpec::Json("/id".into()))
    }

    fn redelivery_span(&self) -> Option<(chrono::Duration, &'static str)> {
        Some((chrono::Duration::days(3), "Stripe retries for up to 3 days"))
    }
}

impl Verifier for Stripe {
    /// Endpoint secrets as the dashboard shows them (`whsec_` and at least `MIN_KEY_BYTES`
    /// characters; the whole text is the key), space-separated.
    fn load(&self, hook: &HookConfig, env: &dyn Fn(&str) -> Option<String>) -> Result<Box<dyn Keys>, String> {
        let own: SecretSettings = hook.own()?;
        let raw = var(env, &own.secret_env)?;
        let keys: Vec<Vec<u8>> = raw.split_whitespace().map(|s| s.as_bytes().to_vec()).collect();
        let endpoint_secret =
            |k: &Vec<u8>| k.strip_prefix(b"whsec_").is_some_and(|rest| rest.len() >= MIN_KEY_BYTES);
        if !keys.iter().all(endpoint_secret) {
            return Err(format!(
                "{}: a secret is not Stripe's `whsec_` followed by at least {MIN_KEY_BYTES} characters",
                var_name(&own.secret_env)
            ));
        }
        Ok(Box::new(Secrets {
            keys,
            verify: |keys: &[Vec<u8>], d: &Delivery<'_>| verify(keys, d.headers, d.raw, d.now, d.tolerance),
        }))
    }
}

pub fn verify(
    keys: &[Vec<u8>],
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
    tolerance: u64,
) -> Result<(), VerifyError> {
    let sig = header(headers, "stripe-signature").ok_or(VerifyError::Unauthorized("missing_headers"))?;
    let mut ts = None;
    let mut candidates = Vec::new();
    for part in sig.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => ts = Some(v),
            Some(("v1", v)) => candidates.push(hex_decode(v).unwrap_or_default()),
            _ => {}
        }
    }
    let ts = ts.ok_or(VerifyError::Unauthorized("missing_timestamp"))?;
    fresh(ts, now, tolerance)?;
    for key in keys {
        let expected = hmac_sha256(key, &[ts.as_bytes(), b".", body]);
        if candidates.iter().any(|c| same(&expected, c)) {
            return Ok(());
        }
    }
    Err(VerifyError::Unauthorized("signature_mismatch"))
}

pub fn sign(key: &[u8], ts: i64, body: &[u8]) -> String {
    let t = ts.to_string();
    format!("t={t},v1={}", hex(&hmac_sha256(key, &[t.as_bytes(), b".", body])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    fn h(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("stripe-signature".parse().unwrap(), HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn signed_bodies_verify_and_everything_else_fails() {
        let key = b"whsec_test_0123456789abcdefghijklmn".to_vec();
        let body = br#"{"id":"evt_1","object":"event"}"#;
        let good = sign(&key, 1_700_000_000, body);
        assert_eq!(verify(std::slice::from_ref(&key), &h(&good), body, 1_700_000_010, 300), Ok(()));
        assert!(verify(std::slice::from_ref(&key), &h(&good), b"{}", 1_700_000_010, 300).is_err());
        assert!(verify(&[b"other".to_vec()], &h(&good), body, 1_700_000_010, 300).is_err());
        assert!(verify(std::slice::from_ref(&key), &h("t=1700000000,v1="), body, 1_700_000_010, 300).is_err());
        assert_eq!(
            verify(&[key], &h(&good), body, 1_700_000_400, 300),
            Err(VerifyError::Unauthorized("stale_timestamp"))
        );
    }
}
