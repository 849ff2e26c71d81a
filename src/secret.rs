//! The server secret: `ONCEFORM_SECRET`, else generated once into a file readable by the
//! owner only, and HMAC-SHA-256 with it. Never logged, never printed.

use std::fmt;
use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Where `serve` keeps a generated secret when `ONCEFORM_SECRET` is unset.
pub const DEFAULT_FILE: &str = "./data/secret";

#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl Secret {
    pub fn new(text: &str) -> Secret {
        Secret(text.trim().as_bytes().to_vec())
    }

    /// HMAC-SHA-256 (RFC 2104) of `message`, as lower-case hex.
    pub fn hmac_hex(&self, message: &[u8]) -> String {
        hex(&hmac_sha256(&self.0, message))
    }

    /// A short public name of this secret (8 hex characters), stored beside the digests it
    /// keyed so that a rotated secret is recognised; it reveals nothing of the secret.
    pub fn version(&self) -> String {
        self.hmac_hex(b"onceform digest key version")[..8].to_string()
    }
}

/// The secret from `env_value` (the content of `ONCEFORM_SECRET`), else from `file`, which
/// is created with mode 0600 and 256 random bits when it does not exist.
pub fn load(env_value: Option<String>, file: &Path) -> anyhow::Result<Secret> {
    if let Some(v) = env_value.filter(|v| !v.trim().is_empty()) {
        anyhow::ensure!(v.trim().len() >= 16, "ONCEFORM_SECRET must have at least 16 characters");
        return Ok(Secret::new(&v));
    }
    for _ in 0..50 {
        match std::fs::read_to_string(file) {
            Ok(text) if !text.trim().is_empty() => return Ok(Secret::new(&text)),
            Ok(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create(file)?,
            Err(e) => anyhow::bail!("cannot read the secret file {}: {e}", file.display()),
        }
    }
    anyhow::bail!("the secret file {} stays empty", file.display())
}

/// Writes a fresh secret to a temporary file and links it into place: of several processes
/// starting at once, one wins and the others read its secret.
fn create(file: &Path) -> anyhow::Result<()> {
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".secret-{}", uuid::Uuid::new_v4().simple()));
    let text = format!("{}{}\n", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written =
        options.open(&tmp).and_then(|mut f| f.write_all(text.as_bytes()).and_then(|_| f.sync_all()));
    let linked = written.and_then(|_| match std::fs::hard_link(&tmp, file) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    });
    let _ = std::fs::remove_file(&tmp);
    linked.map_err(|e| anyhow::anyhow!("cannot write the secret file {}: {e}", file.display()))
}

fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2.
        let s = Secret(b"Jefe".to_vec());
        assert_eq!(
            s.hmac_hex(b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block.
        let s = Secret(vec![0xaa; 131]);
        assert_eq!(
            s.hmac_hex(b"Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn a_generated_secret_is_owner_only_and_stable() {
        let dir = std::env::temp_dir().join(format!("onceform-secret-{}", uuid::Uuid::new_v4().simple()));
        let file = dir.join("secret");
        let a = load(None, &file).unwrap();
        let b = load(None, &file).unwrap();
        assert_eq!(a.version(), b.version());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let from_env = load(Some("an operator's secret value".into()), &file).unwrap();
        assert_ne!(from_env.version(), a.version());
        assert!(load(Some("short".into()), &file).is_err());
        let _ = std::fs::remove_dir_all(dir);
    }
}
