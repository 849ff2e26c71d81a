//! `[admin]`: how people sign in to the admin pages (`[admin.oidc]`: an OpenID provider
//! beside the local accounts), the pages' language and the time zone their dates are shown in.

use serde::Deserialize;

use super::oidc::OidcConfig;
use crate::base::i18n::{Locale, TimeZone};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdminConfig {
    /// Sign-in with an OpenID Connect provider; unset: local accounts only.
    pub oidc: Option<OidcConfig>,
    /// The admin pages' language (`en`, `zh-TW`, `zh-CN`, `ja`) for users who chose none.
    pub locale: Locale,
    /// The IANA time zone the admin pages show dates in (with the zone named); default UTC.
    pub time_zone: TimeZone,
}
