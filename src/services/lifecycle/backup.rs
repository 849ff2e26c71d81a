//! `onceform backup --to DIR`: a consistent copy of what a deployment keeps, taken while it
//! runs. On SQLite: the database (SQLite's online backup API, `db::backup::sqlite_copy`:
//! the database as of one commit, never a copy of a file being written), then the file
//! store's blobs (written once under their digest by a rename, so never copied half-written),
//! the configuration file, and last the manifest (`manifest`). The database is copied first:
//! a blob it names was stored before the submission naming it committed, so it is there
//! when the blobs are copied (unless an erasure or retention deleted it in between, which
//! the report names).
//!
//! On PostgreSQL the database is the server's to copy: `backup` copies the blobs and the
//! configuration, and prints the `pg_dump` (and `pg_basebackup`) command to run, its URL
//! without a password; it never runs them. A dump already in the folder (taken first, as
//! the runbook's drill does) is checksummed into the manifest.
//!
//! The server secret is never copied: the manifest names it (where it came from, its public
//! version) so that a restore can tell whether the same one is in place.

use crate::config::FileStoreKind;
use std::path::{Path, PathBuf};

use super::manifest::{self, Entry, Manifest, SecretName, CONFIG, DATABASE, FILES, PG_DUMP};
use crate::base::secret::{self, SECRET_ENV};
use crate::config::{Config, DatabaseUrl, Secrets};
use crate::db::backup as db;
use crate::domain::is_sha256;

/// What `backup` did, one line each, for the operator.
pub type Report = Vec<String>;

/// Backs up the deployment `config` describes (its configuration file: `config_file`) into
/// `to`, a folder that must not exist or be empty (a dump taken first into it aside); the
/// server secret and the variables set are those of `secrets`, the environment at start.
pub fn backup(
    config: &Config,
    config_file: Option<&Path>,
    to: &Path,
    secrets: &Secrets,
) -> anyhow::Result<Report> {
    prepare(to, &config.database.url)?;
    let mut report = Vec::new();
    let (migration, mut files) = match &config.database.url {
        DatabaseUrl::Sqlite(path) => {
            let partial = to.join(format!(".{DATABASE}.partial"));
            db::sqlite_copy(path, &partial, true)?;
            private(&partial)?;
            std::fs::rename(&partial, to.join(DATABASE))?;
            let entry = Entry::of(to, DATABASE)?;
            report.push(format!("database: {} ({} bytes, SQLite online backup)", DATABASE, entry.size));
            (db::sqlite_migration(&to.join(DATABASE))?, vec![entry])
        }
        DatabaseUrl::Postgres(url) => {
            let migration = db::pg_migration(url)?;
            let mut files = Vec::new();
            match to.join(PG_DUMP).is_file() {
                true => {
                    files.push(Entry::of(to, PG_DUMP)?);
                    report.push(format!("database: {PG_DUMP} (the dump already in the folder, checksummed)"));
                }
                false => report.extend(pg_commands(url, to)),
            }
            (migration, files)
        }
    };
    let in_database = config.server.file_store(&config.database.url) == FileStoreKind::Database;
    let (blobs, skipped) = match in_database {
        true => (Vec::new(), 0),
        false => copy_blobs(Path::new(&config.server.files_dir), to)?,
    };
    match in_database {
        true => report.push("files: kept in the database (its dump holds them)".into()),
        false => report.push(format!("files: {} blob(s) from {}", blobs.len(), config.server.files_dir)),
    }
    if skipped > 0 {
        report.push(format!(
            "warning: {skipped} file(s) in the file store are not named by their content; left out"
        ));
    }
    if let DatabaseUrl::Sqlite(_) = config.database.url {
        let copied: std::collections::BTreeSet<&str> = blobs.iter().map(Entry::digest).collect();
        let named = db::sqlite_blobs_named(&to.join(DATABASE))?;
        let gone = named.iter().filter(|d| !copied.contains(d.as_str())).count();
        if gone > 0 {
            report.push(format!(
                "warning: {gone} file(s) the database names were not in the file store (deleted since, or lost)"
            ));
        }
    }
    files.extend(blobs);
    if let Some(file) = config_file {
        std::fs::copy(file, to.join(CONFIG))
            .map_err(|e| anyhow::anyhow!("cannot copy {}: {e}", file.display()))?;
        private(&to.join(CONFIG))?;
        files.push(Entry::of(to, CONFIG)?);
        report.push(format!("configuration: {} as {CONFIG}", file.display()));
    }
    let mut manifest = Manifest::new(config.database.url.backend(), migration, crate::base::clock::now());
    manifest.secret = secret_name(&config.server.secret_file, secrets)?;
    manifest.environment = environment_names(secrets);
    manifest.files = files;
    manifest.write(to)?;
    match &manifest.secret {
        Some(s) => report.push(format!(
            "secret: not copied; the digests are keyed with {} (from {}): keep it apart from this backup",
            s.version, s.from
        )),
        None => report.push("secret: none set yet".into()),
    }
    report.push(format!(
        "manifest: {} file(s) with their SHA-256, migration {}",
        manifest.files.len(),
        manifest.migration.as_deref().unwrap_or("none")
    ));
    Ok(report)
}

/// Creates `to` readable by its owner only (a backup holds personal data); refuses a folder
/// that holds anything but a PostgreSQL dump taken first.
fn prepare(to: &Path, url: &DatabaseUrl) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if to.exists() {
        let dump_first = matches!(url, DatabaseUrl::Postgres(_));
        let others = std::fs::read_dir(to)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", to.display()))?
            .flatten()
            .filter(|e| !(dump_first && e.file_name() == PG_DUMP))
            .count();
        anyhow::ensure!(others == 0, "{} is not empty: back up into a new folder", to.display());
    } else {
        std::fs::create_dir_all(to).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", to.display()))?;
    }
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700))?;
    Ok(())
}

/// Copies each blob of the file store at `files_dir` (`ab/abcdef…`; its `tmp/` and anything
/// not named by a digest left out) into `to/files/`, checking its content against its name.
/// Returns the entries and how many files were left out. A blob deleted while this runs
/// (the sweep, an erasure) is skipped.
fn copy_blobs(files_dir: &Path, to: &Path) -> anyhow::Result<(Vec<Entry>, usize)> {
    let mut entries = Vec::new();
    let mut skipped = 0;
    let Ok(shards) = std::fs::read_dir(files_dir) else { return Ok((entries, skipped)) };
    let mut blobs: Vec<PathBuf> = Vec::new();
    for shard in shards.flatten().filter(|s| s.file_name() != "tmp") {
        for blob in std::fs::read_dir(shard.path()).into_iter().flatten().flatten() {
            blobs.push(blob.path());
        }
    }
    blobs.sort();
    for blob in blobs {
        let name = blob.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let shard = blob.parent().and_then(Path::file_name).map(|s| s.to_string_lossy().into_owned());
        if !is_sha256(&name) || shard.as_deref() != Some(&name[..2]) {
            skipped += 1;
            continue;
        }
        let path = Entry::blob_path(&name);
        let target = to.join(&path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        match std::fs::copy(&blob, &target) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => anyhow::bail!("cannot copy {}: {e}", blob.display()),
        }
        private(&target)?;
        let entry = Entry::of(to, &path)?;
        if entry.sha256 != name {
            std::fs::remove_file(&target)?;
            skipped += 1;
            continue;
        }
        entries.push(entry);
    }
    if !entries.is_empty() {
        manifest::sync_dir(&to.join(FILES));
    }
    Ok((entries, skipped))
}

/// Makes a copied file readable by its owner only (`fs::copy` keeps the source's mode).
fn private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

/// The secret the process would key digests with, by name; `None` when none exists yet.
/// Never creates the secret file (as starting would). `secrets`: the environment.
pub fn secret_name(secret_file: &str, secrets: &Secrets) -> anyhow::Result<Option<SecretName>> {
    let from_env = secrets.non_empty(SECRET_ENV).map(str::to_string);
    let file = Path::new(secret_file);
    let from = match (&from_env, file.exists()) {
        (Some(_), _) => SECRET_ENV.to_string(),
        (None, true) => format!("server.secret_file {secret_file}"),
        (None, false) => return Ok(None),
    };
    let secret = secret::load_from(from_env, file)?;
    Ok(Some(SecretName { from, version: secret.version() }))
}

/// The names of the `ONCEFORM_*` variables set, sorted.
fn environment_names(secrets: &Secrets) -> Vec<String> {
    secrets.names().filter(|k| k.starts_with("ONCEFORM_")).map(str::to_string).collect()
}

/// The commands that copy the PostgreSQL database at `url` into `to`, its password left out.
fn pg_commands(url: &str, to: &Path) -> Vec<String> {
    let (shown, had_password) = without_password(url);
    let dump = to.join(PG_DUMP);
    let mut lines = vec![
        "database: not copied (PostgreSQL); run now, then `onceform backup` into a new folder for the files \
         (or dump first into this one: files attached in between are then in the backup too):"
            .to_string(),
        format!(
            "  pg_dump --format=custom --no-owner --file={} --dbname={}",
            shell_quote(&dump.to_string_lossy()),
            shell_quote(&shown)
        ),
        format!(
            "  or the whole server: pg_basebackup --pgdata={} --format=tar --gzip --wal-method=stream --dbname={}",
            shell_quote(&to.join("pg_basebackup").to_string_lossy()),
            shell_quote(&shown)
        ),
    ];
    if had_password {
        lines.push("  (the URL's password is left out: give it as PGPASSWORD or in ~/.pgpass)".into());
    }
    lines
}

/// `url` without its password and without the values of secret query parameters; and
/// whether it had a password.
pub fn without_password(url: &str) -> (String, bool) {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return (crate::config::redact_url(url), false);
    };
    let had = parsed.password().is_some();
    let _ = parsed.set_password(None);
    let secret = |k: &str| {
        ["password", "pass", "secret", "token", "sslpassword"].contains(&k.to_ascii_lowercase().as_str())
    };
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .filter(|(k, _)| !secret(k))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let had = had || parsed.query_pairs().any(|(k, _)| secret(&k));
    parsed.set_query(None);
    if !pairs.is_empty() {
        parsed.query_pairs_mut().extend_pairs(pairs);
    }
    (parsed.to_string(), had)
}

/// `text` as one shell word.
pub fn shell_quote(text: &str) -> String {
    let plain =
        !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    match plain {
        true => text.to_string(),
        false => format!("'{}'", text.replace('\'', "'\\''")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printed_url_has_no_password() {
        let (url, had) = without_password(
            "postgres://app:s3cr%40t@db.internal:5432/onceform?sslmode=require&password=x&connect_timeout=5",
        );
        assert!(had);
        assert_eq!(url, "postgres://app@db.internal:5432/onceform?sslmode=require&connect_timeout=5");
        assert!(!url.contains("s3cr") && !url.contains("password"));
        assert!(!without_password("postgres://app@h/db").1);
    }

    #[test]
    fn shell_words_are_quoted() {
        assert_eq!(shell_quote("/var/backups/onceform"), "/var/backups/onceform");
        assert_eq!(shell_quote("/tmp/it's here"), "'/tmp/it'\\''s here'");
        assert_eq!(shell_quote("postgres://a@h/db?x=1&y=2"), "'postgres://a@h/db?x=1&y=2'");
    }
}
