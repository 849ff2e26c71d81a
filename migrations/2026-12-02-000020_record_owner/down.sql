-- Back to anchors: each inbound event gets its row in `submissions` again (form
-- `hook:SOURCE`, channel `hook`; its fields are not rebuilt, so a handler record still PENDING then
-- sends an empty event), its handler records hang off it, and `side_effects.submission_id` is NOT NULL again.

INSERT INTO submissions (id, form, operation_id, fingerprint, fields_json, response_body,
    channel, keyless, spam, received_at, operation_expires_at, content_purged_at)
SELECT e.id, 'hook:' || e.source, e.event_id, e.content_hash, NULL, '{}', 'hook', FALSE, FALSE,
    e.first_received_at, e.first_received_at,
    CASE WHEN e.body IS NULL THEN e.first_received_at ELSE NULL END
FROM inbound_events e;

CREATE TABLE side_effects_old AS SELECT * FROM side_effects;
CREATE TABLE effect_attempts_old AS SELECT * FROM effect_attempts;
DROP TABLE effect_attempts;
DROP TABLE side_effects;

CREATE TABLE side_effects (
    id TEXT PRIMARY KEY NOT NULL,
    submission_id TEXT NOT NULL REFERENCES submissions (id),
    kind TEXT NOT NULL,
    batch INTEGER NOT NULL DEFAULT 0,
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
    held BOOLEAN NOT NULL DEFAULT FALSE,
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
    provider_ref TEXT,
    detail TEXT
);
CREATE INDEX effect_attempts_effect ON effect_attempts (effect_id, started_at);

INSERT INTO side_effects (id, submission_id, kind, batch, effect_key, state, attempts,
    next_attempt_at, lease_owner, lease_expires_at, provider_ref, last_error, created_at,
    updated_at, held)
SELECT id, COALESCE(submission_id, inbound_event_id), kind, batch, effect_key, state, attempts,
    next_attempt_at, lease_owner, lease_expires_at, provider_ref, last_error, created_at,
    updated_at, held
FROM side_effects_old;

INSERT INTO effect_attempts (id, effect_id, started_at, duration_ms, outcome, http_status,
    smtp_code, error_class, provider_ref, detail)
SELECT id, effect_id, started_at, duration_ms, outcome, http_status, smtp_code, error_class,
    provider_ref, detail
FROM effect_attempts_old;

DROP TABLE effect_attempts_old;
DROP TABLE side_effects_old;
