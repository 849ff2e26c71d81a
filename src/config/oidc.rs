//! `[admin.oidc]`: sign-in to the admin with an OpenID Connect provider (authorization code
//! with PKCE; `crate::services::oidc`). The role comes from one claim of the ID token.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    /// The provider's issuer URL, exactly as its discovery document names it.
    pub issuer: String,
    pub client_id: String,
    /// The environment variable that holds the client secret (never the secret itself).
    pub client_secret_env: String,
    /// The ID token claim holding the user's roles or groups (a string or a list of strings);
    /// a name with dots that is no claim of its own is a path into nested claims
    /// (`realm_access.roles`).
    #[serde(default = "default_role_claim")]
    pub role_claim: String,
    /// A value of `role_claim` that makes the user an admin (reads and acts).
    #[serde(default)]
    pub admin_values: Vec<String>,
    /// A value of `role_claim` that makes the user a viewer (reads only).
    #[serde(default)]
    pub viewer_values: Vec<String>,
    /// The scopes asked for; `openid` is needed.
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// The provider's name on the login page's button ("Sign in with LABEL").
    #[serde(default = "default_label")]
    pub label: String,
}

fn default_role_claim() -> String {
    "roles".into()
}

fn default_scopes() -> Vec<String> {
    ["openid", "email", "profile"].map(String::from).to_vec()
}

fn default_label() -> String {
    "single sign-on".into()
}

/// The path the provider sends the browser back to, below `[server] public_url`.
pub const CALLBACK_PATH: &str = "/admin/oidc/callback";

impl OidcConfig {
    /// The problems of this table (`public_url`: `[server] public_url`, which the redirect URI
    /// is made from), each named by its path.
    pub fn problems(&self, public_url: Option<&str>) -> Vec<String> {
        let mut out = Vec::new();
        let at = |key: &str, problem: &str| format!("admin.oidc.{key}: {problem}");
        match url::Url::parse(&self.issuer) {
            Ok(u) if !is_https_or_loopback(&u) => {
                out.push(at("issuer", "must be an https URL (http only on a loopback address)"))
            }
            Ok(u) if u.query().is_some() || u.fragment().is_some() => {
                out.push(at("issuer", "must have no query or fragment"))
            }
            Ok(_) => {}
            Err(e) => out.push(at("issuer", &format!("not a URL: {e}"))),
        }
        if self.client_id.trim().is_empty() {
            out.push(at("client_id", "is empty"));
        }
        if self.client_secret_env.trim().is_empty() {
            out.push(at("client_secret_env", "is empty: name the variable that holds the client secret"));
        }
        if self.role_claim.trim().is_empty() {
            out.push(at("role_claim", "is empty"));
        }
        if self.admin_values.is_empty() && self.viewer_values.is_empty() {
            out.push(at(
                "admin_values",
                "admin_values and viewer_values are both empty: nobody could sign in",
            ));
        }
        for v in self.admin_values.iter().filter(|v| self.viewer_values.contains(v)) {
            out.push(at("viewer_values", &format!("`{v}` is in admin_values too")));
        }
        if !self.scopes.iter().any(|s| s == "openid") {
            out.push(at("scopes", "must include `openid`"));
        }
        if let Some(s) = self.scopes.iter().find(|s| s.is_empty() || s.contains(char::is_whitespace)) {
            out.push(at("scopes", &format!("`{s}` is not one scope")));
        }
        if self.label.trim().is_empty() || self.label.chars().count() > 60 {
            out.push(at("label", "must be 1 to 60 characters"));
        }
        match public_url.map(url::Url::parse) {
            None => out.push(
                "admin.oidc: needs [server] public_url (the redirect URI is PUBLIC_URL/admin/oidc/callback)"
                    .into(),
            ),
            Some(Ok(u)) if is_https_or_loopback(&u) => {}
            Some(_) => out.push(
                "admin.oidc: [server] public_url must be an https URL (http only on a loopback address)"
                    .into(),
            ),
        }
        out
    }

    /// `PUBLIC_URL/admin/oidc/callback`.
    pub fn redirect_uri(public_url: &str) -> String {
        format!("{}{CALLBACK_PATH}", public_url.trim_end_matches('/'))
    }
}

/// `https`, or `http` to a loopback address (a provider on the same host, tests).
fn is_https_or_loopback(u: &url::Url) -> bool {
    match u.scheme() {
        "https" => true,
        "http" => match u.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(d)) => d == "localhost",
            None => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oidc(extra: &str) -> OidcConfig {
        toml::from_str(&format!(
            "issuer = 'https://id.example.com/realms/staff'\nclient_id = 'onceform'\n\
             client_secret_env = 'OIDC_SECRET'\nadmin_values = ['onceform-admins']\n{extra}"
        ))
        .unwrap()
    }

    #[test]
    fn a_complete_table_has_no_problem_and_its_defaults() {
        let c = oidc("");
        assert_eq!(c.problems(Some("https://forms.example.com")), Vec::<String>::new());
        assert_eq!(c.role_claim, "roles");
        assert_eq!(c.scopes, ["openid", "email", "profile"]);
        assert_eq!(
            OidcConfig::redirect_uri("https://forms.example.com/"),
            "https://forms.example.com/admin/oidc/callback"
        );
    }

    #[test]
    fn each_problem_is_named() {
        let mut c = oidc("viewer_values = ['onceform-admins']\nscopes = ['email']\nlabel = ''");
        c.issuer = "http://id.example.com".into();
        let p = c.problems(None).join("\n");
        for needle in [
            "admin.oidc.issuer: must be an https URL",
            "admin.oidc.viewer_values: `onceform-admins` is in admin_values too",
            "admin.oidc.scopes: must include `openid`",
            "admin.oidc.label",
            "needs [server] public_url",
        ] {
            assert!(p.contains(needle), "{needle:?} missing from:\n{p}");
        }
        assert!(oidc("").problems(Some("http://127.0.0.1:8080")).is_empty());
        assert!(!oidc("").problems(Some("http://forms.example.com")).is_empty());
    }
}
