//! The chunks of a blob streaming into the database store (`db_store`): the one filling, and
//! each full one inserted under the blob's temporary key, on the caller's thread or handed to
//! a blocking thread (`FullChunk`).

use std::io;

use chrono::{NaiveDateTime, Utc};

use crate::db::blobs::BlobRows;
use crate::db::{DbError, Pool};

/// The largest chunk: a row PostgreSQL stores out of line (TOAST) without trouble, and the
/// memory one upload or one download holds.
pub const CHUNK: usize = 1024 * 1024;

pub(super) fn io_error(e: impl Into<DbError>) -> io::Error {
    io::Error::other(e.into().to_string())
}

pub(super) fn now() -> NaiveDateTime {
    Utc::now().naive_utc()
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
    pub(super) fn new(pool: Pool, key: String) -> Chunks {
        Chunks { pool, key, buf: Vec::with_capacity(CHUNK), n: 0 }
    }

    /// The temporary key its chunks are written under (empty once committed).
    pub(super) fn key(&self) -> &str {
        &self.key
    }

    /// Renamed to its digest: nothing is left under the temporary key to delete.
    pub(super) fn committed(&mut self) {
        self.key.clear();
    }

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

    pub(super) fn flush(&mut self) -> io::Result<()> {
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
