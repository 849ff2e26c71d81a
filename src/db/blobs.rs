//! The bytes of attached files kept in the database (`[server] files = "database"`): a
//! `blobs` row per content digest and its bytes in `blob_chunks` of at most 1 MiB, in order
//! (`n` from 0). A blob being written is named by a temporary key (`tmp_…`, not complete);
//! `finish` renames its chunks to the digest, in one transaction, once every chunk is in.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::schema::{blob_chunks, blobs};
use super::DbConnection;

/// The prefix of the key of a blob still being written.
pub const TMP_PREFIX: &str = "tmp_";

pub trait BlobRows {
    /// Stores chunk `n` of the blob being written under `key` (`tmp_…`), and names that
    /// blob (not complete, written `now`) if no row does: a chunk stored after its upload was
    /// given up (on another thread) is left to the sweep, never orphaned.
    fn put_chunk(&mut self, key: &str, n: i32, bytes: &[u8], now: NaiveDateTime) -> QueryResult<()>;
    /// Makes the blob written under `key` the complete blob `sha256` of `size` bytes; if one
    /// is stored already, it is kept (marked as written `now`) and the new chunks go.
    fn finish_blob(&mut self, key: &str, sha256: &str, size: i64, now: NaiveDateTime) -> QueryResult<()>;
    fn blob_size(&mut self, sha256: &str) -> QueryResult<Option<i64>>;
    fn blob_written(&mut self, sha256: &str) -> QueryResult<Option<NaiveDateTime>>;
    /// The chunk `n` of `sha256`, if there is one.
    fn chunk(&mut self, sha256: &str, n: i32) -> QueryResult<Option<Vec<u8>>>;
    /// Deletes the blob (complete or not) and its chunks.
    fn remove_blob(&mut self, key: &str) -> QueryResult<()>;
    /// The complete blobs written before `before`; deletes the blobs never finished begun
    /// before it (an upload abandoned, a process gone).
    fn blobs_before(&mut self, before: NaiveDateTime) -> QueryResult<Vec<String>>;
    /// The complete blobs after `after`, in order, at most `limit` (for `files migrate`).
    fn complete_blobs(&mut self, after: &str, limit: i64) -> QueryResult<Vec<String>>;
}

impl BlobRows for DbConnection {
    fn put_chunk(&mut self, key: &str, n: i32, bytes: &[u8], now: NaiveDateTime) -> QueryResult<()> {
        self.write_transaction(|c| {
            c.execute_native(
                diesel::insert_into(blobs::table)
                    .values((
                        blobs::sha256.eq(key),
                        blobs::size.eq(0i64),
                        blobs::complete.eq(false),
                        blobs::written_at.eq(now),
                    ))
                    .on_conflict(blobs::sha256)
                    .do_nothing(),
            )?;
            diesel::insert_into(blob_chunks::table)
                .values((blob_chunks::sha256.eq(key), blob_chunks::n.eq(n), blob_chunks::bytes.eq(bytes)))
                .execute(c)
                .map(|_| ())
        })
    }

    fn finish_blob(&mut self, key: &str, sha256: &str, size: i64, now: NaiveDateTime) -> QueryResult<()> {
        use diesel::result::{DatabaseErrorKind, Error};
        let first = self.write_transaction(|c| {
            let stored: i64 = blobs::table.find(sha256).count().get_result(c)?;
            if stored > 0 {
                return keep_stored(c, key, sha256, now);
            }
            diesel::insert_into(blobs::table)
                .values((
                    blobs::sha256.eq(sha256),
                    blobs::size.eq(size),
                    blobs::complete.eq(true),
                    blobs::written_at.eq(now),
                ))
                .execute(c)?;
            diesel::update(blob_chunks::table.filter(blob_chunks::sha256.eq(key)))
                .set(blob_chunks::sha256.eq(sha256))
                .execute(c)?;
            diesel::delete(blobs::table.find(key)).execute(c)?;
            Ok(())
        });
        match first {
            // Another writer of the same content committed first (PostgreSQL): theirs is kept.
            Err(Error::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => {
                self.write_transaction(|c| keep_stored(c, key, sha256, now))
            }
            other => other,
        }
    }

    fn blob_size(&mut self, sha256: &str) -> QueryResult<Option<i64>> {
        blobs::table.find(sha256).filter(blobs::complete.eq(true)).select(blobs::size).first(self).optional()
    }

    fn blob_written(&mut self, sha256: &str) -> QueryResult<Option<NaiveDateTime>> {
        blobs::table
            .find(sha256)
            .filter(blobs::complete.eq(true))
            .select(blobs::written_at)
            .first(self)
            .optional()
    }

    fn chunk(&mut self, sha256: &str, n: i32) -> QueryResult<Option<Vec<u8>>> {
        blob_chunks::table.find((sha256, n)).select(blob_chunks::bytes).first(self).optional()
    }

    fn remove_blob(&mut self, key: &str) -> QueryResult<()> {
        self.write_transaction(|c| {
            diesel::delete(blobs::table.find(key)).execute(c)?;
            diesel::delete(blob_chunks::table.filter(blob_chunks::sha256.eq(key))).execute(c)?;
            Ok(())
        })
    }

    fn blobs_before(&mut self, before: NaiveDateTime) -> QueryResult<Vec<String>> {
        let abandoned: Vec<String> = blobs::table
            .filter(blobs::complete.eq(false))
            .filter(blobs::written_at.lt(before))
            .select(blobs::sha256)
            .load(self)?;
        for key in &abandoned {
            self.remove_blob(key)?;
        }
        blobs::table
            .filter(blobs::complete.eq(true))
            .filter(blobs::written_at.lt(before))
            .select(blobs::sha256)
            .load(self)
    }

    fn complete_blobs(&mut self, after: &str, limit: i64) -> QueryResult<Vec<String>> {
        blobs::table
            .filter(blobs::complete.eq(true))
            .filter(blobs::sha256.gt(after))
            .order(blobs::sha256)
            .limit(limit)
            .select(blobs::sha256)
            .load(self)
    }
}

/// The blob `sha256` is stored already (the same content again): it is kept, marked as
/// written `now` so that no sweep takes it from under the submission about to name it, and
/// the copy written under `key` goes.
fn keep_stored(c: &mut DbConnection, key: &str, sha256: &str, now: NaiveDateTime) -> QueryResult<()> {
    diesel::update(blobs::table.find(sha256)).set(blobs::written_at.eq(now)).execute(c)?;
    diesel::delete(blob_chunks::table.filter(blob_chunks::sha256.eq(key))).execute(c)?;
    diesel::delete(blobs::table.find(key)).execute(c)?;
    Ok(())
}
