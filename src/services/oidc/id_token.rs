//! Verifying an ID token (OpenID Connect Core 1.0, 3.1.3.7): an RS256 signature by a key of
//! the provider's JWKS, the issuer, the audience (and `azp` when there are several), the
//! expiry and issue time with a small leeway, and the nonce of this sign-in.

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::OidcError;
use crate::base::secret::constant_time_eq;

/// Clock difference tolerated between the provider and this server, in seconds.
pub const LEEWAY_SECONDS: u64 = 60;

/// The `kid` of a token's header, once its algorithm is known to be RS256.
pub fn kid_of(token: &str) -> Result<Option<String>, OidcError> {
    let header =
        jsonwebtoken::decode_header(token).map_err(|e| OidcError::IdToken(format!("header: {e}")))?;
    if header.alg != Algorithm::RS256 {
        return Err(OidcError::IdToken(format!("signed with {:?}, not RS256", header.alg)));
    }
    Ok(header.kid)
}

/// The claims of `token` once every check passes.
pub fn verify(
    token: &str,
    key: &DecodingKey,
    issuer: &str,
    client_id: &str,
    nonce: &str,
    now_seconds: i64,
) -> Result<Map<String, Value>, OidcError> {
    let mut v = Validation::new(Algorithm::RS256);
    v.set_issuer(&[issuer]);
    v.set_audience(&[client_id]);
    v.set_required_spec_claims(&["exp", "iat", "iss", "aud", "sub"]);
    v.leeway = LEEWAY_SECONDS;
    let claims = jsonwebtoken::decode::<Map<String, Value>>(token, key, &v)
        .map_err(|e| OidcError::IdToken(e.to_string()))?
        .claims;
    let iat = claims.get("iat").and_then(Value::as_i64).ok_or_else(|| OidcError::IdToken("no iat".into()))?;
    if iat > now_seconds + LEEWAY_SECONDS as i64 {
        return Err(OidcError::IdToken("issued in the future (iat)".into()));
    }
    let several = matches!(claims.get("aud"), Some(Value::Array(a)) if a.len() > 1);
    match claims.get("azp").map(Value::as_str) {
        Some(Some(azp)) if azp != client_id => {
            return Err(OidcError::IdToken("authorized party (azp) is another client".into()))
        }
        None if several => return Err(OidcError::IdToken("several audiences and no azp".into())),
        Some(None) => return Err(OidcError::IdToken("azp is not a string".into())),
        _ => {}
    }
    let sent = claims.get("nonce").and_then(Value::as_str).unwrap_or("");
    if sent.is_empty() || !constant_time_eq(sent.as_bytes(), nonce.as_bytes()) {
        return Err(OidcError::IdToken("nonce is not this sign-in's".into()));
    }
    if !matches!(claims.get("sub"), Some(Value::String(s)) if !s.is_empty()) {
        return Err(OidcError::IdToken("no subject (sub)".into()));
    }
    Ok(claims)
}
