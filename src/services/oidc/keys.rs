//! The provider's signing keys (its JWKS), cached: a key is looked up by the ID token's
//! `kid`; a `kid` the cache does not know downloads the JWKS once more (the provider rotated
//! its keys), and a key the provider no longer lists is trusted no longer than `MAX_AGE`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::DecodingKey;
use serde::Deserialize;

use super::{http, OidcError};

/// How long a downloaded JWKS is used before it is downloaded again.
pub const MAX_AGE: Duration = Duration::from_secs(600);
/// The keys kept of one JWKS at most (a provider lists a few).
const MAX_KEYS: usize = 32;

/// One RSA signing key of the JWKS.
struct Key {
    kid: Option<String>,
    key: DecodingKey,
}

struct Fetched {
    keys: Arc<Vec<Key>>,
    at: Instant,
}

#[derive(Default)]
pub struct KeyCache {
    cached: Mutex<Option<Fetched>>,
}

#[derive(Deserialize)]
struct RawSet {
    keys: Vec<serde_json::Value>,
}

impl KeyCache {
    /// The key that signed a token whose header names `kid` (a token without one: the only
    /// signing key), from the cache or a fresh download of `jwks_uri`.
    pub async fn key(
        &self,
        client: &reqwest::Client,
        jwks_uri: &str,
        kid: Option<&str>,
    ) -> Result<DecodingKey, OidcError> {
        if let Some(keys) = self.fresh() {
            if let Some(k) = pick(&keys, kid) {
                return Ok(k);
            }
        }
        // Unknown here (or the cache is old): the provider may have rotated; download once.
        let keys = self.download(client, jwks_uri).await?;
        pick(&keys, kid).ok_or_else(|| {
            OidcError::IdToken(format!(
                "signed by a key the provider does not list (kid {})",
                kid.unwrap_or("none")
            ))
        })
    }

    fn fresh(&self) -> Option<Arc<Vec<Key>>> {
        let cached = self.cached.lock().ok()?;
        cached.as_ref().filter(|f| f.at.elapsed() < MAX_AGE).map(|f| f.keys.clone())
    }

    async fn download(&self, client: &reqwest::Client, jwks_uri: &str) -> Result<Arc<Vec<Key>>, OidcError> {
        let raw: RawSet = http::json(client.get(jwks_uri), "jwks").await?;
        let keys: Vec<Key> = raw
            .keys
            .into_iter()
            // A key of a type this version cannot read is skipped, not fatal.
            .filter_map(|v| serde_json::from_value::<Jwk>(v).ok())
            .filter_map(|jwk| signing_key(&jwk))
            .take(MAX_KEYS)
            .collect();
        tracing::info!(keys = keys.len(), "oidc: downloaded the provider's signing keys");
        let keys = Arc::new(keys);
        if let Ok(mut cached) = self.cached.lock() {
            *cached = Some(Fetched { keys: keys.clone(), at: Instant::now() });
        }
        Ok(keys)
    }
}

/// An RSA key meant for signatures (or for anything: no `use`).
fn signing_key(jwk: &Jwk) -> Option<Key> {
    if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
        return None;
    }
    let AlgorithmParameters::RSA(rsa) = &jwk.algorithm else { return None };
    let key = DecodingKey::from_rsa_components(&rsa.n, &rsa.e).ok()?;
    Some(Key { kid: jwk.common.key_id.clone(), key })
}

fn pick(keys: &[Key], kid: Option<&str>) -> Option<DecodingKey> {
    match kid {
        Some(kid) => keys.iter().find(|k| k.kid.as_deref() == Some(kid)).map(|k| k.key.clone()),
        None if keys.len() == 1 => keys.first().map(|k| k.key.clone()),
        None => None,
    }
}
