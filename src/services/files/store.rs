//! Where the bytes of attached files live: one blob per SHA-256 of its content, written
//! atomically (a temporary file, fsynced, renamed into place; a blob already there is kept),
//! readable by the server's user only (`base::private_files`).
//! `BlobStore` is the seam for another store (an object store); `LocalStore` is a folder,
//! `DbStore` (`db_store`) the database's `blobs` tables.
//!
//! Several processes (a PostgreSQL deployment's web and worker nodes) share one store by
//! sharing the folder (an NFS or similar mount): names are content digests, so two writers
//! of one blob write the same bytes, and a rename is atomic within the folder.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::base::private_files;
use crate::domain::is_sha256;

/// A blob being written: its bytes so far, their digest and count.
pub struct Incoming {
    sink: Sink,
    hash: Sha256,
    size: u64,
    /// The first bytes, from which the type is decided.
    head: Vec<u8>,
}

/// How many first bytes the type detection reads.
pub const HEAD: usize = 8192;

/// Bytes gathered before each write to the temporary file. A connection hands the body on in
/// pieces of its 16 KiB read window (`web::http::read_credit`); written as they came, a
/// streamed upload cost the server about 7 % more CPU (docs/benchmarks/history.md, fifteenth
/// session).
/// One such buffer per upload streaming in, and those are bounded (`max_concurrent_uploads`).
/// Not smaller: it is freed on a blocking thread (the commit), and a buffer of up to 32 KiB
/// stays in that thread's allocator cache (32 KiB buffers: 8 MiB more at 64 uploads).
const WRITE_BUFFER: usize = 64 * 1024;

impl Incoming {
    pub fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        if self.head.len() < HEAD {
            let take = (HEAD - self.head.len()).min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
        }
        self.hash.update(chunk);
        self.size += chunk.len() as u64;
        match &mut self.sink {
            Sink::Folder { file, .. } => file.write_all(chunk),
            Sink::Database(chunks) => chunks.write(chunk),
            Sink::Done => Err(io::Error::other("the blob is committed")),
        }
    }

    /// A full chunk of a blob bound for the database, taken to be stored off the async
    /// threads (`FullChunk::store`); `None` for the folder store, whose writes are buffered.
    pub fn full_chunk(&mut self) -> Option<super::chunks::FullChunk> {
        match &mut self.sink {
            Sink::Database(chunks) => chunks.full(),
            Sink::Folder { .. } | Sink::Done => None,
        }
    }

    /// A blob written into `sink`.
    pub(super) fn into(sink: Sink) -> Incoming {
        Incoming { sink, hash: Sha256::new(), size: 0, head: Vec::new() }
    }

    /// The digest of the whole blob and the sink it went to (the end of a write).
    pub(super) fn finish(mut self) -> (String, u64, Sink) {
        let sha256 = hex(std::mem::take(&mut self.hash));
        let sink = std::mem::replace(&mut self.sink, Sink::Done);
        (sha256, self.size, sink)
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// The SHA-256 of the bytes so far, as lower-case hex (the name `commit` would give).
    pub fn digest(&self) -> String {
        hex(self.hash.clone())
    }

    /// The content's type, from its first bytes (`application/octet-stream` when unknown,
    /// `text/plain` for UTF-8 text).
    pub fn content_type(&self) -> &'static str {
        content_type_of(&self.head)
    }
}

/// The type of content that starts with `head` (its first `HEAD` bytes, or all of it):
/// `application/octet-stream` when unknown, `text/plain` for UTF-8 text.
pub fn content_type_of(head: &[u8]) -> &'static str {
    let head = &head[..head.len().min(HEAD)];
    // UTF-8 text, its last character perhaps cut by the end of `head`.
    let text = std::str::from_utf8(head).map_or_else(|e| e.error_len().is_none(), |_| true);
    match infer::get(head) {
        Some(t) => t.mime_type(),
        None if text => "text/plain",
        None => "application/octet-stream",
    }
}

/// Where the bytes of a blob being written go.
pub(super) enum Sink {
    /// A temporary file in the folder store.
    Folder { file: io::BufWriter<std::fs::File>, path: PathBuf },
    /// Chunks under a temporary key in the database.
    Database(super::chunks::Chunks),
    /// Committed (or given up): nothing to clean up.
    Done,
}

pub trait BlobStore: Send + Sync {
    /// A new blob to write.
    fn begin(&self) -> io::Result<Incoming>;
    /// Makes the written blob durable under its digest (returned); a blob already stored
    /// under it is kept and the new copy dropped.
    fn commit(&self, incoming: Incoming) -> io::Result<String>;
    /// The blob's path, if it is stored as a local file (`None` from a store of another kind:
    /// read it with `open`).
    fn path(&self, sha256: &str) -> Option<PathBuf>;
    /// The blob's bytes as a stream (read a piece at a time: memory stays flat).
    fn open(&self, sha256: &str) -> io::Result<Box<dyn io::Read + Send>> {
        let path = self.path(sha256).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        Ok(Box::new(std::fs::File::open(path)?))
    }
    /// The blob's size, if it is stored.
    fn size(&self, sha256: &str) -> Option<u64> {
        std::fs::metadata(self.path(sha256)?).map(|m| m.len()).ok()
    }
    fn read(&self, sha256: &str) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.open(sha256)?.read_to_end(&mut out)?;
        Ok(out)
    }
    /// Up to `limit` stored digests after `after`, in order (`files migrate` walks them).
    fn digests(&self, after: &str, limit: usize) -> io::Result<Vec<String>>;
    /// Deletes the blob (nothing if it is not there).
    fn remove(&self, sha256: &str) -> io::Result<()>;
    /// When the blob was last written (a commit of the same content writes it again).
    fn modified(&self, sha256: &str) -> Option<std::time::SystemTime>;
    /// Every stored digest whose blob was written before `before` (for the sweep).
    fn older_than(&self, before: std::time::SystemTime) -> io::Result<Vec<String>>;
}

/// Blobs under `dir/ab/abcdef…`, temporary files under `dir/tmp/`.
pub struct LocalStore {
    dir: PathBuf,
}

impl LocalStore {
    pub fn new(dir: impl Into<PathBuf>) -> LocalStore {
        LocalStore { dir: dir.into() }
    }

    fn blob_path(&self, sha256: &str) -> PathBuf {
        self.dir.join(&sha256[..2]).join(sha256)
    }
}

impl BlobStore for LocalStore {
    fn begin(&self) -> io::Result<Incoming> {
        let tmp = self.dir.join("tmp");
        private_files::create_dir_all(&tmp)?;
        let path = tmp.join(uuid::Uuid::new_v4().simple().to_string());
        let file = private_files::create_new(&path)?;
        let file = io::BufWriter::with_capacity(WRITE_BUFFER, file);
        Ok(Incoming::into(Sink::Folder { file, path }))
    }

    /// (The temporary file left after a rename is none: `Incoming`'s drop finds nothing.)
    fn commit(&self, incoming: Incoming) -> io::Result<String> {
        let (sha256, _, mut sink) = incoming.finish();
        let Sink::Folder { file, path } = &mut sink else {
            return Err(io::Error::other("a blob begun in another store"));
        };
        let target = self.blob_path(&sha256);
        match std::fs::OpenOptions::new().write(true).open(&target) {
            // The same content again: marked as written now, so no sweep takes it from under
            // the submission about to name it.
            Ok(existing) => existing.set_modified(std::time::SystemTime::now())?,
            Err(_) => {
                file.flush()?;
                file.get_ref().sync_all()?;
                let parent = target.parent().unwrap_or(&self.dir);
                private_files::create_dir_all(parent)?;
                std::fs::rename(&*path, &target)?;
                sync_dir(parent);
            }
        }
        Ok(sha256)
    }

    fn path(&self, sha256: &str) -> Option<PathBuf> {
        let path = is_sha256(sha256).then(|| self.blob_path(sha256))?;
        path.is_file().then_some(path)
    }

    fn remove(&self, sha256: &str) -> io::Result<()> {
        match self.path(sha256) {
            Some(path) => std::fs::remove_file(path),
            None => Ok(()),
        }
    }

    fn modified(&self, sha256: &str) -> Option<std::time::SystemTime> {
        std::fs::metadata(self.path(sha256)?).and_then(|m| m.modified()).ok()
    }

    fn digests(&self, after: &str, limit: usize) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        let Ok(shards) = std::fs::read_dir(&self.dir) else { return Ok(out) };
        for shard in shards.flatten() {
            let Ok(blobs) = std::fs::read_dir(shard.path()) else { continue };
            for blob in blobs.flatten() {
                let name = blob.file_name().to_string_lossy().into_owned();
                if is_sha256(&name) && name.as_str() > after {
                    out.push(name);
                }
            }
        }
        out.sort();
        out.truncate(limit);
        Ok(out)
    }

    fn older_than(&self, before: std::time::SystemTime) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        let Ok(shards) = std::fs::read_dir(&self.dir) else { return Ok(out) };
        for shard in shards.flatten() {
            let Ok(blobs) = std::fs::read_dir(shard.path()) else { continue };
            for blob in blobs.flatten() {
                let name = blob.file_name().to_string_lossy().into_owned();
                let old = blob.metadata().and_then(|m| m.modified()).is_ok_and(|t| t < before);
                if is_sha256(&name) && old {
                    out.push(name);
                }
            }
        }
        // Temporary files of writes that never committed (a crash, a refused upload).
        if let Ok(tmp) = std::fs::read_dir(self.dir.join("tmp")) {
            for t in tmp.flatten() {
                if t.metadata().and_then(|m| m.modified()).is_ok_and(|m| m < before) {
                    let _ = std::fs::remove_file(t.path());
                }
            }
        }
        Ok(out)
    }
}

fn hex(hash: Sha256) -> String {
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The rename is durable once the folder is synced (best effort: not every platform can).
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

impl Drop for Sink {
    /// A blob never committed leaves no temporary file (or chunks) behind.
    fn drop(&mut self) {
        match self {
            Sink::Folder { path, .. } => {
                let _ = std::fs::remove_file(path);
            }
            Sink::Database(chunks) => chunks.abandon(),
            Sink::Done => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_copy_per_content() {
        let dir = std::env::temp_dir().join(format!("onceform-blobs-{}", uuid::Uuid::new_v4()));
        let store = LocalStore::new(&dir);
        let put = |bytes: &[u8]| {
            let mut b = store.begin().unwrap();
            b.write(bytes).unwrap();
            store.commit(b).unwrap()
        };
        let a = put(b"%PDF-1.4 hello");
        assert_eq!(a, put(b"%PDF-1.4 hello"));
        assert_eq!(store.read(&a).unwrap(), b"%PDF-1.4 hello");
        assert_eq!(std::fs::read_dir(dir.join("tmp")).unwrap().count(), 0, "no temporary file is left");
        let abandoned = store.begin().unwrap();
        drop(abandoned);
        assert_eq!(std::fs::read_dir(dir.join("tmp")).unwrap().count(), 0);
        store.remove(&a).unwrap();
        assert!(store.path(&a).is_none());
        assert!(store.path("../../etc/passwd").is_none(), "only digests name blobs");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_type_comes_from_the_bytes() {
        let dir = std::env::temp_dir().join(format!("onceform-blobs-{}", uuid::Uuid::new_v4()));
        let store = LocalStore::new(&dir);
        let mut png = store.begin().unwrap();
        png.write(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
        assert_eq!(png.content_type(), "image/png");
        let mut pdf = store.begin().unwrap();
        pdf.write(b"%PDF-1.7\n").unwrap();
        assert_eq!(pdf.content_type(), "application/pdf");
        let mut text = store.begin().unwrap();
        text.write("規格 spec".as_bytes()).unwrap();
        assert_eq!(text.content_type(), "text/plain");
        let _ = std::fs::remove_dir_all(dir);
    }
}
