//! GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the body with the secret.
//! GitHub signs no timestamp; the event ID is `X-GitHub-Delivery`.

use actix_web::http::header::HeaderMap;

use super::{header, hex, hex_decode, hmac_sha256, same, VerifyError};

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
