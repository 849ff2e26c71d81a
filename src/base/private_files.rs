//! Files and folders only the server's user reads: what the server keeps of submissions (the
//! SQLite database, attached files, mail and lead files) is created mode 0600, in folders it
//! creates mode 0700, whatever the umask would let others read. Files and folders that
//! already exist keep their mode.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

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
