//! Files and folders only the server's user reads: what the server keeps of submissions (the
//! SQLite database, attached files, mail and lead files) is created mode 0600, in folders it
//! creates mode 0700, whatever the umask would let others read. Files and folders that
//! already exist keep their mode. `safe_name` turns a key into a file name.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use sha2::{Digest, Sha256};

/// Creates `dir` and its missing parents, each mode 0700.
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Creates the file `path` (it must not exist yet), mode 0600, open for writing.
pub fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)
}

/// Creates the file `path` (it must not exist yet), mode 0600, with `bytes` in it.
pub fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    create_new(path)?.write_all(bytes)
}

/// A file name for a key (a lead's reference, an email's effect key): everything but ASCII
/// letters, digits, `-` and `_` percent-encoded (one name per key, no path tricks, `a:1` and
/// `a_1` apart); a very long key by its SHA-256 instead, to stay within file name limits.
pub fn safe_name(key: &str, extension: &str) -> String {
    let mut name = String::with_capacity(key.len() + 8);
    for b in key.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' => name.push(b as char),
            _ => name.push_str(&format!("%{b:02X}")),
        }
    }
    if name.len() > 200 {
        let digest: String = Sha256::digest(key.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        name = format!("sha256-{digest}");
    }
    format!("{name}.{extension}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn files_and_folders_are_the_owners_only() {
        let base = std::env::temp_dir().join(format!("onceform-private-{}", uuid::Uuid::new_v4().simple()));
        let dir = base.join("a/b");
        create_dir_all(&dir).unwrap();
        create_dir_all(&dir).unwrap();
        write_new(&dir.join("f"), b"x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!([mode(&base), mode(&base.join("a")), mode(&dir)], [0o700; 3]);
        assert_eq!(mode(&dir.join("f")), 0o600);
        assert_eq!(write_new(&dir.join("f"), b"y").unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        std::fs::remove_dir_all(base).unwrap();
    }
}
