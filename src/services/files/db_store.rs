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

use super::chunks::{io_error, now, Chunks};
use super::store::{BlobStore, Incoming, Sink};
use crate::db::blobs::{BlobRows, TMP_PREFIX};
use crate::db::Pool;
use crate::domain::is_sha256;

/// Blobs in the database behind `pool`.
pub struct DbStore {
    pool: Pool,
}

impl DbStore {
    pub fn new(pool: Pool) -> DbStore {
        DbStore { pool }
    }
}

fn naive(t: SystemTime) -> NaiveDateTime {
    DateTime::<Utc>::from(t).naive_utc()
}

impl BlobStore for DbStore {
    fn begin(&self) -> io::Result<Incoming> {
        // Its row is written with its first chunk: beginning takes no connection.
        let key = format!("{TMP_PREFIX}{}", uuid::Uuid::new_v4().simple());
        let chunks = Chunks::new(self.pool.clone(), key);
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
            .finish_blob(chunks.key(), &sha256, size, now())
            .map_err(io_error)?;
        // Renamed: nothing left under the temporary key for the drop to delete.
        chunks.committed();
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
