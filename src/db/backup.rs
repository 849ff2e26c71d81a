//! What `backup` and `restore` ask of the database: a consistent copy of a SQLite file taken
//! with SQLite's online backup API while the server writes to it, the latest migration a
//! database records (and the latest this binary knows), and whether a database holds rows.
//!
//! The copy uses `sqlite3_backup_*` on two connections of its own (opened here with
//! `sqlite3_open_v2`, not taken from diesel, which does not hand out its raw handle): one
//! `sqlite3_backup_step(-1)` copies every page inside one read transaction of the source, so
//! the copy is the database as of one commit; in WAL mode that read blocks no writer.
//! (`VACUUM INTO` would be as consistent, but it rebuilds the file instead of copying its
//! pages, and cannot write into a database that exists, as `restore` must.)

use std::ffi::{CStr, CString};
use std::path::Path;
use std::time::{Duration, Instant};

use diesel::prelude::*;
use libsqlite3_sys as ffi;

use super::{establish_pg, MIGRATIONS};

/// How long a copy waits for a lock (a checkpoint, a restore's writer) before it gives up.
const BUSY: Duration = Duration::from_secs(30);

/// Copies the SQLite database at `from` into `to` (created if missing, its content replaced
/// otherwise) as of one commit. `from` must exist; the server may be writing to it. The copy
/// is left in rollback-journal mode (one file, readable without its `-wal`); a copy into a
/// live database keeps that database's own mode.
pub fn sqlite_copy(from: &Path, to: &Path, rollback_journal: bool) -> anyhow::Result<()> {
    anyhow::ensure!(from.is_file(), "no SQLite database at {}", from.display());
    let source = Handle::open(from, ffi::SQLITE_OPEN_READWRITE)?;
    let target = Handle::open(to, ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE)?;
    let main = c"main";
    // SAFETY: both handles are open connections owned by this function (closed by their
    // drop, after the backup object is finished below); `main` is a NUL-terminated string
    // that outlives the call. sqlite3_backup_init returns null on error, with the error on
    // the destination handle.
    let backup = unsafe { ffi::sqlite3_backup_init(target.0, main.as_ptr(), source.0, main.as_ptr()) };
    if backup.is_null() {
        anyhow::bail!("cannot start copying {}: {}", from.display(), target.error());
    }
    let started = Instant::now();
    let step = loop {
        // SAFETY: `backup` is the live object returned above, not yet finished; -1 copies
        // every remaining page in one step, inside one read transaction of the source.
        let rc = unsafe { ffi::sqlite3_backup_step(backup, -1) };
        match rc {
            ffi::SQLITE_BUSY | ffi::SQLITE_LOCKED if started.elapsed() < BUSY => {
                std::thread::sleep(Duration::from_millis(50));
            }
            rc => break rc,
        }
    };
    // SAFETY: finishes (and frees) `backup` exactly once; it is not used afterwards.
    let finished = unsafe { ffi::sqlite3_backup_finish(backup) };
    if step != ffi::SQLITE_DONE || finished != ffi::SQLITE_OK {
        let code = if step != ffi::SQLITE_DONE { step } else { finished };
        anyhow::bail!("copying {} into {}: {}", from.display(), to.display(), describe(code));
    }
    if rollback_journal {
        target.exec("PRAGMA journal_mode = DELETE")?;
    }
    Ok(())
}

/// A connection opened with `sqlite3_open_v2`, closed on drop.
struct Handle(*mut ffi::sqlite3);

impl Handle {
    fn open(path: &Path, flags: i32) -> anyhow::Result<Handle> {
        let name = CString::new(path.to_string_lossy().as_bytes())
            .map_err(|_| anyhow::anyhow!("{} has a NUL byte", path.display()))?;
        let mut db = std::ptr::null_mut();
        // SAFETY: `name` is NUL-terminated and outlives the call; `db` receives a handle that
        // must be closed even when the open fails (SQLite allocates one for the message),
        // which the `Handle` made right below does.
        let rc = unsafe { ffi::sqlite3_open_v2(name.as_ptr(), &mut db, flags, std::ptr::null()) };
        let handle = Handle(db);
        if rc != ffi::SQLITE_OK {
            anyhow::bail!("cannot open SQLite database {}: {}", path.display(), handle.error());
        }
        // SAFETY: `db` is an open connection; the timeout is a plain integer.
        unsafe { ffi::sqlite3_busy_timeout(db, BUSY.as_millis() as i32) };
        Ok(handle)
    }

    /// The connection's last error message.
    fn error(&self) -> String {
        if self.0.is_null() {
            return "out of memory".into();
        }
        // SAFETY: the handle is open; sqlite3_errmsg returns a NUL-terminated string owned by
        // SQLite, valid until the next call on this handle, and copied at once.
        unsafe { CStr::from_ptr(ffi::sqlite3_errmsg(self.0)).to_string_lossy().into_owned() }
    }

    fn exec(&self, sql: &str) -> anyhow::Result<()> {
        let sql = CString::new(sql)?;
        // SAFETY: the handle is open, `sql` is NUL-terminated; no callback, no error buffer
        // (the message is read from the handle instead).
        let rc = unsafe {
            ffi::sqlite3_exec(self.0, sql.as_ptr(), None, std::ptr::null_mut(), std::ptr::null_mut())
        };
        match rc {
            ffi::SQLITE_OK => Ok(()),
            _ => anyhow::bail!("{}", self.error()),
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: closes the handle once; sqlite3_close accepts null. Every backup object on
        // it was finished before, so the close does not fail with SQLITE_BUSY.
        unsafe { ffi::sqlite3_close(self.0) };
    }
}

/// SQLite's text for a result code.
fn describe(code: i32) -> String {
    // SAFETY: sqlite3_errstr returns a static NUL-terminated string for any code.
    unsafe { CStr::from_ptr(ffi::sqlite3_errstr(code)).to_string_lossy().into_owned() }
}

#[derive(QueryableByName)]
struct Latest {
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    version: Option<String>,
}

/// The latest migration recorded in the SQLite database at `path` (`None`: never migrated).
pub fn sqlite_migration(path: &Path) -> anyhow::Result<Option<String>> {
    let mut conn = SqliteConnection::establish(&path.to_string_lossy())
        .map_err(|e| anyhow::anyhow!("cannot open SQLite database {}: {e}", path.display()))?;
    latest_recorded(&mut conn)
}

/// The latest migration recorded in the PostgreSQL database at `url`.
pub fn pg_migration(url: &str) -> anyhow::Result<Option<String>> {
    let mut conn = establish_pg(url)
        .map_err(|e| anyhow::anyhow!("cannot connect to PostgreSQL: {}", e.to_string().trim()))?;
    latest_recorded(&mut conn)
}

fn latest_recorded<C: Connection>(conn: &mut C) -> anyhow::Result<Option<String>>
where
    diesel::query_builder::SqlQuery: diesel::query_dsl::LoadQuery<'static, C, Latest>,
{
    let rows: Vec<Latest> =
        diesel::sql_query("SELECT MAX(version) AS version FROM __diesel_schema_migrations")
            .load(conn)
            .map_err(|e| anyhow::anyhow!("reading the migrations applied: {e}"))?;
    Ok(rows.into_iter().next().and_then(|r| r.version))
}

/// The latest migration embedded in this binary.
pub fn latest_known() -> anyhow::Result<String> {
    let embedded = diesel::migration::MigrationSource::<diesel::sqlite::Sqlite>::migrations(&MIGRATIONS)
        .map_err(|e| anyhow::anyhow!("reading the embedded migrations: {e}"))?;
    embedded
        .iter()
        .map(|m| m.name().version().to_string())
        .max()
        .ok_or_else(|| anyhow::anyhow!("no embedded migrations"))
}

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = diesel::sql_types::Text)]
    name: String,
}

#[derive(QueryableByName)]
struct Any {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    any: i32,
}

/// The tables of the SQLite database at `path` that hold a row (the migration record aside);
/// empty when the file does not exist.
pub fn sqlite_tables_with_rows(path: &Path) -> anyhow::Result<Vec<String>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let uri = format!("file:{}?mode=ro", path.display());
    let mut conn = SqliteConnection::establish(&uri)
        .map_err(|e| anyhow::anyhow!("cannot open SQLite database {}: {e}", path.display()))?;
    let tables: Vec<Name> = diesel::sql_query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
         AND name <> '__diesel_schema_migrations' ORDER BY name",
    )
    .load(&mut conn)?;
    let mut with_rows = Vec::new();
    for table in tables {
        let quoted = table.name.replace('"', "\"\"");
        let found: Vec<Any> = diesel::sql_query(format!("SELECT EXISTS (SELECT 1 FROM \"{quoted}\") AS any"))
            .load(&mut conn)?;
        if found.first().is_some_and(|r| r.any != 0) {
            with_rows.push(table.name);
        }
    }
    Ok(with_rows)
}

/// The blobs the SQLite database at `path` names (its submissions' files, its uploads).
pub fn sqlite_blobs_named(path: &Path) -> anyhow::Result<Vec<String>> {
    use super::schema::{submission_files, uploads};
    let uri = format!("file:{}?mode=ro", path.display());
    let mut conn = SqliteConnection::establish(&uri)
        .map_err(|e| anyhow::anyhow!("cannot open SQLite database {}: {e}", path.display()))?;
    let mut named: Vec<String> = submission_files::table.select(submission_files::sha256).load(&mut conn)?;
    named.extend(uploads::table.select(uploads::sha256).load::<String>(&mut conn)?);
    named.sort();
    named.dedup();
    Ok(named)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("onceform-dbbackup-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn a_copy_holds_the_committed_rows_and_is_one_file() {
        let from = temp("live.db");
        let mut live = SqliteConnection::establish(&from.to_string_lossy()).unwrap();
        diesel::connection::SimpleConnection::batch_execute(
            &mut live,
            "PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);",
        )
        .unwrap();
        let to = temp("copy.db");
        sqlite_copy(&from, &to, true).unwrap();
        assert!(!to.with_extension("db-wal").exists());
        assert_eq!(sqlite_tables_with_rows(&to).unwrap(), ["t"]);
        assert_eq!(sqlite_tables_with_rows(&temp("none.db")).unwrap(), Vec::<String>::new());
        let missing = sqlite_copy(&temp("missing.db"), &temp("x.db"), true).unwrap_err();
        assert!(missing.to_string().contains("no SQLite database"), "{missing}");
    }
}
