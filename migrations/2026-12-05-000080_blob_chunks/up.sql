-- Attached files kept in the database (`[server] files = "database"`): one `blobs` row per
-- content digest, its bytes in chunks of at most 1 MiB. A blob being written is named by a
-- temporary key (`tmp_…`, `complete` false) until its digest is known; the sweep deletes
-- such rows left by an upload that never finished. Unused on the folder store.
CREATE TABLE blobs (
    sha256 TEXT PRIMARY KEY NOT NULL,
    size BIGINT NOT NULL,
    complete BOOLEAN NOT NULL,
    written_at TIMESTAMP NOT NULL
);

CREATE TABLE blob_chunks (
    sha256 TEXT NOT NULL,
    n INTEGER NOT NULL,
    bytes BYTEA NOT NULL,
    PRIMARY KEY (sha256, n)
);
