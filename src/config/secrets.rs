//! The environment as the process found it: one snapshot taken at start (`cli`, beside the
//! keyring) and a fresh one at each reload (`services::reload`, `app::worker_reload`), so that
//! an operator rotates a secret by setting it and reloading. Everything below configuration
//! reads its secrets (webhook URLs, API tokens, captcha keys) from a snapshot it is handed,
//! never from the process environment (tests/it/ops/layers.rs holds `src/` to that).

use std::collections::BTreeMap;
use std::fmt;

/// The environment's variables by name; their values are never printed.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets(BTreeMap<String, String>);

impl Secrets {
    /// The process environment now (variables whose name or value is not UTF-8 are left out).
    pub fn from_env() -> Secrets {
        Secrets(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        )
    }

    /// These variables alone (tests, tools).
    pub fn of<K: Into<String>, V: Into<String>>(vars: impl IntoIterator<Item = (K, V)>) -> Secrets {
        Secrets(vars.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }

    /// The value of variable `name`, as set (possibly empty).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// The value of variable `name` as an owned string (the `env` closures of `Config::load`
    /// and check-config take this).
    pub fn var(&self, name: &str) -> Option<String> {
        self.get(name).map(str::to_string)
    }

    /// The value of variable `name` when it is set and not empty.
    pub fn non_empty(&self, name: &str) -> Option<&str> {
        self.get(name).filter(|v| !v.is_empty())
    }

    /// The names of the variables set, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_read_but_never_printed() {
        let s = Secrets::of([("HOOK_URL", "https://hooks.example.com/T0/secret-part"), ("EMPTY", "")]);
        assert_eq!(s.get("HOOK_URL"), Some("https://hooks.example.com/T0/secret-part"));
        assert_eq!(s.get("EMPTY"), Some(""));
        assert_eq!(s.non_empty("EMPTY"), None);
        assert_eq!(s.get("UNSET"), None);
        assert_eq!(s.names().collect::<Vec<_>>(), ["EMPTY", "HOOK_URL"]);
        let shown = format!("{s:?}");
        assert!(shown.contains("HOOK_URL") && !shown.contains("secret-part"), "{shown}");
    }
}
