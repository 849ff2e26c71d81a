-- Attached files. The bytes live in the file store (`[server] files_dir`), one blob per
-- SHA-256; these tables say who uses each blob, so that a blob goes with its last use.

-- A file uploaded ahead of its submission (`POST /api/forms/{form}/uploads`), named by the
-- submission's `upl_…` value; kept an hour, used or not (a retry names it again).
CREATE TABLE uploads (
    id TEXT PRIMARY KEY NOT NULL,
    form TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size BIGINT NOT NULL,
    content_type TEXT NOT NULL,
    file_name TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX uploads_created_at ON uploads (created_at);
CREATE INDEX uploads_sha256 ON uploads (sha256);

-- Each blob a submission's fields name (their reference count is the rows per sha256),
-- written in the accept transaction with the submission. `scan`: not_scanned (the form
-- does not scan), clean, pending (clamd was down; the effects are held), unscanned
-- (clamd was down; delivered anyway) or malware.
CREATE TABLE submission_files (
    submission_id TEXT NOT NULL REFERENCES submissions (id),
    sha256 TEXT NOT NULL,
    scan TEXT NOT NULL,
    PRIMARY KEY (submission_id, sha256)
);
CREATE INDEX submission_files_sha256 ON submission_files (sha256);
CREATE INDEX submission_files_scan ON submission_files (scan);
