-- Inbound webhooks: events unique per (source, event ID), every delivery counted, conflicts
-- kept, deliveries without a usable event ID held in a quarantine. Each stored event also
-- has an anchor row in `submissions` (form `hook:SOURCE`, operation_id = the event ID,
-- channel `hook`) so that its handlers' records live in `side_effects` and run on the same
-- workers, leases, attempts log and reconciliation as form side effects.

CREATE TABLE inbound_events (
    -- Also the id of the event's anchor row in `submissions`.
    id TEXT PRIMARY KEY NOT NULL,
    source TEXT NOT NULL,
    event_id TEXT NOT NULL,
    -- SHA-256 of the verified body: same ID and hash is a replay, another hash a conflict.
    content_hash TEXT NOT NULL,
    -- The verified body (WeCom: decrypted); NULL once retention purged it.
    body TEXT,
    content_type TEXT NOT NULL,
    deliveries INTEGER NOT NULL DEFAULT 1,
    first_received_at TIMESTAMP NOT NULL,
    last_received_at TIMESTAMP NOT NULL,
    CONSTRAINT inbound_events_source_event UNIQUE (source, event_id)
);
CREATE INDEX inbound_events_received ON inbound_events (source, first_received_at);

CREATE TABLE inbound_deliveries (
    id TEXT PRIMARY KEY NOT NULL,
    source TEXT NOT NULL,
    -- The stored event or quarantine row this request came to (NULL: refused).
    event_row_id TEXT,
    -- created | replayed | conflict | quarantined
    outcome TEXT NOT NULL,
    http_status INTEGER NOT NULL,
    received_at TIMESTAMP NOT NULL
);
CREATE INDEX inbound_deliveries_event ON inbound_deliveries (event_row_id);
CREATE INDEX inbound_deliveries_source ON inbound_deliveries (source, received_at);

CREATE TABLE inbound_conflicts (
    id TEXT PRIMARY KEY NOT NULL,
    event_row_id TEXT NOT NULL REFERENCES inbound_events (id),
    content_hash TEXT NOT NULL,
    body TEXT,
    status TEXT NOT NULL DEFAULT 'open',
    attempts INTEGER NOT NULL DEFAULT 1,
    first_seen_at TIMESTAMP NOT NULL,
    last_seen_at TIMESTAMP NOT NULL,
    CONSTRAINT inbound_conflicts_event_hash UNIQUE (event_row_id, content_hash)
);

CREATE TABLE inbound_quarantine (
    id TEXT PRIMARY KEY NOT NULL,
    source TEXT NOT NULL,
    body TEXT,
    content_type TEXT NOT NULL,
    -- open | assigned | discarded
    status TEXT NOT NULL DEFAULT 'open',
    -- The event it became when an admin assigned an ID.
    event_row_id TEXT,
    decided_by TEXT,
    decided_at TIMESTAMP,
    received_at TIMESTAMP NOT NULL
);
CREATE INDEX inbound_quarantine_status ON inbound_quarantine (source, status, received_at);
