-- Admin: accounts, sessions, the audit log, duplicate pairs, and holding effects.

CREATE TABLE users (
    id TEXT PRIMARY KEY NOT NULL,
    email TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    role TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE sessions (
    -- SHA-256 of the cookie's token; the token itself is never stored.
    token_hash TEXT PRIMARY KEY NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id),
    csrf_token TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL
);
CREATE INDEX sessions_expires ON sessions (expires_at);

CREATE TABLE audit_log (
    id TEXT PRIMARY KEY NOT NULL,
    user_id TEXT NOT NULL,
    user_email TEXT NOT NULL,
    action TEXT NOT NULL,
    target_type TEXT NOT NULL,
    target_id TEXT NOT NULL,
    note TEXT,
    at TIMESTAMP NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_target ON audit_log (target_type, target_id);

CREATE TABLE duplicate_pairs (
    id TEXT PRIMARY KEY NOT NULL,
    form TEXT NOT NULL,
    -- The earlier submission and the later one, suspected of repeating it.
    original_id TEXT NOT NULL REFERENCES submissions (id),
    duplicate_id TEXT NOT NULL REFERENCES submissions (id),
    score DOUBLE PRECISION NOT NULL,
    -- JSON list of human-readable reasons.
    reasons TEXT NOT NULL,
    -- open | not_duplicate | duplicate
    status TEXT NOT NULL DEFAULT 'open',
    decided_by TEXT,
    decided_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL,
    CONSTRAINT duplicate_pairs_unique UNIQUE (original_id, duplicate_id)
);
CREATE INDEX duplicate_pairs_status ON duplicate_pairs (status, score);
CREATE INDEX duplicate_pairs_duplicate ON duplicate_pairs (duplicate_id);

ALTER TABLE submissions ADD COLUMN duplicate_of TEXT;
-- Effects held for a duplicate decision are not claimed until released.
ALTER TABLE side_effects ADD COLUMN held BOOLEAN NOT NULL DEFAULT FALSE;
