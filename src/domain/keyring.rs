//! Keyed digests of personal data (email, phone, content fingerprint): HMAC-SHA-256 with the
//! server secret, stored as `{key version}:{hex}`. The version beside the digest lets a
//! rotated secret (`ONCEFORM_SECRET_PREVIOUS`) still compare older rows with their own key.
//! A digest without a version is the plain SHA-256 of releases before keyed digests.
//!
//! There is no process-wide keyring: `app::startup::open_store` loads it, and whoever
//! digests is handed it by its owner (the acceptor, the app state, a lifecycle command).

use crate::base::secret::{self, Secret};

pub struct Keyring {
    current: Secret,
    version: String,
    previous: Vec<(String, Secret)>,
}

impl Keyring {
    pub fn new(current: Secret, previous: Vec<Secret>) -> Keyring {
        let previous = previous.into_iter().map(|s| (s.version(), s)).collect();
        Keyring { version: current.version(), current, previous }
    }

    /// The values of `ONCEFORM_SECRET` (`secret`; unset: the file `secret_file`) and of
    /// `ONCEFORM_SECRET_PREVIOUS` (`previous`), as the start-up's environment holds them.
    pub fn load(secret_file: &str, secret: Option<&str>, previous: Option<&str>) -> anyhow::Result<Keyring> {
        let current = secret::load_from(secret.map(str::to_string), std::path::Path::new(secret_file))?;
        let previous = previous.filter(|v| !v.trim().is_empty());
        Ok(Keyring::new(current, previous.map(Secret::new).into_iter().collect()))
    }

    /// The version stored beside digests made now.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The keyed digest of `text` with the current secret, as stored.
    pub fn digest(&self, text: &str) -> String {
        format!("{}:{}", self.version, self.current.hmac_hex(text.as_bytes()))
    }

    /// The stored digest made with the current secret.
    pub fn is_current(&self, stored: &str) -> bool {
        stored.strip_prefix(self.version.as_str()).is_some_and(|rest| rest.starts_with(':'))
    }

    /// `stored` is the digest of `text` under the key it names (plain SHA-256 when it names
    /// none); false for a key no longer known (rotated out without keeping the old secret).
    pub fn matches(&self, stored: &str, text: &str) -> bool {
        let Some((version, hex)) = stored.split_once(':') else { return super::digest(text) == stored };
        match version {
            v if v == self.version => self.current.hmac_hex(text.as_bytes()) == hex,
            v => self
                .previous
                .iter()
                .find(|(pv, _)| pv == v)
                .is_some_and(|(_, s)| s.hmac_hex(text.as_bytes()) == hex),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_compared_with_their_own_key() {
        let old = Keyring::new(Secret::new("the first secret, long enough"), Vec::new());
        let rotated = Keyring::new(
            Secret::new("the second secret, long enough"),
            vec![Secret::new("the first secret, long enough")],
        );
        let stored = old.digest("ada@example.com");
        assert!(stored.starts_with(&format!("{}:", old.version())));
        assert_ne!(rotated.digest("ada@example.com"), stored);
        assert!(rotated.matches(&stored, "ada@example.com"));
        assert!(!rotated.matches(&stored, "bob@example.com"));
        assert!(!rotated.is_current(&stored) && old.is_current(&stored));
        assert!(!Keyring::new(Secret::new("a third secret, long enough"), vec![])
            .matches(&stored, "ada@example.com"));
        assert!(rotated.matches(&super::super::digest("x"), "x"));
    }
}
