//! `[admin]`: how people sign in to the admin pages (`[admin.oidc]`: an OpenID provider
//! beside the local accounts).

use serde::Deserialize;

use super::oidc::OidcConfig;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdminConfig {
    /// Sign-in with an OpenID Connect provider; unset: local accounts only.
    pub oidc: Option<OidcConfig>,
}
