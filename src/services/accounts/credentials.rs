//! The rules of admin credentials: how an email is compared, argon2id password hashes, the
//! length every new password meets, and random tokens.

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use uuid::Uuid;

/// An email as sign-in, account creation and the throttle all see it.
pub fn normalise_email(email: &str) -> String {
    email.trim().to_lowercase()
}

pub fn hash_password(password: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("cannot hash the password: {e}"))
}

pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
}

/// A random token: two v4 UUIDs, 244 random bits, as hex.
pub fn random_token() -> String {
    format!("{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple())
}

/// The rule every new password meets.
pub fn check_password(password: &str) -> anyhow::Result<()> {
    if password.chars().count() < 12 {
        anyhow::bail!("the password needs at least 12 characters");
    }
    Ok(())
}

/// argon2id of a random string nobody knows: what an unknown email is verified against, and
/// the password of an account made by an OIDC sign-in (nobody signs in to it with a password
/// until an admin sets one).
pub const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Q2p0w1y8uKzT3n2c9m7kq8b0yX4VQ1c2H6xq9Zr1T0E";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_verify_only_themselves() {
        let h = hash_password("correct horse battery").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse battery", &h));
        assert!(!verify_password("wrong", &h));
        assert!(!verify_password("anything", DUMMY_HASH));
    }
}
