-- Data lifecycle: keyed digests with their key's version, journey IDs, retention passes.

-- Keyed digests need no column: each digest is stored as `{key version}:{hex}` (see
-- src/domain/keyring.rs); a digest without a version is a plain SHA-256 of an earlier
-- release, converted in Rust at start where the content remains.
-- Ties one visitor's inquiries together; never part of the key or the fingerprint.
ALTER TABLE submissions ADD COLUMN journey_id TEXT;
CREATE INDEX submissions_journey ON submissions (journey_id);
-- Rows whose content retention has not purged yet, oldest first per form.
CREATE INDEX submissions_content_kept ON submissions (form, received_at) WHERE content_purged_at IS NULL;

-- One row per retention pass (the `purge` command or the schedule inside `serve`).
CREATE TABLE purge_passes (
    id TEXT PRIMARY KEY NOT NULL,
    started_at TIMESTAMP NOT NULL,
    duration_ms BIGINT NOT NULL,
    purged_rows BIGINT NOT NULL
);
CREATE INDEX purge_passes_started ON purge_passes (started_at);

-- Rows purged so far, by form and kind (`content`, `keys`, `erasure`).
CREATE TABLE purge_totals (
    form TEXT NOT NULL,
    kind TEXT NOT NULL,
    purged_rows BIGINT NOT NULL,
    PRIMARY KEY (form, kind)
);
