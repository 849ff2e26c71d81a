//! Sign-in to the admin with an OpenID Connect provider (`[admin.oidc]`): the authorization
//! code flow with PKCE (S256), `state` and `nonce` random per attempt. `begin` makes the
//! attempt and the provider's URL; `finish` exchanges the code at the token endpoint and
//! verifies the ID token (`id_token`: signature by the provider's JWKS, `keys`; issuer,
//! audience, expiry, nonce). The role comes from a claim (`roles`). Secrets (client secret,
//! code, tokens, verifier) are never logged.
//!
//! The web layer keeps the attempt (`db::admin::oidc`), binds it to the browser and turns the
//! `Identity` into a session.

mod discovery;
mod http;
mod id_token;
mod keys;
mod roles;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::Deserialize;
use sha2::{Digest, Sha256};

pub use discovery::{ClientAuth, Discovery};
pub use http::{CALL_TIMEOUT, MAX_BODY_BYTES};

use crate::config::{OidcConfig, Secrets};
use crate::domain::Role;
use keys::KeyCache;

/// How long a downloaded discovery document is used.
const DISCOVERY_MAX_AGE: Duration = Duration::from_secs(3600);

#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The provider could not be reached, or did not answer in time.
    #[error("the identity provider is unreachable: {0}")]
    Unreachable(String),
    /// The provider answered something unusable (or refused the code).
    #[error("the identity provider's answer is unusable: {0}")]
    Provider(String),
    /// The ID token failed a check.
    #[error("the ID token is refused: {0}")]
    IdToken(String),
    /// The client secret's variable is not set.
    #[error("the client secret variable {0} is not set")]
    NoSecret(String),
}

/// A sign-in begun: the values to keep until the browser returns, and where to send it.
pub struct Attempt {
    pub state: String,
    pub nonce: String,
    pub code_verifier: String,
    pub authorization_url: String,
}

/// Who the provider signed in.
#[derive(Debug, Clone)]
pub struct Identity {
    pub issuer: String,
    pub subject: String,
    /// The email claim, else `preferred_username`, else the subject: what the admin shows.
    pub display: String,
    /// `None`: the role claim names no value of `admin_values` or `viewer_values`.
    pub role: Option<Role>,
}

/// The sign-in of one configured provider (a server has at most one).
pub struct OidcSignIn {
    pub config: OidcConfig,
    redirect_uri: String,
    /// `PUBLIC_URL/admin/login`: where the provider sends the browser after signing out.
    post_logout_uri: String,
    client: reqwest::Client,
    /// The client secret, read from `client_secret_env` once, at start (never logged).
    client_secret: Option<String>,
    discovery: Mutex<Option<(Discovery, Instant)>>,
    keys: KeyCache,
}

#[derive(Deserialize)]
struct TokenAnswer {
    id_token: Option<String>,
}

#[derive(Deserialize)]
struct TokenError {
    error: Option<String>,
}

impl OidcSignIn {
    /// The client secret's variable was set at start.
    pub fn has_secret(&self) -> bool {
        self.client_secret.is_some()
    }

    /// The sign-in for `config` answering at `public_url` (`[server] public_url`), its client
    /// secret read from `secrets`.
    pub fn new(config: OidcConfig, public_url: &str, secrets: &Secrets) -> Result<OidcSignIn, OidcError> {
        let base = public_url.trim_end_matches('/');
        let client_secret = secrets.non_empty(&config.client_secret_env).map(str::to_string);
        Ok(OidcSignIn {
            client_secret,
            redirect_uri: OidcConfig::redirect_uri(base),
            post_logout_uri: format!("{base}/admin/login"),
            config,
            client: http::client()?,
            discovery: Mutex::new(None),
            keys: KeyCache::default(),
        })
    }

    /// The discovery document, downloaded when none is cached or it is older than an hour.
    async fn discovery(&self) -> Result<Discovery, OidcError> {
        let cached = self.discovery.lock().ok().and_then(|d| {
            d.as_ref().filter(|(_, at)| at.elapsed() < DISCOVERY_MAX_AGE).map(|(doc, _)| doc.clone())
        });
        if let Some(doc) = cached {
            return Ok(doc);
        }
        let doc = Discovery::fetch(&self.client, &self.config.issuer).await?;
        if let Ok(mut d) = self.discovery.lock() {
            *d = Some((doc.clone(), Instant::now()));
        }
        Ok(doc)
    }

    /// A new attempt: random `state`, `nonce` and PKCE verifier, and the provider's
    /// authorization URL carrying the state, the nonce and the verifier's S256 challenge.
    pub async fn begin(&self) -> Result<Attempt, OidcError> {
        let doc = self.discovery().await?;
        let (state, nonce, code_verifier) = (random(), random(), random());
        let mut url = url::Url::parse(&doc.authorization_endpoint)
            .map_err(|_| OidcError::Provider("discovery: authorization_endpoint is not a URL".into()))?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.config.client_id)
            .append_pair("redirect_uri", &self.redirect_uri)
            .append_pair("scope", &self.config.scopes.join(" "))
            .append_pair("state", &state)
            .append_pair("nonce", &nonce)
            .append_pair("code_challenge", &challenge(&code_verifier))
            .append_pair("code_challenge_method", "S256");
        Ok(Attempt { state, nonce, code_verifier, authorization_url: url.into() })
    }

    /// Exchanges `code` (with the attempt's verifier) and verifies the ID token against the
    /// attempt's `nonce`.
    pub async fn finish(&self, code: &str, code_verifier: &str, nonce: &str) -> Result<Identity, OidcError> {
        let secret = self
            .client_secret
            .as_deref()
            .ok_or_else(|| OidcError::NoSecret(self.config.client_secret_env.clone()))?;
        let doc = self.discovery().await?;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", self.redirect_uri.as_str()),
            ("code_verifier", code_verifier),
        ];
        let mut req = self.client.post(&doc.token_endpoint).header("Accept", "application/json");
        match doc.client_auth() {
            // RFC 6749 2.3.1: both are form-encoded before they are joined.
            ClientAuth::Basic => {
                let user = form_encode(&self.config.client_id);
                req = req.basic_auth(user, Some(form_encode(secret)));
            }
            ClientAuth::Post => {
                form.push(("client_id", self.config.client_id.as_str()));
                form.push(("client_secret", secret));
            }
        }
        let (status, body) = http::call(req.form(&form), "token").await?;
        if !(200..300).contains(&status) {
            // The error code only (RFC 6749 5.2); its description may echo the request.
            let code =
                serde_json::from_slice::<TokenError>(&body).ok().and_then(|e| e.error).unwrap_or_default();
            let code: String =
                code.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(64).collect();
            return Err(OidcError::Provider(format!("token: HTTP {status} {code}")));
        }
        let answer: TokenAnswer = serde_json::from_slice(&body)
            .map_err(|_| OidcError::Provider("token: unreadable JSON".into()))?;
        let token = answer.id_token.ok_or_else(|| OidcError::Provider("token: no id_token".into()))?;
        let kid = id_token::kid_of(&token)?;
        let key = self.keys.key(&self.client, &doc.jwks_uri, kid.as_deref()).await?;
        let now = chrono::Utc::now().timestamp();
        let claims = id_token::verify(&token, &key, &doc.issuer, &self.config.client_id, nonce, now)?;
        let text = |name: &str| claims.get(name).and_then(|v| v.as_str()).filter(|s| !s.is_empty());
        let subject = text("sub").unwrap_or_default().to_string();
        let display = text("email").or(text("preferred_username")).unwrap_or(&subject).to_string();
        Ok(Identity {
            issuer: doc.issuer.clone(),
            subject,
            display,
            role: roles::role_of(&claims, &self.config),
        })
    }

    /// Where a signed-out OIDC user goes to end the provider's session too (RP-initiated
    /// logout, with `client_id` and `post_logout_redirect_uri`); `None` when the provider
    /// offers no `end_session_endpoint` (or cannot be reached).
    pub async fn end_session_url(&self) -> Option<String> {
        let doc = self.discovery().await.ok()?;
        let mut url = url::Url::parse(doc.end_session_endpoint.as_deref()?).ok()?;
        url.query_pairs_mut()
            .append_pair("client_id", &self.config.client_id)
            .append_pair("post_logout_redirect_uri", &self.post_logout_uri);
        Some(url.into())
    }
}

/// 256 random bits as 64 hex characters: a `state`, a `nonce`, a PKCE verifier (RFC 7636
/// allows 43–128 unreserved characters).
fn random() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

/// The S256 challenge of a PKCE verifier: BASE64URL(SHA-256(verifier)), no padding.
pub fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

fn form_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pkce_challenge_is_rfc_7636s() {
        // RFC 7636, appendix B.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert_eq!(random().len(), 64);
        assert_ne!(random(), random());
    }
}
