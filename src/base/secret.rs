//! The server secret: from `ONCEFORM_SECRET`, else generated once into `server.secret_file`
//! (`./data/secret`, mode 0600). Keys for stamps, challenges and digests derive from it.

use std::io::Write;
use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// 32 secret bytes; never printed.
#[derive(Clone)]
pub struct Secret([u8; 32]);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// The environment variable that, when set, supplies the secret.
pub const SECRET_ENV: &str = "ONCEFORM_SECRET";

/// The environment variable holding the secret before a rotation.
pub const PREVIOUS_SECRET_ENV: &str = "ONCEFORM_SECRET_PREVIOUS";

/// The server secret of the file `secret_file` (`server.secret_file`), created with a random
/// secret the first time: the one the server keys with when `ONCEFORM_SECRET` is unset.
pub fn load(secret_file: &str) -> anyhow::Result<Secret> {
    load_from(None, Path::new(secret_file))
}

/// The server secret: `env` (the value of `ONCEFORM_SECRET`, at least 16 characters) when
/// set, else the file `file`, created with a random secret the first time.
pub fn load_from(env: Option<String>, file: &Path) -> anyhow::Result<Secret> {
    if let Some(value) = env.filter(|v| !v.is_empty()) {
        anyhow::ensure!(value.len() >= 16, "{SECRET_ENV} must be at least 16 characters");
        return Ok(Secret::from_material(value.as_bytes()));
    }
    match std::fs::read(file) {
        Ok(bytes) => return secret_from_file(&bytes, file),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => anyhow::bail!("cannot read the secret file {}: {e}", file.display()),
    }
    create(file)
}

fn secret_from_file(bytes: &[u8], file: &Path) -> anyhow::Result<Secret> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    anyhow::ensure!(text.len() >= 16, "the secret file {} is too short", file.display());
    Ok(Secret::from_material(text.as_bytes()))
}

/// Writes a fresh secret to a private temporary file and links it into place, so that
/// processes starting at once all end up with the one that won.
fn create(file: &Path) -> anyhow::Result<Secret> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    super::private_files::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".secret-{}", uuid::Uuid::new_v4().simple()));
    let value: String = (0..2).map(|_| uuid::Uuid::new_v4().simple().to_string()).collect();
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(value.as_bytes()).and_then(|_| f.sync_all()));
    let linked = written.and_then(|_| std::fs::hard_link(&tmp, file));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(Secret::from_material(value.as_bytes())),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let bytes = std::fs::read(file)
                .map_err(|e| anyhow::anyhow!("cannot read the secret file {}: {e}", file.display()))?;
            secret_from_file(&bytes, file)
        }
        Err(e) => anyhow::bail!("cannot write the secret file {}: {e}", file.display()),
    }
}

impl Secret {
    /// The secret whose text is `text` (as in `ONCEFORM_SECRET` or the secret file).
    pub fn new(text: &str) -> Secret {
        Secret::from_material(text.trim().as_bytes())
    }

    /// The keyed digest of personal data: HMAC-SHA-256 of `message`, as lower-case hex.
    pub fn hmac_hex(&self, message: &[u8]) -> String {
        self.sign("digest", &[message]).iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A short public name of this secret (8 hex characters), stored beside the digests it
    /// keyed so that a rotated secret is recognised; it reveals nothing of the secret.
    pub fn version(&self) -> String {
        self.sign("digest key version", &[]).iter().take(4).map(|b| format!("{b:02x}")).collect()
    }

    fn from_material(material: &[u8]) -> Secret {
        Secret(Sha256::digest(material).into())
    }

    /// A secret for tests and tools.
    pub fn from_bytes(bytes: [u8; 32]) -> Secret {
        Secret(bytes)
    }

    /// HMAC-SHA256 under a key derived for `purpose`, over `parts` separated by NUL bytes.
    pub fn sign(&self, purpose: &str, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = self.keyed(purpose);
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                mac.update(&[0]);
            }
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }

    /// Whether `tag` is `sign(purpose, parts)` (or its first `tag.len()` bytes, at least 16),
    /// compared in constant time.
    pub fn verify(&self, purpose: &str, parts: &[&[u8]], tag: &[u8]) -> bool {
        if tag.len() < 16 || tag.len() > 32 {
            return false;
        }
        let mut mac = self.keyed(purpose);
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                mac.update(&[0]);
            }
            mac.update(part);
        }
        mac.verify_truncated_left(tag).is_ok()
    }

    fn keyed(&self, purpose: &str) -> Hmac<Sha256> {
        let mut derive = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).unwrap_or_else(|_| unreachable!());
        derive.update(purpose.as_bytes());
        let key = derive.finalize().into_bytes();
        <Hmac<Sha256> as Mac>::new_from_slice(&key).unwrap_or_else(|_| unreachable!())
    }
}

/// Whether two secrets (tokens, CSRF values) are equal, in time that does not depend on where
/// they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_once_then_read_back_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("onceform-secret-{}", uuid::Uuid::new_v4().simple()));
        let file = dir.join("secret");
        let a = load_from(None, &file).unwrap();
        let b = load_from(None, &file).unwrap();
        assert_eq!(a.0, b.0);
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        let c = load_from(Some("an operator-chosen secret".into()), &file).unwrap();
        assert_ne!(a.0, c.0);
        assert!(load_from(Some("short".into()), &file).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn signatures_depend_on_purpose_and_parts() {
        let s = Secret::from_bytes([7; 32]);
        let tag = s.sign("stamp", &[b"contact", b"1700000000"]);
        assert!(s.verify("stamp", &[b"contact", b"1700000000"], &tag));
        assert!(s.verify("stamp", &[b"contact", b"1700000000"], &tag[..16]));
        assert!(!s.verify("stamp", &[b"contact", b"1700000001"], &tag));
        assert!(!s.verify("altcha", &[b"contact", b"1700000000"], &tag));
        assert!(!s.verify("stamp", &[b"contact", b"1700000000"], &tag[..8]));
        assert!(!format!("{s:?}").contains('7'));
    }
}
