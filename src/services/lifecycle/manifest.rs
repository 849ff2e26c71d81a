//! A backup's `manifest.json`: which onceform wrote it, the schema's migration, the
//! secret's public name (never its value), the names of the `ONCEFORM_*` variables that were
//! set, and each file of the backup with its size and SHA-256. It is written last, so a
//! folder without one is a backup that did not finish. `restore` reads it, refuses what this
//! binary cannot take, and checks every file against it before it touches anything.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::domain::is_sha256;

/// The manifest's name in a backup folder.
pub const MANIFEST: &str = "manifest.json";
/// The SQLite database's copy.
pub const DATABASE: &str = "onceform.db";
/// Where the printed `pg_dump` writes (PostgreSQL).
pub const PG_DUMP: &str = "onceform.pgdump";
/// The configuration file's copy, when the process was given one.
pub const CONFIG: &str = "onceform.toml";
/// The file store's blobs, as the store lays them out (`files/ab/abcdef…`).
pub const FILES: &str = "files";

/// The layout of this manifest; a later layout is refused by this binary.
const FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    /// The version of the onceform that wrote it (`CARGO_PKG_VERSION`).
    pub onceform: String,
    /// When the backup was taken (UTC, RFC 3339).
    pub created_at: String,
    /// `sqlite` or `postgres`.
    pub backend: String,
    /// The latest migration the database had applied (`None`: never migrated).
    pub migration: Option<String>,
    /// The server secret that keyed the stored digests, by its public name.
    pub secret: Option<SecretName>,
    /// The `ONCEFORM_*` variables set for the process that took it (names, never values).
    pub environment: Vec<String>,
    /// Every file of the backup but this one.
    pub files: Vec<Entry>,
}

/// Where the secret came from and its public name (`Secret::version`: 8 hex characters that
/// reveal nothing of it). The value is never written into a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretName {
    /// `ONCEFORM_SECRET`, or `server.secret_file` and its path.
    pub from: String,
    pub version: String,
}

/// One file of the backup, by its path inside the folder (with `/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub path: String,
    pub size: u64,
    pub sha256: String,
}

impl Manifest {
    pub fn new(backend: &str, migration: Option<String>, now: chrono::NaiveDateTime) -> Manifest {
        Manifest {
            format: FORMAT,
            onceform: env!("CARGO_PKG_VERSION").to_string(),
            created_at: crate::base::format::rfc3339(now),
            backend: backend.to_string(),
            migration,
            secret: None,
            environment: Vec::new(),
            files: Vec::new(),
        }
    }

    /// The manifest of the backup in `dir`.
    pub fn read(dir: &Path) -> anyhow::Result<Manifest> {
        let path = dir.join(MANIFEST);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                anyhow::bail!("{} has no {MANIFEST}: not a finished backup", dir.display())
            }
            Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
        };
        serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{} is not a backup manifest: {e}", path.display()))
    }

    /// Writes it into `dir` (a temporary file renamed into place, both synced).
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        let tmp = dir.join(format!(".{MANIFEST}.partial"));
        write_synced(&tmp, text.as_bytes())?;
        std::fs::rename(&tmp, dir.join(MANIFEST))?;
        sync_dir(dir);
        Ok(())
    }

    /// Whether this binary can restore it: a manifest of this layout, from this release
    /// series (the same major version; for 0.x, the same 0.x), of a schema no newer than the
    /// latest migration this binary knows (`latest`), for the configured backend.
    pub fn check_compatible(&self, latest: &str, backend: &str) -> Result<(), String> {
        if self.format != FORMAT {
            return Err(format!(
                "the manifest's format {} is not {FORMAT}, the one this onceform reads",
                self.format
            ));
        }
        let ours = env!("CARGO_PKG_VERSION");
        if series(&self.onceform) != series(ours) {
            return Err(format!(
                "the backup was taken by onceform {} and this is {ours}: restore it with a {} release",
                self.onceform,
                series(&self.onceform)
            ));
        }
        if let Some(m) = self.migration.as_deref().filter(|m| *m > latest) {
            return Err(format!(
                "the backup's schema (migration {m}) is newer than this onceform knows ({latest}): restore it \
                 with the release that took it"
            ));
        }
        if self.backend != backend {
            return Err(format!(
                "the backup is of a {} database and the configured one is {backend}",
                self.backend
            ));
        }
        Ok(())
    }

    /// Checks every file the manifest lists under `dir`: a path of the backup's own layout,
    /// present, of its size and SHA-256. Returns the problems (empty: all good).
    pub fn verify(&self, dir: &Path) -> Vec<String> {
        let mut problems = Vec::new();
        for entry in &self.files {
            if let Err(e) = entry.allowed() {
                problems.push(e);
                continue;
            }
            match digest_file(&dir.join(&entry.path)) {
                Ok((size, sha256)) if size == entry.size && sha256 == entry.sha256 => {}
                Ok(_) => problems.push(format!("{}: its content is not what the manifest says", entry.path)),
                Err(e) => problems.push(format!("{}: {e}", entry.path)),
            }
        }
        problems
    }

    /// The entry at `path`, if listed.
    pub fn entry(&self, path: &str) -> Option<&Entry> {
        self.files.iter().find(|e| e.path == path)
    }

    /// The blobs listed (their digests).
    pub fn blobs(&self) -> impl Iterator<Item = &Entry> {
        self.files.iter().filter(|e| e.path.starts_with(&format!("{FILES}/")))
    }
}

impl Entry {
    /// The entry of the file at `dir/path`, read now.
    pub fn of(dir: &Path, path: &str) -> std::io::Result<Entry> {
        let (size, sha256) = digest_file(&dir.join(path))?;
        Ok(Entry { path: path.to_string(), size, sha256 })
    }

    /// The path of a blob with this digest inside the backup.
    pub fn blob_path(sha256: &str) -> String {
        format!("{FILES}/{}/{sha256}", &sha256[..2])
    }

    /// Only the backup's own files: the database, the dump, the configuration, and blobs
    /// named by their digest; never a path that leaves the folder.
    fn allowed(&self) -> Result<(), String> {
        let plain = Path::new(&self.path).components().all(|c| matches!(c, Component::Normal(_)));
        let ok = plain
            && match self.path.as_str() {
                DATABASE | PG_DUMP | CONFIG => true,
                p => is_sha256(&self.sha256) && p == Entry::blob_path(&self.sha256),
            };
        match ok {
            true => Ok(()),
            false => Err(format!("{:?}: not a file a backup holds", self.path)),
        }
    }

    /// Its digest, for a blob.
    pub fn digest(&self) -> &str {
        &self.sha256
    }

    pub fn local_path(&self, dir: &Path) -> PathBuf {
        dir.join(&self.path)
    }
}

/// `1.4.2` → `1`; `0.3.1` → `0.3`.
fn series(version: &str) -> String {
    let mut parts = version.split('.');
    match (parts.next(), parts.next()) {
        (Some("0"), Some(minor)) => format!("0.{minor}"),
        (Some(major), _) => major.to_string(),
        _ => version.to_string(),
    }
}

/// The size and SHA-256 (lower-case hex) of the file at `path`.
pub fn digest_file(path: &Path) -> std::io::Result<(u64, String)> {
    let mut file = std::fs::File::open(path)?;
    let mut hash = Sha256::new();
    let mut buf = vec![0; 64 * 1024];
    let mut size = 0;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
        size += n as u64;
    }
    Ok((size, hash.finalize().iter().map(|b| format!("{b:02x}")).collect()))
}

/// Writes `bytes` to a new file readable by its owner only, synced.
pub fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file =
        std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// A rename or a new file is durable once its folder is synced (best effort).
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, sha256: &str) -> Entry {
        Entry { path: path.into(), size: 0, sha256: sha256.into() }
    }

    #[test]
    fn only_the_backups_own_paths_are_allowed() {
        let sha = "ab".repeat(32);
        assert!(entry(DATABASE, "x").allowed().is_ok());
        assert!(entry(&format!("files/ab/{sha}"), &sha).allowed().is_ok());
        for bad in ["../onceform.db", "/etc/passwd", "files/ab/../../x", "files/cd/abab", "secret"] {
            assert!(entry(bad, &sha).allowed().is_err(), "{bad}");
        }
        assert!(
            entry(&format!("files/ab/{sha}"), &"cd".repeat(32)).allowed().is_err(),
            "named by its digest"
        );
    }

    #[test]
    fn a_later_series_or_schema_or_another_backend_is_refused() {
        let now = chrono::NaiveDate::from_ymd_opt(2026, 1, 2).unwrap().and_hms_opt(3, 4, 5).unwrap();
        let m = Manifest::new("sqlite", Some("2026-01-01-000000".into()), now);
        assert_eq!(m.created_at, "2026-01-02T03:04:05Z");
        assert!(m.check_compatible("2026-01-01-000000", "sqlite").is_ok());
        assert!(m.check_compatible("2025-12-31-000000", "sqlite").unwrap_err().contains("newer"));
        assert!(m.check_compatible("2026-01-01-000000", "postgres").unwrap_err().contains("postgres"));
        let other = Manifest { onceform: "7.0.0".into(), ..m.clone() };
        assert!(other.check_compatible("2026-01-01-000000", "sqlite").unwrap_err().contains("7.0.0"));
        let later = Manifest { format: FORMAT + 1, ..m };
        assert!(later.check_compatible("2026-01-01-000000", "sqlite").is_err());
        assert_eq!((series("0.3.1"), series("1.4.2"), series("2")), ("0.3".into(), "1".into(), "2".into()));
    }
}
