//! Attached files: received as a stream into the blob store (`store`), named in the
//! submission's fields by a `FileRef` (content digest, size, detected type, display name),
//! uploaded ahead by API clients (`upl_…` IDs, kept an hour), and swept when nothing uses
//! them any more.

pub mod chunks;
pub mod db_store;
pub mod gate;
pub mod links;
pub mod migrate;
pub mod store;

use std::sync::Arc;
use std::time::{Duration as StdDuration, SystemTime};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use chrono::{Duration, NaiveDateTime};

use crate::config::{
    DatabaseConfig, FileStoreKind, FormConfig, ScanMode, ScannerDown, ServerConfig, CLAMD_MAX_BYTES,
};
use crate::db::files::FileRefs;
use crate::db::models::Upload;
use crate::db::{DbConnection, DbError, Pool, Writes};
use crate::domain::{
    safe_file_name, Attached, FieldError, FieldErrors, FileRef, RawFields, ScanState, Scans,
};
use crate::services::scan::{ScanError, Scanner, ScannerAddr, Verdict};
pub use db_store::DbStore;
pub use links::FileLinks;
pub use store::{BlobStore, Incoming, LocalStore};

/// How long an upload waits for its submission (and how old an unused blob must be before
/// the sweep deletes it, so that a file being accepted right now is never swept).
pub const UPLOAD_TTL_MINUTES: i64 = 60;

/// The prefix of upload IDs, as a submission names them.
pub const UPLOAD_PREFIX: &str = "upl_";

/// How long one file's scan may take.
const SCAN_TIMEOUT: StdDuration = StdDuration::from_secs(30);

/// The file store and the scanner of the forms that scan.
#[derive(Clone)]
pub struct Files {
    store: Arc<dyn BlobStore>,
    /// `ONCEFORM_CLAMD`; `None`: not set (or not an address), so a scan finds it down.
    scanner: Option<Scanner>,
    /// Requests streaming files in at once (`[server] max_concurrent_uploads`); the others
    /// wait before their body is read, so the server's memory does not grow with them.
    streaming: Arc<Semaphore>,
    /// Signed links to files (`[server] public_url` set): what the generic CRM gets.
    links: Option<FileLinks>,
    /// The largest file clamd scans (`[server] clamd_max_bytes`).
    scan_limit: u64,
}

/// The default of `[server] max_concurrent_uploads`.
pub const CONCURRENT_UPLOADS: usize = 8;

impl Files {
    pub fn new(store: Arc<dyn BlobStore>, scanner: Option<Scanner>, max_concurrent: usize) -> Files {
        Files {
            store,
            scanner,
            streaming: Arc::new(Semaphore::new(max_concurrent.max(1))),
            links: None,
            scan_limit: CLAMD_MAX_BYTES,
        }
    }

    /// These files with `max` the largest file clamd scans.
    pub fn with_scan_limit(mut self, max: u64) -> Files {
        self.scan_limit = max;
        self
    }

    /// The largest file `form` takes where its own limit is `max`: no larger than clamd
    /// scans when the form scans (a longer stream would be a file clamd could not scan).
    pub fn file_limit(&self, form: &FormConfig, max: u64) -> u64 {
        match form.scan {
            ScanMode::Clamd => max.min(self.scan_limit),
            ScanMode::Off => max,
        }
    }

    /// These files with signed links to them.
    pub fn with_links(mut self, links: FileLinks) -> Files {
        self.links = Some(links);
        self
    }

    /// A signed link to `sha256` of `submission`, if there is a public URL to make it from.
    pub fn link(&self, submission: &str, sha256: &str) -> Option<String> {
        let now = chrono::Utc::now().timestamp();
        self.links.as_ref().map(|l| l.link(submission, sha256, now))
    }

    /// A turn to stream a request's files in, held while its body is read.
    pub async fn turn(&self) -> Option<OwnedSemaphorePermit> {
        self.streaming.clone().acquire_owned().await.ok()
    }

    /// The local folder store under `dir` (`[server] files_dir`), without a scanner.
    pub fn local(dir: &str) -> Files {
        Files::new(Arc::new(LocalStore::new(dir)), None, CONCURRENT_UPLOADS)
    }

    /// The store `[server] files` names with the database of `database` (its `blobs` tables,
    /// or the folder `files_dir`), without a scanner.
    pub fn stored(server: &ServerConfig, database: &DatabaseConfig) -> Files {
        Files::new(blob_store(server, database), None, CONCURRENT_UPLOADS)
    }

    /// The store and scanner `[server]` names (`files`, `files_dir`, `clamd`,
    /// `clamd_max_bytes`).
    pub fn of(server: &ServerConfig, database: &DatabaseConfig) -> Files {
        let scanner = server.clamd.as_deref().and_then(|a| ScannerAddr::parse(a).ok());
        Files::new(
            blob_store(server, database),
            scanner.map(|addr| Scanner::new(addr, SCAN_TIMEOUT)),
            server.max_concurrent_uploads,
        )
        .with_scan_limit(server.clamd_max_bytes)
    }

    /// The store of `kind`, whatever `[server] files` says (`files migrate`'s two ends).
    pub fn of_kind(kind: FileStoreKind, server: &ServerConfig, database: &DatabaseConfig) -> Files {
        let store: Arc<dyn BlobStore> = match kind {
            FileStoreKind::Database => Arc::new(DbStore::new(Pool::for_files(database))),
            FileStoreKind::Folder => Arc::new(LocalStore::new(&server.files_dir)),
        };
        Files::new(store, None, CONCURRENT_UPLOADS)
    }

    /// What the scanner says of each of `files`: nothing for a form that does not scan;
    /// else each file's state as `scan_state` reads its scan.
    pub async fn scan(&self, form: &FormConfig, files: &Attached) -> Scans {
        let mut scans = Scans::new();
        if form.scan != ScanMode::Clamd {
            return scans;
        }
        for (_, file) in files {
            let state = scan_state(&self.scan_blob(&file.sha256).await, form.when_scanner_down);
            scans.insert(file.sha256.clone(), state);
        }
        scans
    }

    /// clamd's verdict on one stored blob: `Unavailable` when there is no clamd to ask,
    /// `Unscannable` when clamd gave no verdict on it or the blob is not in the store.
    pub async fn scan_blob(&self, sha256: &str) -> Result<Verdict, ScanError> {
        let scanner = self
            .scanner
            .as_ref()
            .ok_or_else(|| ScanError::Unavailable("ONCEFORM_CLAMD is not set".into()))?;
        let verdict = match self.store.path(sha256) {
            Some(path) => scanner.scan_file(&path).await,
            None => self.scan_copy(scanner, sha256).await,
        };
        match &verdict {
            Ok(Verdict::Malware(name)) => tracing::warn!(signature = %name, "an attached file is malware"),
            Err(e) => tracing::warn!(error = %e, "an attached file could not be scanned"),
            Ok(Verdict::Clean) => {}
        }
        verdict
    }

    /// clamd's verdict on a blob not kept as a file (the database store): copied to a private
    /// temporary file (a piece at a time), scanned, deleted.
    async fn scan_copy(&self, scanner: &Scanner, sha256: &str) -> Result<Verdict, ScanError> {
        let (store, digest) = (self.store.clone(), sha256.to_string());
        let copy = tokio::task::spawn_blocking(move || -> std::io::Result<TempCopy> {
            let path = std::env::temp_dir().join(format!("onceform-scan-{}", uuid::Uuid::new_v4().simple()));
            let copy = TempCopy(path);
            let mut file = crate::base::private_files::create_new(&copy.0)?;
            std::io::copy(&mut store.open(&digest)?, &mut file)?;
            Ok(copy)
        })
        .await
        .map_err(|_| ScanError::Unscannable("the blocking pool is gone".into()))?
        .map_err(|_| ScanError::Unscannable("the file is not stored".into()))?;
        scanner.scan_file(&copy.0).await
    }

    pub fn store(&self) -> &dyn BlobStore {
        &*self.store
    }

    pub fn begin(&self) -> std::io::Result<Incoming> {
        self.store.begin()
    }

    /// Makes `incoming` durable (off the async threads: it fsyncs) and names it.
    pub async fn finish(&self, incoming: Incoming, name: &str) -> std::io::Result<FileRef> {
        let mut kept = self.keep(vec![(String::new(), Received::new(incoming, name))]).await?;
        Ok(kept.remove(0).1)
    }

    /// Makes each received file durable (off the async threads: it fsyncs), once the request
    /// it came with is known to be valid; returns them as that request's files.
    pub async fn keep(&self, received: Vec<(String, Received)>) -> std::io::Result<Attached> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || {
            received
                .into_iter()
                .map(|(field, r)| r.commit(&*store).map(|file| (field, file)))
                .collect::<std::io::Result<Attached>>()
        })
        .await
        .map_err(|_| std::io::Error::other("the blocking pool is gone"))?
    }
}

/// The store `[server] files` names.
fn blob_store(server: &ServerConfig, database: &DatabaseConfig) -> Arc<dyn BlobStore> {
    match server.file_store(&database.url) {
        FileStoreKind::Database => Arc::new(DbStore::new(Pool::for_files(database))),
        FileStoreKind::Folder => Arc::new(LocalStore::new(&server.files_dir)),
    }
}

/// A temporary copy of a blob, deleted when dropped.
struct TempCopy(std::path::PathBuf);

impl Drop for TempCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A file received in full but not yet in the store: the reference it will have, and its
/// bytes in a temporary file that goes when this is dropped (a refused request stores
/// nothing).
pub struct Received {
    pub file: FileRef,
    incoming: Incoming,
}

impl Received {
    /// `incoming`, sent under the file name `name` (made safe to show).
    pub fn new(incoming: Incoming, name: &str) -> Received {
        let file = FileRef {
            sha256: incoming.digest(),
            size: incoming.size(),
            content_type: incoming.content_type().to_string(),
            name: safe_file_name(name),
        };
        Received { file, incoming }
    }

    /// Makes the file durable in `store` (it fsyncs: off the async threads).
    pub fn commit(self, store: &dyn BlobStore) -> std::io::Result<FileRef> {
        store.commit(self.incoming)?;
        Ok(self.file)
    }
}

/// The state a file's scan leaves it in: `Clean` or `Malware` by clamd's verdict;
/// `Unscannable` (held, named for the admin) for a file clamd could not scan, whatever the
/// form says; while clamd is down, `Pending` (held for the rescan) or `Unscanned`
/// (delivered) as the form's `when_scanner_down` says.
pub fn scan_state(scan: &Result<Verdict, ScanError>, when_down: ScannerDown) -> ScanState {
    match scan {
        Ok(Verdict::Clean) => ScanState::Clean,
        Ok(Verdict::Malware(_)) => ScanState::Malware,
        Err(ScanError::Unscannable(_)) => ScanState::Unscannable,
        Err(ScanError::Unavailable(_)) if when_down == ScannerDown::Deliver => ScanState::Unscanned,
        Err(ScanError::Unavailable(_)) => ScanState::Pending,
    }
}

/// Records `file` as an upload to `form`; returns its ID.
pub fn record_upload(pool: &Pool, form: &str, file: &FileRef) -> Result<String, DbError> {
    let id = format!("{UPLOAD_PREFIX}{}", uuid::Uuid::new_v4().simple());
    let row = Upload {
        id: id.clone(),
        form: form.to_string(),
        sha256: file.sha256.clone(),
        size: i64::try_from(file.size).unwrap_or(i64::MAX),
        content_type: file.content_type.clone(),
        file_name: file.name.clone(),
        created_at: crate::base::clock::now(),
    };
    pool.get()?.insert_upload(&row)?;
    Ok(id)
}

/// Takes the values of `form`'s file fields out of `raw` and returns the files they name:
/// each must be the `upl_…` ID of an upload to `form` still kept. Any other value, or an
/// upload of another form or gone, is an `unknown_upload` of that field: a client names
/// uploads, never blobs. Empty values (no file chosen) name nothing.
pub fn resolve_uploads(
    pool: &Pool,
    form: &str,
    config: &FormConfig,
    raw: &mut RawFields,
) -> Result<Attached, ResolveError> {
    let is_file = |name: &str| config.field(name).is_some_and(|f| f.is_file());
    let (sent, text): (RawFields, RawFields) = std::mem::take(raw).into_iter().partition(|(n, _)| is_file(n));
    *raw = text;
    let sent: Vec<(String, String)> = sent.into_iter().filter(|(_, v)| !v.is_empty()).collect();
    let ids: Vec<&str> =
        sent.iter().map(|(_, v)| v.as_str()).filter(|v| v.starts_with(UPLOAD_PREFIX)).collect();
    let uploads = match ids.is_empty() {
        true => Vec::new(),
        false => pool
            .get()
            .map_err(ResolveError::Store)?
            .uploads_of(form, &ids)
            .map_err(|e| ResolveError::Store(e.into()))?,
    };
    let mut errors = FieldErrors::default();
    let mut files = Attached::with_capacity(sent.len());
    for (name, value) in &sent {
        match uploads.iter().find(|u| u.id == *value) {
            Some(u) => files.push((
                name.clone(),
                FileRef {
                    sha256: u.sha256.clone(),
                    size: u64::try_from(u.size).unwrap_or(0),
                    content_type: u.content_type.clone(),
                    name: u.file_name.clone(),
                },
            )),
            None => errors.add(name, FieldError::UnknownUpload),
        }
    }
    match errors.is_empty() {
        true => Ok(files),
        false => Err(ResolveError::Invalid(errors)),
    }
}

#[derive(Debug)]
pub enum ResolveError {
    Invalid(FieldErrors),
    Store(DbError),
}

/// How long a blob just written (or written again: the same content arriving) is kept even
/// when nothing names it yet: the request that wrote it may still be committing its
/// submission (the body deadline is at most 10 minutes).
pub const IN_FLIGHT: StdDuration = StdDuration::from_secs(15 * 60);

/// Forgets uploads past their hour and deletes the blobs nothing uses (written more than an
/// hour ago). Returns how many blobs went.
pub fn sweep(pool: &Pool, files: &Files, now: NaiveDateTime) -> Result<usize, DbError> {
    let cutoff = now - Duration::minutes(UPLOAD_TTL_MINUTES);
    pool.get()?.forget_uploads_before(cutoff)?;
    let age = StdDuration::from_secs(UPLOAD_TTL_MINUTES as u64 * 60);
    let candidates = files.store().older_than(SystemTime::now() - age).unwrap_or_default();
    release(pool, files, candidates, age)
}

/// Deletes those of `digests` that nothing uses any more and that were not written within
/// `min_age` (`IN_FLIGHT`; zero for an erasure, which does not wait); returns how many.
pub fn release(
    pool: &Pool,
    files: &Files,
    mut digests: Vec<String>,
    min_age: StdDuration,
) -> Result<usize, DbError> {
    digests.sort();
    digests.dedup();
    let settled = |d: &str| {
        min_age.is_zero() || files.store().modified(d).is_some_and(|t| t + min_age < SystemTime::now())
    };
    let mut gone = 0;
    for chunk in digests.chunks(500) {
        let used = pool.get()?.in_use(chunk)?;
        for d in chunk.iter().filter(|d| !used.contains(d) && settled(d)) {
            match files.store().remove(d) {
                Ok(()) => gone += 1,
                Err(e) => tracing::warn!(error = %e, "a file could not be deleted"),
            }
        }
    }
    Ok(gone)
}

impl std::fmt::Debug for Files {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Files")
    }
}

/// How many waiting files one rescan pass takes.
const RESCAN_BATCH: i64 = 100;

/// Scans the files that waited for clamd (`when_scanner_down = "hold"`): a clean one is
/// marked so, and its submission's effects are released once none of its files waits (and
/// no duplicate pair holds it); malware sets the submission aside as spam, its effects
/// cancelled; a file clamd could not scan is marked `Unscannable` (its submission stays
/// held, named for the admin) and the pass goes on. Stops only when clamd is down. Returns
/// the files given a state.
pub async fn rescan(writes: &Writes, files: &Files) -> Result<usize, DbError> {
    let pending = in_writes(writes, |c| Ok(c.pending_scans(RESCAN_BATCH)?)).await?;
    let mut scanned = 0;
    for file in pending {
        let state = match scan_state(&files.scan_blob(&file.sha256).await, ScannerDown::Hold) {
            ScanState::Pending => break,
            state => state,
        };
        in_writes(writes, move |c| {
            let (id, now) = (file.submission_id.as_str(), crate::base::clock::now());
            c.set_scan(id, &file.sha256, state)?;
            if state == ScanState::Malware {
                c.set_aside_as_malware(id, now)?;
            }
            c.release_scanned(id, now)?;
            Ok(())
        })
        .await?;
        scanned += 1;
    }
    Ok(scanned)
}

/// Runs `f` on the write path, off the async threads.
async fn in_writes<T: Send + 'static>(
    writes: &Writes,
    f: impl FnOnce(&mut DbConnection) -> Result<T, DbError> + Send + 'static,
) -> Result<T, DbError> {
    let writes = writes.clone();
    tokio::task::spawn_blocking(move || writes.run(f))
        .await
        .unwrap_or_else(|_| Err(DbError::Unavailable("blocking pool".into())))
}

/// `rescan` every `period`, for as long as the runtime runs (`serve`, when a form scans).
pub async fn rescan_every(writes: Writes, files: Files, period: StdDuration) {
    loop {
        tokio::time::sleep(period).await;
        match rescan(&writes, &files).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(files = n, "held files scanned"),
            Err(error) => tracing::warn!(%error, "rescan failed; trying again later"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a clamd that cannot be reached is "scanner down"; a file it could not scan is
    /// held whatever `when_scanner_down` says.
    #[test]
    fn a_file_clamd_could_not_scan_is_held_whatever_the_form_says() {
        let unscannable = || Err(ScanError::Unscannable("INSTREAM size limit exceeded. ERROR".into()));
        let down = || Err(ScanError::Unavailable("connecting: refused".into()));
        for when_down in [ScannerDown::Hold, ScannerDown::Deliver] {
            assert_eq!(scan_state(&unscannable(), when_down), ScanState::Unscannable);
            assert_eq!(scan_state(&Ok(Verdict::Clean), when_down), ScanState::Clean);
            assert_eq!(scan_state(&Ok(Verdict::Malware("x".into())), when_down), ScanState::Malware);
        }
        assert!(ScanState::Unscannable.holds() && ScanState::Pending.holds());
        assert_eq!(scan_state(&down(), ScannerDown::Hold), ScanState::Pending);
        assert_eq!(scan_state(&down(), ScannerDown::Deliver), ScanState::Unscanned);
        assert!(!ScanState::Unscanned.holds() && !ScanState::Clean.holds());
    }
}
