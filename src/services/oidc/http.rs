//! The calls to the provider: a deadline on each, no redirects followed, and the answer read
//! up to a size bound (a provider's JSON documents are a few KiB).

use std::time::Duration;

use reqwest::{RequestBuilder, Response};
use serde::de::DeserializeOwned;

use super::OidcError;

/// Each call to the provider, connection included, ends within this.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read (discovery, JWKS, token response).
pub const MAX_BODY_BYTES: usize = 256 * 1024;

pub fn client() -> Result<reqwest::Client, OidcError> {
    reqwest::Client::builder()
        .timeout(CALL_TIMEOUT)
        .connect_timeout(Duration::from_secs(5))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("onceform/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| OidcError::Unreachable(format!("HTTP client: {e}")))
}

/// Sends `req` and reads its answer (any status) as `what`: (status, body). `what` names the
/// call in errors; the URL is never logged with its query.
pub async fn call(req: RequestBuilder, what: &'static str) -> Result<(u16, Vec<u8>), OidcError> {
    let resp =
        req.send().await.map_err(|e| OidcError::Unreachable(format!("{what}: {}", e.without_url())))?;
    let status = resp.status().as_u16();
    Ok((status, read_bounded(resp, what).await?))
}

/// The JSON of a 2xx answer.
pub async fn json<T: DeserializeOwned>(req: RequestBuilder, what: &'static str) -> Result<T, OidcError> {
    let (status, body) = call(req, what).await?;
    if !(200..300).contains(&status) {
        return Err(OidcError::Provider(format!("{what}: HTTP {status}")));
    }
    serde_json::from_slice(&body).map_err(|e| OidcError::Provider(format!("{what}: unreadable JSON ({e})")))
}

async fn read_bounded(mut resp: Response, what: &'static str) -> Result<Vec<u8>, OidcError> {
    if resp.content_length().is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(OidcError::Provider(format!("{what}: answer larger than {MAX_BODY_BYTES} bytes")));
    }
    let mut body = Vec::new();
    while let Some(chunk) =
        resp.chunk().await.map_err(|e| OidcError::Unreachable(format!("{what}: {}", e.without_url())))?
    {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(OidcError::Provider(format!("{what}: answer larger than {MAX_BODY_BYTES} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
