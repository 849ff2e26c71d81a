//! The file store kept in the database (`[server] files = "database"`, PostgreSQL): every
//! node of a deployment reads the blobs its web nodes wrote, with no shared folder.
//!
//! A blob streams in as chunks of at most `CHUNK` bytes, each inserted as it fills (one
//! chunk in memory per upload), under a temporary key. A request streaming a file in takes
//! each full chunk (`Incoming::full_chunk`) and stores it on a blocking thread: inserted on the
//! request's own thread, a chunk stalled every upload sharing that HTTP worker, until half of
//! 16 uploads of 16 MiB ran out of their body deadline (issue 43). `commit` renames the chunks to the
//! content digest in one transaction, before the accept transaction that names the blob
//! begins, so a submission never names a blob that is not complete. An upload given up
//! deletes its chunks; one cut short by a crash leaves an incomplete row that the sweep
//! deletes (`BlobRows::blobs_before`). Read back a chunk at a time.

use std::io;
use std::path::PathBuf;
use std::time::SystemTime;

use chrono::{DateTime, NaiveDateTime, Utc};

use super::store::{BlobStore, Incoming, Sink};
use crate::db::blobs::{BlobRows, TMP_PREFIX};
use crate::db::{DbError, Pool};
use crate::domain::is_sha256;

/// The largest chunk: a row PostgreSQL stores out of line (TOAST) without trouble, and the
/// memory one upload or one download holds.
pub const CHUNK: usize = 1024 * 1024;

/// Blobs in the database behind `pool`.
pub struct DbStore {
    pool: Pool,
}

impl DbStore {
    pub fn new(pool: Pool) -> DbStore {
        DbStore { pool }
    }
}

fn io_error(e: impl Into<DbError>) -> io::Error {
    io::Error::other(e.into().to_string())
}

fn now() -> NaiveDateTime {
    Utc::now().naive_utc()
}

fn naive(t: SystemTime) -> NaiveDateTime {
    DateTime::<Utc>::from(t).naive_utc()
}

/// The chunks of a blob being written: the one filling, and how many went before.
pub struct Chunks {
    pool: Pool,
    key: String,
    buf: Vec<u8>,
    n: i32,
}

/// A full chunk taken from a blob being written, to store off the async threads.
pub struct FullChunk {
    pool: Pool,
    key: String,
    n: i32,
    bytes: Vec<u8>,
}

impl FullChunk {
    /// Inserts the chunk (a blocking call).
    pub fn store(self) -> io::Result<()> {
        put(&self.pool, &self.key, self.n, &self.bytes)
    }
}

fn put(pool: &Pool, key: &str, n: i32, bytes: &[u8]) -> io::Result<()> {
    pool.get().map_err(io_error)?.put_chunk(key, n, bytes, now()).map_err(io_error)
}

impl Chunks {
    /// Adds `bytes`; a full chunk not taken (`full`) before more come is stored here, on
    /// the caller's thread.
    pub(super) fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            if self.buf.len() == CHUNK {
                self.flush()?;
            }
            let take = (CHUNK - self.buf.len()).min(bytes.len());
            self.buf.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        Ok(())
    }

    /// The chunk filled, if it is full, for the caller to store (`FullChunk::store`).
    pub(super) fn full(&mut self) -> Option<FullChunk> {
        if self.buf.len() < CHUNK {
            return None;
        }
        let bytes = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        let chunk = FullChunk { pool: self.pool.clone(), key: self.key.clone(), n: self.n, bytes };
        self.n += 1;
        Some(chunk)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        put(&self.pool, &self.key, self.n, &self.buf)?;
        self.n += 1;
        self.buf.clear();
        Ok(())
    }

    /// Deletes what was written (best effort: the sweep deletes what is left).
    pub(super) fn abandon(&mut self) {
        if self.key.is_empty() {
            return; // committed
        }
        if let Ok(mut c) = self.pool.get() {
            if let Err(e) = c.remove_blob(&self.key) {
                tracing::debug!(error = %e, "an abandoned blob's chunks are left for the sweep");
            }
        }
    }
}

impl BlobStore for DbStore {
    fn begin(&self) -> io::Result<Incoming> {
        // Its row is written with its first chunk: beginning takes no connection.
        let key = format!("{TMP_PREFIX}{}", uuid::Uuid::new_v4().simple());
        let chunks = Chunks { pool: self.pool.clone(), key, buf: Vec::with_capacity(CHUNK), n: 0 };
        Ok(Incoming::into(Sink::Database(chunks)))
    }

    fn commit(&self, incoming: Incoming) -> io::Result<String> {
        let (sha256, size, mut sink) = incoming.finish();
        let Sink::Database(chunks) = &mut sink else {
            return Err(io::Error::other("a blob begun in another store"));
        };
        chunks.flush()?;
        let size = i64::try_from(size).unwrap_or(i64::MAX);
        self.pool
            .get()
            .map_err(io_error)?
            .finish_blob(&chunks.key, &sha256, size, now())
            .map_err(io_error)?;
        // Renamed: nothing left under the temporary key for the drop to delete.
        chunks.key.clear();
        Ok(sha256)
    }

    fn path(&self, _sha256: &str) -> Option<PathBuf> {
        None
    }

    fn open(&self, sha256: &str) -> io::Result<Box<dyn io::Read + Send>> {
        self.size(sha256).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        Ok(Box::new(ChunkReader {
            pool: self.pool.clone(),
            sha256: sha256.to_string(),
            n: 0,
            buf: Vec::new(),
            at: 0,
        }))
    }

    fn size(&self, sha256: &str) -> Option<u64> {
        let size = is_sha256(sha256).then(|| self.pool.get().ok()?.blob_size(sha256).ok()?)??;
        u64::try_from(size).ok()
    }

    fn remove(&self, sha256: &str) -> io::Result<()> {
        if !is_sha256(sha256) {
            return Ok(());
        }
        self.pool.get().map_err(io_error)?.remove_blob(sha256).map_err(io_error)
    }

    fn modified(&self, sha256: &str) -> Option<SystemTime> {
        let at = self.pool.get().ok()?.blob_written(sha256).ok()??;
        Some(SystemTime::from(at.and_utc()))
    }

    fn older_than(&self, before: SystemTime) -> io::Result<Vec<String>> {
        self.pool.get().map_err(io_error)?.blobs_before(naive(before)).map_err(io_error)
    }

    fn digests(&self, after: &str, limit: usize) -> io::Result<Vec<String>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.pool.get().map_err(io_error)?.complete_blobs(after, limit).map_err(io_error)
    }
}

/// A blob read a chunk at a time.
struct ChunkReader {
    pool: Pool,
    sha256: String,
    n: i32,
    buf: Vec<u8>,
    at: usize,
}

impl io::Read for ChunkReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.buf.len() {
            let chunk = self.pool.get().map_err(io_error)?.chunk(&self.sha256, self.n).map_err(io_error)?;
            match chunk {
                None => return Ok(0),
                Some(bytes) => {
                    self.buf = bytes;
                    self.at = 0;
                    self.n += 1;
                }
            }
        }
        let take = (self.buf.len() - self.at).min(out.len());
        out[..take].copy_from_slice(&self.buf[self.at..self.at + take]);
        self.at += take;
        Ok(take)
    }
}
