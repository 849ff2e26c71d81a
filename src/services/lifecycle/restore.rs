//! `onceform restore --from DIR [--force]`: brings a backup (`backup`) back into the
//! deployment the configuration describes. Before it touches anything it reads the manifest,
//! refuses a backup this binary cannot take (another layout, another release series, a schema
//! newer than its migrations, another backend), checks every file against its SHA-256, and
//! refuses to replace a database that holds rows unless `--force`. Then, on SQLite, it
//! copies the database in with SQLite's backup API (the server must be stopped: a running
//! one would keep answering from what it holds in memory) and the blobs into the file store
//! (each written as the store writes one: a temporary file renamed under its digest). On
//! PostgreSQL it restores the blobs and prints the `pg_restore` command to run; with
//! `files = "database"` the files are in the dump (a folder backup's blobs still go to
//! `files_dir`, and the report says to move them in with `files migrate`).
//!
//! The secret is not in a backup: restore tells whether the one in place is the one the
//! backup's digests were keyed with. Another one still works (the next start re-keys each
//! stored row from its content), except for rows whose content was purged.

use std::io::Read;
use std::path::Path;

use super::backup::{secret_name, shell_quote, without_password};
use super::manifest::{Manifest, CONFIG, DATABASE, PG_DUMP};
use crate::base::secret::{Secret, PREVIOUS_SECRET_ENV};
use crate::config::{Config, DatabaseUrl, FileStoreKind, Secrets};
use crate::db::backup as db;
use crate::services::files::{BlobStore, LocalStore};

/// What `restore` did, one line each.
pub type Report = Vec<String>;

/// Restores the backup in `from` into the deployment of `config` (its configuration file:
/// `config_file`); `force` replaces a database that holds rows. The secret in place is read
/// from `secrets`, the environment at start.
pub fn restore(
    config: &Config,
    config_file: Option<&Path>,
    from: &Path,
    force: bool,
    secrets: &Secrets,
) -> anyhow::Result<Report> {
    let manifest = Manifest::read(from)?;
    let latest = db::latest_known()?;
    manifest
        .check_compatible(&latest, config.database.url.backend())
        .map_err(|e| anyhow::anyhow!("{}: {e}", from.display()))?;
    let problems = manifest.verify(from);
    if !problems.is_empty() {
        anyhow::bail!(
            "{} does not match its manifest, nothing restored: {}",
            from.display(),
            problems.join("; ")
        );
    }
    let mut report = Vec::new();
    match &config.database.url {
        DatabaseUrl::Sqlite(path) => {
            anyhow::ensure!(
                manifest.entry(DATABASE).is_some(),
                "{}: the manifest lists no {DATABASE}",
                from.display()
            );
            let rows = db::sqlite_tables_with_rows(path)?;
            if !rows.is_empty() && !force {
                anyhow::bail!(
                    "{} holds data (in {}): restore into an empty database, or pass --force to replace it \
                     (with the server stopped)",
                    path.display(),
                    rows.join(", ")
                );
            }
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| {
                    anyhow::anyhow!("cannot create database directory {}: {e}", dir.display())
                })?;
            }
            db::sqlite_copy(&from.join(DATABASE), path, false)?;
            report.push(format!(
                "database: {} restored (migration {}); the next start applies newer migrations",
                path.display(),
                manifest.migration.as_deref().unwrap_or("none")
            ));
        }
        DatabaseUrl::Postgres(url) => report.extend(pg_restore(&manifest, url, from, force)),
    }
    let restored = restore_blobs(&manifest, from, &config.server.files_dir)?;
    let in_database = config.server.file_store(&config.database.url) == FileStoreKind::Database;
    report.push(match (in_database, restored) {
        (true, 0) => "files: kept in the database (its dump holds them)".into(),
        (true, n) => format!(
            "files: {n} blob(s) into {}; this configuration keeps files in the database: once the dump is \
             restored, run `onceform files migrate --to database`",
            config.server.files_dir
        ),
        (false, n) => format!("files: {n} blob(s) into {}", config.server.files_dir),
    });
    report.push(secret_check(&manifest, &config.server.secret_file, secrets)?);
    if manifest.entry(CONFIG).is_some() {
        let same = config_file.is_some_and(|f| same_content(f, &from.join(CONFIG)));
        if !same {
            report.push(format!(
                "configuration: the backup's is {} (not installed: compare it with the one in use)",
                from.join(CONFIG).display()
            ));
        }
    }
    if !manifest.environment.is_empty() {
        report.push(format!("environment when it was taken: {}", manifest.environment.join(", ")));
    }
    Ok(report)
}

/// Writes each blob of the backup into the file store at `files_dir` (a temporary file
/// renamed under its digest); returns how many.
fn restore_blobs(manifest: &Manifest, from: &Path, files_dir: &str) -> anyhow::Result<usize> {
    let store = LocalStore::new(files_dir);
    let mut restored = 0;
    for entry in manifest.blobs() {
        let mut incoming = store.begin()?;
        let mut file = std::fs::File::open(entry.local_path(from))?;
        let mut buf = vec![0; 64 * 1024];
        loop {
            let n = file.read(&mut buf)?;
            if n == 0 {
                break;
            }
            incoming.write(&buf[..n])?;
        }
        let digest = store.commit(incoming)?;
        anyhow::ensure!(digest == entry.digest(), "{} changed while it was restored", entry.path);
        restored += 1;
    }
    Ok(restored)
}

/// The PostgreSQL part: the dump is the operator's to restore; the command, without a password.
fn pg_restore(manifest: &Manifest, url: &str, from: &Path, force: bool) -> Vec<String> {
    let (shown, had_password) = without_password(url);
    let dump = from.join(PG_DUMP);
    let mut lines = Vec::new();
    match (manifest.entry(PG_DUMP).is_some(), dump.is_file()) {
        (true, _) => lines.push(format!("database: {PG_DUMP} checked; restore it (with the servers stopped):")),
        (false, true) => lines.push(format!(
            "database: {PG_DUMP} is not in the manifest (dumped after the backup), so not checked; restore it \
             (with the servers stopped):"
        )),
        (false, false) => {
            lines.push(format!("database: no {PG_DUMP} in {}: restore the dump you took for it", from.display()));
            return lines;
        }
    }
    let clean = if force { " --clean --if-exists" } else { "" };
    lines.push(format!(
        "  pg_restore --no-owner{clean} --dbname={} {}",
        shell_quote(&shown),
        shell_quote(&dump.to_string_lossy())
    ));
    if had_password {
        lines.push("  (the URL's password is left out: give it as PGPASSWORD or in ~/.pgpass)".into());
    }
    lines
}

/// Whether the secret in place keyed the backup's digests (or is the one before a rotation).
fn secret_check(manifest: &Manifest, secret_file: &str, secrets: &Secrets) -> anyhow::Result<String> {
    let Some(backup) = &manifest.secret else {
        return Ok("secret: the backup names none".into());
    };
    let previous =
        secrets.get(PREVIOUS_SECRET_ENV).filter(|v| !v.trim().is_empty()).map(|p| Secret::new(p).version());
    let ours = secret_name(secret_file, secrets)?;
    Ok(match ours {
        Some(s) if s.version == backup.version => format!("secret: {} is the backup's ({})", s.from, s.version),
        _ if previous.as_deref() == Some(backup.version.as_str()) => format!(
            "secret: the backup's ({}) is ONCEFORM_SECRET_PREVIOUS; the next start re-keys the rows",
            backup.version
        ),
        Some(s) => format!(
            "warning: the backup's digests were keyed with secret {} (from {}) and {} holds {}: the next start \
             re-keys each row from its content, but purged rows keep the old key; set ONCEFORM_SECRET to the \
             backup's secret (or ONCEFORM_SECRET_PREVIOUS) to keep them",
            backup.version, backup.from, s.from, s.version
        ),
        None => format!(
            "warning: no secret is in place; the backup's digests were keyed with {} (from {}): set \
             ONCEFORM_SECRET (or put the secret file back) before the first start",
            backup.version, backup.from
        ),
    })
}

fn same_content(a: &Path, b: &Path) -> bool {
    matches!((std::fs::read(a), std::fs::read(b)), (Ok(x), Ok(y)) if x == y)
}
