-- An inbound event's records are unique per (event, handler, batch); a submission's records
-- have no event. `record_owner` made that a table constraint, so every form effect record also
-- entered its index under a NULL event: three index entries per accept that guard nothing. A
-- partial unique index (`WHERE inbound_event_id IS NOT NULL`) replaces it.
--
-- SQLite cannot drop a table constraint, so both tables are rebuilt as `record_owner` rebuilt
-- them (copied aside, dropped, created anew, filled again), on both backends.

CREATE TABLE side_effects_old AS SELECT * FROM side_effects;
CREATE TABLE effect_attempts_old AS SELECT * FROM effect_attempts;
DROP TABLE effect_attempts;
DROP TABLE side_effects;

CREATE TABLE side_effects (
    id TEXT PRIMARY KEY NOT NULL,
    -- The owner: a submission, or (`inbound_event_id`) an inbound event; never both.
    submission_id TEXT REFERENCES submissions (id),
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
    -- Effects held for a duplicate decision are not claimed until released.
    held BOOLEAN NOT NULL DEFAULT FALSE,
    inbound_event_id TEXT REFERENCES inbound_events (id),
    CONSTRAINT side_effects_one_owner CHECK ((submission_id IS NULL) <> (inbound_event_id IS NULL)),
    CONSTRAINT side_effects_submission_kind_batch UNIQUE (submission_id, kind, batch)
);
CREATE INDEX side_effects_due ON side_effects (state, next_attempt_at);
CREATE UNIQUE INDEX side_effects_event_kind_batch ON side_effects (inbound_event_id, kind, batch)
    WHERE inbound_event_id IS NOT NULL;

CREATE TABLE effect_attempts (
    id TEXT PRIMARY KEY NOT NULL,
    effect_id TEXT NOT NULL REFERENCES side_effects (id),
    started_at TIMESTAMP NOT NULL,
    duration_ms INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    http_status INTEGER,
    smtp_code INTEGER,
    error_class TEXT,
    provider_ref TEXT,
    -- What the vendor said of a refused attempt (its error message or the start of its body,
    -- at most 500 bytes, one line): shown on the admin's submission and event pages.
    detail TEXT
);
CREATE INDEX effect_attempts_effect ON effect_attempts (effect_id, started_at);

INSERT INTO side_effects (id, submission_id, kind, batch, effect_key, state, attempts,
    next_attempt_at, lease_owner, lease_expires_at, provider_ref, last_error, created_at,
    updated_at, held, inbound_event_id)
SELECT id, submission_id, kind, batch, effect_key, state, attempts, next_attempt_at, lease_owner,
    lease_expires_at, provider_ref, last_error, created_at, updated_at, held, inbound_event_id
FROM side_effects_old;

INSERT INTO effect_attempts (id, effect_id, started_at, duration_ms, outcome, http_status,
    smtp_code, error_class, provider_ref, detail)
SELECT id, effect_id, started_at, duration_ms, outcome, http_status, smtp_code, error_class,
    provider_ref, detail
FROM effect_attempts_old;

DROP TABLE effect_attempts_old;
DROP TABLE side_effects_old;
