-- Core tables: submissions under a unique (form, operation_id), their side-effect records,
-- the attempts log, conflicts kept for review, and deliveries (HTTP requests received).
-- Ids and JSON are text, times are UTC `TIMESTAMP`: the type subset both backends share.

CREATE TABLE submissions (
    id TEXT PRIMARY KEY NOT NULL,
    form TEXT NOT NULL,
    operation_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    -- Submitted content (JSON); NULL once retention purged it (the row stays as a tombstone).
    fields_json TEXT,
    -- The PII-free result body, replayed byte for byte.
    response_body TEXT NOT NULL,
    channel TEXT NOT NULL,
    keyless BOOLEAN NOT NULL DEFAULT FALSE,
    spam BOOLEAN NOT NULL DEFAULT FALSE,
    -- SHA-256 of the normalised email / phone, for the duplicate detector (NULL when absent).
    email_digest TEXT,
    phone_digest TEXT,
    received_at TIMESTAMP NOT NULL,
    operation_expires_at TIMESTAMP NOT NULL,
    content_purged_at TIMESTAMP,
    CONSTRAINT submissions_form_operation_key UNIQUE (form, operation_id)
);
CREATE INDEX submissions_form_received ON submissions (form, received_at);
CREATE INDEX submissions_email_digest ON submissions (form, email_digest, received_at);
CREATE INDEX submissions_phone_digest ON submissions (form, phone_digest, received_at);
CREATE INDEX submissions_expires ON submissions (operation_expires_at);

CREATE TABLE side_effects (
    id TEXT PRIMARY KEY NOT NULL,
    submission_id TEXT NOT NULL REFERENCES submissions (id),
    kind TEXT NOT NULL,
    -- 0 for the original; an admin replay adds a new record with the next batch.
    batch INTEGER NOT NULL DEFAULT 0,
    -- The effect's own key, sent to providers (Idempotency-Key, external reference).
    effect_key TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMP NOT NULL,
    lease_owner TEXT,
    lease_expires_at TIMESTAMP,
    provider_ref TEXT,
    last_error TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    CONSTRAINT side_effects_submission_kind_batch UNIQUE (submission_id, kind, batch)
);
CREATE INDEX side_effects_due ON side_effects (state, next_attempt_at);

CREATE TABLE effect_attempts (
    id TEXT PRIMARY KEY NOT NULL,
    effect_id TEXT NOT NULL REFERENCES side_effects (id),
    started_at TIMESTAMP NOT NULL,
    duration_ms INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    http_status INTEGER,
    smtp_code INTEGER,
    error_class TEXT,
    provider_ref TEXT
);
CREATE INDEX effect_attempts_effect ON effect_attempts (effect_id, started_at);

CREATE TABLE conflicts (
    id TEXT PRIMARY KEY NOT NULL,
    submission_id TEXT NOT NULL REFERENCES submissions (id),
    fingerprint TEXT NOT NULL,
    -- The conflicting content (JSON); NULL once purged.
    fields_json TEXT,
    status TEXT NOT NULL DEFAULT 'open',
    attempts INTEGER NOT NULL DEFAULT 1,
    first_seen_at TIMESTAMP NOT NULL,
    last_seen_at TIMESTAMP NOT NULL,
    CONSTRAINT conflicts_submission_fingerprint UNIQUE (submission_id, fingerprint)
);
CREATE INDEX conflicts_status ON conflicts (status, first_seen_at);

CREATE TABLE deliveries (
    id TEXT PRIMARY KEY NOT NULL,
    form TEXT,
    operation_id TEXT,
    submission_id TEXT,
    channel TEXT NOT NULL,
    outcome TEXT NOT NULL,
    http_status INTEGER NOT NULL,
    received_at TIMESTAMP NOT NULL
);
CREATE INDEX deliveries_received ON deliveries (received_at);
CREATE INDEX deliveries_submission ON deliveries (submission_id);
