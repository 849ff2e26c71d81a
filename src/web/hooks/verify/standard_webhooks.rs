//! Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature` (`v1,<base64>`,
//! space-separated, several during a rotation), HMAC-SHA256 over `id.timestamp.body` with the
//! base64 key after `whsec_`.

use actix_web::http::header::HeaderMap;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::{
    check_table, fresh, header, hmac_sha256, load_problems, needs_secret_env, same, var_name, Delivery, Keys,
    SecretSettings, Secrets, Verifier, VerifyError,
};
use crate::config::hooks::{EventIdSpec, HookConfig, VerifierRules};
/// Signing and the `whsec_` secret format are shared with the outbound `webhook` effect.
pub use crate::services::effects::webhook::{decode_secret, read_secrets, sign};

pub struct StandardWebhooks;

impl VerifierRules for StandardWebhooks {
    fn name(&self) -> &'static str {
        "standard-webhooks"
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

    /// `webhook-id` is part of the signed content.
    fn signs_header(&self, name: &str) -> bool {
        name == "webhook-id"
    }

    fn default_event_id(&self) -> Option<EventIdSpec> {
        Some(EventIdSpec::Header("webhook-id".into()))
    }

    fn redelivery_span(&self) -> Option<(chrono::Duration, &'static str)> {
        Some((
            chrono::Duration::days(5),
            "Svix-style senders retry for about 28 hours and keep an endpoint for 5 days of failures",
        ))
    }
}

impl Verifier for StandardWebhooks {
    /// `whsec_…` secrets, space-separated, each a key of at least `MIN_KEY_BYTES`.
    fn load(&self, hook: &HookConfig, env: &dyn Fn(&str) -> Option<String>) -> Result<Box<dyn Keys>, String> {
        let own: SecretSettings = hook.own()?;
        let name = var_name(&own.secret_env);
        let keys = read_secrets(name, env(name))?;
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
    let missing = VerifyError::Unauthorized("missing_headers");
    let id = header(headers, "webhook-id").ok_or(missing.clone())?;
    let ts = header(headers, "webhook-timestamp").ok_or(missing.clone())?;
    let sigs = header(headers, "webhook-signature").ok_or(missing)?;
    fresh(ts, now, tolerance)?;
    let candidates: Vec<Vec<u8>> = sigs
        .split(' ')
        .filter_map(|s| s.strip_prefix("v1,"))
        .filter_map(|b64| STANDARD.decode(b64).ok())
        .collect();
    for key in keys {
        let expected = hmac_sha256(key, &[id.as_bytes(), b".", ts.as_bytes(), b".", body]);
        if candidates.iter().any(|c| same(&expected, c)) {
            return Ok(());
        }
    }
    Err(VerifyError::Unauthorized("signature_mismatch"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::{HeaderName, HeaderValue};

    // The specification's published example.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1614265330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn headers(sig: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in [("webhook-id", ID), ("webhook-timestamp", &TS.to_string()), ("webhook-signature", sig)]
        {
            h.insert(HeaderName::from_static(k), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn keys() -> Vec<Vec<u8>> {
        vec![decode_secret(SECRET).unwrap()]
    }

    #[test]
    fn the_specifications_vector_verifies() {
        assert_eq!(sign(&keys()[0], ID, TS, BODY), SIG);
        assert_eq!(verify(&keys(), &headers(SIG), BODY, TS, 300), Ok(()));
    }

    #[test]
    fn one_matching_signature_among_several_is_enough() {
        let sigs = format!("v1,Mm7xgUVICxZfQ3bgf0h0Dof65L/IFx+PnZvnDWPCX6Q= {SIG} v2,abc");
        assert_eq!(verify(&keys(), &headers(&sigs), BODY, TS, 300), Ok(()));
    }

    /// Issue 45: `whsec_` was read as an empty key, and a delivery signed with it was stored.
    #[test]
    fn a_delivery_signed_with_an_empty_or_short_key_never_verifies() {
        for key in [&b""[..], b"k", &[7u8; 23]] {
            let sig = sign(key, ID, TS, BODY);
            assert_eq!(
                verify(&[key.to_vec()], &headers(&sig), BODY, TS, 300),
                Err(VerifyError::Unauthorized("signature_mismatch")),
                "a {}-byte key",
                key.len()
            );
        }
    }

    #[test]
    fn tampering_an_empty_signature_a_wrong_key_or_an_old_timestamp_fail() {
        let bad = VerifyError::Unauthorized("signature_mismatch");
        assert_eq!(verify(&keys(), &headers(SIG), br#"{"test": 2432232315}"#, TS, 300), Err(bad.clone()));
        assert_eq!(verify(&keys(), &headers("v1,"), BODY, TS, 300), Err(bad.clone()));
        assert!(verify(&keys(), &headers(""), BODY, TS, 300).is_err());
        assert_eq!(verify(&[b"other".to_vec()], &headers(SIG), BODY, TS, 300), Err(bad));
        assert_eq!(
            verify(&keys(), &headers(SIG), BODY, TS + 301, 300),
            Err(VerifyError::Unauthorized("stale_timestamp"))
        );
    }
}
