//! The role an ID token's claims give: the configured claim (a string or a list of strings)
//! holds a value of `admin_values` (admin) or else of `viewer_values` (viewer); neither: no
//! role, and no sign-in.

use serde_json::{Map, Value};

use crate::config::OidcConfig;
use crate::domain::Role;

pub fn role_of(claims: &Map<String, Value>, config: &OidcConfig) -> Option<Role> {
    let values = claim_values(claims, &config.role_claim);
    if values.iter().any(|v| config.admin_values.iter().any(|a| a == v)) {
        Some(Role::Admin)
    } else if values.iter().any(|v| config.viewer_values.iter().any(|a| a == v)) {
        Some(Role::Viewer)
    } else {
        None
    }
}

/// The strings of claim `name`: the top-level claim of that name, else (a name with dots)
/// the claim at that path (`realm_access.roles`).
fn claim_values<'a>(claims: &'a Map<String, Value>, name: &str) -> Vec<&'a str> {
    let found = claims.get(name).or_else(|| {
        let mut parts = name.split('.');
        let first = claims.get(parts.next()?)?;
        parts.try_fold(first, |v, p| v.get(p))
    });
    match found {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(claim: &str) -> OidcConfig {
        toml::from_str(&format!(
            "issuer = 'https://id.example.com'\nclient_id = 'c'\nclient_secret_env = 'S'\n\
             role_claim = '{claim}'\nadmin_values = ['ops']\nviewer_values = ['staff']"
        ))
        .unwrap()
    }

    fn claims(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_string_or_a_list_maps_admin_first() {
        let c = config("roles");
        assert_eq!(role_of(&claims(json!({"roles": "ops"})), &c), Some(Role::Admin));
        assert_eq!(role_of(&claims(json!({"roles": ["staff", "ops"]})), &c), Some(Role::Admin));
        assert_eq!(role_of(&claims(json!({"roles": ["staff"]})), &c), Some(Role::Viewer));
        assert_eq!(role_of(&claims(json!({"roles": ["other"]})), &c), None);
        assert_eq!(role_of(&claims(json!({"roles": 3})), &c), None);
        assert_eq!(role_of(&claims(json!({})), &c), None);
    }

    #[test]
    fn a_dotted_name_is_a_claim_first_then_a_path() {
        let c = config("realm_access.roles");
        assert_eq!(role_of(&claims(json!({"realm_access": {"roles": ["ops"]}})), &c), Some(Role::Admin));
        let c = config("https://example.com/roles");
        assert_eq!(role_of(&claims(json!({"https://example.com/roles": ["staff"]})), &c), Some(Role::Viewer));
    }
}
