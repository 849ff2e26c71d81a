//! The provider's discovery document (`{issuer}/.well-known/openid-configuration`, OpenID
//! Connect Discovery 1.0): its endpoints, checked to belong to the configured issuer.

use serde::Deserialize;

use super::{http, OidcError};

#[derive(Debug, Clone, Deserialize)]
pub struct Discovery {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub jwks_uri: String,
    #[serde(default)]
    pub end_session_endpoint: Option<String>,
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
}

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// HTTP Basic (the default of the specification when the provider names none).
    Basic,
    /// `client_id` and `client_secret` in the form.
    Post,
}

impl Discovery {
    /// Downloads and checks the document of `issuer`.
    pub async fn fetch(client: &reqwest::Client, issuer: &str) -> Result<Discovery, OidcError> {
        let url = format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'));
        let found: Discovery = http::json(client.get(&url), "discovery").await?;
        found.check(issuer)?;
        Ok(found)
    }

    /// The issuer is the configured one exactly (a document of another issuer, or a look-alike,
    /// is refused), and every endpoint is a URL.
    pub fn check(&self, issuer: &str) -> Result<(), OidcError> {
        if self.issuer != issuer {
            return Err(OidcError::Provider(format!(
                "discovery: the document's issuer `{}` is not the configured `{issuer}`",
                self.issuer
            )));
        }
        for (name, url) in [
            ("authorization_endpoint", Some(&self.authorization_endpoint)),
            ("token_endpoint", Some(&self.token_endpoint)),
            ("jwks_uri", Some(&self.jwks_uri)),
            ("end_session_endpoint", self.end_session_endpoint.as_ref()),
        ] {
            if let Some(url) = url {
                if !matches!(url::Url::parse(url), Ok(u) if matches!(u.scheme(), "https" | "http")) {
                    return Err(OidcError::Provider(format!("discovery: {name} is not a URL")));
                }
            }
        }
        if let Some(methods) = &self.code_challenge_methods_supported {
            if !methods.iter().any(|m| m == "S256") {
                return Err(OidcError::Provider(
                    "discovery: the provider does not offer PKCE with S256".into(),
                ));
            }
        }
        Ok(())
    }

    /// `client_secret_basic` unless the provider lists only `client_secret_post`.
    pub fn client_auth(&self) -> ClientAuth {
        match &self.token_endpoint_auth_methods_supported {
            Some(m)
                if !m.iter().any(|x| x == "client_secret_basic")
                    && m.iter().any(|x| x == "client_secret_post") =>
            {
                ClientAuth::Post
            }
            _ => ClientAuth::Basic,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(issuer: &str) -> Discovery {
        serde_json::from_value(serde_json::json!({
            "issuer": issuer,
            "authorization_endpoint": "https://id.example.com/auth",
            "token_endpoint": "https://id.example.com/token",
            "jwks_uri": "https://id.example.com/jwks",
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
        }))
        .unwrap()
    }

    #[test]
    fn the_issuer_must_match_exactly() {
        assert!(doc("https://id.example.com").check("https://id.example.com").is_ok());
        assert!(doc("https://id.example.com/").check("https://id.example.com").is_err());
        assert!(doc("https://id.example.com.evil.test").check("https://id.example.com").is_err());
        assert_eq!(doc("https://id.example.com").client_auth(), ClientAuth::Post);
    }
}
