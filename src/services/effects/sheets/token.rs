//! The service account's access tokens (Google's "OAuth 2.0 for Server to Server
//! Applications"): a JWT signed RS256 with the key file's `private_key` (header `kid` =
//! `private_key_id`; claims `iss` = `client_email`, `scope`, `aud` = `token_uri`, `iat`, and
//! `exp` one hour later, the longest Google takes) is exchanged at `token_uri`
//! (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`, `assertion`) for an
//! `access_token` that lasts `expires_in` seconds. One token is kept per key and reused by
//! every call until shortly before it expires; a call Google refuses with 401 drops it.
//!
//! Asking for a token changes nothing in a spreadsheet, so a token request that fails in any
//! way (a timeout included) leaves the record certainly not sent: retried, or final when the
//! token endpoint refuses the key (`invalid_grant`, with its `error_description`).

use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Mutex;

use super::super::http::{excerpt, read_head, status_report, url_policy, Client, Secret, ServerErrors};
use super::super::{Outcome, Report};

/// What the tokens may do: read and write spreadsheets.
pub const SCOPE: &str = "https://www.googleapis.com/auth/spreadsheets";

/// How long an assertion is valid: Google takes at most one hour.
const ASSERTION_LIFETIME: u64 = 3600;

/// A token is renewed this long before it expires at most (a tenth of its life when shorter).
const RENEW_BEFORE: Duration = Duration::from_secs(60);

/// The members of a service account key file (the JSON the Cloud console downloads) that
/// onceform reads; the others (`project_id`, `client_id`, …) are ignored.
#[derive(Deserialize)]
struct KeyFile {
    #[serde(rename = "type")]
    kind: String,
    private_key_id: String,
    private_key: String,
    client_email: String,
    token_uri: String,
}

/// A service account: who it is, its signing key and its current token. No `Debug`: it
/// holds the private key and the token.
pub struct Account {
    email: String,
    key_id: String,
    key: EncodingKey,
    token_uri: String,
    /// The current token; held while one is fetched, so concurrent calls ask for one token.
    token: Mutex<Option<Token>>,
}

/// An access token and when to stop using it.
struct Token {
    access: Secret,
    renew_at: Instant,
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    scope: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
}

impl Account {
    /// The account of the key file `json` (the whole JSON, as the variable holds it). The
    /// error names what is wrong, never a value of the file.
    pub fn from_json(json: &str) -> Result<Account, String> {
        let file: KeyFile = serde_json::from_str(json).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => {
                "is not a service account key file (it needs type, private_key_id, private_key, client_email and token_uri)".to_string()
            }
            _ => format!("is not JSON ({:?} error at line {}, column {})", e.classify(), e.line(), e.column()),
        })?;
        if file.kind != "service_account" {
            return Err("is not a service account key file (its type is not \"service_account\")".into());
        }
        if file.client_email.trim().is_empty() || file.private_key_id.trim().is_empty() {
            return Err("has an empty client_email or private_key_id".into());
        }
        url_policy::check("token_uri", &file.token_uri, false)
            .map_err(|_| "has a token_uri that is not https:// (http:// only to loopback)".to_string())?;
        let key = EncodingKey::from_rsa_pem(file.private_key.as_bytes())
            .map_err(|_| "has a private_key that is not an RSA key in PEM".to_string())?;
        Ok(Account {
            email: file.client_email.trim().to_string(),
            key_id: file.private_key_id.trim().to_string(),
            key,
            token_uri: file.token_uri.trim().to_string(),
            token: Mutex::new(None),
        })
    }

    /// The signed assertion, issued now.
    fn assertion(&self) -> Result<String, Report> {
        let iat = u64::try_from(chrono::Utc::now().timestamp()).unwrap_or(0);
        let claims = Claims {
            iss: &self.email,
            scope: SCOPE,
            aud: &self.token_uri,
            iat,
            exp: iat + ASSERTION_LIFETIME,
        };
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(self.key_id.clone());
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|_| Report::failed(Outcome::Permanent, "token_signing"))
    }

    /// A token to call with: the kept one while it is fresh, else a new one.
    pub async fn token(&self, client: &Client) -> Result<Secret, Report> {
        let mut kept = self.token.lock().await;
        if let Some(t) = kept.as_ref().filter(|t| Instant::now() < t.renew_at) {
            return Ok(t.access.clone());
        }
        let fresh = self.fetch(client).await?;
        let access = fresh.access.clone();
        *kept = Some(fresh);
        Ok(access)
    }

    /// Drops `used` (Google refused it), unless another call already replaced it.
    pub async fn forget(&self, used: &Secret) {
        let mut kept = self.token.lock().await;
        if kept.as_ref().is_some_and(|t| t.access.0 == used.0) {
            *kept = None;
        }
    }

    /// Exchanges a new assertion for a token.
    async fn fetch(&self, client: &Client) -> Result<Token, Report> {
        let assertion = self.assertion()?;
        let form = [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", &assertion)];
        let asked = Instant::now();
        let resp = client.send(client.post(&self.token_uri).form(&form)).await.map_err(not_sent)?;
        let status = resp.status().as_u16();
        if !resp.status().is_success() {
            return Err(refused(resp).await);
        }
        let unreadable = || Report::failed(Outcome::Transient { retry_after: None }, "token_unreadable");
        let body: Value = serde_json::from_slice(&read_head(resp).await).map_err(|_| unreadable())?;
        let access = body["access_token"].as_str().filter(|t| !t.is_empty()).ok_or_else(unreadable)?;
        if body["token_type"].as_str().is_some_and(|t| !t.eq_ignore_ascii_case("bearer")) {
            return Err(Report::failed(Outcome::Permanent, "token_type").with_http(status));
        }
        let lasts = Duration::from_secs(body["expires_in"].as_u64().unwrap_or(ASSERTION_LIFETIME));
        let renew_at = asked + lasts - RENEW_BEFORE.min(lasts / 10);
        Ok(Token { access: Secret(access.to_string()), renew_at })
    }
}

/// A token request that got no answer: nothing reached the spreadsheet, so it is retried
/// (a refused private address stays final).
fn not_sent(report: Report) -> Report {
    let class = format!("token_{}", report.error_class.as_deref().unwrap_or("error"));
    let outcome = match report.outcome {
        Outcome::Permanent => Outcome::Permanent,
        _ => Outcome::Transient { retry_after: None },
    };
    Report { outcome, error_class: Some(class), ..report }
}

/// The token endpoint's refusal: 429 and 5xx retried, any other final (`invalid_grant`: a
/// deleted or disabled key, a wrong clock), with `error: error_description` on the attempt.
async fn refused(resp: reqwest::Response) -> Report {
    let report = status_report(&resp, ServerErrors::DidNotAct);
    let head = read_head(resp).await;
    let body: Value = serde_json::from_slice(&head).unwrap_or(Value::Null);
    let words = match (body["error"].as_str(), body["error_description"].as_str()) {
        (Some(e), Some(d)) => Some(format!("{e}: {d}")),
        (Some(e), None) => Some(e.to_string()),
        _ => None,
    };
    let detail = words.and_then(|w| excerpt(w.as_bytes())).or_else(|| excerpt(&head));
    let class = format!("token_{}", report.error_class.as_deref().unwrap_or("error"));
    Report { error_class: Some(class), ..report }.with_detail(detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_is_read_without_quoting_it() {
        let secret = "-----BEGIN PRIVATE KEY-----\nnot-a-key\n-----END PRIVATE KEY-----\n";
        let file = serde_json::json!({
            "type": "service_account", "project_id": "p", "private_key_id": "k1",
            "private_key": secret, "client_email": "sa@p.iam.gserviceaccount.com",
            "token_uri": "https://oauth2.googleapis.com/token",
        });
        let err = Account::from_json(&file.to_string()).err().unwrap();
        assert!(err.contains("private_key") && !err.contains("not-a-key"), "{err}");
        let err = Account::from_json(r#"{"type": "service_account", "private_key": 5}"#).err().unwrap();
        assert!(err.contains("client_email"), "{err}");
        let err = Account::from_json(r#"{"private_key": "secret"#).err().unwrap();
        assert!(!err.contains("secret"), "{err}");
        let mut plain = file.clone();
        plain["token_uri"] = "http://oauth2.example.com/token".into();
        assert!(Account::from_json(&plain.to_string()).err().unwrap().contains("token_uri"));
    }
}
